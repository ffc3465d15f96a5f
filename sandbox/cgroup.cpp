#include "sandbox/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <memory>
#include <sstream>
#include <thread>
#include <utility>

#include "sandbox/os_error.h"
#include "sandbox/read_file.h"
#include "sandbox/setup_error.h"
#include "sandbox/unique_fd.h"

namespace sandbox {
namespace {

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// The value of `key` in "key value" lines (memory.events, pids.events, memory.oom_control).
std::optional<std::uint64_t> key_value(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  std::string k, v;
  while (in >> k >> v) {
    if (k == key) return parse_u64(v);
  }
  return std::nullopt;
}

bool has_word(const std::string& text, std::string_view word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w) {
    if (w == word) return true;
  }
  return false;
}

std::vector<int> read_pids(const std::string& dir) {
  std::vector<int> pids;
  auto text = read_file(dir + "/cgroup.procs");
  if (!text) return pids;
  std::istringstream in(*text);
  int pid = 0;
  while (in >> pid) pids.push_back(pid);
  return pids;
}

// Kills what is in a cgroup and removes it and (first) any sub-cgroups a previous run left.
bool destroy_tree(const std::string& dir) {
  if (DirPtr d{::opendir(dir.c_str())}) {
    std::vector<std::string> subdirs;
    while (dirent* e = ::readdir(d.get())) {
      if (e->d_type == DT_DIR && std::strcmp(e->d_name, ".") != 0 &&
          std::strcmp(e->d_name, "..") != 0) {
        subdirs.emplace_back(dir + "/" + e->d_name);
      }
    }
    d.reset();
    for (const auto& s : subdirs) destroy_tree(s);
  } else {
    return errno == ENOENT;
  }
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (exists(dir + "/cgroup.kill")) write_file(dir + "/cgroup.kill", "1");
    for (int pid : read_pids(dir)) ::kill(pid, SIGKILL);
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// Removes "<tag-prefix><pid>" siblings whose server process is gone.
void remove_stale(const std::string& parent, std::string_view prefix) {
  DirPtr d{::opendir(parent.c_str())};
  if (!d) return;
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d.get())) {
    std::string_view name(e->d_name);
    if (e->d_type != DT_DIR || !name.starts_with(prefix)) continue;
    std::string_view rest = name.substr(prefix.size());
    if (auto dash = rest.find('-'); dash != std::string_view::npos) rest = rest.substr(0, dash);
    int pid = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (ec != std::errc() || p != rest.data() + rest.size() || pid <= 0) continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) stale.emplace_back(parent + "/" + std::string(name));
  }
  d.reset();
  for (const auto& s : stale) destroy_tree(s);
}

std::string tag_prefix(std::string_view tag) {
  // "mpes-1234" -> "mpes-": stale detection looks for the same prefix with another pid.
  auto pos = tag.find_last_not_of("0123456789");
  return std::string(tag.substr(0, pos == std::string_view::npos ? 0 : pos + 1));
}

// mkdir that tolerates an existing directory; false with errno set otherwise.
bool make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0) return true;
  return errno == EEXIST;
}

bool writable_dir(const std::string& dir) {
  return !dir.empty() && ::access(dir.c_str(), W_OK) == 0 &&
         ::access((dir + "/cgroup.procs").c_str(), W_OK) == 0;
}

struct MountEntry {
  std::string root;         // the mount's root inside its hierarchy
  std::string mount_point;
  std::string fs_type;
  std::string super_options;
};

std::vector<MountEntry> cgroup_mounts() {
  std::vector<MountEntry> mounts;
  auto text = read_file("/proc/self/mountinfo");
  if (!text) return mounts;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, devno, root, mount_point, opts, field;
    f >> id >> parent >> devno >> root >> mount_point >> opts;
    while (f >> field && field != "-") {}
    MountEntry m;
    m.root = root;
    m.mount_point = mount_point;
    std::string source;
    f >> m.fs_type >> source >> m.super_options;
    if (m.fs_type == "cgroup" || m.fs_type == "cgroup2") mounts.push_back(std::move(m));
  }
  return mounts;
}

bool has_option(const std::string& options, std::string_view opt) {
  std::size_t start = 0;
  while (start <= options.size()) {
    auto end = options.find(',', start);
    if (end == std::string::npos) end = options.size();
    if (std::string_view(options).substr(start, end - start) == opt) return true;
    start = end + 1;
  }
  return false;
}

// Directory of the own cgroup `own` (path in /proc/self/cgroup) under a mount of that hierarchy.
std::string join_mount(const MountEntry& m, const std::string& own) {
  std::string rel = own;
  if (m.root != "/") {
    if (!own.starts_with(m.root)) return "";
    rel = own.substr(m.root.size());
  }
  if (rel == "/") rel.clear();
  return m.mount_point + rel;
}

}  // namespace

// ---- detection --------------------------------------------------------------------------

CgroupHierarchies find_cgroup_hierarchies() {
  CgroupHierarchies where;
  auto text = read_file("/proc/self/cgroup");
  if (!text) return where;
  std::string own_v2, own_memory, own_pids;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    auto c1 = line.find(':');
    auto c2 = line.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
    const std::string path = line.substr(c2 + 1);
    if (line.compare(0, c1, "0") == 0 && controllers.empty()) own_v2 = path;
    if (has_option(controllers, "memory")) own_memory = path;
    if (has_option(controllers, "pids")) own_pids = path;
  }
  for (const auto& m : cgroup_mounts()) {
    if (m.fs_type == "cgroup2" && !own_v2.empty() && where.v2_dir.empty()) {
      where.v2_dir = join_mount(m, own_v2);
    } else if (m.fs_type == "cgroup") {
      if (has_option(m.super_options, "memory") && !own_memory.empty() &&
          where.v1_memory_dir.empty()) {
        where.v1_memory_dir = join_mount(m, own_memory);
      }
      if (has_option(m.super_options, "pids") && !own_pids.empty() && where.v1_pids_dir.empty()) {
        where.v1_pids_dir = join_mount(m, own_pids);
      }
    }
  }
  return where;
}

namespace {

// v2: usable when our own cgroup offers memory+pids and we may create children, enable the
// controllers for them and move ourselves into a leaf (a systemd Delegate=yes unit or scope).
std::optional<CgroupSetup> try_v2(const std::string& own, std::string_view tag, bool dry,
                                  std::string& why) {
  if (own.empty()) {
    why = "no cgroup v2 hierarchy";
    return std::nullopt;
  }
  auto controllers = read_file(own + "/cgroup.controllers");
  if (!controllers || !has_word(*controllers, "memory") || !has_word(*controllers, "pids")) {
    why = "cgroup v2 at " + own + " offers no memory+pids controllers (" +
          (controllers ? std::string(controllers->substr(0, controllers->find('\n'))) : "?") + ")";
    return std::nullopt;
  }
  if (!writable_dir(own) || ::access((own + "/cgroup.subtree_control").c_str(), W_OK) != 0) {
    why = "cgroup v2 at " + own +
          " is not delegated to this user (run the server under `systemd-run --user --scope "
          "-p Delegate=yes ...` or in a unit with Delegate=yes)";
    return std::nullopt;
  }
  if (dry) {
    CgroupSetup setup;
    setup.version = CgroupVersion::v2;
    setup.memory_parent = setup.pids_parent = own;
    setup.swap_limited = exists(own + "/memory.swap.max");
    return setup;
  }
  auto subtree = read_file(own + "/cgroup.subtree_control").value_or("");
  const bool enabled = has_word(subtree, "memory") && has_word(subtree, "pids");
  const std::string leaf = own + "/" + std::string(tag) + "-server";
  if (!enabled) {
    // The "no internal processes" rule: move ourselves into a leaf before enabling.
    if (!make_dir(leaf)) {
      const int err = errno;
      why = "cannot create " + leaf + ": " + errno_text(err);
      return std::nullopt;
    }
    if (int err = write_file(leaf + "/cgroup.procs", "0"); err != 0) {
      ::rmdir(leaf.c_str());
      why = "cannot move the server into " + leaf + ": " + errno_text(err);
      return std::nullopt;
    }
    if (int err = write_file(own + "/cgroup.subtree_control", "+memory +pids"); err != 0) {
      write_file(own + "/cgroup.procs", "0");
      ::rmdir(leaf.c_str());
      why = "cannot enable memory+pids controllers in " + own + ": " + errno_text(err) +
            (err == EBUSY ? " (other processes share the server's cgroup: start the server in "
                            "its own scope, e.g. systemd-run --user --scope -p Delegate=yes)"
                          : "");
      return std::nullopt;
    }
  }
  const std::string parent = own + "/" + std::string(tag);
  if (!make_dir(parent)) {
    const int err = errno;
    why = "cannot create " + parent + ": " + errno_text(err);
    return std::nullopt;
  }
  if (int err = write_file(own + "/" + std::string(tag) + "/cgroup.subtree_control",
                           "+memory +pids");
      err != 0) {
    ::rmdir(parent.c_str());
    why = "cannot enable memory+pids below " + parent + ": " + errno_text(err);
    return std::nullopt;
  }
  CgroupSetup setup;
  setup.version = CgroupVersion::v2;
  setup.memory_parent = parent;
  setup.pids_parent = parent;
  setup.swap_limited = exists(parent + "/memory.swap.max");
  return setup;
}

CgroupSetup prepare(const CgroupHierarchies& where, std::string_view tag, bool dry);

}  // namespace

CgroupSetup prepare_cgroups(std::string_view tag) {
  return prepare_cgroups(find_cgroup_hierarchies(), tag);
}

CgroupSetup prepare_cgroups(const CgroupHierarchies& where, std::string_view tag) {
  return prepare(where, tag, false);
}

CgroupSetup assess_cgroups(const CgroupHierarchies& where) { return prepare(where, "", true); }

namespace {

CgroupSetup prepare(const CgroupHierarchies& where, std::string_view tag, bool dry) {
  const std::string prefix = tag_prefix(tag);
  std::string why_not_v2;
  if (!dry && !where.v2_dir.empty() && !prefix.empty()) remove_stale(where.v2_dir, prefix);
  if (auto v2 = try_v2(where.v2_dir, tag, dry, why_not_v2)) return *v2;

  CgroupSetup setup;
  std::vector<std::string> problems;
  auto prepare_v1 = [&](const std::string& own, const char* controller) -> std::string {
    if (own.empty()) {
      problems.push_back(std::string("no cgroup v1 ") + controller + " hierarchy");
      return "";
    }
    if (!writable_dir(own)) {
      problems.push_back(std::string("cgroup v1 ") + controller + " at " + own +
                         " is not writable (needs root)");
      return "";
    }
    if (dry) return own;
    if (!prefix.empty()) remove_stale(own, prefix);
    const std::string parent = own + "/" + std::string(tag);
    if (!make_dir(parent)) {
      const int err = errno;
      problems.push_back("cannot create " + parent + ": " + errno_text(err));
      return "";
    }
    return parent;
  };
  setup.memory_parent = prepare_v1(where.v1_memory_dir, "memory");
  setup.pids_parent = prepare_v1(where.v1_pids_dir, "pids");
  if (setup.limits_memory() || setup.limits_processes()) {
    setup.version = CgroupVersion::v1;
    setup.swap_limited =
        setup.limits_memory() && exists(setup.memory_parent + "/memory.memsw.limit_in_bytes");
  }
  std::string note = why_not_v2;
  for (const auto& p : problems) note += (note.empty() ? "" : "; ") + p;
  setup.note = note;
  return setup;
}

}  // namespace

void release_cgroups(const CgroupSetup& setup) {
  if (!setup.memory_parent.empty()) destroy_tree(setup.memory_parent);
  if (!setup.pids_parent.empty() && setup.pids_parent != setup.memory_parent) {
    destroy_tree(setup.pids_parent);
  }
}

std::string CgroupSetup::describe() const {
  switch (version) {
    case CgroupVersion::none: return "none";
    case CgroupVersion::v2: return "v2 delegated (" + memory_parent + ")";
    case CgroupVersion::v1: {
      std::string s = "v1 ";
      s += limits_memory() && limits_processes() ? "memory+pids"
           : limits_memory()                     ? "memory"
                                                 : "pids";
      s += " (";
      s += limits_memory() ? memory_parent : pids_parent;
      if (limits_memory() && limits_processes()) s += ", " + pids_parent;
      return s + ")";
    }
  }
  return "none";
}

std::string CgroupSetup::memory_mechanism() const {
  if (!limits_memory()) return "";
  if (version == CgroupVersion::v2) return "cgroup v2 memory.max, memory.swap.max=0";
  return swap_limited ? "cgroup v1 memory.limit_in_bytes + memory.memsw.limit_in_bytes"
                      : "cgroup v1 memory.limit_in_bytes (swap not limited)";
}

std::string CgroupSetup::process_mechanism() const {
  if (!limits_processes()) return "";
  return version == CgroupVersion::v2 ? "cgroup v2 pids.max" : "cgroup v1 pids.max";
}

// ---- join fds ---------------------------------------------------------------------------

JoinFds& JoinFds::operator=(JoinFds&& other) noexcept {
  if (this != &other) {
    for (int fd : fds_) ::close(fd);
    fds_ = std::move(other.fds_);
    other.fds_.clear();
  }
  return *this;
}

JoinFds::~JoinFds() {
  for (int fd : fds_) ::close(fd);
}

std::vector<int> JoinFds::release() {
  std::vector<int> out = std::move(fds_);
  fds_.clear();
  return out;
}

void join_cgroups(const std::vector<int>& fds) {
  for (int fd : fds) {
    // "0" = the writing process; async-signal-safe, so usable right after fork.
    if (::write(fd, "0", 1) != 1) {
      const int err = errno;
      throw SetupError(std::string("sandbox: joining the run's cgroup failed: ") +
                       errno_text(err) +
                       (err == ENOENT ? " (kernel < 5.16 checks the writer's cgroup namespace)"
                                      : ""));
    }
  }
}

// ---- per-run cgroup ---------------------------------------------------------------------

RunCgroup RunCgroup::create(const CgroupSetup& setup, std::string_view name,
                            const Limits& limits) {
  RunCgroup cg;
  cg.version_ = setup.version;
  if (setup.version == CgroupVersion::none) return cg;
  // Each directory is walked to once, by its full path, and held (O_PATH) until close_dirs(): its
  // files are opened from there.
  auto make = [&](const std::string& parent) {
    const std::string dir = parent + "/" + std::string(name);
    if (::mkdir(dir.c_str(), 0755) != 0) {
      int err = errno;
      // A leftover of a crashed run with the same name: clear it and retry once.
      if (err == EEXIST && destroy_tree(dir) && ::mkdir(dir.c_str(), 0755) == 0) {
        err = 0;
      }
      if (err != 0) {
        throw SetupError("sandbox: cannot create the run's cgroup " + dir + ": " +
                         errno_text(err));
      }
    }
    cg.dirs_.push_back(dir);  // from here on the destructor removes it
    UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd) {
      const int err = errno;
      throw SetupError("sandbox: cannot open the run's cgroup " + dir + ": " + errno_text(err));
    }
    cg.dir_fds_.push_back(std::move(fd));
    return static_cast<int>(cg.dirs_.size() - 1);
  };
  // `optional`: a file this kernel may not have (no swap accounting, no memory.oom.group).
  auto set = [&](int at, const char* file, const std::string& value, bool optional = false) {
    const int err = write_file_at(cg.dir_fds_[at].get(), file, value);
    if (err == 0 || (optional && err == ENOENT)) return;
    throw SetupError("sandbox: cannot set " + cg.dirs_[at] + "/" + file + " to " + value + ": " +
                     errno_text(err));
  };
  const std::string memory = std::to_string(limits.memory_bytes);
  const std::string pids = std::to_string(limits.max_processes);
  if (setup.version == CgroupVersion::v2) {
    const int dir = make(setup.memory_parent);
    cg.memory_at_ = cg.pids_at_ = dir;
    if (limits.memory_bytes > 0) {
      set(dir, "memory.max", memory);
      set(dir, "memory.swap.max", "0", true);
      // An OOM kill takes the whole run, not a random process of it.
      set(dir, "memory.oom.group", "1", true);
    }
    if (limits.max_processes > 0) set(dir, "pids.max", pids);
    return cg;
  }
  if (setup.limits_memory()) {
    const int dir = make(setup.memory_parent);
    cg.memory_at_ = dir;
    if (limits.memory_bytes > 0) {
      set(dir, "memory.limit_in_bytes", memory);
      // memsw (memory + swap) >= limit_in_bytes; equal means no swap.
      if (setup.swap_limited) set(dir, "memory.memsw.limit_in_bytes", memory);
    }
  }
  if (setup.limits_processes()) {
    const int dir = make(setup.pids_parent);
    cg.pids_at_ = dir;
    if (limits.max_processes > 0) set(dir, "pids.max", pids);
  }
  return cg;
}

RunCgroup::RunCgroup(RunCgroup&& other) noexcept
    : version_(other.version_),
      memory_at_(std::exchange(other.memory_at_, -1)),
      pids_at_(std::exchange(other.pids_at_, -1)),
      dirs_(std::exchange(other.dirs_, {})),
      dir_fds_(std::exchange(other.dir_fds_, {})) {}

RunCgroup& RunCgroup::operator=(RunCgroup&& other) noexcept {
  if (this != &other) {
    remove();
    version_ = other.version_;
    memory_at_ = std::exchange(other.memory_at_, -1);
    pids_at_ = std::exchange(other.pids_at_, -1);
    dirs_ = std::exchange(other.dirs_, {});
    dir_fds_ = std::exchange(other.dir_fds_, {});
  }
  return *this;
}

RunCgroup::~RunCgroup() { remove(); }

JoinFds RunCgroup::open_join_fds() const {
  std::vector<int> fds;
  // v1: the thread-level "tasks" file. Moving a whole thread group (cgroup.procs) write-locks
  // the global threadgroup rwsem, an RCU grace period: 3-11 ms here against 0.1-0.2 ms for the
  // calling thread alone, and the joining process has exactly one thread.
  const char* file = version_ == CgroupVersion::v1 ? "tasks" : "cgroup.procs";
  for (std::size_t i = 0; i < dirs_.size(); ++i) {
    UniqueFd dir;
    const int fd = open_file(i, file, O_WRONLY, dir).release();
    if (fd < 0) {
      const int err = errno;
      JoinFds opened(std::move(fds));  // closes what was opened so far
      throw SetupError("sandbox: cannot open " + dirs_[i] + "/" + file + ": " + errno_text(err));
    }
    fds.push_back(fd);
  }
  return JoinFds(std::move(fds));
}

namespace {

// The files of a run's limit counters (memory limit hits, OOM kills, refused forks), and with
// `everything` also its usage (peaks, memory in use, CPU): what read_stats() reads. Each is
// (which counter, in the memory directory or else the pids one, its name there).
struct CounterFile {
  CgroupCounters::File file;
  bool in_memory_dir;
  const char* name;
};

std::vector<CounterFile> counter_files(CgroupVersion version, bool memory, bool pids, bool everything) {
  using File = CgroupCounters::File;
  std::vector<CounterFile> files;
  if (version == CgroupVersion::v2) {
    files.push_back({File::memory_events, true, "memory.events"});
    if (everything) {
      files.push_back({File::memory_peak, true, "memory.peak"});
      files.push_back({File::memory_current, true, "memory.current"});
      // Every v2 cgroup has cpu.stat, with or without the cpu controller.
      files.push_back({File::cpu_stat, true, "cpu.stat"});
    }
  } else if (memory) {
    files.push_back({File::memory_failcnt, true, "memory.failcnt"});
    files.push_back({File::memory_failcnt, true, "memory.memsw.failcnt"});
    files.push_back({File::memory_oom_control, true, "memory.oom_control"});
    if (everything) {
      files.push_back({File::memory_peak, true, "memory.max_usage_in_bytes"});
      files.push_back({File::memory_current, true, "memory.usage_in_bytes"});
    }
  }
  if (pids) {
    files.push_back({File::pids_events, false, "pids.events"});
    if (everything) files.push_back({File::pids_peak, false, "pids.peak"});
  }
  return files;
}

// Adds what one counter file says (its text as read) to `s`.
void add_counters(CgroupCounters::File file, const std::string& text, CgroupStats& s) {
  using File = CgroupCounters::File;
  auto as_i64 = [](std::optional<std::uint64_t> v) { return v ? static_cast<std::int64_t>(*v) : -1; };
  switch (file) {
    case File::memory_events:
      s.memory_limit_hits += key_value(text, "max").value_or(0);
      s.oom_kills += key_value(text, "oom_kill").value_or(0);
      break;
    case File::memory_failcnt:
      s.memory_limit_hits += parse_u64(text).value_or(0);
      break;
    case File::memory_oom_control:
      s.oom_kills += key_value(text, "oom_kill").value_or(0);
      break;
    case File::pids_events:
      s.pids_limit_hits += key_value(text, "max").value_or(0);
      break;
    case File::memory_peak:
      s.memory_peak_bytes = as_i64(parse_u64(text));
      break;
    case File::memory_current:
      s.memory_current_bytes = as_i64(parse_u64(text));
      break;
    case File::cpu_stat:
      s.cpu_usage_us = as_i64(key_value(text, "usage_usec"));
      break;
    case File::pids_peak:
      s.pids_peak = as_i64(parse_u64(text));
      break;
  }
}

}  // namespace

CgroupStats RunCgroup::read_stats() const { return open_stats().read(); }

CgroupCounters RunCgroup::open_stats() const { return open_counter_files(true); }

std::int64_t RunCgroup::memory_current() const {
  if (memory_at_ < 0) return -1;
  CgroupCounters counters;
  UniqueFd dir;
  for (const auto& f : counter_files(version_, true, false, true)) {
    if (f.file != CgroupCounters::File::memory_current) continue;
    UniqueFd fd = open_file(static_cast<std::size_t>(memory_at_), f.name, O_RDONLY, dir);
    if (fd) counters.add(f.file, std::move(fd));
  }
  return counters.read().memory_current_bytes;
}

CgroupCounters RunCgroup::open_counters() const { return open_counter_files(false); }

CgroupCounters RunCgroup::open_counter_files(bool everything) const {
  CgroupCounters counters;
  const bool memory = memory_at_ >= 0, pids = pids_at_ >= 0;
  std::vector<UniqueFd> opened(dirs_.size());
  for (const auto& f : counter_files(version_, memory, pids, everything)) {
    const auto at = static_cast<std::size_t>(f.in_memory_dir ? memory_at_ : pids_at_);
    UniqueFd fd = open_file(at, f.name, O_RDONLY, opened[at]);
    if (fd) counters.add(f.file, std::move(fd));
  }
  return counters;
}

void RunCgroup::close_dirs() {
  for (auto& fd : dir_fds_) fd.reset();
}

UniqueFd RunCgroup::open_file(std::size_t i, const char* name, int flags, UniqueFd& dir) const {
  int at = dir_fds_[i] ? dir_fds_[i].get() : -1;
  if (at < 0) {
    if (!dir) dir.reset(::open(dirs_[i].c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    at = dir.get();
  }
  if (at >= 0) return UniqueFd(::openat(at, name, flags | O_CLOEXEC));
  return UniqueFd(::open((dirs_[i] + "/" + name).c_str(), flags | O_CLOEXEC));  // errno says why
}

void CgroupCounters::add(File file, UniqueFd fd) { files_.emplace_back(file, std::move(fd)); }

CgroupStats CgroupCounters::read() const {
  CgroupStats s;
  for (const auto& [file, fd] : files_) {
    char buf[2048];  // cpu.stat, the longest, is a few hundred bytes
    ssize_t n;
    do {
      n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) continue;
    add_counters(file, std::string(buf, static_cast<std::size_t>(n)), s);
  }
  return s;
}

std::vector<int> RunCgroup::pids() const {
  std::vector<int> all;
  for (const auto& dir : dirs_) {
    for (int pid : read_pids(dir)) {
      if (std::find(all.begin(), all.end(), pid) == all.end()) all.push_back(pid);
    }
  }
  return all;
}

void RunCgroup::kill_all() const {
  for (const auto& dir : dirs_) {
    if (exists(dir + "/cgroup.kill")) write_file(dir + "/cgroup.kill", "1");
  }
  for (int pid : pids()) ::kill(pid, SIGKILL);
}

bool RunCgroup::remove(int exit_fd) {
  bool ok = true;
  std::vector<std::string> left;
  std::vector<UniqueFd> left_fds;
  auto removed = [](const std::string& dir) { return ::rmdir(dir.c_str()) == 0 || errno == ENOENT; };
  for (std::size_t i = 0; i < dirs_.size(); ++i) {
    // Most often nothing is left in it: one rmdir. Busy, its processes still exiting: once they
    // are gone. Else (a process that will not go, a sub-cgroup) the whole way.
    if (removed(dirs_[i])) continue;
    if (errno == EBUSY && exit_fd >= 0) {
      pollfd gone{exit_fd, POLLIN, 0};
      while (::poll(&gone, 1, 100) < 0 && errno == EINTR) {
      }
      exit_fd = -1;  // waited for once
      if (removed(dirs_[i])) continue;
    }
    if (destroy_tree(dirs_[i])) continue;
    ok = false;
    left.push_back(dirs_[i]);
    left_fds.push_back(std::move(dir_fds_[i]));
  }
  memory_at_ = pids_at_ = -1;  // nothing left to count
  dirs_ = std::move(left);
  dir_fds_ = std::move(left_fds);
  return ok;
}

}  // namespace sandbox
