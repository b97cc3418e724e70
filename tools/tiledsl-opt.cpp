// tiledsl-opt: reads tile IR text (a file or stdin), verifies it and prints it back.
// The lit tests run it; later passes will be selectable by name.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

int main(int argc, char** argv) {
  std::string path;
  bool locations = true, verify = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--no-locations") locations = false;
    else if (a == "--no-verify") verify = false;
    else if (a == "-h" || a == "--help") {
      std::cout << "usage: tiledsl-opt [--no-locations] [--no-verify] [file]\n"
                   "Parses tile IR, verifies it and prints it in canonical form.\n";
      return 0;
    } else path = a;
  }
  std::stringstream text;
  if (path.empty() || path == "-") text << std::cin.rdbuf();
  else {
    std::ifstream in(path);
    if (!in) {
      std::cerr << "tiledsl-opt: cannot open " << path << "\n";
      return 2;
    }
    text << in.rdbuf();
  }
  try {
    auto f = tiledsl::ir::parse(text.str());
    if (verify) tiledsl::ir::verify(*f);
    std::cout << tiledsl::ir::print(*f, {locations});
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
