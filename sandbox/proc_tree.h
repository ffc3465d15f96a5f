// CPU time of a process tree as the kernel accounts it (/proc/<pid>/stat), for a run that is
// about to be killed: once killed, its processes are never reaped by anyone who reports their
// usage, so what they consumed is read just before. Reads procfs only; never blocks on I/O.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>

namespace sandbox {

struct ProcStat {
  pid_t ppid = 0;
  std::int64_t cpu_ticks = 0;  // utime + stime + cutime + cstime (reaped children included)
};

// The pid a pidfd refers to, in this process's pid namespace (/proc/self/fdinfo); -1 if gone.
pid_t pid_of_pidfd(int pidfd);

// Every process of this pid namespace's /proc: pid -> (ppid, CPU ticks).
std::map<pid_t, ProcStat> read_proc_stats();

// User + system CPU, in microseconds, of `root` and all its live descendants, each including the
// children it reaped; -1 when `root` is gone.
std::int64_t tree_cpu_us(const std::map<pid_t, ProcStat>& stats, pid_t root);
std::int64_t tree_cpu_us(pid_t root);

}  // namespace sandbox
