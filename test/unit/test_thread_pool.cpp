// The library's one thread pool (runtime/ThreadPool.h): every unit of work runs exactly once,
// whether teams nest, run from many threads at once, or ask for more threads than there are cores.
#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/ThreadPool.h"

using tiledsl::runtime::run_team;

namespace {
// A work-sharing body over `count` items: each item's slot is bumped once per execution.
void share(int threads, std::vector<std::atomic<int>>& hits) {
  std::atomic<size_t> next{0};
  run_team(threads, [&] {
    for (size_t i; (i = next++) < hits.size();) ++hits[i];
  });
}
bool each_once(const std::vector<std::atomic<int>>& hits) {
  for (const auto& h : hits)
    if (h != 1) return false;
  return true;
}
}  // namespace

TEST_CASE("a team runs every item once, with one thread or many", "[unit]") {
  for (int threads : {1, 2, 3, 7, 33}) {
    std::vector<std::atomic<int>> hits(1237);
    share(threads, hits);
    CHECK(each_once(hits));
  }
  CHECK(tiledsl::runtime::pool_threads() >= 32);  // 33 asked for: the pool grew past the cores
}

TEST_CASE("teams nest and run from many threads at once without deadlock", "[unit]") {
  constexpr int kOuter = 5, kCallers = 6;
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&] {
      std::vector<std::atomic<int>> outer(kOuter);
      std::atomic<size_t> next{0};
      run_team(4, [&] {
        for (size_t i; (i = next++) < outer.size();) {
          std::vector<std::atomic<int>> inner(301);
          share(3, inner);  // a team inside a team: its caller is a pool thread
          if (!each_once(inner)) ++wrong;
          ++outer[i];
        }
      });
      if (!each_once(outer)) ++wrong;
    });
  for (auto& t : callers) t.join();
  CHECK(wrong == 0);
}

TEST_CASE("an exception in any copy reaches the caller after every copy has stopped", "[unit]") {
  std::atomic<int> started{0}, finished{0};
  auto body = [&] {
    int me = started++;
    if (me == 0) throw std::runtime_error("copy failed");
    ++finished;
  };
  CHECK_THROWS_WITH(run_team(4, body), "copy failed");
  CHECK(finished == started - 1);
  // The pool still works afterwards.
  std::vector<std::atomic<int>> hits(100);
  share(4, hits);
  CHECK(each_once(hits));
}
