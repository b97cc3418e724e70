// The library's one pool of worker threads, for work that splits across cores: the interpreter's
// programs and the autotuner's compiles. Threads start on first use and are reused; a call never
// waits for a worker to come free, so nested and concurrent calls cannot deadlock.
#pragma once

#include <functional>

namespace tiledsl::runtime {

// Runs `body` on up to `n` threads at once: the caller's and up to n - 1 of the pool's. Returns
// when every copy that started has returned. A copy the pool reaches only after the caller's copy
// has returned does not start, so `body` must take its work from a shared counter (any number of
// copies from one to n then finishes it). The first exception a copy throws is rethrown here.
void run_team(int n, const std::function<void()>& body);

// Worker threads the pool holds now (for tests).
int pool_threads();

}  // namespace tiledsl::runtime
