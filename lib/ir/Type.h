// IR types: scalars, pointers and tiles, uniqued so that equality is pointer equality.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tiledsl/dtype.h"

namespace tiledsl::ir {

// Which thread holds which tile element. Absent before layout assignment (what the
// interpreter runs); lib/passes attaches one per tile, lib/codegen reads it.
class Layout {
 public:
  virtual ~Layout() = default;
  virtual std::string str() const = 0;
};

struct TypeStorage;

class Type {
 public:
  Type() = default;
  static Type scalar(DType t);
  static Type pointer(Type pointee);  // pointee is a scalar type
  static Type tile(const std::vector<int64_t>& shape, Type element, const Layout* layout = nullptr);

  bool is_null() const { return s_ == nullptr; }
  bool is_scalar() const;   // a dtype, no shape
  bool is_pointer() const;  // a pointer scalar
  bool is_tile() const;
  // The element of a tile, or the type itself for a scalar or pointer.
  Type element() const;
  Type pointee() const;                       // of a pointer, or of a tile of pointers
  DType dtype() const;                        // of the (element) scalar; pointers report i64
  const std::vector<int64_t>& shape() const;  // empty for scalars and pointers
  int64_t numel() const;
  const Layout* layout() const;
  // Same element, other shape; an empty shape gives the element itself.
  Type with_shape(const std::vector<int64_t>& shape) const;
  Type with_element(Type element) const;

  std::string str() const;
  bool operator==(const Type& o) const { return s_ == o.s_; }
  bool operator!=(const Type& o) const { return s_ != o.s_; }

 private:
  explicit Type(const TypeStorage* s) : s_(s) {}
  const TypeStorage* s_ = nullptr;
};

std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace tiledsl::ir
