#include "ir/Type.h"

#include <fmt/format.h>

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>

namespace tiledsl::ir {

enum class TypeKind { Scalar, Pointer, Tile };

struct TypeStorage {
  TypeKind kind;
  DType dtype;                 // Scalar
  const TypeStorage* inner;    // Pointer: pointee; Tile: element
  std::vector<int64_t> shape;  // Tile
  const Layout* layout;        // Tile, optional
};

namespace {
struct TypeTable {
  std::mutex mu;
  std::deque<TypeStorage> storage;
  std::map<std::tuple<int, int, const void*, std::vector<int64_t>, const void*>, const TypeStorage*> index;

  const TypeStorage* get(TypeKind k, DType d, const TypeStorage* inner, const std::vector<int64_t>& shape,
                         const Layout* layout) {
    std::lock_guard lock(mu);
    auto key = std::make_tuple(static_cast<int>(k), static_cast<int>(d), static_cast<const void*>(inner), shape,
                               static_cast<const void*>(layout));
    auto it = index.find(key);
    if (it != index.end()) return it->second;
    storage.push_back(TypeStorage{k, d, inner, shape, layout});
    index.emplace(std::move(key), &storage.back());
    return &storage.back();
  }
};
TypeTable& table() {
  static TypeTable* t = new TypeTable;  // never destroyed: types outlive every static
  return *t;
}
const std::vector<int64_t> kNoShape;
}  // namespace

Type Type::scalar(DType t) { return Type(table().get(TypeKind::Scalar, t, nullptr, {}, nullptr)); }
Type Type::pointer(Type pointee) { return Type(table().get(TypeKind::Pointer, DType::i64, pointee.s_, {}, nullptr)); }
Type Type::tile(const std::vector<int64_t>& shape, Type element, const Layout* layout) {
  if (shape.empty()) return element;
  return Type(table().get(TypeKind::Tile, element.dtype(), element.s_, shape, layout));
}

bool Type::is_scalar() const { return s_->kind == TypeKind::Scalar; }
bool Type::is_pointer() const { return s_->kind == TypeKind::Pointer; }
bool Type::is_tile() const { return s_->kind == TypeKind::Tile; }
Type Type::element() const { return is_tile() ? Type(s_->inner) : *this; }
Type Type::pointee() const {
  Type e = element();
  return e.is_pointer() ? Type(e.s_->inner) : Type();
}
DType Type::dtype() const { return element().s_->dtype; }
const std::vector<int64_t>& Type::shape() const { return is_tile() ? s_->shape : kNoShape; }
int64_t Type::numel() const {
  // Saturates instead of overflowing: the verifier rejects such tiles, but must be able to ask.
  int64_t n = 1;
  for (int64_t d : shape()) {
    if (d < 0) return -1;
    if (d != 0 && n > INT64_MAX / d) return INT64_MAX;
    n *= d;
  }
  return n;
}
const Layout* Type::layout() const { return is_tile() ? s_->layout : nullptr; }
Type Type::with_shape(const std::vector<int64_t>& shape) const { return tile(shape, element()); }
Type Type::with_element(Type e) const { return is_tile() ? tile(shape(), e, layout()) : e; }

std::string shape_str(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string Type::str() const {
  if (!s_) return "<null>";
  switch (s_->kind) {
    case TypeKind::Scalar:
      return std::string(name(s_->dtype));
    case TypeKind::Pointer:
      return fmt::format("ptr<{}>", Type(s_->inner).str());
    case TypeKind::Tile: {
      std::string s = fmt::format("tile<{}x{}", fmt::join(s_->shape, "x"), Type(s_->inner).str());
      if (s_->layout) s += ", " + s_->layout->str();
      return s + ">";
    }
  }
  return "";
}

}  // namespace tiledsl::ir
