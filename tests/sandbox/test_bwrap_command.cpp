#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/environments/installer.h"
#include "engine/pool/zygote_process.h"
#include "sandbox/bwrap_command.h"
#include "sandbox/namespaces.h"
#include "sandbox/probe.h"
#include "sandbox/process.h"
#include "tests/support/wheel_fixtures.h"

using Argv = std::vector<std::string>;

namespace {

bool has(const Argv& argv, const std::string& item) {
  return std::find(argv.begin(), argv.end(), item) != argv.end();
}

// Index of the sequence `items` in argv, or -1.
long find_seq(const Argv& argv, const Argv& items) {
  if (items.size() > argv.size()) return -1;
  for (std::size_t i = 0; i + items.size() <= argv.size(); ++i) {
    if (std::equal(items.begin(), items.end(), argv.begin() + static_cast<long>(i))) return static_cast<long>(i);
  }
  return -1;
}

// Every source path bound with --bind/--ro-bind/--ro-bind-try (fd binds have no host path).
Argv bound_sources(const Argv& argv) {
  Argv out;
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--ro-bind" || argv[i] == "--ro-bind-try" || argv[i] == "--bind" ||
        argv[i] == "--bind-try" || argv[i] == "--dev-bind") {
      out.push_back(argv[i + 1]);
    }
  }
  return out;
}

// A zygote's sandbox.
sandbox::BwrapSandbox example(bool network) {
  sandbox::BwrapSandbox box;
  box.bwrap_path = "/usr/bin/bwrap";
  box.network = network;
  box.nested_user_namespaces = true;
  box.binds = {{"/opt/mpes/zygote", "/run/mpes/zygote"},
               {"/root/.pyenv/versions/3.12.1", "/root/.pyenv/versions/3.12.1"}};
  box.data_files = {{6, "/etc/passwd"}, {7, "/etc/group"}};
  box.python_major_minor = "3.12";
  box.tmp = sandbox::Tmp::mount_point;
  box.work_dir = "/home/sandbox";
  box.command = {"/run/mpes/zygote", "--libpython", "/x/libpython3.12.so", "--home", "/x"};
  return box;
}

// Sources of read-write binds.
Argv writable_sources(const Argv& argv) {
  Argv out;
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--bind" || argv[i] == "--bind-try" || argv[i] == "--dev-bind" ||
        argv[i] == "--dev-bind-try") {
      out.push_back(argv[i + 1]);
    }
  }
  return out;
}

Argv etc_entries(const Argv& argv) {
  Argv out;
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--ro-bind-try" && argv[i + 1].rfind("/etc/", 0) == 0) out.push_back(argv[i + 1]);
  }
  return out;
}

engine::Interpreter debian_311() {
  engine::Interpreter py;
  py.version = "3.11.2";
  py.major_minor = "3.11";
  py.executable = "/usr/bin/python3.11";
  py.prefix = py.base_prefix = "/usr";
  py.site_packages = {"/usr/local/lib/python3.11/dist-packages", "/usr/lib/python3/dist-packages"};
  return py;
}

}  // namespace

TEST_CASE("the zygote's bubblewrap isolates every namespace and keeps nested user namespaces",
          "[bwrap]") {
  const Argv argv = sandbox::build_bwrap_argv(example(true));
  CHECK(argv.front() == "/usr/bin/bwrap");
  for (const char* flag : {"--die-with-parent", "--new-session", "--unshare-all", "--unshare-user"}) {
    CHECK(has(argv, flag));
  }
  // Runs need a user namespace of their own inside: bwrap must not disable them.
  CHECK_FALSE(has(argv, "--disable-userns"));
  CHECK(find_seq(argv, {"--proc", "/proc"}) >= 0);
  CHECK(find_seq(argv, {"--dev", "/dev"}) >= 0);
  CHECK(find_seq(argv, {"--dir", "/tmp"}) >= 0);
  // The zygote's home for preload imports: a tmpfs of its own on the work dir.
  CHECK(find_seq(argv, {"--tmpfs", "/home/sandbox"}) >= 0);
  CHECK(find_seq(argv, {"--ro-bind", "/usr", "/usr"}) >= 0);
  // Nothing a run writes outside its own tmpfs mounts can persist: / and /dev end read-only,
  // after everything is mounted (bwrap applies options in order).
  const long ro_root = find_seq(argv, {"--remount-ro", "/"});
  const long ro_dev = find_seq(argv, {"--remount-ro", "/dev"});
  CHECK(ro_root > find_seq(argv, {"--tmpfs", "/home/sandbox"}));
  CHECK(ro_dev > find_seq(argv, {"--dev", "/dev"}));
  CHECK(ro_root < find_seq(argv, {"--"}));
}

TEST_CASE("network follows the policy", "[bwrap]") {
  CHECK(has(sandbox::build_bwrap_argv(example(true)), "--share-net"));
  CHECK_FALSE(has(sandbox::build_bwrap_argv(example(false)), "--share-net"));
}

TEST_CASE("the command comes last, after --, untouched", "[bwrap]") {
  const auto box = example(true);
  const Argv argv = sandbox::build_bwrap_argv(box);
  const long dash = find_seq(argv, {"--"});
  REQUIRE(dash >= 0);
  CHECK(Argv(argv.begin() + dash + 1, argv.end()) == box.command);
}

TEST_CASE("binds are read-only; generated files are passed by fd number", "[bwrap]") {
  const Argv argv = sandbox::build_bwrap_argv(example(true));
  CHECK(find_seq(argv, {"--ro-bind", "/opt/mpes/zygote", "/run/mpes/zygote"}) >= 0);
  CHECK(find_seq(argv, {"--ro-bind", "/root/.pyenv/versions/3.12.1", "/root/.pyenv/versions/3.12.1"}) >= 0);
  CHECK(find_seq(argv, {"--ro-bind-data", "6", "/etc/passwd"}) >= 0);
  CHECK(find_seq(argv, {"--ro-bind-data", "7", "/etc/group"}) >= 0);
}

TEST_CASE("only allowlisted host paths are bound, never secrets or home directories", "[bwrap]") {
  auto box = example(true);
  box.binds.clear();  // (the interpreter and zygote binds are the caller's choice)
  const Argv argv = sandbox::build_bwrap_argv(box);
  for (const auto& src : bound_sources(argv)) {
    INFO(src);
    const bool allowed = src == "/usr" || src.rfind("/etc/", 0) == 0 || src == "/bin" ||
                         src == "/sbin" || src.rfind("/lib", 0) == 0;
    CHECK(allowed);
    CHECK(src.rfind("/root", 0) != 0);
    CHECK(src.rfind("/home", 0) != 0);
    CHECK(src.rfind("/var", 0) != 0);
    CHECK(src != "/etc/shadow");
    CHECK(src != "/etc/gshadow");
    CHECK(src != "/etc/sudoers");
    CHECK(src.rfind("/etc/ssh", 0) != 0);
    CHECK(src.rfind("/etc/ssl/private", 0) != 0);
    CHECK(src != "/etc/ssl");  // would expose ssl/private
    CHECK(src != "/etc");
  }
  // What real packages need is there (Debian numpy needs alternatives and the linker cache).
  for (const char* p : {"/etc/alternatives", "/etc/ld.so.cache", "/etc/ssl/certs", "/etc/resolv.conf",
                        "/etc/hosts", "/etc/nsswitch.conf", "/etc/localtime", "/etc/python3.12",
                        "/etc/matplotlibrc", "/etc/fonts", "/etc/mime.types"}) {
    INFO(p);
    CHECK(find_seq(argv, {"--ro-bind-try", p, p}) >= 0);
  }
}

TEST_CASE("top-level /lib and /bin entries mirror this host", "[bwrap]") {
  const Argv argv = sandbox::build_bwrap_argv(example(true));
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib64"}) {
    struct stat st {};
    if (::lstat(top, &st) != 0) {
      CHECK(find_seq(argv, {top}) < 0);
      continue;
    }
    INFO(top);
    if (S_ISLNK(st.st_mode)) {
      char target[4096] = {};
      REQUIRE(::readlink(top, target, sizeof target - 1) > 0);
      CHECK(find_seq(argv, {"--symlink", target, top}) >= 0);
    } else {
      CHECK(find_seq(argv, {"--ro-bind", top, top}) >= 0);
    }
  }
}

TEST_CASE("the sandbox's passwd knows the run's unprivileged user and no root", "[bwrap]") {
  const std::string passwd = sandbox::minimal_passwd();
  CHECK(passwd.find("sandbox:x:" + std::to_string(sandbox::kRunUid) + ":") != std::string::npos);
  CHECK(passwd.find(":/home/sandbox:") != std::string::npos);
  CHECK(passwd.find("root") == std::string::npos);
  CHECK(sandbox::minimal_group().find("sandbox:x:" + std::to_string(sandbox::kRunGid)) != std::string::npos);
  CHECK(sandbox::kRunUid != 0);
}

TEST_CASE("zygote command: interpreter paths outside /usr are bound, /usr ones not at all",
          "[bwrap][zygote]") {
  engine::ZygoteLaunch launch;
  launch.zygote_path = "/opt/mpes/mcp-python-exec-sandbox-zygote";
  launch.bwrap_path = "/usr/bin/bwrap";
  launch.preload = {"numpy", "pandas"};
  const std::string zygote = launch.zygote_path;

  SECTION("a pyenv interpreter under /root") {
    launch.interpreter.version = "3.12.1";
    launch.interpreter.major_minor = "3.12";
    launch.interpreter.prefix = "/root/.pyenv/versions/3.12.1";
    launch.interpreter.base_prefix = "/root/.pyenv/versions/3.12.1";
    launch.interpreter.executable = "/root/.pyenv/versions/3.12.1/bin/python3.12";
    launch.interpreter.libpython = "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0";
    const auto cmd = engine::describe_zygote_command(launch);
    CHECK(find_seq(cmd.argv, {"--ro-bind", zygote, "/run/mpes/zygote"}) >= 0);
    // The prefix covers bin/ and lib/: one bind.
    CHECK(find_seq(cmd.argv, {"--ro-bind", launch.interpreter.prefix, launch.interpreter.prefix}) >= 0);
    CHECK(find_seq(cmd.argv, {"--ro-bind", "/root/.pyenv/versions/3.12.1/lib"}) < 0);
    CHECK(find_seq(cmd.argv, {"--ro-bind-data", "4", "/etc/passwd"}) >= 0);
    CHECK(find_seq(cmd.argv, {"--libpython", launch.interpreter.libpython}) >= 0);
    CHECK(find_seq(cmd.argv, {"--home", "/root/.pyenv/versions/3.12.1"}) >= 0);
    CHECK(find_seq(cmd.argv, {"--preload", "numpy,pandas"}) >= 0);
    CHECK(find_seq(cmd.argv, {"--backend", "native"}) >= 0);
    // Scripts find the interpreter's own bin first on PATH.
    CHECK(find_seq(cmd.argv, {"--run-path", "/root/.pyenv/versions/3.12.1/bin:/usr/local/bin:/usr/bin:/bin"}) >= 0);
    CHECK(has(cmd.env, "OPENBLAS_NUM_THREADS=1"));
  }
  SECTION("Debian's python3 lives in /usr: nothing extra is bound") {
    launch.interpreter.version = "3.11.2";
    launch.interpreter.major_minor = "3.11";
    launch.interpreter.prefix = "/usr";
    launch.interpreter.base_prefix = "/usr";
    launch.interpreter.executable = "/usr/bin/python3.11";
    launch.interpreter.libpython = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";
    const auto cmd = engine::describe_zygote_command(launch);
    long binds = 0;
    for (const auto& a : cmd.argv) binds += a == "--ro-bind";
    // /usr itself and the zygote binary (plus /lib* etc. where they are directories here).
    CHECK(find_seq(cmd.argv, {"--ro-bind", zygote, "/run/mpes/zygote"}) >= 0);
    for (std::size_t i = 0; i + 1 < cmd.argv.size(); ++i) {
      if (cmd.argv[i] != "--ro-bind") continue;
      const auto& src = cmd.argv[i + 1];
      CHECK((src == "/usr" || src == zygote || src.rfind("/lib", 0) == 0 || src == "/bin" || src == "/sbin"));
    }
    CHECK(binds >= 2);
    CHECK(find_seq(cmd.argv, {"--run-path", "/usr/local/bin:/usr/bin:/bin"}) >= 0);
  }
  SECTION("a venv: its base is PYTHONHOME, both trees are visible") {
    launch.interpreter.version = "3.11.2";
    launch.interpreter.major_minor = "3.11";
    launch.interpreter.prefix = "/srv/venv";
    launch.interpreter.base_prefix = "/usr";
    launch.interpreter.executable = "/srv/venv/bin/python3";
    launch.interpreter.libpython = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";
    const auto cmd = engine::describe_zygote_command(launch);
    CHECK(find_seq(cmd.argv, {"--home", "/usr"}) >= 0);
    CHECK(find_seq(cmd.argv, {"--prefix", "/srv/venv"}) >= 0);
    CHECK(find_seq(cmd.argv, {"--ro-bind", "/srv/venv", "/srv/venv"}) >= 0);
  }
  SECTION("a static interpreter (no shared libpython) takes the spawn path") {
    launch.interpreter.version = "3.12.1";
    launch.interpreter.major_minor = "3.12";
    launch.interpreter.prefix = launch.interpreter.base_prefix = "/opt/py312";
    launch.interpreter.executable = "/opt/py312/bin/python3.12";
    launch.interpreter.libpython = "";
    const auto cmd = engine::describe_zygote_command(launch);
    CHECK(find_seq(cmd.argv, {"--spawn-executable", "/opt/py312/bin/python3.12"}) >= 0);
    CHECK_FALSE(has(cmd.argv, "--libpython"));
    CHECK(find_seq(cmd.argv, {"--ro-bind", "/opt/py312", "/opt/py312"}) >= 0);
  }
  SECTION("the none backend starts the zygote directly") {
    launch.policy.backend = sandbox::Backend::none;
    launch.interpreter.prefix = "/usr";
    launch.interpreter.libpython = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";
    const auto cmd = engine::describe_zygote_command(launch);
    CHECK(cmd.argv.front() == launch.zygote_path);
    CHECK(find_seq(cmd.argv, {"--backend", "none"}) >= 0);
    CHECK_FALSE(has(cmd.argv, "--unshare-all"));
  }
}

// ---- the installer's sandbox: the same builder, the same /etc allowlist

TEST_CASE("the installer's bubblewrap writes only its target and its cache", "[bwrap][installer]") {
  fixtures::TempDir links;  // a local find-links directory: read-only
  engine::IndexOptions index;
  index.find_links = {links.path(), "https://links.example/"};
  const std::string target = "/var/cache/mpes/envs/.tmp-0123/site";
  const std::string cache = "/var/cache/mpes/installer-cache/pip";
  const Argv command = {"/usr/bin/python3.11", "-I", "-m", "pip", "install", "--", "numpy"};
  const Argv argv = sandbox::build_bwrap_argv(
      engine::deps::installer_sandbox("/usr/bin/bwrap", debian_311(), "", index, target, cache, command));
  CHECK(argv.front() == "/usr/bin/bwrap");
  CHECK(writable_sources(argv) == Argv{target, cache});
  CHECK(find_seq(argv, {"--bind", target, target}) >= 0);
  CHECK(find_seq(argv, {"--bind", cache, cache}) >= 0);
  CHECK(find_seq(argv, {"--ro-bind", links.path(), links.path()}) >= 0);
  // Its own /tmp (HOME and TMPDIR), set up before the binds: a target under /tmp stays visible.
  const long tmp = find_seq(argv, {"--tmpfs", "/tmp"});
  REQUIRE(tmp >= 0);
  CHECK(tmp < find_seq(argv, {"--bind", target, target}));
  CHECK(find_seq(argv, {"--chdir", "/tmp"}) >= 0);
  // Every namespace, none inside; the network only because the index is online.
  for (const char* flag : {"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                           "--new-session", "--share-net"}) {
    INFO(flag);
    CHECK(has(argv, flag));
  }
  // The pass that may build: no shared cache at all.
  CHECK(writable_sources(sandbox::build_bwrap_argv(engine::deps::installer_sandbox(
            "/usr/bin/bwrap", debian_311(), "", index, target, "", command))) == Argv{target});
  index.offline = true;
  CHECK_FALSE(has(sandbox::build_bwrap_argv(engine::deps::installer_sandbox(
                      "/usr/bin/bwrap", debian_311(), "", index, target, cache, command)),
                  "--share-net"));
  const long dash = find_seq(argv, {"--"});
  REQUIRE(dash >= 0);
  CHECK(Argv(argv.begin() + dash + 1, argv.end()) == command);
}

TEST_CASE("the installer sees TLS roots, never /etc/ssl/private: the run's /etc allowlist", "[bwrap][installer]") {
  fixtures::TempDir dir;  // where uv is
  const std::string uv = dir.path() + "/uv";
  REQUIRE(::close(::creat(uv.c_str(), 0755)) == 0);
  const Argv argv = sandbox::build_bwrap_argv(engine::deps::installer_sandbox(
      "/usr/bin/bwrap", debian_311(), uv, {}, "/t", "/c", {uv}));
  for (const auto& src : bound_sources(argv)) {
    INFO(src);
    CHECK(src.rfind("/etc/ssl/private", 0) != 0);
    CHECK(src != "/etc/ssl");  // would expose ssl/private
    CHECK(src != "/etc/pki");
    CHECK(src != "/etc");
    CHECK(src.rfind("/root", 0) != 0);
    CHECK(src.rfind("/home", 0) != 0);
  }
  for (const char* p : {"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates",
                        "/etc/resolv.conf", "/etc/hosts", "/etc/python3.11"}) {
    INFO(p);
    CHECK(find_seq(argv, {"--ro-bind-try", p, p}) >= 0);
  }
  // One allowlist: exactly the zygote's for the same Python.
  auto zygote = example(true);
  zygote.python_major_minor = "3.11";
  CHECK(etc_entries(argv) == etc_entries(sandbox::build_bwrap_argv(zygote)));
  CHECK(etc_entries(argv) == sandbox::default_etc_allowlist("3.11"));
  // uv itself is bound read-only where it is.
  CHECK(find_seq(argv, {"--ro-bind", uv, uv}) >= 0);
}

TEST_CASE("inside the installer's sandbox: certificates yes, private keys and host files no",
          "[bwrap][installer]") {
  const std::string bwrap = sandbox::find_bwrap();
  if (bwrap.empty()) {
    WARN("SKIPPED: bubblewrap is not installed");
    return;
  }
  fixtures::TempDir dir;
  const std::string target = dir.path() + "/site";
  const std::string cache = dir.path() + "/cache";
  REQUIRE(::mkdir(target.c_str(), 0755) == 0);
  REQUIRE(::mkdir(cache.c_str(), 0755) == 0);
  REQUIRE(::mkdir((dir.path() + "/secret").c_str(), 0755) == 0);  // next to them, not bound
  const bool root = ::geteuid() == 0;
  if (root) {
    REQUIRE(::chown(target.c_str(), 65534, 65534) == 0);
    REQUIRE(::chown(cache.c_str(), 65534, 65534) == 0);
  }
  engine::IndexOptions offline;
  offline.offline = true;
  const std::string check =
      "set -e; test -d /etc/ssl/certs; test ! -e /etc/ssl/private; test ! -e /etc/shadow; "
      "test ! -e /root; test ! -e " + dir.path() + "/secret; "
      "touch " + target + "/written " + cache + "/written; "
      "if touch /usr/written 2>/dev/null; then exit 3; fi; echo sandboxed";
  sandbox::ProcessSpec spec;
  spec.argv = sandbox::build_bwrap_argv(engine::deps::installer_sandbox(
      bwrap, debian_311(), "", offline, target, cache, {"/bin/sh", "-c", check}));
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.timeout_ms = 30000;
  if (root) spec.run_as = sandbox::Identity{65534, 65534};
  const auto r = sandbox::run_process(spec);
  INFO(r.out << r.err);
  CHECK(r.ok());
  CHECK(r.out == "sandboxed\n");
  CHECK(::access((target + "/written").c_str(), F_OK) == 0);
  CHECK(::access((cache + "/written").c_str(), F_OK) == 0);
}

TEST_CASE("host paths are bound once: none under /usr, none under another", "[bwrap]") {
  std::vector<std::string> paths;
  for (const char* p : {"/opt/py", "/usr/lib/python3", "/opt/py/lib", "", "/opt/python", "/usr",
                        "/srv/venv/bin", "/srv/venv"}) {
    sandbox::add_host_path(paths, p);
  }
  // (A parent that comes after its child is added too: the order is the caller's.)
  CHECK(paths == std::vector<std::string>{"/opt/py", "/opt/python", "/srv/venv/bin", "/srv/venv"});
}

TEST_CASE("a seccomp program is handed to bwrap by fd, installed right before the command", "[bwrap]") {
  auto box = example(true);
  CHECK_FALSE(has(sandbox::build_bwrap_argv(box), "--seccomp"));
  box.seccomp_fd = 3;
  const Argv argv = sandbox::build_bwrap_argv(box);
  const long at = find_seq(argv, {"--seccomp", "3"});
  REQUIRE(at >= 0);
  CHECK(at < find_seq(argv, {"--"}));
}
