// The state of the trace in progress on this thread: the builder that ops go into.
#pragma once

#include <source_location>

#include "ir/Builder.h"

namespace tiledsl::frontend {

struct TraceState {
  ir::Builder* builder = nullptr;
};

// The active trace; a clear error when a tl:: op is called outside a kernel being traced.
ir::Builder& builder(const std::source_location& loc);
ir::Location to_location(const std::source_location& loc);
// Whether a kernel is being traced on this thread.
bool tracing();

// Makes `b` the active builder for the lifetime of the guard.
class TraceScope {
 public:
  explicit TraceScope(ir::Builder& b);
  // Tiles that outlive the trace (kept in a variable outside the kernel body) are retired:
  // using one in a later trace is an error naming that use, not a use of freed memory.
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  ir::Builder* saved_;
};

}  // namespace tiledsl::frontend
