// What waking a sleeping process costs on this machine: a one-byte pipe round trip between this
// process and a forked child, each pinned to a CPU, after the pair has slept. Every call crosses
// such wake-ups (client → server → run → server → client); on a virtual machine, waking an idle
// virtual CPU can cost tens of times what a wake-up on a busy one does. No sandbox needed.
#pragma once

#include <nlohmann/json.hpp>

namespace floor_bench {

// {"samples", "idle_ms", "cpus": [a, b], "same_cpu_us", "cross_cpu_us",
//  "cross_cpu_back_to_back_us"}: medians of `samples` round trips each. same_cpu: both on CPU
// a, each after `idle_ms` of sleep; cross_cpu: the child on CPU b, after the same sleep;
// cross_cpu_back_to_back: on two CPUs, one round trip right after another. With one usable CPU
// the cross figures are null. Throws std::runtime_error when pipe, fork or the pinning fail.
nlohmann::json measure_wake_up(int samples, int idle_ms);

}  // namespace floor_bench
