#include "engine/event_loop.h"  // first: see there
#include "engine/core.h"

#include "engine/interpreters/catalog.h"
#include "engine/pool/zygote_pool.h"
#include "engine/scheduler.h"

namespace engine {

EnvironmentReport describe_environment(const EnvironmentParts& parts) {
  const EngineConfig& config = parts.config;
  EnvironmentReport report;
  report.backend = sandbox_label(config.policy.backend);
  report.network = config.policy.network;
  report.network_isolation = parts.network.description;
  report.run_scoping = parts.scoping.description;
  report.user_quotas = parts.user_quotas;
  const auto& default_interpreter = parts.catalog.default_interpreter();
  report.execution_path =
      default_interpreter && !default_interpreter->shared() ? "spawn (static interpreter)" : "zygote";
  report.max_concurrent_runs = parts.scheduler.max_running();
  report.runs_in_flight = parts.scheduler.running();
  report.runs_queued = parts.scheduler.queued();
  report.limits = config.policy.limits;
  report.preload = config.preload_modules;
  report.interpreter = default_interpreter;
  for (const auto& in : parts.catalog.all()) {
    const auto zygote = parts.pool.find(in.executable);
    report.interpreters.push_back({in, zygote && zygote->state() == ZygoteProcess::State::ready,
                                   default_interpreter && default_interpreter->executable == in.executable});
  }
  report.discovery_error = parts.catalog.discovery_error();
  for (const auto& [key, z] : parts.pool.zygotes()) {
    report.zygotes.push_back({key, z->python_version(), to_string(z->state()), z->rss_bytes(),
                              z->runs_in_flight(), z->failure(), z->warnings(), z->network()});
  }
  const auto& cgroups = parts.cgroups;
  report.cgroups = {cgroups.describe(), cgroups.limits_memory() ? cgroups.memory_mechanism() : "RLIMIT_DATA",
                    cgroups.limits_processes() ? cgroups.process_mechanism() : "RLIMIT_NPROC", cgroups.note};
  report.probe = parts.probe;
  if (config.policy.backend == sandbox::Backend::native && parts.probe) {
    report.sandbox_status = parts.probe->native_ready() ? "ready" : "unavailable: " + parts.probe->problem;
  }
  if (config.policy.backend == sandbox::Backend::docker && parts.docker != nullptr) {
    const auto status = parts.docker->status();
    report.sandbox_status =
        !status ? "not checked yet"
                : status->describe(parts.docker->image()) +
                      (status->ready() ? "; each zygote in a container of its own (read-only root, no "
                                         "capabilities, seccomp profile, --memory, --pids-limit), each run "
                                         "in namespaces of its own inside it"
                                       : "");
  }
  if (config.policy.backend == sandbox::Backend::none) {
    report.sandbox_status = "disabled (--sandbox-backend none): runs are not isolated";
  }
  return report;
}

}  // namespace engine
