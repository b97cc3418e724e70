// An IR-aware mutator for the fuzzer: it edits tile IR text the way a mistake would (another
// number, dtype, op, predicate or value name; a line dropped, repeated or moved), so that most
// mutants still parse and reach the verifier, the passes and code generation. libFuzzer calls it
// through LLVMFuzzerCustomMutator; the replay driver calls it with a seeded generator, so a CI
// run is the same every time.
#pragma once

#include <cctype>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tiledsl::fuzz {

struct Token {
  size_t begin, end;
  enum Kind { Number, Name, Value, String, Other } kind;
};

inline std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t b = i;
    if (std::isdigit(c) || (c == '-' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      ++i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
      out.push_back({b, i, Token::Number});
    } else if (c == '%') {
      ++i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      out.push_back({b, i, Token::Value});
    } else if (std::isalpha(c) || c == '_') {
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      out.push_back({b, i, Token::Name});
    } else if (c == '"') {
      ++i;
      while (i < s.size() && s[i] != '"') ++i;
      if (i < s.size()) ++i;
      out.push_back({b, i, Token::String});
    } else {
      ++i;
      if (!std::isspace(c)) out.push_back({b, i, Token::Other});
    }
  }
  return out;
}

// Returns a mutant of `text`; `rng` chooses what changes.
template <class Rng>
std::string mutate_ir(const std::string& text, Rng& rng) {
  static const char* kNumbers[] = {"0",
                                   "1",
                                   "-1",
                                   "2",
                                   "3",
                                   "7",
                                   "16",
                                   "17",
                                   "31",
                                   "32",
                                   "64",
                                   "128",
                                   "1024",
                                   "65536",
                                   "1048576",
                                   "2097152",
                                   "268435456",
                                   "2147483647",
                                   "-2147483648",
                                   "4294967296",
                                   "9223372036854775807",
                                   "-9223372036854775808",
                                   "0.5",
                                   "-0.0",
                                   "nan",
                                   "inf",
                                   "1e308"};
  static const char* kNames[] = {"i1",
                                 "i8",
                                 "i16",
                                 "i32",
                                 "i64",
                                 "u8",
                                 "u16",
                                 "u32",
                                 "u64",
                                 "f16",
                                 "bf16",
                                 "f32",
                                 "f64",
                                 "f8e4m3",
                                 "f8e5m2",
                                 "ptr",
                                 "tile",
                                 "add",
                                 "sub",
                                 "mul",
                                 "div",
                                 "rem",
                                 "maximum",
                                 "and",
                                 "shl",
                                 "shr",
                                 "neg",
                                 "not",
                                 "exp",
                                 "sqrt",
                                 "abs",
                                 "cmp",
                                 "cast",
                                 "bitcast",
                                 "splat",
                                 "broadcast",
                                 "expand_dims",
                                 "reshape",
                                 "trans",
                                 "convert_layout",
                                 "load",
                                 "store",
                                 "atomic_rmw",
                                 "atomic_cas",
                                 "dot",
                                 "reduce",
                                 "scan",
                                 "philox",
                                 "for",
                                 "if",
                                 "yield",
                                 "select",
                                 "fma",
                                 "addptr",
                                 "arange",
                                 "constant",
                                 "program_id",
                                 "multiple_of",
                                 "max_contiguous",
                                 "print",
                                 "assert",
                                 "assume",
                                 "math",
                                 "math2",
                                 "fn",
                                 "axis",
                                 "perm",
                                 "values",
                                 "rounds",
                                 "kind",
                                 "pred",
                                 "value",
                                 "divisibility",
                                 "input_precision"};
  static const char* kStrings[] = {"\"eq\"",  "\"ne\"",    "\"lt\"", "\"ge\"", "\"add\"",  "\"xchg\"",   "\"max\"",
                                   "\"and\"", "\"bogus\"", "\"\"",   "\"%d\"", "\"tf32\"", "\"tf32x3\"", "\"ieee\""};
  std::string s = text;
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % (n ? n : 1)); };
  int edits = 1 + static_cast<int>(pick(3));
  for (int e = 0; e < edits; ++e) {
    auto toks = tokenize(s);
    if (toks.empty()) return s + " ";
    const Token& t = toks[pick(toks.size())];
    std::string repl;
    switch (pick(8)) {
      case 0:
        repl = kNumbers[pick(std::size(kNumbers))];
        break;
      case 1:
        repl = kNames[pick(std::size(kNames))];
        break;
      case 2:
        repl = kStrings[pick(std::size(kStrings))];
        break;
      case 3: {  // another value name from the text
        std::vector<const Token*> values;
        for (const Token& v : toks)
          if (v.kind == Token::Value) values.push_back(&v);
        if (values.empty()) continue;
        const Token* v = values[pick(values.size())];
        repl = s.substr(v->begin, v->end - v->begin);
        break;
      }
      case 4: {  // a line dropped, repeated or moved
        std::vector<size_t> starts{0};
        for (size_t i = 0; i < s.size(); ++i)
          if (s[i] == '\n' && i + 1 < s.size()) starts.push_back(i + 1);
        size_t a = starts[pick(starts.size())];
        size_t a_end = s.find('\n', a);
        a_end = a_end == std::string::npos ? s.size() : a_end + 1;
        std::string line = s.substr(a, a_end - a);
        size_t mode = pick(3);
        if (mode != 1) s.erase(a, a_end - a);
        if (mode != 0) {
          size_t to = starts[pick(starts.size())];
          s.insert(std::min(to, s.size()), line);
        }
        continue;
      }
      case 5:
        repl = "";
        break;   // a token dropped
      case 6: {  // a token repeated (nesting, longer shapes)
        repl = s.substr(t.begin, t.end - t.begin);
        repl += repl;
        break;
      }
      default: {  // a number moved by a little
        if (t.kind != Token::Number) continue;
        long long v = std::strtoll(s.substr(t.begin, t.end - t.begin).c_str(), nullptr, 10);
        long long deltas[] = {-1, 1, 2, -2};
        repl = std::to_string(static_cast<long long>(static_cast<unsigned long long>(v) +
                                                     static_cast<unsigned long long>(deltas[pick(4)])));
        break;
      }
    }
    s.replace(t.begin, t.end - t.begin, repl);
  }
  return s;
}

}  // namespace tiledsl::fuzz
