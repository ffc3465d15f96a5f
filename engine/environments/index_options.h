// Where installers look for packages: the operator's --index-url, --extra-index-url,
// --find-links and --offline (none set: the installer's own configuration decides).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace engine {

struct IndexOptions {
  std::optional<std::string> index_url;
  std::vector<std::string> extra_index_urls;
  std::vector<std::string> find_links;
  bool offline = false;
  // A digest of the user's own installer configuration that reaches the installer (variables and
  // configuration files, installer_config.h): environments are keyed by it too, so that changing
  // where packages come from never reuses an environment built from elsewhere.
  std::string user_configuration;
};

}  // namespace engine
