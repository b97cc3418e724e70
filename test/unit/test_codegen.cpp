// Layout mapping: (register, lane, warp) -> index -> (register, lane, warp) round trips, and
// every element of a tile has an owner.
#include <catch2/catch.hpp>
#include <set>

#include "passes/Layouts.h"

using namespace tiledsl;
using passes::BlockedLayout;
using passes::DistributedLayout;
using passes::Owner;
using passes::Shape;
using passes::SliceLayout;

namespace {
// Checks the round trip for every thread and register; returns how many distinct elements are held.
size_t check_round_trip(const DistributedLayout& l, const Shape& shape) {
  std::set<Shape> seen;
  for (int warp = 0; warp < l.num_warps(); ++warp)
    for (int lane = 0; lane < 32; ++lane)
      for (int64_t reg = 0; reg < l.num_regs(shape); ++reg) {
        Owner o{reg, lane, warp};
        Shape idx = l.index(shape, o);
        for (size_t d = 0; d < shape.size(); ++d) REQUIRE((idx[d] >= 0 && idx[d] < shape[d]));
        seen.insert(idx);
        // The owner found for an index holds it.
        CHECK(l.index(shape, l.locate(shape, idx)) == idx);
      }
  return seen.size();
}
int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
}  // namespace

TEST_CASE("blocked layout: exact round trip when the tile covers the CTA", "[unit]") {
  const auto* l = BlockedLayout::get({4}, {32}, {4}, {0});
  CHECK(l->str() == "blocked<spt=[4], tpw=[32], wpc=[4], order=[0]>");
  Shape shape{1024};
  CHECK(l->num_regs(shape) == 8);
  // Thread t holds 4 consecutive elements, and again 512 further on.
  CHECK(l->index(shape, Owner{0, 1, 0}) == Shape{4});
  CHECK(l->index(shape, Owner{3, 1, 1}) == Shape{128 + 4 + 3});
  CHECK(l->index(shape, Owner{4, 0, 0}) == Shape{512});
  for (int warp = 0; warp < 4; ++warp)
    for (int lane = 0; lane < 32; ++lane)
      for (int64_t reg = 0; reg < 8; ++reg) {
        Owner o{reg, lane, warp};
        CHECK(l->locate(shape, l->index(shape, o)) == o);
      }
  CHECK(check_round_trip(*l, shape) == 1024);
}

TEST_CASE("blocked layout: 2-D, both orders", "[unit]") {
  for (auto order : {std::vector<int>{1, 0}, std::vector<int>{0, 1}}) {
    const auto* l = BlockedLayout::get({2, 4}, {4, 8}, {2, 2}, order);
    Shape shape{32, 64};
    for (int warp = 0; warp < 4; ++warp)
      for (int lane = 0; lane < 32; ++lane)
        for (int64_t reg = 0; reg < l->num_regs(shape); ++reg) {
          Owner o{reg, lane, warp};
          CHECK(l->locate(shape, l->index(shape, o)) == o);
        }
    CHECK(check_round_trip(*l, shape) == 32 * 64);
  }
}

TEST_CASE("blocked layout: a small tile is replicated, every element still has an owner", "[unit]") {
  const auto* l = BlockedLayout::get({1, 4}, {4, 8}, {4, 1}, {1, 0});
  for (Shape shape : {Shape{4, 8}, Shape{1, 32}, Shape{64, 4}})
    CHECK(check_round_trip(*l, shape) == static_cast<size_t>(numel(shape)));
}

TEST_CASE("slice layout: the parent without one dimension", "[unit]") {
  const auto* parent = BlockedLayout::get({1, 4}, {2, 16}, {4, 1}, {1, 0});
  const auto* rows = SliceLayout::get(parent, 1);  // a reduction along dimension 1
  const auto* cols = SliceLayout::get(parent, 0);
  CHECK(rows->str() == "slice<dim=1, blocked<spt=[1, 4], tpw=[2, 16], wpc=[4, 1], order=[1, 0]>>");
  CHECK(SliceLayout::get(parent, 1) == rows);  // interned
  CHECK(check_round_trip(*rows, {64}) == 64);
  CHECK(check_round_trip(*cols, {128}) == 128);
  // Row r of the slice is held by the threads that held row r of the parent.
  Shape pshape{64, 128};
  for (int warp = 0; warp < 4; ++warp)
    for (int lane = 0; lane < 32; ++lane)
      for (int64_t reg = 0; reg < rows->num_regs({64}); ++reg) {
        Shape r = rows->index({64}, Owner{reg, lane, warp});
        bool held = false;
        for (int64_t p = 0; p < parent->num_regs(pshape); ++p)
          held |= parent->index(pshape, Owner{p, lane, warp})[0] == r[0];
        CHECK(held);
      }
}

TEST_CASE("default blocked layouts are coalesced along the last dimension", "[unit]") {
  const auto* add = passes::default_blocked({1024}, 4, 4);
  CHECK(add == BlockedLayout::get({4}, {32}, {4}, {0}));
  const auto* tile = passes::default_blocked({64, 32}, 4, 4);
  CHECK(tile->size_per_thread() == std::vector<int>{1, 4});
  CHECK(tile->threads_per_warp() == std::vector<int>{4, 8});
  CHECK(tile->warps_per_cta() == std::vector<int>{4, 1});
  CHECK(check_round_trip(*tile, {64, 32}) == 64 * 32);
}
