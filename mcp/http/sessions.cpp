#include "mcp/http/sessions.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include "mcp/era.h"
#include "mcp/intake.h"
#include "mcp/jsonrpc.h"

namespace mcp::http {

using json = nlohmann::json;
namespace rpc = jsonrpc;
using Clock = std::chrono::steady_clock;

std::string new_session_id() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("RAND_bytes failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

std::string owner_of_session(const std::string& session_id) { return "http-session:" + session_id; }

namespace {

struct HttpSession {
  HttpSession(const ToolRegistry& tools, const SessionOptions& options, std::string session_id)
      : id(std::move(session_id)), legacy(tools, options, calls) {}
  std::string id;
  CallTable calls;
  LegacySession legacy;
  std::map<std::string, std::shared_ptr<ResumableStream>> streams;
  std::uint64_t next_stream = 1;
  Clock::time_point last_used = Clock::now();

  bool idle() const {
    if (calls.size() != 0) return false;
    return std::none_of(streams.begin(), streams.end(), [](const auto& s) { return s.second->attached(); });
  }
};

void refuse(Response& response, int status, int code, const std::string& message, HeaderList extra = {}) {
  send_json(response, status, rpc::error_response(std::nullopt, code, message), std::move(extra));
}

}  // namespace

struct Sessions::State : std::enable_shared_from_this<Sessions::State> {
  State(asio::io_context& context, const ToolRegistry& registry, SessionOptions opts, SessionLimits l,
        OwnerEndedFn ended, std::shared_ptr<OutputBudget> output)
      : io(context), tools(registry), options(std::move(opts)), limits(l), owner_ended(std::move(ended)),
        budget(std::move(output)), sweeper(context) {}

  asio::io_context& io;
  const ToolRegistry& tools;
  SessionOptions options;
  SessionLimits limits;
  OwnerEndedFn owner_ended;
  std::shared_ptr<OutputBudget> budget;
  asio::steady_timer sweeper;
  bool accepting = true;
  std::map<std::string, std::shared_ptr<HttpSession>> sessions;
  // Streams each connection carries, with the response that carries them.
  std::map<std::uint64_t, std::vector<std::pair<std::weak_ptr<ResumableStream>, const Response*>>>
      by_connection;

  std::shared_ptr<HttpSession> find(const Request& request, Response& response) {
    const auto id = request.header("mcp-session-id");
    if (!id) {
      refuse(response, 400, rpc::kInvalidRequest, "Bad Request: Mcp-Session-Id header is required");
      return nullptr;
    }
    const auto it = sessions.find(*id);
    if (it == sessions.end()) {
      refuse(response, 404, rpc::kInvalidRequest,
             "Session not found: it ended or expired; send a new initialize without Mcp-Session-Id");
      return nullptr;
    }
    it->second->last_used = Clock::now();
    return it->second;
  }

  // `session`: the protocol session the request belongs to; the engine's sessions it creates are
  // its own, invisible to every other client.
  CallOptions base(const Request& request, const std::string& session) {
    CallOptions options_for_call;
    options_for_call.client = request.peer;
    options_for_call.owner = owner_of_session(session);
    return options_for_call;
  }

  void track(std::uint64_t connection, const std::shared_ptr<ResumableStream>& stream,
             const Response* response) {
    by_connection[connection].emplace_back(stream, response);
  }

  // The least recently used idle session other than `keep`, or null.
  std::shared_ptr<HttpSession> evictable(const HttpSession* keep = nullptr) const {
    std::shared_ptr<HttpSession> oldest;
    for (const auto& [id, session] : sessions) {
      if (session.get() == keep || !session->idle()) continue;
      if (!oldest || session->last_used < oldest->last_used) oldest = session;
    }
    return oldest;
  }

  // Brings the sessions back within the bound after `opened` was added: the least recently used
  // idle one goes. False when none can.
  bool make_room(const HttpSession& opened) {
    if (sessions.size() <= limits.max_sessions) return true;
    const auto oldest = evictable(&opened);
    if (!oldest) return false;
    spdlog::info("http: session limit ({}) reached; ending the least recently used idle session",
                 limits.max_sessions);
    end(oldest, "its HTTP session was ended to make room for a new one (at most " +
                    std::to_string(limits.max_sessions) + ")");
    return true;
  }

  void end(const std::shared_ptr<HttpSession>& session, const std::string& why) {
    sessions.erase(session->id);
    session->legacy.end();
    session->calls.drop_all();
    for (auto& [id, stream] : session->streams) stream->finish();
    if (owner_ended) owner_ended(owner_of_session(session->id), why);
  }

  // Bounds what streams already delivered keep for replay: the oldest go first. A stream whose
  // answer no connection took is kept (its bytes count against the session instead).
  void prune_replay(HttpSession& session) {
    auto& streams = session.streams;
    std::size_t bytes = 0;
    for (const auto& [sid, stream] : streams) {
      if (stream->delivered()) bytes += stream->bytes();
    }
    while (bytes > limits.replay_bytes) {
      auto victim = streams.end();
      for (auto it = streams.begin(); it != streams.end(); ++it) {
        if (it->second->finished() && it->second->delivered() && !it->second->attached() &&
            (victim == streams.end() || it->second->finished_at() < victim->second->finished_at())) {
          victim = it;
        }
      }
      if (victim == streams.end()) break;
      bytes -= victim->second->bytes();
      streams.erase(victim);
    }
  }

  void sweep() {
    const auto now = Clock::now();
    std::vector<std::shared_ptr<HttpSession>> expired;
    for (auto& [id, session] : sessions) {
      auto& streams = session->streams;
      for (auto it = streams.begin(); it != streams.end();) {
        const bool stale = it->second->finished() && !it->second->attached() &&
                           now - it->second->finished_at() > limits.replay_kept;
        it = stale ? streams.erase(it) : std::next(it);
      }
      prune_replay(*session);
      if (session->idle() && now - session->last_used > limits.idle) expired.push_back(session);
    }
    for (const auto& session : expired) {
      spdlog::info("http: session {}... expired after {} s idle", session->id.substr(0, 8),
                   limits.idle.count());
      end(session, "its HTTP session expired after " + std::to_string(limits.idle.count()) + " s idle");
    }
    for (auto it = by_connection.begin(); it != by_connection.end();) {
      auto& entries = it->second;
      entries.erase(std::remove_if(entries.begin(), entries.end(),
                                   [](const auto& e) { return e.first.expired(); }),
                    entries.end());
      it = entries.empty() ? by_connection.erase(it) : std::next(it);
    }
  }

  void schedule_sweep() {
    sweeper.expires_after(std::chrono::seconds(30));
    sweeper.async_wait([weak = weak_from_this()](const asio::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      self->sweep();
      self->schedule_sweep();
    });
  }
};

Sessions::Sessions(asio::io_context& io, const ToolRegistry& tools, SessionOptions options,
                   SessionLimits limits, OwnerEndedFn owner_ended, std::shared_ptr<OutputBudget> budget)
    : state_(std::make_shared<State>(io, tools, std::move(options), limits, std::move(owner_ended),
                                     std::move(budget))) {
  state_->schedule_sweep();
}

Sessions::~Sessions() { state_->sweeper.cancel(); }

void Sessions::initialize(const Request& request, const json& message, Accepts,
                          std::shared_ptr<Response> response) {
  auto& state = *state_;
  if (!state.accepting) {
    refuse(*response, 503, rpc::kInternalError, "The server is shutting down");
    return;
  }
  const std::string full = "Too many sessions are active (" + std::to_string(state.limits.max_sessions) +
                           "); retry later";
  if (state.sessions.size() >= state.limits.max_sessions && !state.evictable()) {
    refuse(*response, 503, rpc::kInternalError, full);
    return;
  }
  // Room is made once the initialize is accepted: a refused one ends no other session.
  SessionOptions options = state.options;
  if (state.budget) {
    options.batch_max_bytes = state.budget->limits().client_bytes;
    options.batch_reply_bound = state.budget->limits().call_bytes;
  }
  auto session = std::make_shared<HttpSession>(state.tools, options, new_session_id());
  if (state.budget) {
    const std::string client = OutputBudget::session_client(session->id);
    session->legacy.set_batch_held(OutputBudget::charger(state.budget, client));
    session->legacy.set_client_bytes([budget = std::weak_ptr<OutputBudget>(state.budget), client] {
      const auto b = budget.lock();
      return b ? b->unsent(client) : std::size_t{0};
    });
  }
  state.sessions.emplace(session->id, session);
  std::weak_ptr<State> weak = state_;
  session->legacy.handle(
      message,
      Outlet{nullptr,
             [weak, session, response, full](std::optional<json> answer) {
               const bool ok = answer && answer->contains("result");
               auto s = weak.lock();
               if (!ok) {
                 if (s) s->sessions.erase(session->id);
                 if (answer) send_json(*response, 400, *answer);
                 return;
               }
               if (s && !s->make_room(*session)) {
                 s->sessions.erase(session->id);
                 refuse(*response, 503, rpc::kInternalError, full);
                 return;
               }
               spdlog::debug("http: session {}... opened", session->id.substr(0, 8));
               send_json(*response, 200, *answer, {{"Mcp-Session-Id", session->id}});
             }},
      state.base(request, session->id));
}

void Sessions::post(const Request& request, const json& message, Accepts accepts,
                    std::shared_ptr<Response> response) {
  auto& state = *state_;
  auto session = state.find(request, *response);
  if (!session) return;
  if (const auto version = request.header("mcp-protocol-version");
      version && !is_initialize_era_version(*version)) {
    refuse(*response, 400, rpc::kInvalidRequest,
           "Bad Request: MCP-Protocol-Version '" + *version + "' is not a version of this session (" +
               session->legacy.protocol_version() + ")");
    return;
  }
  const std::string client = OutputBudget::session_client(session->id);
  response->charge_to(client);
  state.prune_replay(*session);
  if (state.budget && calls_started(message) > 0) {
    if (auto refusal = state.budget->refuse_call(client)) {
      const auto id = message.is_object() ? rpc::classify(message).id : std::nullopt;
      send_refusal(*response, id, *refusal);
      return;
    }
  }
  if (message.is_array()) {
    session->legacy.handle_batch(message,
                                 LegacySession::BatchOutlet{nullptr,
                                                            [response](std::optional<std::string> answer) {
                                                              if (answer) {
                                                                response->send(200, {{"Content-Type", "application/json"}},
                                                                               std::move(*answer));
                                                              } else {
                                                                response->send(202, {}, "");
                                                              }
                                                            }},
                                 state.base(request, session->id));
    return;
  }
  Reply::Options options;
  options.may_stream = accepts.event_stream;
  std::weak_ptr<State> weak_state = state_;
  std::weak_ptr<HttpSession> weak_session = session;
  const auto connection = request.connection;
  const Response* carrier = response.get();
  options.make_resumable = [weak_state, weak_session, connection, carrier]() {
    auto s = weak_state.lock();
    auto owner = weak_session.lock();
    if (!s || !owner) return std::shared_ptr<ResumableStream>();  // the session ended meanwhile
    ResumableStream::HeldFn held;
    if (s->budget) {
      held = OutputBudget::charger(s->budget, OutputBudget::session_client(owner->id));
    }
    auto stream = std::make_shared<ResumableStream>(s->io, std::to_string(owner->next_stream++), std::move(held));
    owner->streams.emplace(stream->id(), stream);
    s->track(connection, stream, carrier);
    return stream;
  };
  auto reply = std::make_shared<Reply>(state.io, response, std::move(options));
  if (!accepts.json) reply->begin_stream();
  session->legacy.handle(message,
                         Outlet{[reply](json n) { reply->notify(n); },
                                [reply](std::optional<json> answer) { reply->done(std::move(answer)); }},
                         state.base(request, session->id));
  reply->begin_stream();  // still running: stream its notifications and then its response
}

void Sessions::get(const Request& request, std::shared_ptr<Response> response) {
  auto& state = *state_;
  auto session = state.find(request, *response);
  if (!session) return;
  const auto last = request.header("last-event-id");
  if (!last) {
    refuse(*response, 405, rpc::kInvalidRequest,
           "Method Not Allowed: this server sends nothing outside the responses to requests, so it "
           "offers no standalone event stream; GET only resumes a stream (Last-Event-ID)",
           {{"Allow", "GET, POST, DELETE"}});
    return;
  }
  const auto dash = last->rfind('-');
  std::uint64_t sequence = 0;
  bool valid = dash != std::string::npos && dash > 0 && dash + 1 < last->size();
  if (valid) {
    try {
      std::size_t used = 0;
      sequence = std::stoull(last->substr(dash + 1), &used);
      valid = used == last->size() - dash - 1;
    } catch (const std::exception&) {
      valid = false;
    }
  }
  const auto stream = valid ? session->streams.find(last->substr(0, dash)) : session->streams.end();
  if (stream == session->streams.end()) {
    refuse(*response, 400, rpc::kInvalidRequest,
           "Bad Request: Last-Event-ID '" + *last + "' names no stream of this session (unknown, or "
           "expired " + std::to_string(state.limits.replay_kept.count()) + " s after it ended)");
    return;
  }
  response->charge_to(OutputBudget::session_client(session->id));
  state.track(request.connection, stream->second, response.get());
  stream->second->attach(response, sequence);
}

void Sessions::remove(const Request& request, std::shared_ptr<Response> response) {
  auto& state = *state_;
  auto session = state.find(request, *response);
  if (!session) return;
  spdlog::debug("http: session {}... ended by the client", session->id.substr(0, 8));
  state.end(session, "its HTTP session was ended by the client (DELETE)");
  response->send(204, {}, "");
}

void Sessions::connection_closed(std::uint64_t connection) {
  const auto it = state_->by_connection.find(connection);
  if (it == state_->by_connection.end()) return;
  auto entries = std::move(it->second);
  state_->by_connection.erase(it);
  for (auto& [weak, carrier] : entries) {
    if (auto stream = weak.lock()) stream->detach(carrier);
  }
}

std::size_t Sessions::count() const { return state_->sessions.size(); }

std::size_t Sessions::calls_in_flight() const {
  std::size_t n = 0;
  for (const auto& [id, session] : state_->sessions) n += session->calls.size();
  return n;
}

void Sessions::stop_accepting_and_cancel() {
  state_->accepting = false;
  for (auto& [id, session] : state_->sessions) {
    session->legacy.stop_accepting();
    session->calls.cancel_all();
  }
}

void Sessions::abandon_in_flight(const std::string& reason) {
  for (auto& [id, session] : state_->sessions) session->calls.abandon_all(reason);
}

}  // namespace mcp::http
