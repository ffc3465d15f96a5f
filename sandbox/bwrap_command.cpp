#include "sandbox/bwrap_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>

#include "sandbox/mounts.h"
#include "sandbox/namespaces.h"

namespace sandbox {

std::vector<std::string> default_etc_allowlist(const std::string& python_major_minor) {
  std::vector<std::string> paths = {
      // TLS roots (not /etc/ssl/private)
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

std::string minimal_passwd() {
  return "sandbox:x:" + std::to_string(kRunUid) + ":" + std::to_string(kRunGid) + ":sandbox:" +
         kRunWorkDir + ":/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
}

std::string minimal_group() {
  return "sandbox:x:" + std::to_string(kRunGid) + ":\nnogroup:x:65534:\n";
}

std::vector<std::string> build_bwrap_argv(const ZygoteSandbox& sandbox) {
  std::vector<std::string> argv = {sandbox.bwrap_path};
  auto add = [&argv](std::initializer_list<std::string> items) {
    argv.insert(argv.end(), items.begin(), items.end());
  };
  // No --disable-userns here: each run's child needs a nested user namespace of its own; the
  // run's seccomp filter (sandbox/seccomp_filter.h) denies any further one inside the run.
  add({"--die-with-parent", "--new-session", "--unshare-all", "--unshare-user"});
  if (sandbox.network) add({"--share-net"});
  add({"--hostname", sandbox.hostname});

  add({"--ro-bind", "/usr", "/usr"});
  // Merged-/usr hosts have these as symlinks into /usr; others as directories.
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
  for (const auto& path : sandbox.etc_allowlist) add({"--ro-bind-try", path, path});
  for (const auto& file : sandbox.data_files) {
    add({"--perms", "0444", "--ro-bind-data", std::to_string(file.fd), file.dest});
  }
  for (const auto& bind : sandbox.binds) add({"--ro-bind", bind.source, bind.dest});
  add({"--proc", "/proc", "--dev", "/dev", "--dir", "/tmp"});
  // The zygote's own tmpfs on the work dir: the home in which it imports preloads (a package
  // may write its configuration or caches there, as it would in a script's home). Each run
  // mounts a fresh tmpfs over it, so no run sees it. (No --size: bwrap before 0.7 lacks it,
  // and only the zygote's own imports write there.)
  if (!sandbox.work_dir.empty()) add({"--tmpfs", sandbox.work_dir});
  // The sandbox's root and /dev are tmpfs owned by the uid the runs map to: read-only, or a run
  // could leave files there for the next one. Runs get their own tmpfs on /tmp, the work dir
  // and /dev/shm.
  add({"--remount-ro", "/dev", "--remount-ro", "/"});
  add({"--chdir", "/", "--"});
  argv.insert(argv.end(), sandbox.command.begin(), sandbox.command.end());
  return argv;
}

}  // namespace sandbox
