// The one exception type tiledsl throws for a user's mistake: a message that names the user's
// file:line, the kernel, the op and the shapes or types involved.
#pragma once

#include <stdexcept>
#include <string>

namespace tiledsl {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tiledsl
