// The exception types tiledsl throws: Error for a user's mistake (a message that names the user's
// file:line, the kernel, the op and the shapes or types involved), InternalError for ours.
#pragma once

#include <stdexcept>
#include <string>

namespace tiledsl {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Our own mistake, not the user's: a broken invariant inside tiledsl ("tiledsl internal error at
// File.cpp:NN: ..."). Worth a bug report; the autotuner lets it through instead of skipping the
// config that met it.
class InternalError : public Error {
 public:
  using Error::Error;
};

}  // namespace tiledsl
