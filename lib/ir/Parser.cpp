#include "ir/Parser.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include "ir/Builder.h"
#include "ir/LayoutHooks.h"
#include "ir/Verifier.h"
#include "tiledsl/error.h"

namespace tiledsl::ir {

namespace {
class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  std::unique_ptr<Function> function() {
    auto f = std::make_unique<Function>();
    keyword("kernel");
    expect('@');
    f->name = ident();
    expect('(');
    while (!accept(')')) {
      if (!f->arg_names.empty()) expect(',');
      expect('%');
      std::string n = ident();
      expect(':');
      Value* a = f->body.add_arg(type());
      define(n, a);
      f->arg_names.push_back(n);
      Attrs attrs;
      skip_ws();
      if (peek() == '{') attrs = attr_dict();
      f->arg_attrs.push_back(std::move(attrs));
    }
    skip_ws();
    if (t_.substr(pos_, 10) == "attributes") {
      keyword("attributes");
      f->attrs = attr_dict();
    }
    Builder b(*f);
    expect('{');
    ops(b, &f->body);
    expect('}');
    skip_ws();
    if (pos_ != t_.size()) error("unexpected text after the kernel");
    return f;
  }

 private:
  [[noreturn]] void error(const std::string& msg) const { error_at(pos_, msg); }
  // Errors about a name point at its first character.
  [[noreturn]] void error_at_token(const std::string& msg) const { error_at(tok_, msg); }
  [[noreturn]] void error_at(size_t at, const std::string& msg) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < t_.size(); ++i) {
      if (t_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error(fmt::format("<ir>:{}:{}: parse error: {}", line, col, msg));
  }
  void skip_ws() {
    while (pos_ < t_.size()) {
      if (std::isspace(static_cast<unsigned char>(t_[pos_])))
        ++pos_;
      else if (t_.substr(pos_, 2) == "//") {
        while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
      } else
        break;
    }
  }
  char peek() {
    skip_ws();
    return pos_ < t_.size() ? t_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) error(fmt::format("expected '{}'", c));
  }
  void keyword(std::string_view k) {
    skip_ws();
    if (t_.substr(pos_, k.size()) != k) error(fmt::format("expected '{}'", k));
    pos_ += k.size();
  }
  std::string ident() {
    skip_ws();
    size_t s = tok_ = pos_;
    while (pos_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '_')) ++pos_;
    if (s == pos_) error("expected a name");
    return std::string(t_.substr(s, pos_ - s));
  }
  int64_t integer() {
    skip_ws();
    size_t s = pos_;
    if (pos_ < t_.size() && t_[pos_] == '-') ++pos_;
    while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) ++pos_;
    if (s == pos_) error("expected an integer");
    return to_int(std::string(t_.substr(s, pos_ - s)), s);
  }
  int64_t to_int(const std::string& tok, size_t at) const {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(tok.c_str(), &end, 10);
    if (errno == ERANGE || end != tok.c_str() + tok.size())
      error_at(at, fmt::format("'{}' is not a 64-bit integer", tok));
    return v;
  }
  double to_double(const std::string& tok, size_t at) const {
    char* end = nullptr;
    double v = std::strtod(tok.c_str(), &end);
    if (end != tok.c_str() + tok.size()) error_at(at, fmt::format("'{}' is not a number", tok));
    return v;
  }
  // Counts one level of nesting (a region or a type inside a type) for as long as it lives.
  struct Nest {
    Nest(Parser& p, int& depth, int limit, const char* what) : depth_(depth) {
      if (++depth_ > limit) p.error(fmt::format("{} nest more than {} deep", what, limit));
    }
    ~Nest() { --depth_; }
    int& depth_;
  };

  std::string string_lit() {
    expect('"');
    std::string s;
    while (pos_ < t_.size() && t_[pos_] != '"') {
      if (t_[pos_] == '\\' && pos_ + 1 < t_.size()) {
        ++pos_;
        s += t_[pos_] == 'n' ? '\n' : t_[pos_];
      } else {
        s += t_[pos_];
      }
      ++pos_;
    }
    expect('"');
    return s;
  }

  Type type() {
    Nest nest(*this, type_depth_, kMaxTypeDepth, "types");
    std::string n = ident();
    if (n == "ptr") {
      expect('<');
      Type p = type();
      expect('>');
      return Type::pointer(p);
    }
    if (n == "tile") {
      expect('<');
      std::vector<int64_t> shape;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        shape.push_back(integer());
        if (pos_ >= t_.size() || t_[pos_] != 'x') error("expected 'x' in a tile shape");
        ++pos_;
      }
      Type e = type();
      const Layout* layout = accept(',') ? this->layout() : nullptr;
      expect('>');
      return Type::tile(shape, e, layout);
    }
    DType d;
    if (!parse_dtype(n, d)) error_at_token(fmt::format("unknown type '{}'", n));
    return Type::scalar(d);
  }

  // The syntax belongs to the layout classes in lib/passes (ir/LayoutHooks.h).
  const Layout* layout() {
    skip_ws();
    const auto parse = layout_hooks().parse;
    if (!parse) error("layouts need the passes library (tiledsl_passes), which reads them");
    size_t used = 0;
    std::string problem;
    const Layout* l = parse(t_.substr(pos_), used, problem);
    if (!l) error_at(pos_ + used, problem);
    pos_ += used;
    return l;
  }

  Attr attr_value() {
    char c = peek();
    if (c == '"') return string_lit();
    if (c == '[') {
      ++pos_;
      std::vector<int64_t> v;
      while (!accept(']')) {
        if (!v.empty()) expect(',');
        v.push_back(integer());
      }
      return v;
    }
    size_t s = pos_;
    while (pos_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[pos_])) ||
                                std::string_view("-+.").find(t_[pos_]) != std::string_view::npos))
      ++pos_;
    std::string tok(t_.substr(s, pos_ - s));
    if (tok.empty()) error("expected an attribute value");
    if (tok == "inf") return std::numeric_limits<double>::infinity();
    if (tok == "-inf") return -std::numeric_limits<double>::infinity();
    if (tok == "nan" || tok == "-nan") return std::numeric_limits<double>::quiet_NaN();
    if (tok.find_first_of(".e") != std::string::npos) return to_double(tok, s);
    return to_int(tok, s);
  }

  Attrs attr_dict() {
    expect('{');
    Attrs a;
    while (!accept('}')) {
      if (!a.empty()) expect(',');
      std::string k = ident();
      expect('=');
      a[k] = attr_value();
    }
    return a;
  }

  void define(const std::string& n, Value* v) {
    if (!names_.emplace(n, v).second) error(fmt::format("%{} is defined twice", n));
  }
  Value* use() {
    expect('%');
    std::string n = ident();
    auto it = names_.find(n);
    if (it == names_.end()) error_at(tok_ - 1, fmt::format("use of undefined value %{}", n));
    return it->second;
  }

  void ops(Builder& b, Block* block) {
    while (peek() == '%' || std::isalpha(static_cast<unsigned char>(peek()))) op(b, block);
  }

  void op(Builder& b, Block* block) {
    std::vector<std::string> results;
    if (peek() == '%') {
      do {
        expect('%');
        results.push_back(ident());
      } while (accept(','));
      expect('=');
    }
    std::string mn = ident();
    OpKind kind;
    if (!parse_mnemonic(mn, kind)) error_at_token(fmt::format("unknown op '{}'", mn));
    expect('(');
    std::vector<Value*> operands;
    while (!accept(')')) {
      if (!operands.empty()) expect(',');
      operands.push_back(use());
    }
    Attrs attrs;
    if (peek() == '{' && !next_is_region()) attrs = attr_dict();
    std::vector<Type> types;
    if (accept(':')) {
      do types.push_back(type());
      while (accept(','));
    }
    if (types.size() != results.size())
      error(fmt::format("'{}' names {} results but gives {} types", mn, results.size(), types.size()));
    if (kind == OpKind::Constant) float_constant(attrs, types);
    b.set_block(block);
    Op* o = b.create(kind, operands, types, attrs, {});
    for (size_t i = 0; i < results.size(); ++i) define(results[i], o->result(i));
    while (peek() == '{' && next_is_region()) {
      expect('{');
      expect('^');
      expect('(');
      Nest nest(*this, region_depth_, kMaxRegionDepth, "regions");
      Block* r = o->add_region();
      while (!accept(')')) {
        if (!r->args.empty()) expect(',');
        expect('%');
        std::string n = ident();
        expect(':');
        define(n, r->add_arg(type()));
      }
      expect(':');
      ops(b, r);
      expect('}');
    }
    skip_ws();
    if (t_.substr(pos_, 4) == "loc(") {
      pos_ += 4;
      o->loc.file = string_lit();
      expect(':');
      o->loc.line = location_number();
      expect(':');
      o->loc.column = location_number();
      expect(')');
    }
  }

  // A float constant's text is rounded to its type, as 0.1f in C: `value = 0.1 : f32` holds the
  // f32 nearest 0.1, and `value = 1 : f32` is 1.0.
  static void float_constant(Attrs& attrs, const std::vector<Type>& types) {
    auto it = attrs.find("value");
    if (it == attrs.end() || types.size() != 1 || !types[0].is_scalar() || !is_float(types[0].dtype())) return;
    if (auto* i = std::get_if<int64_t>(&it->second)) it->second = static_cast<double>(*i);
    if (auto* d = std::get_if<double>(&it->second)) *d = round_to(types[0].dtype(), *d);
  }

  unsigned location_number() {
    size_t at = pos_;
    int64_t v = integer();
    if (v < 0 || v > UINT32_MAX) error_at(at, "a line or column must be from 0 to 2^32 - 1");
    return static_cast<unsigned>(v);
  }

  bool next_is_region() {
    size_t save = pos_;
    expect('{');
    bool r = peek() == '^';
    pos_ = save;
    return r;
  }

  static constexpr int kMaxTypeDepth = 8;
  std::string_view t_;
  size_t pos_ = 0;
  int type_depth_ = 0, region_depth_ = 0;
  size_t tok_ = 0;  // start of the last name read
  std::unordered_map<std::string, Value*> names_;
};
}  // namespace

std::unique_ptr<Function> parse(std::string_view text) { return Parser(text).function(); }

}  // namespace tiledsl::ir
