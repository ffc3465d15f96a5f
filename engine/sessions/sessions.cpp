#include "engine/event_loop.h"  // first: see there
#include "engine/sessions/sessions.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

namespace engine {
namespace {

using Clock = std::chrono::steady_clock;

// How many ended sessions are remembered to tell their owner why.
constexpr std::size_t kEndedRemembered = 64;

SessionReply refused(std::string why) {
  SessionReply reply;
  reply.error = std::move(why);
  reply.refused = true;
  return reply;
}

}  // namespace

Sessions::Sessions(asio::io_context& io, Config config) : io_(io), config_(std::move(config)), expiry_timer_(io) {}

Sessions::~Sessions() {
  *alive_ = false;
  shutdown();
}

std::optional<std::string> Sessions::capacity_error() const {
  return session_capacity_error(table_.size(), creating_, config_.max_sessions);
}

void Sessions::create(std::uint64_t run_id, std::string owner, const std::shared_ptr<ZygoteProcess>& zygote,
                      Interpreter interpreter, std::vector<std::string> dependencies, std::shared_ptr<void> lease,
                      std::function<void(SessionReply)> done) {
  auto sandbox = std::make_shared<SessionSandbox>(io_, run_id, std::move(interpreter), std::move(dependencies),
                                                  std::move(lease), config_.sandbox);
  std::weak_ptr<bool> alive = alive_;
  creating_for_.insert(owner);
  sandbox->start(zygote, [this, alive, sandbox, owner = std::move(owner), done = std::move(done)](const std::string& error) {
    if (!alive.lock()) return;
    unreserve();
    const auto owner_gone = creation_answered(owner);
    if (!error.empty() || stopping_ || owner_gone) {
      const std::string why = !error.empty() ? error : stopping_ ? "the server is shutting down" : *owner_gone;
      sandbox->close(why);
      SessionReply reply;
      reply.error = "the session could not start: " + why;
      done(std::move(reply));
      return;
    }
    std::string id = new_session_id();
    auto session = std::make_shared<Session>(io_, id, sandbox, config_.snapshots);
    wire(sandbox);
    adopt(id, owner, session);
    SessionReply reply;
    reply.session = info(id);
    done(std::move(reply));
    session->prepare_head_after_answer();  // the first step's process
  });
}

void Sessions::wire(const std::shared_ptr<SessionSandbox>& sandbox) {
  std::weak_ptr<bool> alive = alive_;
  SessionSandbox* raw = sandbox.get();
  sandbox->on_holder_gone([this, alive, raw](std::uint64_t holder_id) {
    if (!alive.lock()) return;
    for (const auto& id : table_.all_ids()) {
      auto* e = table_.find_any(id);
      if (e == nullptr || e->value->sandbox().get() != raw) continue;
      e->value->holder_gone(holder_id);
      if (e->value->states_lost()) end_lost(id, e->owner);
    }
  });
  sandbox->on_ended([this, alive, raw](const std::string& why) {
    if (!alive.lock() || stopping_) return;
    for (const auto& id : table_.all_ids()) {
      auto* e = table_.find_any(id);
      if (e == nullptr || e->value->sandbox().get() != raw) continue;
      spdlog::warn("session {} ended: {}", id, why);
      forget_ended(id, e->owner, why);
      close_session(id, why, true);
    }
  });
}

void Sessions::adopt(const std::string& id, std::string owner, std::shared_ptr<Session> session) {
  table_.insert(id, std::move(owner), std::move(session), Clock::now());
  schedule_expiry();
}

std::shared_ptr<Session> Sessions::find(const std::string& owner, const std::string& id, std::string& error) {
  if (auto* e = table_.find(owner, id)) return e->value;
  const auto ended = ended_.find(id);
  if (ended != ended_.end() && ended->second.owner == owner) {
    error = "session '" + id + "' has ended: " + ended->second.why + " (create_session makes a new one)";
  } else {
    error = unknown_session_message(id);
  }
  return nullptr;
}

void Sessions::set_busy(const std::string& id, bool busy) {
  table_.set_busy(id, busy, Clock::now());
  // A step that ended with no state of its session left (it killed them, then was not kept).
  if (auto* e = table_.find_any(id); e != nullptr && !busy && e->value->states_lost()) {
    end_lost(id, e->owner);
    return;
  }
  schedule_expiry();
}

void Sessions::end_lost(const std::string& id, std::string owner) {
  const std::string why = "every state it held was lost (their processes ended)";
  spdlog::warn("session {} ended: {}", id, why);
  forget_ended(id, std::move(owner), why);
  close_session(id, why, true);
}

SessionReply Sessions::fork(const std::string& owner, const std::string& id, std::optional<std::uint64_t> step) {
  std::string error;
  auto from = find(owner, id, error);
  if (!from) return refused(error);
  if (auto full = capacity_error()) return refused(*full);
  const std::uint64_t at = step.value_or(from->history().head());
  if (auto why = from->can_fork(at); !why.empty()) return refused("cannot fork session '" + id + "': " + why);
  std::string new_id = new_session_id();
  auto session = std::make_shared<Session>(io_, new_id, *from, at);
  table_.touch(id, Clock::now());
  adopt(new_id, owner, session);
  SessionReply reply;
  reply.session = info(new_id);
  reply.note = "forked from session " + id + " at step " + std::to_string(at) +
               ": its own processes and memory from there on; the same sandbox (work dir, memory "
               "limit) as the session it came from";
  return reply;
}

SessionReply Sessions::reset(const std::string& owner, const std::string& id, std::uint64_t step) {
  std::string error;
  auto session = find(owner, id, error);
  if (!session) return refused(error);
  if (auto why = session->reset(step); !why.empty()) return refused("cannot reset session '" + id + "': " + why);
  table_.touch(id, Clock::now());
  schedule_expiry();
  SessionReply reply;
  reply.session = info(id);
  reply.note = "rewound to step " + std::to_string(step) +
               ": its memory (variables, imports, open objects) is as it was after that step; files in "
               "the work dir are not rewound";
  return reply;
}

SessionReply Sessions::close(const std::string& owner, const std::string& id) {
  std::string error;
  auto session = find(owner, id, error);
  if (!session) return refused(error);
  SessionReply reply;
  reply.session = info(id);
  close_session(id, "closed by close_session");
  reply.note = "session " + id + " closed";
  return reply;
}

void Sessions::close_session(const std::string& id, const std::string& why, bool ended) {
  auto* e = table_.find_any(id);
  if (e == nullptr) return;
  auto session = e->value;
  table_.erase(id);
  session->release(why, ended);
  // The sandbox goes with the last session in it.
  const auto& sandbox = session->sandbox();
  bool used = false;
  for (const auto& other : table_.all_ids()) {
    if (auto* o = table_.find_any(other); o != nullptr && o->value->sandbox() == sandbox) used = true;
  }
  if (!used) sandbox->close(why);
  schedule_expiry();
}

void Sessions::close_sessions_of(const std::string& owner, const std::string& why) {
  for (const auto& id : table_.ids_of(owner)) {
    spdlog::info("session {} closed: {}", id, why);
    close_session(id, why);
  }
  if (creating_for_.count(owner) != 0) gone_owners_[owner] = why;
}

std::optional<std::string> Sessions::creation_answered(const std::string& owner) {
  if (const auto it = creating_for_.find(owner); it != creating_for_.end()) creating_for_.erase(it);
  const auto gone = gone_owners_.find(owner);
  if (gone == gone_owners_.end()) return std::nullopt;
  std::string why = gone->second;
  if (creating_for_.count(owner) == 0) gone_owners_.erase(gone);
  return why;
}

void Sessions::forget_ended(const std::string& id, std::string owner, std::string why) {
  ended_[id] = Ended{std::move(owner), std::move(why)};
  ended_order_.push_back(id);
  while (ended_order_.size() > kEndedRemembered) {
    ended_.erase(ended_order_.front());
    ended_order_.pop_front();
  }
}

SessionInfo Sessions::info(const std::string& id) {
  SessionInfo out;
  auto* e = table_.find_any(id);
  if (e == nullptr) return out;
  const auto& s = *e->value;
  const auto now = Clock::now();
  out.id = id;
  out.python_version = s.sandbox()->python_version();
  out.dependencies = s.sandbox()->dependencies();
  out.step = s.history().head();
  out.kept = s.history().kept();
  out.steps_run = s.steps_run();
  out.age_seconds = std::chrono::duration_cast<std::chrono::seconds>(now - e->created).count();
  out.idle_seconds = e->busy ? 0 : std::chrono::duration_cast<std::chrono::seconds>(now - e->last_used).count();
  if (const auto bytes = s.sandbox()->memory_bytes()) out.memory_bytes = *bytes;
  out.running = s.busy();
  out.snapshots = s.snapshots_on();
  out.forked_from = s.forked_from();
  for (const auto& other : table_.all_ids()) {
    auto* o = table_.find_any(other);
    if (other != id && o != nullptr && o->value->sandbox() == s.sandbox()) {
      out.shares_sandbox_with += (out.shares_sandbox_with.empty() ? "" : ", ") + other;
    }
  }
  return out;
}

SessionList Sessions::list(const std::string& owner) {
  SessionList out;
  for (const auto& id : table_.ids_of(owner)) out.sessions.push_back(info(id));
  out.max_sessions = config_.max_sessions;
  out.total = table_.size();
  out.idle_seconds = config_.idle_seconds;
  out.snapshots = config_.snapshots;
  const auto* cgroups = config_.sandbox.cgroups;
  if (cgroups != nullptr && cgroups->limits_memory()) {
    out.memory = "each session's sandbox (with its snapshots and forks) is one cgroup limited to " +
                 std::to_string(config_.sandbox.limits.memory_bytes >> 20) +
                 " MiB (--memory-limit-mb); memory is that cgroup's usage";
  } else {
    out.memory = "no memory cgroup: each process of a session (every snapshot and step) is limited to " +
                 std::to_string(config_.sandbox.limits.memory_bytes >> 20) +
                 " MiB on its own (RLIMIT_DATA), not the session as a whole; --max-sessions and "
                 "--session-snapshots bound how many there are; memory is not measured";
  }
  return out;
}

void Sessions::schedule_expiry() {
  if (stopping_) return;
  const auto idle = std::chrono::seconds(config_.idle_seconds);
  const auto next = table_.next_expiry(idle);
  expiry_timer_.cancel();
  if (!next) return;
  expiry_timer_.expires_at(*next + std::chrono::milliseconds(50));
  std::weak_ptr<bool> alive = alive_;
  expiry_timer_.async_wait([this, alive](const std::error_code& ec) {
    if (ec || !alive.lock() || stopping_) return;
    const auto idle_for = std::chrono::seconds(config_.idle_seconds);
    const auto now = Clock::now();
    for (const auto& id : table_.expired(now, idle_for)) {
      auto* e = table_.find_any(id);
      if (e == nullptr) continue;
      if (config_.step_waiting && config_.step_waiting(id)) {
        table_.touch(id, now);  // idle from when its step is done, as any session
        continue;
      }
      const std::string why = "idle for " + std::to_string(config_.idle_seconds) + " s (--session-idle-seconds)";
      spdlog::info("session {} closed: {}", id, why);
      forget_ended(id, e->owner, why);
      close_session(id, why);
    }
    schedule_expiry();
  });
}

void Sessions::shutdown() {
  if (stopping_) return;
  stopping_ = true;
  expiry_timer_.cancel();
  for (const auto& id : table_.all_ids()) {
    auto* e = table_.find_any(id);
    if (e == nullptr) continue;
    auto session = e->value;
    table_.erase(id);
    session->release("the server is shutting down");
    session->sandbox()->close("the server is shutting down");
  }
}

}  // namespace engine
