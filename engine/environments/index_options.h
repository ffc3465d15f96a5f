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
};

}  // namespace engine
