// Test fixtures for dependency environments: small valid wheels (and a source distribution with
// an in-tree build backend) written into a directory for `--find-links DIR --offline`, a
// temporary directory, and a probed Interpreter for a given python executable.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/interpreters/discovery.h"

namespace fixtures {

// A directory under /tmp (mode 0755) removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct WheelSpec {
  std::string name;     // distribution name as written in METADATA
  std::string version;
  std::map<std::string, std::string> files;  // path inside the wheel -> content
  std::vector<std::string> requires_dist;
  std::string requires_python;  // "" = none
  std::string top_level;        // top_level.txt content; "" = no such file
};

// Writes <name>-<version>-py3-none-any.whl (METADATA, WHEEL, RECORD with sha256) into `dir`.
void write_wheel(const std::string& dir, const WheelSpec& spec);

// Writes <name>-<version>.tar.gz: a source distribution whose PEP 517 backend is `backend_code`
// (an in-tree module, no build requirements, so pip builds it offline).
void write_sdist(const std::string& dir, const std::string& name, const std::string& version,
                 const std::string& backend_code);

// The standard set:
//   mpes_leaf 1.0 and 2.0     (module mpes_leaf, VERSION = "1.0" / "2.0")
//   mpes_chain 1.0            (module mpes_chain; requires mpes-leaf>=1.0)
//   mpes_modern 1.0           (requires mpes-leaf>=2.0)
//   mpes_slow 1.0             (module mpes_slow; its import takes 0.3 s)
//   mpes_future 1.0           (requires Python >= 3.99)
//   mpes_hang 1.0 (sdist)     (its build backend sleeps for 120 s)
void write_standard_packages(const std::string& dir);

// Probes `python` (version, prefix, site-packages, shared libpython) the way discovery does.
engine::Interpreter probe_interpreter(const std::string& python);

// Runs `python -I -c code [args...]` with `paths` first on sys.path; returns stdout (throws on a
// non-zero exit, with stderr in the message).
std::string run_python(const std::string& python, const std::vector<std::string>& paths,
                       const std::string& code);

}  // namespace fixtures
