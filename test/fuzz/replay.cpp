// tiledsl-fuzz-replay: the fuzz target without libFuzzer, for CI and for replaying findings.
//   tiledsl-fuzz-replay [--mutants=N] [--seed=S] [--timeout=SECONDS] PATH...
// Runs every seed under PATH (a .tir file, a .test file's `//--- name.tir` parts, or a folder of
// them), then N mutants made by the IR-aware mutator from seeds chosen by a generator seeded with
// S: the same inputs on every run. An input that runs longer than the timeout is a finding (a
// hang). Prints how many inputs were rejected, compiled, or verified but not supported.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "IrMutator.h"
#include "fuzz_target.h"

namespace {
namespace fs = std::filesystem;

std::string g_current;  // the input running, for the hang report

void on_alarm(int) {
  const char head[] = "fuzz finding: an input ran past the timeout (a hang)\n--- input ---\n";
  ssize_t ignored = write(2, head, sizeof head - 1);
  ignored = write(2, g_current.data(), g_current.size());
  (void)ignored;
  _exit(1);
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A lit .test file holds its inputs after `//--- name` lines (split-file's format).
void split_test(const std::string& text, std::vector<std::string>& out) {
  size_t at = text.find("//--- ");
  while (at != std::string::npos) {
    size_t name_end = text.find('\n', at);
    if (name_end == std::string::npos) return;
    std::string name = text.substr(at + 6, name_end - at - 6);
    size_t next = text.find("//--- ", name_end);
    if (name.size() > 4 && name.substr(name.size() - 4) == ".tir")
      out.push_back(text.substr(name_end + 1, (next == std::string::npos ? text.size() : next) - name_end - 1));
    at = next;
  }
}

// A folder gives its .tir and .test files; a file named on the command line is read whatever
// its name (libFuzzer's crash-* files).
void collect(const fs::path& p, std::vector<std::string>& out, bool named = true) {
  if (fs::is_directory(p)) {
    std::vector<fs::path> entries;
    for (const auto& e : fs::recursive_directory_iterator(p))
      if (e.is_regular_file()) entries.push_back(e.path());
    std::sort(entries.begin(), entries.end());  // the same order on every machine
    for (const auto& e : entries) collect(e, out, false);
    return;
  }
  if (p.extension() == ".test")
    split_test(read(p), out);
  else if (p.extension() == ".tir" || named)
    out.push_back(read(p));
}
}  // namespace

int main(int argc, char** argv) {
  long mutants = 0, timeout = 60;
  unsigned long seed = 1;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--mutants=", 0) == 0)
      mutants = std::stol(a.substr(10));
    else if (a.rfind("--seed=", 0) == 0)
      seed = std::stoul(a.substr(7));
    else if (a.rfind("--timeout=", 0) == 0)
      timeout = std::stol(a.substr(10));
    else if (a.rfind("--", 0) == 0) {
      std::cerr << "usage: tiledsl-fuzz-replay [--mutants=N] [--seed=S] [--timeout=SECONDS] PATH...\n";
      return 2;
    } else
      collect(a, seeds);
  }
  if (seeds.empty()) {
    std::cerr << "tiledsl-fuzz-replay: no seeds found\n";
    return 2;
  }
  std::signal(SIGALRM, on_alarm);
  long counts[4] = {0, 0, 0, 0};  // by Outcome
  double slowest = 0;
  auto run = [&](const std::string& input) {
    g_current = input;
    alarm(static_cast<unsigned>(timeout));
    auto t0 = std::chrono::steady_clock::now();
    auto o = tiledsl::fuzz::run_one(input);
    slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    alarm(0);
    ++counts[static_cast<int>(o)];
  };
  for (const auto& s : seeds) run(s);
  std::mt19937_64 rng(seed);
  for (long i = 0; i < mutants; ++i) run(tiledsl::fuzz::mutate_ir(seeds[rng() % seeds.size()], rng));
  using O = tiledsl::fuzz::Outcome;
  std::printf(
      "%zu seeds, %ld inputs: %ld rejected, %ld compiled, %ld verified but unsupported by codegen"
      "; slowest %.2f s; no findings\n",
      seeds.size(), static_cast<long>(seeds.size()) + mutants, counts[static_cast<int>(O::Rejected)],
      counts[static_cast<int>(O::Compiled)], counts[static_cast<int>(O::Unsupported)], slowest);
  return 0;
}
