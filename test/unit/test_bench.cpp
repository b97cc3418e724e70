// tl::bench statistics and the report helper.
#include <tiledsl/tiledsl.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

namespace tl = tiledsl;

TEST_CASE("bench reports ordered statistics of the timed runs", "[unit]") {
  int calls = 0;
  auto r = tl::bench(
      [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::microseconds(200 + 50 * (calls % 3)));
      },
      {.warmup = 3, .rep = 21, .quantiles = {0.1, 0.9}, .flush_l2 = false});
  CHECK(calls == 24);
  REQUIRE(r.quantiles_ms.size() == 2);
  CHECK(r.min_ms >= 0.2);
  CHECK(r.min_ms <= r.quantiles_ms[0]);
  CHECK(r.quantiles_ms[0] <= r.median_ms);
  CHECK(r.median_ms <= r.quantiles_ms[1]);
  CHECK(r.quantiles_ms[1] <= r.max_ms);
  CHECK(r.mean_ms >= r.min_ms);
  CHECK_THROWS_WITH(tl::bench([] {}, {.warmup = 0, .rep = 0}),
                    "bench: rep must be at least 1 and warmup at least 0, got 0 and 0");
}

TEST_CASE("report prints an aligned table and RFC 4180 CSV", "[unit]") {
  tl::Report r({"case", "ms", "note"});
  r.add_row({"add n=2^20", "0.0081", ""});
  r.add_row({"softmax", "0.041", "has, comma and \"quote\""});
  CHECK(r.table() ==
        "case        ms      note\n"
        "----------  ------  ----------------------\n"
        "add n=2^20  0.0081\n"
        "softmax     0.041   has, comma and \"quote\"\n");
  CHECK(r.csv() == "case,ms,note\nadd n=2^20,0.0081,\nsoftmax,0.041,\"has, comma and \"\"quote\"\"\"\n");
  CHECK_THROWS_WITH(r.add_row({"x"}), "Report::add_row: 1 cells for 3 columns");
}
