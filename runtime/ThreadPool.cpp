#include "runtime/ThreadPool.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tiledsl::runtime {
namespace {

// A team is one run_team call. Pool copies register in `running` before they start, and none
// registers after the caller has closed the team, so the caller's wait is bounded by the copies
// that already run: none of them waits on a queued task.
struct Team {
  std::mutex mu;
  std::condition_variable done;
  int running = 0;
  bool closed = false;
  std::exception_ptr error;
  const std::function<void()>* body = nullptr;
};

class Pool {
 public:
  // Grows to `want` workers (capped): TILEDSL_INTERPRETER_THREADS may ask for more than the cores.
  void reserve(int want) {
    std::lock_guard lock(mu_);
    want = std::min(want, kMaxWorkers);
    while (static_cast<int>(workers_.size()) < want) workers_.emplace_back([this] { work(); });
  }
  void submit(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
  }
  int size() {
    std::lock_guard lock(mu_);
    return static_cast<int>(workers_.size());
  }
  ~Pool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }

 private:
  static constexpr int kMaxWorkers = 256;
  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mu_);
        wake_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping, and nothing left
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
};

Pool& pool() {
  static Pool p;
  return p;
}

void run_copy(Team& team) {
  try {
    (*team.body)();
  } catch (...) {
    std::lock_guard lock(team.mu);
    if (!team.error) team.error = std::current_exception();
  }
}

}  // namespace

void run_team(int n, const std::function<void()>& body) {
  if (n <= 1) {
    body();
    return;
  }
  auto team = std::make_shared<Team>();
  team->body = &body;
  pool().reserve(n - 1);
  for (int i = 1; i < n; ++i)
    pool().submit([team] {
      {
        std::lock_guard lock(team->mu);
        if (team->closed) return;
        ++team->running;
      }
      run_copy(*team);
      std::lock_guard lock(team->mu);
      if (--team->running == 0) team->done.notify_all();
    });
  run_copy(*team);
  std::unique_lock lock(team->mu);
  team->closed = true;
  team->done.wait(lock, [&] { return team->running == 0; });
  if (team->error) std::rethrow_exception(team->error);
}

int pool_threads() { return pool().size(); }

}  // namespace tiledsl::runtime
