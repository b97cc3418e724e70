#include "ir/IR.h"

#include <cctype>
#include <sstream>

#include "ir/LayoutHooks.h"
#include "support/Error.h"

namespace tiledsl::ir {

namespace {
struct OpInfo {
  const char* mnemonic;
  unsigned traits;
  Arity operands, results;
  int regions;
  const char* attrs;
};
constexpr OpInfo kOpInfo[] = {
#define TILEDSL_OP(Name, mnemonic, traits, operands, results, regions, attrs) \
  {mnemonic, traits, operands, results, regions, attrs},
#include "ir/Ops.def"
#undef TILEDSL_OP
};

// Reads one op's attribute declarations ("axis:int pred:eq|ne kind:str? smem").
std::vector<AttrSpec> parse_attr_specs(const OpInfo& info) {
  std::vector<AttrSpec> out;
  std::istringstream in(info.attrs);
  std::string word;
  while (in >> word) {
    if (word == "smem") {
      out.push_back({"smem_offset", AttrKind::Int, true, {}});
      out.push_back({"smem_bytes", AttrKind::Int, true, {}});
      continue;
    }
    size_t colon = word.find(':');
    TILEDSL_CHECK(colon != std::string::npos, "op table: attribute '", word, "' of ", info.mnemonic, " has no kind");
    AttrSpec a{word.substr(0, colon), AttrKind::Int, false, {}};
    std::string kind = word.substr(colon + 1);
    if (!kind.empty() && kind.back() == '?') {
      a.optional = true;
      kind.pop_back();
    }
    static const std::pair<const char*, AttrKind> kKinds[] = {{"int", AttrKind::Int},
                                                              {"float", AttrKind::Float},
                                                              {"num", AttrKind::Num},
                                                              {"str", AttrKind::Str},
                                                              {"ints", AttrKind::Ints}};
    bool named = false;
    for (auto [n, k] : kKinds)
      if (kind == n) {
        a.kind = k;
        named = true;
      }
    if (!named) {
      a.kind = AttrKind::Enum;
      std::istringstream choices(kind);
      for (std::string c; std::getline(choices, c, '|');) a.choices.push_back(c);
      TILEDSL_CHECK(a.choices.size() > 1, "op table: unknown attribute kind '", kind, "' of ", info.mnemonic);
    }
    out.push_back(std::move(a));
  }
  return out;
}

const std::vector<OpSchema>& schemas() {
  static const std::vector<OpSchema> table = [] {
    std::vector<OpSchema> t;
    for (const OpInfo& i : kOpInfo)
      t.push_back({i.mnemonic, i.traits, i.operands, i.results, i.regions, parse_attr_specs(i)});
    return t;
  }();
  return table;
}
}  // namespace

const OpSchema& schema(OpKind k) { return schemas()[static_cast<size_t>(k)]; }
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

bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 200 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::string Location::str() const {
  // One line whatever the file is called: a control character (a newline in a parsed loc("..."))
  // would split the message.
  std::string f = file;
  for (char& c : f)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return f + ":" + std::to_string(line);
}

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
  TILEDSL_CHECK(it != op.attrs.end() && std::holds_alternative<T>(it->second), "op '", op.name(), "' lacks attribute '",
                k, "' of the expected kind");
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

namespace {
LayoutHooks& hooks() {
  static LayoutHooks h;  // a function's static: set by another file's static initialiser
  return h;
}
}  // namespace

const LayoutHooks& layout_hooks() { return hooks(); }
void set_layout_hooks(const LayoutHooks& h) { hooks() = h; }

}  // namespace tiledsl::ir
