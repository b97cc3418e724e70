#include "ir/Printer.h"

#include <fmt/format.h>

#include <unordered_map>

namespace tiledsl::ir {

namespace {
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string float_str(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

std::string attrs_str(const Attrs& attrs) {
  if (attrs.empty()) return "";
  std::string s = " {";
  bool first = true;
  for (const auto& [k, v] : attrs) {
    s += fmt::format("{}{} = {}", first ? "" : ", ", k, attr_str(v));
    first = false;
  }
  return s + "}";
}

class Printer {
 public:
  explicit Printer(PrintOptions o) : opts_(o) {}

  // Appends to one string: printing is linear in the size of the IR, however deep it nests.
  std::string function(const Function& f) {
    out_ = fmt::format("kernel @{}(", f.name);
    for (size_t i = 0; i < f.num_args(); ++i) {
      const Value* a = f.arg(i);
      names_[a] = "%" + f.arg_names.at(i);
      out_ += fmt::format("{}{}: {}{}", i ? ", " : "", names_[a], a->type.str(),
                          i < f.arg_attrs.size() ? attrs_str(f.arg_attrs[i]) : "");
    }
    out_ += ")";
    if (!f.attrs.empty()) out_ += " attributes" + attrs_str(f.attrs);
    out_ += " {\n";
    for (const auto& op : f.body.ops) this->op(*op, 1);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  const std::string& name(const Value* v) {
    static const std::string kUndefined = "%<undefined>";
    auto it = names_.find(v);
    return it == names_.end() ? kUndefined : it->second;
  }
  const std::string& define(const Value* v) { return names_[v] = fmt::format("%{}", next_++); }

  void op(const Op& o, int depth) {
    std::string ind(static_cast<size_t>(depth) * 2, ' ');
    out_ += ind;
    for (size_t i = 0; i < o.results.size(); ++i) {
      if (i) out_ += ", ";
      out_ += define(o.result(i));
    }
    if (!o.results.empty()) out_ += " = ";
    out_ += o.name();
    out_ += '(';
    for (size_t i = 0; i < o.operands.size(); ++i) {
      if (i) out_ += ", ";
      out_ += name(o.operands[i]);
    }
    out_ += ")" + attrs_str(o.attrs);
    if (!o.results.empty()) {
      out_ += " :";
      for (size_t i = 0; i < o.results.size(); ++i) out_ += (i ? ", " : " ") + o.result(i)->type.str();
    }
    for (const auto& r : o.regions) {
      out_ += " {\n" + ind + "^(";
      for (size_t i = 0; i < r->args.size(); ++i)
        out_ += fmt::format("{}{}: {}", i ? ", " : "", define(r->args[i].get()), r->args[i]->type.str());
      out_ += "):\n";
      for (const auto& inner : r->ops) op(*inner, depth + 1);
      out_ += ind + "}";
    }
    if (opts_.locations && o.loc.line)
      out_ += fmt::format(" loc({}:{}:{})", quote(o.loc.file), o.loc.line, o.loc.column);
    out_ += '\n';
  }

  PrintOptions opts_;
  std::unordered_map<const Value*, std::string> names_;
  unsigned next_ = 0;
  std::string out_;
};
}  // namespace

std::string attr_str(const Attr& a) {
  if (auto* i = std::get_if<int64_t>(&a)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&a)) return float_str(*d);
  if (auto* s = std::get_if<std::string>(&a)) return quote(*s);
  return fmt::format("[{}]", fmt::join(std::get<std::vector<int64_t>>(a), ", "));
}

std::string print(const Function& f, PrintOptions opts) { return Printer(opts).function(f); }

}  // namespace tiledsl::ir
