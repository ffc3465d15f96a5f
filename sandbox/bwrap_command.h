// The bubblewrap command line that starts a zygote: a read-only view of the system (/usr and its
// symlinks, an /etc allowlist, generated passwd/group), the interpreter and the zygote binary,
// a fresh /proc and minimal /dev, nothing of $HOME, /root, /var, caches or the server's files.
// Pure: builds argv from a description; the caller opens the fds and spawns.
#pragma once

#include <string>
#include <vector>

#include "sandbox/policy.h"

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

struct ZygoteSandbox {
  std::string bwrap_path = "bwrap";
  bool network = true;
  std::vector<Bind> binds;           // the zygote binary, the interpreter prefix, environments
  std::vector<DataFile> data_files;  // /etc/passwd, /etc/group
  std::vector<std::string> etc_allowlist;  // host paths bound read-only when they exist
  std::string hostname = "sandbox";
  std::string work_dir;               // the runs' work dir: the zygote's home tmpfs there
  std::vector<std::string> command;   // the zygote's path inside the sandbox, then its arguments
};

// Host paths from /etc that interpreters and common packages read: TLS roots, name resolution,
// time zone, the dynamic linker cache, Debian's alternatives (libblas/liblapack for numpy),
// /etc/pythonX.Y, matplotlib's and fontconfig's configuration, MIME types. Never secrets
// (shadow, sudoers, ssh keys, ssl/private).
std::vector<std::string> default_etc_allowlist(const std::string& python_major_minor);

// The minimal account files of the sandbox: the run's user (kRunUid) and nobody.
std::string minimal_passwd();
std::string minimal_group();

// argv for execve: bwrap, its options, "--", then `command`. The top-level /lib*, /bin and /sbin
// entries are mirrored as symlinks or read-only binds, as they are on this host.
std::vector<std::string> build_bwrap_argv(const ZygoteSandbox& sandbox);

}  // namespace sandbox
