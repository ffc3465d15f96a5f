// Which requirements an interpreter already satisfies from its own site-packages: checked by
// running that interpreter on a small probe (importlib.metadata; packaging's specifier and
// marker logic, with the dependencies of each satisfied distribution checked too). Blocking.
#pragma once

#include <string>
#include <vector>

#include "engine/environments/container.h"
#include "engine/interpreters/discovery.h"
#include "engine/packaging/script_metadata.h"

namespace engine {

struct RequirementStatus {
  Requirement requirement;
  bool satisfied = false;
  std::string installed_version;         // "" when not installed
  std::string reason;                    // why not satisfied ("not installed", "1.0 not in >=2")
  std::vector<std::string> import_names;  // top-level modules, when satisfied
};

struct RequirementCheck {
  std::vector<RequirementStatus> statuses;  // in the order given
  bool interpreter_has_pip = false;
  bool exact = false;  // false when the interpreter lacks `packaging` (then only unversioned
                       // requirements without extras count as satisfied)
};

// `extra_paths` go first on sys.path (an environment's site dir: "does this environment, on
// top of the interpreter, satisfy them?"). With `container`, the interpreter is run there. Throws std::runtime_error with an actionable
// message when the interpreter cannot be run.
RequirementCheck check_requirements(const Interpreter& interpreter,
                                    const std::vector<Requirement>& requirements,
                                    const std::vector<std::string>& extra_paths = {},
                                    const ContainerWrap& container = {});

}  // namespace engine
