// The zygote's and a session holder's view of their own processes: threads (forking is only
// safe with one), children (from /proc), and killing every child until none is left. Used only
// inside the zygote binary (single-threaded processes, no allocation concerns beyond the usual).
#pragma once

#include <sys/types.h>

#include <vector>

namespace engine::zygote {

// Threads of this process; -1 when /proc/self/task cannot be read.
int count_tasks();

// The children of `parent` (from /proc/PID/stat, which every kernel has).
std::vector<pid_t> children_of(pid_t parent);

// Kills every child of this process, and those re-parented to it meanwhile (when it is a
// subreaper), until it has none left. Bounded: a process that cannot be killed is waited for
// 10 s at most.
void kill_children_until_none();

}  // namespace engine::zygote
