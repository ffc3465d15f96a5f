// The bubblewrap command line of every sandboxed process the server starts: the zygote (whose
// runs then enter namespaces of their own) and the package installer. One builder, one /etc
// allowlist: a read-only view of the system (/usr and its top-level symlinks, the allowlisted
// /etc entries), the host paths the caller names, a fresh /proc and a minimal /dev, nothing of
// $HOME, /root, /var, caches or the server's files unless named.
// Pure: builds argv from a description; the caller opens the fds and spawns (sandbox/process.h).
#pragma once

#include <string>
#include <vector>

namespace sandbox {

// A host path mounted read-only inside the sandbox.
struct Bind {
  std::string source;  // host path (bwrap resolves it as the uid it runs as)
  std::string dest;    // path inside the sandbox
};

// Data written into a read-only file inside the sandbox (bwrap --ro-bind-data).
struct DataFile {
  int fd = -1;  // readable fd holding the data (e.g. a memfd), as numbered in bwrap's process
  std::string dest;
};

// What /tmp is inside the sandbox.
enum class Tmp {
  mount_point,  // an empty directory: each run mounts its own tmpfs there (the zygote)
  tmpfs,        // a tmpfs of the sandbox's own, gone with it (the installer)
};

struct BwrapSandbox {
  std::string bwrap_path = "bwrap";
  bool network = true;
  // Whether processes inside may create user namespaces: the zygote's runs each need one (the
  // run's seccomp filter denies any further one); nothing else does.
  bool nested_user_namespaces = false;
  std::string hostname = "sandbox";
  std::string python_major_minor;    // its /etc/pythonX.Y joins the /etc allowlist
  std::vector<DataFile> data_files;  // e.g. the generated /etc/passwd and /etc/group
  Tmp tmp = Tmp::tmpfs;
  std::string work_dir;              // "" or the runs' work dir: the zygote's home tmpfs there
  std::vector<Bind> binds;           // read-only
  std::vector<std::string> writable; // host paths bound read-write at the same place
  // / and /dev end read-only, so that nothing written outside the tmpfs mounts can stay for the
  // next process of the same sandbox.
  bool read_only_root = true;
  std::string chdir = "/";
  // A compiled seccomp program (sandbox/seccomp_filter.h's bpf()) that bwrap installs, with
  // no_new_privs, as the last step before it executes `command` (-1: none).
  int seccomp_fd = -1;
  std::vector<std::string> command;  // the program inside the sandbox, then its arguments
};

// The one /etc allowlist: host paths from /etc that interpreters, installers and common packages
// read: TLS roots and OpenSSL's configuration (never /etc/ssl/private), name resolution, time
// zone, the dynamic linker cache, Debian's alternatives (libblas/liblapack for numpy),
// /etc/pythonX.Y, matplotlib's and fontconfig's configuration, MIME types. Never secrets
// (shadow, sudoers, ssh keys, ssl/private).
std::vector<std::string> default_etc_allowlist(const std::string& python_major_minor);

// Adds `path` to the host paths a sandbox sees read-only at their own place, unless it is
// already there: under /usr (bound whole) or under a path `paths` holds. "" is ignored.
void add_host_path(std::vector<std::string>& paths, const std::string& path);

// The minimal account files of the zygote's sandbox: the run's user (kRunUid) and nobody.
std::string minimal_passwd();
std::string minimal_group();

// argv for execve: bwrap, its options, "--", then `command`. The top-level /lib*, /bin and /sbin
// entries are mirrored as symlinks or read-only binds, as they are on this host.
std::vector<std::string> build_bwrap_argv(const BwrapSandbox& sandbox);

}  // namespace sandbox
