// Reads the text form written by ir/Printer.h back into a Function. Errors name the line and
// column of the text.
#pragma once

#include <memory>
#include <string_view>

#include "ir/IR.h"

namespace tiledsl::ir {

std::unique_ptr<Function> parse(std::string_view text);

}  // namespace tiledsl::ir
