// Failure of one sandbox setup step: the message says which step and what to do about it.
#pragma once

#include <stdexcept>

namespace sandbox {

struct SetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace sandbox
