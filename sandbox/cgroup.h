// Per-run control groups: the memory and process limits that bound a whole run (every process
// it starts), and the counters that say afterwards whether a limit ended it.
//
// Who does what:
//   server, at startup (off the event loop):  CgroupSetup setup = prepare_cgroups("mpes-<pid>");
//   server, per run, before sending it:       RunCgroup cg = RunCgroup::create(setup, "run-7", limits);
//                                             JoinFds fds = cg.open_join_fds();  // travel with the request
//   child, first step after fork/clone, while it has one thread:
//                                              join_cgroups(fds)  // writes "0" (v1: into tasks)
//   server, after the run's init was reaped:   CgroupStats s = cg.read_stats(); cg.remove();
//   server, at shutdown:                       release_cgroups(setup);
// The kernel checks the rights of whoever OPENED cgroup.procs (Linux >= 5.16 for v2), so a child
// in its own user and cgroup namespaces, without capabilities, can join with the server's fd.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sandbox/policy.h"
#include "sandbox/unique_fd.h"

namespace sandbox {

enum class CgroupVersion { none, v1, v2 };

// What this host's cgroups enforce for runs. Plain data.
struct CgroupSetup {
  CgroupVersion version = CgroupVersion::none;
  std::string memory_parent;  // directory holding per-run memory cgroups; "" = no memory limit
  std::string pids_parent;    // directory holding per-run pids cgroups; "" = no pids limit
  bool swap_limited = false;  // swap is limited too (v1 memory.memsw.*, v2 memory.swap.max)
  std::string note;           // why nothing better is used here, with what would fix it

  bool limits_memory() const { return !memory_parent.empty(); }
  bool limits_processes() const { return !pids_parent.empty(); }
  std::string describe() const;  // e.g. "v1 memory+pids (/sys/fs/cgroup/memory/...)", "none"
  std::string memory_mechanism() const;   // e.g. "cgroup v1 memory.limit_in_bytes + memsw"
  std::string process_mechanism() const;  // e.g. "cgroup v1 pids.max"
};

// Detects the best mode (v2 with a delegated writable subtree, else v1 memory/pids writable,
// else none), creates the server's parent cgroup(s) named `tag` and removes stale ones left by
// dead servers. Blocking filesystem work; never throws (version none + note instead).
// On v2 it moves the calling process into a leaf `<tag>-server` (cgroups with controllers
// enabled for children may hold no processes): call it before starting any zygote.
CgroupSetup prepare_cgroups(std::string_view tag);
// The same, against explicit hierarchies (for tests): v1 mount points and the own paths in them.
struct CgroupHierarchies {
  std::string v2_dir;          // the server's own cgroup v2 directory; "" = none
  std::string v1_memory_dir;   // the server's own v1 memory cgroup directory; "" = none
  std::string v1_pids_dir;     // the server's own v1 pids cgroup directory; "" = none
};
CgroupHierarchies find_cgroup_hierarchies();  // from /proc/self/mountinfo and /proc/self/cgroup
CgroupSetup prepare_cgroups(const CgroupHierarchies& where, std::string_view tag);
// What prepare_cgroups would choose, without creating or moving anything (for probes/reports).
CgroupSetup assess_cgroups(const CgroupHierarchies& where);
// Removes the parent cgroups prepare_cgroups created (best effort; runs must be removed first).
void release_cgroups(const CgroupSetup& setup);

struct CgroupStats {
  std::int64_t memory_peak_bytes = -1;  // -1 = unknown
  std::int64_t memory_current_bytes = -1;  // in use now (v2 memory.current, v1 usage_in_bytes)
  std::uint64_t memory_limit_hits = 0;  // v1 memory(.memsw).failcnt, v2 memory.events max
  std::uint64_t oom_kills = 0;          // processes the OOM killer killed in this run
  std::uint64_t pids_limit_hits = 0;    // forks/clones refused by pids.max (pids.events max)
  std::int64_t pids_peak = -1;          // -1 = unknown (pids.peak needs Linux >= 6.1 / 6.13)
  std::int64_t cpu_usage_us = -1;       // user+system CPU of every process in the run; -1 = unknown
                                        // (v2 cpu.stat; v1 would need a cpuacct join per run)
};

// Owned copies of the per-run cgroup.procs fds (O_WRONLY | O_CLOEXEC), closed on destruction.
class JoinFds {
 public:
  JoinFds() = default;
  explicit JoinFds(std::vector<int> fds) : fds_(std::move(fds)) {}
  JoinFds(JoinFds&& other) noexcept : fds_(std::move(other.fds_)) { other.fds_.clear(); }
  JoinFds& operator=(JoinFds&& other) noexcept;
  JoinFds(const JoinFds&) = delete;
  JoinFds& operator=(const JoinFds&) = delete;
  ~JoinFds();
  const std::vector<int>& fds() const { return fds_; }
  std::vector<int> release();  // caller owns them afterwards

 private:
  std::vector<int> fds_;
};

// In the child, before it runs or starts anything and while it has a single thread (v1 moves
// only the calling thread): writes "0" (= the caller) into each fd.
// Throws SetupError; closes nothing (the caller's fd cleanup does).
void join_cgroups(const std::vector<int>& fds);

// Counter files of one run's cgroup(s) held open and read again in place (a cgroup file read from
// offset 0 is generated anew), without a path walk and an open per file each time: the limit
// counters (memory limit hits, OOM kills, refused forks) a session reads before and after each of
// its steps, or everything read_stats() says, opened before a run so that reading them after it
// costs one pread per file.
class CgroupCounters {
 public:
  enum class File {
    memory_events, memory_failcnt, memory_oom_control, pids_events,  // limit counters
    memory_peak, memory_current, cpu_stat, pids_peak,                 // usage
  };
  CgroupCounters() = default;  // reads nothing: every counter 0, usage unknown
  void add(File file, UniqueFd fd);
  // What the files held say (fields without a file stay unknown); a file that cannot be read
  // counts 0.
  CgroupStats read() const;

 private:
  std::vector<std::pair<File, UniqueFd>> files_;
};

// One run's cgroup(s). Move-only; the destructor kills what is left in them and removes them.
class RunCgroup {
 public:
  RunCgroup() = default;  // no cgroup (host without usable cgroups)
  // mkdir <parent>/<name> for each controller and writes the limits. Throws SetupError.
  static RunCgroup create(const CgroupSetup& setup, std::string_view name, const Limits& limits);
  RunCgroup(RunCgroup&& other) noexcept;
  RunCgroup& operator=(RunCgroup&& other) noexcept;
  RunCgroup(const RunCgroup&) = delete;
  RunCgroup& operator=(const RunCgroup&) = delete;
  ~RunCgroup();

  bool empty() const { return dirs_.empty(); }
  const std::vector<std::string>& dirs() const { return dirs_; }
  JoinFds open_join_fds() const;  // throws SetupError
  CgroupStats read_stats() const;         // open_stats().read()
  std::int64_t memory_current() const;    // read_stats().memory_current_bytes, reading that file alone
  CgroupCounters open_stats() const;      // every file read_stats() reads; those that cannot be opened are left out
  CgroupCounters open_counters() const;  // the limit counters only
  // Closes the directories held since create() (a cgroup made ahead holds no fd while it waits);
  // what needs them later opens them again, by path, for the call.
  void close_dirs();
  std::vector<int> pids() const;  // processes in the run's cgroup(s), server's pid namespace
  void kill_all() const;          // SIGKILL to everything in the cgroup(s)
  // kill_all, wait briefly for the processes to go, rmdir. Returns false (and keeps the
  // directories for the destructor) when something could not be removed. `exit_fd`, when given:
  // a pidfd that turns readable once the cgroup's processes are gone (a run's init, pid 1 of
  // their pid namespace); a directory found busy waits for it (at most 100 ms) rather than
  // killing and polling.
  bool remove(int exit_fd = -1);

 private:
  CgroupCounters open_counter_files(bool everything) const;
  // Opens `name` in dirs_[i]: from the directory held, else from `dir` (opened by path on first
  // use, for the caller's further files), else by its full path; errno set when it fails.
  UniqueFd open_file(std::size_t i, const char* name, int flags, UniqueFd& dir) const;

  CgroupVersion version_ = CgroupVersion::none;
  int memory_at_ = -1;  // index in dirs_ of the memory controller's directory (v2: the one)
  int pids_at_ = -1;    // and of the pids controller's
  std::vector<std::string> dirs_;
  std::vector<UniqueFd> dir_fds_;  // dirs_, opened O_PATH until close_dirs(): their files are opened from these
};

}  // namespace sandbox
