#include "engine/interpreters/probe_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace engine {
namespace {

using nlohmann::json;
constexpr int kFormat = 1;

// What must not have changed for a cached probe to stand.
std::optional<json> identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return json{{"path", path},
              {"dev", static_cast<std::uint64_t>(st.st_dev)},
              {"ino", static_cast<std::uint64_t>(st.st_ino)},
              {"size", static_cast<std::int64_t>(st.st_size)},
              {"mtime_ns", static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec}};
}

json to_json(const Interpreter& in) {
  const auto& m = in.markers;
  return {{"version", in.version},         {"major_minor", in.major_minor},
          {"executable", in.executable},   {"prefix", in.prefix},
          {"base_prefix", in.base_prefix}, {"libpython", in.libpython},
          {"site_packages", in.site_packages}, {"sys_path", in.sys_path},
          {"source", in.source},           {"found_as", in.found_as},
          {"markers",
           {{"python_version", m.python_version}, {"python_full_version", m.python_full_version},
            {"implementation_name", m.implementation_name}, {"sys_platform", m.sys_platform},
            {"platform_system", m.platform_system}, {"platform_machine", m.platform_machine},
            {"os_name", m.os_name}, {"platform_python_implementation", m.platform_python_implementation},
            {"platform_release", m.platform_release}, {"platform_version", m.platform_version},
            {"implementation_version", m.implementation_version}}}};
}

Interpreter from_json(const json& j) {
  Interpreter in;
  in.version = j.at("version").get<std::string>();
  in.major_minor = j.at("major_minor").get<std::string>();
  in.executable = j.at("executable").get<std::string>();
  in.prefix = j.at("prefix").get<std::string>();
  in.base_prefix = j.at("base_prefix").get<std::string>();
  in.libpython = j.at("libpython").get<std::string>();
  in.site_packages = j.at("site_packages").get<std::vector<std::string>>();
  in.sys_path = j.at("sys_path").get<std::vector<std::string>>();
  in.source = j.at("source").get<std::string>();
  in.found_as = j.at("found_as").get<std::string>();
  const auto& m = j.at("markers");
  in.markers.python_version = m.at("python_version").get<std::string>();
  in.markers.python_full_version = m.at("python_full_version").get<std::string>();
  in.markers.implementation_name = m.at("implementation_name").get<std::string>();
  in.markers.sys_platform = m.at("sys_platform").get<std::string>();
  in.markers.platform_system = m.at("platform_system").get<std::string>();
  in.markers.platform_machine = m.at("platform_machine").get<std::string>();
  in.markers.os_name = m.at("os_name").get<std::string>();
  in.markers.platform_python_implementation = m.at("platform_python_implementation").get<std::string>();
  in.markers.platform_release = m.at("platform_release").get<std::string>();
  in.markers.platform_version = m.at("platform_version").get<std::string>();
  in.markers.implementation_version = m.at("implementation_version").get<std::string>();
  return in;
}

}  // namespace

std::optional<Interpreter> load_cached_interpreter(const std::string& file, const std::string& candidate) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  try {
    const json doc = json::parse(in);
    if (doc.at("format").get<int>() != kFormat) return std::nullopt;
    for (const auto& entry : doc.at("entries")) {
      if (entry.at("candidate").get<std::string>() != candidate) continue;
      Interpreter interpreter = from_json(entry.at("interpreter"));
      const auto exe = identity(interpreter.executable);
      const auto lib = identity(interpreter.libpython);
      if (!exe || !lib || *exe != entry.at("executable_identity") || *lib != entry.at("libpython_identity")) {
        return std::nullopt;
      }
      return interpreter;
    }
  } catch (const std::exception&) {
    // A damaged cache is only a missed shortcut.
  }
  return std::nullopt;
}

void store_cached_interpreter(const std::string& file, const std::string& candidate,
                              const Interpreter& interpreter) {
  const auto exe = identity(interpreter.executable);
  const auto lib = identity(interpreter.libpython);
  if (!exe || !lib || file.empty()) return;
  const json doc = {{"format", kFormat},
                    {"entries", json::array({{{"candidate", candidate},
                                              {"executable_identity", *exe},
                                              {"libpython_identity", *lib},
                                              {"interpreter", to_json(interpreter)}}})}};
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
  // Written aside and renamed: a reader never sees half a file.
  const std::string tmp = file + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return;
    out << doc.dump();
    if (!out.flush()) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace engine
