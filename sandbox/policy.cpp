#include "sandbox/policy.h"

namespace sandbox {

std::optional<Backend> parse_backend(std::string_view name) {
  if (name == "native") return Backend::native;
  if (name == "docker") return Backend::docker;
  if (name == "none") return Backend::none;
  return std::nullopt;
}

std::string_view to_string(Backend backend) {
  switch (backend) {
    case Backend::native: return "native";
    case Backend::docker: return "docker";
    case Backend::none: return "none";
  }
  return "native";
}

}  // namespace sandbox
