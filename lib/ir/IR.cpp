#include "ir/IR.h"

#include <filesystem>

#include "support/Error.h"

namespace tiledsl::ir {

namespace {
struct OpInfo {
  const char* mnemonic;
  unsigned traits;
};
constexpr OpInfo kOpInfo[] = {
#define TILEDSL_OP(Name, mnemonic, traits) {mnemonic, traits},
#include "ir/Ops.def"
#undef TILEDSL_OP
};
}  // namespace

const char* mnemonic(OpKind k) { return kOpInfo[static_cast<size_t>(k)].mnemonic; }
unsigned traits(OpKind k) { return kOpInfo[static_cast<size_t>(k)].traits; }
bool parse_mnemonic(const std::string& s, OpKind& out) {
  for (size_t i = 0; i < std::size(kOpInfo); ++i)
    if (s == kOpInfo[i].mnemonic) {
      out = static_cast<OpKind>(i);
      return true;
    }
  return false;
}

std::string Location::str() const { return file + ":" + std::to_string(line); }

Value* Op::add_result(Type t) {
  auto v = std::make_unique<Value>();
  v->type = t;
  v->def = this;
  v->index = static_cast<unsigned>(results.size());
  results.push_back(std::move(v));
  return results.back().get();
}

Block* Op::add_region() {
  regions.push_back(std::make_unique<Block>());
  regions.back()->parent = this;
  return regions.back().get();
}

template <class T>
static const T& get_attr(const Op& op, const std::string& k) {
  auto it = op.attrs.find(k);
  TILEDSL_CHECK(it != op.attrs.end() && std::holds_alternative<T>(it->second),
                "op '", op.name(), "' lacks attribute '", k, "' of the expected kind");
  return std::get<T>(it->second);
}
int64_t Op::attr_int(const std::string& k) const { return get_attr<int64_t>(*this, k); }
double Op::attr_float(const std::string& k) const { return get_attr<double>(*this, k); }
const std::string& Op::attr_str(const std::string& k) const { return get_attr<std::string>(*this, k); }
const std::vector<int64_t>& Op::attr_ints(const std::string& k) const {
  return get_attr<std::vector<int64_t>>(*this, k);
}

Value* Block::add_arg(Type t) {
  auto v = std::make_unique<Value>();
  v->type = t;
  v->owner = this;
  v->index = static_cast<unsigned>(args.size());
  args.push_back(std::move(v));
  return args.back().get();
}

Op* Block::append(std::unique_ptr<Op> op) {
  op->parent = this;
  ops.push_back(std::move(op));
  return ops.back().get();
}

namespace {
void number_block(Block& b, unsigned& next) {
  for (auto& a : b.args) a->id = next++;
  for (auto& op : b.ops) {
    for (auto& res : op->results) res->id = next++;
    for (auto& r : op->regions) number_block(*r, next);
  }
}
}  // namespace

size_t Function::number_values() {
  unsigned next = 0;
  number_block(body, next);
  num_values_ = next;
  return next;
}

}  // namespace tiledsl::ir
