// What isolation this host can really give, probed (bwrap present and working, user namespaces,
// seccomp, cgroups). Blocking (runs bwrap once): call it off the server's event loop.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sandbox/cgroup.h"
#include "sandbox/policy.h"

namespace sandbox {

struct ProbeResult {
  std::string bwrap_path;         // "" = not found
  std::string bwrap_version;
  bool bwrap_disable_userns = false;  // bwrap knows --disable-userns (>= 0.8.0)
  bool userns_works = false;      // an unprivileged user namespace could be created
  // Inside that sandbox, a further user+pid+mount namespace could be created, as every run's
  // child does (false when not checked: no /usr/bin/unshare to check with).
  bool nested_userns_works = false;
  bool nested_userns_checked = false;
  bool seccomp_available = false;
  std::string cgroup_mode;        // e.g. "v2 delegated: <path>", "v1 memory+pids", "none"
  std::string memory_limit_mechanism;   // e.g. "cgroup v1 memory.limit_in_bytes", "RLIMIT_DATA"
  std::string process_limit_mechanism;  // e.g. "cgroup pids.max", "RLIMIT_NPROC"
  std::string file_size_limit_mechanism;  // "RLIMIT_FSIZE"
  std::string cpu_limit_mechanism;        // "RLIMIT_CPU (...)"
  std::string problem;            // "" when the native backend can run; else what is wrong
  std::string fix;                // the exact fix (package to install, sysctl, AppArmor profile)
  std::vector<std::pair<std::string, std::string>> details;  // extra "key: value" lines

  bool native_ready() const { return problem.empty(); }
};

// Probes everything; cgroups are only detected (find_cgroup_hierarchies, no changes made).
ProbeResult probe_host(const Policy& policy);
// The same, reporting the cgroup setup the server really prepared.
ProbeResult probe_host(const Policy& policy, const CgroupSetup& cgroups);
// The same with a given bwrap ("" = none installed): for tests and a future --bwrap-path.
ProbeResult probe_host(const Policy& policy, const CgroupSetup& cgroups,
                       const std::string& bwrap_path);

// Where bwrap is: $PATH, then /usr/bin/bwrap and /usr/local/bin/bwrap; "" when absent.
std::string find_bwrap();

}  // namespace sandbox
