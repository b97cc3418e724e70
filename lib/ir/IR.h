// The tile IR: values, ops, blocks and kernels (functions). An op owns its results and its
// regions (each region is one block); a block owns its arguments and its ops.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/Type.h"

namespace tiledsl::ir {

enum OpTrait : unsigned {
  kPure = 1,
  kElementwise = 2,
  kTerminator = 4,
  kRegion = 8,
  kMemory = 16,
  kBinary = 32,
  kIntOnly = 64,
  kFloatMath = 128,
  kUnary = 256,
};

// How many operands or results an op takes (ir/Ops.def).
struct Arity {
  int min, max;
  constexpr Arity(int n) : min(n), max(n) {}  // NOLINT: a plain count in the op table
  constexpr Arity(int lo, int hi) : min(lo), max(hi) {}
  bool allows(size_t n) const { return n >= static_cast<size_t>(min) && n <= static_cast<size_t>(max); }
};
// The most operands, results or region arguments one op may have.
inline constexpr int kMaxArity = 256;
constexpr Arity kRange(int lo, int hi) { return {lo, hi}; }
constexpr Arity kAtLeast(int n) { return {n, kMaxArity}; }
inline constexpr Arity kAny{0, kMaxArity};

enum class OpKind : uint8_t {
#define TILEDSL_OP(Name, mnemonic, traits, operands, results, regions, attrs) Name,
#include "ir/Ops.def"
#undef TILEDSL_OP
};

// An attribute an op declares in the table, and the kind of value it takes.
enum class AttrKind { Int, Float, Num, Str, Ints, Enum };
struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool optional = false;
  std::vector<std::string> choices;  // Enum: the strings allowed
};
struct OpSchema {
  const char* mnemonic;
  unsigned traits;
  Arity operands, results;
  int regions;
  std::vector<AttrSpec> attrs;
};

const OpSchema& schema(OpKind k);
const char* mnemonic(OpKind k);
unsigned traits(OpKind k);
bool parse_mnemonic(const std::string& s, OpKind& out);
inline bool has_trait(OpKind k, OpTrait t) { return (traits(k) & t) != 0; }
// [A-Za-z_][A-Za-z0-9_]*, at most 200 characters: what kernels and their parameters may be
// called (PTX symbols, C identifiers in tiledsl-aot's launcher, names in the IR text).
bool is_identifier(const std::string& s);

// The user's source position: the file's base name, line and column.
struct Location {
  std::string file;
  unsigned line = 0, column = 0;
  std::string str() const;  // "file.cpp:12"
};

using Attr = std::variant<int64_t, double, std::string, std::vector<int64_t>>;
using Attrs = std::map<std::string, Attr>;

class Op;
class Block;

class Value {
 public:
  Type type;
  Op* def = nullptr;       // the op producing it, or null for a block argument
  Block* owner = nullptr;  // for block arguments
  unsigned index = 0;      // result or argument number
  unsigned id = 0;         // dense number, set by Function::number_values()
};

class Op {
 public:
  OpKind kind;
  std::vector<Value*> operands;
  std::vector<std::unique_ptr<Value>> results;
  Attrs attrs;
  std::vector<std::unique_ptr<Block>> regions;
  Location loc;
  Block* parent = nullptr;

  Value* result(size_t i = 0) const { return results.at(i).get(); }
  Value* add_result(Type t);
  Block* add_region();
  bool has_attr(const std::string& k) const { return attrs.count(k) != 0; }
  int64_t attr_int(const std::string& k) const;
  double attr_float(const std::string& k) const;
  const std::string& attr_str(const std::string& k) const;
  const std::vector<int64_t>& attr_ints(const std::string& k) const;
  const char* name() const { return mnemonic(kind); }
};

class Block {
 public:
  std::vector<std::unique_ptr<Value>> args;
  std::vector<std::unique_ptr<Op>> ops;
  Op* parent = nullptr;  // null for a kernel's body

  Value* add_arg(Type t);
  Op* append(std::unique_ptr<Op> op);
  Op* terminator() const { return ops.empty() ? nullptr : ops.back().get(); }
};

class Function {
 public:
  std::string name;
  std::vector<std::string> arg_names;
  std::vector<Attrs> arg_attrs;  // specialisation facts per argument (divisibility = 16, ...)
  Attrs attrs;                   // constexpr values the kernel was specialised on
  Block body;

  Value* arg(size_t i) const { return body.args.at(i).get(); }
  size_t num_args() const { return body.args.size(); }
  // Gives every value a dense id in printing order; returns the number of values.
  size_t number_values();
  size_t num_values() const { return num_values_; }

 private:
  size_t num_values_ = 0;
};

// Calls fn(op) for every op in `block`, nested regions included, in program order.
template <class Fn>
void walk(const Block& block, Fn&& fn) {
  for (const auto& op : block.ops) {
    fn(op.get());
    for (const auto& r : op->regions) walk(*r, fn);
  }
}

}  // namespace tiledsl::ir
