#include "sandbox/bwrap_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>

#include "sandbox/mounts.h"
#include "sandbox/namespaces.h"

namespace sandbox {

std::vector<std::string> default_etc_allowlist(const std::string& python_major_minor) {
  std::vector<std::string> paths = {
      // TLS roots and OpenSSL's configuration (not /etc/ssl/private)
      "/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/ca-certificates.conf",
      "/etc/pki/tls/certs", "/etc/pki/ca-trust",
      // name and service resolution
      "/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf", "/etc/nsswitch.conf",
      "/etc/services", "/etc/protocols", "/etc/networks",
      // time zone, dynamic linker, Debian alternatives (libblas/liblapack for numpy)
      "/etc/localtime", "/etc/timezone", "/etc/ld.so.cache", "/etc/ld.so.conf",
      "/etc/ld.so.conf.d", "/etc/alternatives",
      // what interpreters and common packages read
      "/etc/matplotlibrc", "/etc/fonts", "/etc/mime.types", "/etc/os-release"};
  if (!python_major_minor.empty()) paths.push_back("/etc/python" + python_major_minor);
  return paths;
}

namespace {

bool within(const std::string& path, const std::string& dir) {
  if (dir.empty() || path.size() < dir.size() || path.compare(0, dir.size(), dir) != 0) return false;
  return path.size() == dir.size() || path[dir.size()] == '/' || dir.back() == '/';
}

}  // namespace

void add_host_path(std::vector<std::string>& paths, const std::string& path) {
  if (path.empty() || within(path, "/usr")) return;
  for (const auto& p : paths) {
    if (within(path, p)) return;
  }
  paths.push_back(path);
}

std::string minimal_passwd() {
  return "sandbox:x:" + std::to_string(kRunUid) + ":" + std::to_string(kRunGid) + ":sandbox:" +
         kRunWorkDir + ":/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
}

std::string minimal_group() {
  return "sandbox:x:" + std::to_string(kRunGid) + ":\nnogroup:x:65534:\n";
}

std::vector<std::string> build_bwrap_argv(const BwrapSandbox& sandbox) {
  std::vector<std::string> argv = {sandbox.bwrap_path};
  auto add = [&argv](std::initializer_list<std::string> items) {
    argv.insert(argv.end(), items.begin(), items.end());
  };

  // The sandbox ends with the process that started it.
  add({"--die-with-parent"});
  // A new session: no ioctl(TIOCSTI) into the server's terminal.
  add({"--new-session"});
  // Every namespace: user, pid, mount, ipc, uts, cgroup and network.
  add({"--unshare-all", "--unshare-user"});
  // The host's network only when the policy allows it.
  if (sandbox.network) add({"--share-net"});
  // No user namespaces inside, unless its processes need their own (the zygote's runs).
  if (!sandbox.nested_user_namespaces) add({"--disable-userns"});
  // Not the host's name.
  add({"--hostname", sandbox.hostname});

  // The system, read-only: /usr, and the top-level entries as they are on this host
  // (merged-/usr hosts have them as symlinks into /usr, others as directories).
  add({"--ro-bind", "/usr", "/usr"});
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    struct stat st {};
    if (::lstat(top, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      std::array<char, 4096> target{};
      const ssize_t n = ::readlink(top, target.data(), target.size() - 1);
      if (n > 0) add({"--symlink", std::string(target.data(), static_cast<std::size_t>(n)), top});
    } else if (S_ISDIR(st.st_mode)) {
      add({"--ro-bind", top, top});
    }
  }
  // The /etc allowlist, where the host has each entry.
  for (const auto& path : default_etc_allowlist(sandbox.python_major_minor)) {
    add({"--ro-bind-try", path, path});
  }
  // Generated files (account files), read-only.
  for (const auto& file : sandbox.data_files) {
    add({"--perms", "0444", "--ro-bind-data", std::to_string(file.fd), file.dest});
  }

  // A fresh /proc for its pid namespace, a minimal /dev.
  add({"--proc", "/proc", "--dev", "/dev"});
  // Scratch space, before the host paths (one of them may live under /tmp).
  add({sandbox.tmp == Tmp::tmpfs ? "--tmpfs" : "--dir", "/tmp"});
  // The zygote's own tmpfs on the work dir: the home in which it imports preloads (a package
  // may write its configuration or caches there, as it would in a script's home). Each run
  // mounts a fresh tmpfs over it, so no run sees it. (No --size: bwrap before 0.7 lacks it,
  // and only the zygote's own imports write there.)
  if (!sandbox.work_dir.empty()) add({"--tmpfs", sandbox.work_dir});

  // The host paths the caller names: read-only, then the few it may write.
  for (const auto& bind : sandbox.binds) add({"--ro-bind", bind.source, bind.dest});
  for (const auto& path : sandbox.writable) add({"--bind", path, path});

  // The sandbox's root and /dev are tmpfs: read-only once everything is mounted, or one process
  // could leave files there for the next. (Mounts on them, such as /tmp, keep their own flags.)
  if (sandbox.read_only_root) add({"--remount-ro", "/dev", "--remount-ro", "/"});

  if (sandbox.seccomp_fd >= 0) add({"--seccomp", std::to_string(sandbox.seccomp_fd)});
  add({"--chdir", sandbox.chdir, "--"});
  argv.insert(argv.end(), sandbox.command.begin(), sandbox.command.end());
  return argv;
}

}  // namespace sandbox
