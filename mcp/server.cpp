#include "mcp/server.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <csignal>
#include <fstream>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>

#include "engine/interpreters/discovery.h"
#include "mcp/client_log_sink.h"
#include "mcp/framing.h"
#include "mcp/graceful_stop.h"
#include "mcp/http/endpoint.h"
#include "mcp/http/listener.h"
#include "mcp/intake.h"
#include "mcp/open_file_limit.h"
#include "mcp/jsonrpc.h"
#include "mcp/run_result_format.h"
#include "mcp/session.h"
#include "mcp/stdio_transport.h"
#include "mcp/tool_registry.h"
#include "mcp/tools/services.h"
#include "sandbox/user_network.h"

namespace mcp {

namespace {

void fill_defaults(ServerHooks& hooks) {
  if (!hooks.make_engine) {
    hooks.make_engine = [](asio::io_context& io, const engine::EngineConfig& c) {
      return engine::make_engine(io, c);
    };
  }
}

// The sink forwarding server logs to the client. It joins the default logger before any other
// thread exists and is never removed (the sink list is not safe to change while others log);
// it is only detached, under its own mutex, when the server ends.
class ScopedClientLogSink {
 public:
  ScopedClientLogSink() : sink_(std::make_shared<ClientLogSink>()) {
    if (auto logger = spdlog::default_logger()) logger->sinks().push_back(sink_);
  }
  ~ScopedClientLogSink() { sink_->detach(); }
  ScopedClientLogSink(const ScopedClientLogSink&) = delete;
  ScopedClientLogSink& operator=(const ScopedClientLogSink&) = delete;
  void attach(ClientLogSink::Forward forward) { sink_->attach(std::move(forward)); }

 private:
  std::shared_ptr<ClientLogSink> sink_;
};

// An io_context whose services can be shut down early. At the end of serve_http the pending
// handlers (RESTinio's connections among them) must be destroyed while the listener that owns
// their connection counter still exists; the I/O objects are destroyed afterwards, as asio allows.
class ServerIoContext : public asio::io_context {
 public:
  using asio::io_context::shutdown;
};

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Takes the client's lines into the session one message at a time, within the intake bound
// (mcp/intake.h). A line that would start a call while there is no room for it is held, and
// nothing more is read (the client's writes block) until a call ends or the client reads
// replies; every other message is taken as it comes. Single-threaded, on the io thread.
class StdioIntake {
 public:
  StdioIntake(asio::io_context& io, StdioTransport& transport, Session& session, IntakeLimits limits,
              std::size_t reply_bound)
      : io_(io), transport_(transport), session_(session), limits_(limits), reply_bound_(reply_bound),
        framer_([this](std::string_view line) { take(line); },
                [this](const OversizeLine& line) { session_.handle_oversize(line); }) {
    session_.set_reply_bound(reply_bound_);
    // A batch answered gives its bytes back: a held message may fit now.
    session_.set_batch_held([this](std::ptrdiff_t bytes) {
      if (bytes < 0) poke_later();
    });
    session_.set_client_bytes([this] { return transport_.queued_bytes() + session_.batch_bytes(); });
    // Both run before the state they change is visible (a call's response is sent after it
    // leaves the table): look again once they are done.
    session_.set_on_call_ended([this] { poke_later(); });
    transport_.set_on_written([this] { poke_later(); });
  }
  ~StdioIntake() {
    session_.set_on_call_ended(nullptr);
    session_.set_batch_held(nullptr);
    session_.set_client_bytes(nullptr);
    transport_.set_on_written(nullptr);
  }
  StdioIntake(const StdioIntake&) = delete;
  StdioIntake& operator=(const StdioIntake&) = delete;

  std::size_t feed(std::string_view bytes) { return framer_.feed(bytes); }

  // End of input: `then` runs once the last line has been taken.
  void end_of_input(std::function<void()> then) {
    framer_.finish();
    if (held_) {
      after_input_ = std::move(then);
      return;
    }
    then();
  }

 private:
  IntakeLoad load() const {
    return IntakeLoad{transport_.queued_bytes() + session_.batch_bytes(), session_.reserved_bytes(),
                      session_.calls_in_flight()};
  }
  bool room_for(std::size_t calls, std::size_t line_bytes) const {
    return may_start_calls(load(), calls, call_share_bytes(reply_bound_, line_bytes), limits_);
  }

  void take(std::string_view line) {
    // The common case: one request, room for it, one parse, nothing held. A batch is counted.
    const auto first = line.find_first_not_of(" \t\r");
    const bool batch = first != std::string_view::npos && line[first] == '[';
    if (!batch && room_for(1, line.size())) {
      session_.handle_line(line);
      return;
    }
    auto parsed = jsonrpc::parse(line);
    const std::size_t calls = parsed ? calls_started(*parsed) : 0;
    if (room_for(calls, line.size())) {
      session_.handle_parsed(std::move(parsed), line.size());
      return;
    }
    spdlog::debug("mcp: {} call(s) in flight, {} bytes of replies queued: holding the next message",
                  session_.calls_in_flight(), transport_.queued_bytes());
    held_.emplace(Held{std::move(parsed), line.size(), calls});
    framer_.pause();
    transport_.pause();
  }

  void poke_later() {
    if (!held_ || poke_posted_) return;
    poke_posted_ = true;
    asio::post(io_, [this] {
      poke_posted_ = false;
      poke();
    });
  }

  void poke() {
    if (!held_ || !room_for(held_->calls, held_->bytes)) return;
    Held held = std::move(*held_);
    held_.reset();
    session_.handle_parsed(std::move(held.parsed), held.bytes);
    framer_.resume();
    if (after_input_) {
      auto then = std::move(after_input_);
      after_input_ = nullptr;
      then();
      return;
    }
    transport_.resume();
  }

  asio::io_context& io_;
  StdioTransport& transport_;
  Session& session_;
  IntakeLimits limits_;
  std::size_t reply_bound_;
  LineFramer framer_;
  struct Held {  // a message that waits for room, parsed once
    std::optional<nlohmann::json> parsed;
    std::size_t bytes = 0;  // its line's length
    std::size_t calls = 0;  // the calls it starts
  };
  std::optional<Held> held_;
  bool poke_posted_ = false;
  std::function<void()> after_input_;
};

}  // namespace

std::string server_instructions(const engine::EngineConfig& config) {
  return "Runs Python scripts in a sandbox (" +
         std::string(config.policy.backend == sandbox::Backend::none ? "unsandboxed: --sandbox-backend none"
                                                                     : "isolated per run") +
         "). Use execute_python to run code; declare third-party packages in a PEP 723 block or "
         "the dependencies argument. Without a session every call starts from a clean state; "
         "create_session gives a live interpreter whose state stays between execute_python calls "
         "(session_id), with every step snapshotted (reset_session, fork_session). input_files and "
         "output_files move files in and out. validate_script checks dependencies without running; "
         "check_environment shows Python versions, limits and the isolation in effect.";
}

int serve_stdio(const CliOptions& options, ProtocolFds fds, ServerHooks hooks) {
  fill_defaults(hooks);
  ScopedClientLogSink log_sink;
  asio::io_context io;
  std::unique_ptr<engine::Engine> engine = hooks.make_engine(io, options.engine);
  ToolRegistry registry;
  const tools::Services services{*engine, options.engine};
  tools::register_tools(registry, services);

  StdioTransport transport(io, std::move(fds.in), std::move(fds.out));
  SessionOptions session_options;
  session_options.instructions = server_instructions(options.engine);
  session_options.batch_max_bytes = intake_limits(options.engine).max_bytes;
  session_options.batch_reply_bound = reply_bound_bytes(options.engine);
  Session session(registry, session_options,
                  [&transport](std::string message) { transport.send(std::move(message)); });
  session.set_on_initialized([&engine] {
    // Warm-up starts only now: initialize itself must be answered at once.
    engine->start_warmup();
  });

  log_sink.attach([&io, &session](LogLevel level, std::string text) {
    asio::post(io, [&session, level, text = std::move(text)] { session.log(level, text); });
  });
  // Detached before the session goes away, whatever happens below.
  struct DetachOnExit {
    ScopedClientLogSink& sink;
    ~DetachOnExit() { sink.attach(nullptr); }
  } detach_on_exit{log_sink};

  StdioIntake intake(io, transport, session, intake_limits(options.engine),
                     reply_bound_bytes(options.engine));

  GracefulStop stop(io, *engine,
                    {[&transport] { transport.stop_reading(); },
                     [&session] { session.stop_accepting_and_cancel(); },
                     [&session](const std::string& why) { session.abandon_in_flight(why); },
                     [&transport](std::function<void()> then) { transport.flush(std::move(then)); }},
                    hooks.handle_signals);
  auto begin_shutdown = [&stop](const std::string& why) { stop.begin(why); };

  // End of input: the requests already read are finished (each within its own timeout), their
  // responses written, then the server stops. A signal meanwhile stops it at once.
  transport.start([&intake](std::string_view bytes) { return intake.feed(bytes); },
                  [&] {
                    if (transport.output_failed()) {  // nobody is left to answer
                      begin_shutdown("end of input");
                      return;
                    }
                    intake.end_of_input([&] {
                      if (session.calls_in_flight() > 0) {
                        spdlog::info("end of input: finishing {} request(s) already read",
                                     session.calls_in_flight());
                      }
                      session.when_idle([&] {
                        asio::post(io, [&] { begin_shutdown("end of input"); });
                      });
                    });
                  });
  io.run();
  // In the real process (it owns the signals) every run and zygote has been killed and reaped by
  // now; what may remain is an interpreter probe on the engine's worker thread, whose join in the
  // engine's destructor must not hold the exit past the 2 s budget. Unit tests keep running.
  if (stop.forced() || hooks.handle_signals) {
    engine::kill_running_probes();  // not waited for, but not left running either
    sandbox::kill_user_networks();  // nor pasta (a zygote's, an installer's), started or starting
    spdlog::default_logger()->flush();
    std::_Exit(0);
  }
  return 0;
}

int serve_http(const CliOptions& options, ServerHooks hooks,
               std::function<void(std::uint16_t, std::function<void()>)> on_listening) {
  fill_defaults(hooks);
  const ConnectionBound bound =
      connection_bound(options.http.max_connections, options.http.max_connections_given,
                       engine::max_concurrent_runs(options.engine), raise_open_file_limit());
  if (!bound.error.empty()) {
    spdlog::critical("{}", bound.error);
    return 1;
  }
  if (!bound.warning.empty()) spdlog::warn("{}", bound.warning);
  ServerIoContext io;
  std::unique_ptr<engine::Engine> engine = hooks.make_engine(io, options.engine);
  ToolRegistry registry;
  const tools::Services services{*engine, options.engine};
  tools::register_tools(registry, services);

  http::EndpointOptions endpoint_options;
  endpoint_options.access = {options.http.loopback, options.http.auth_token};
  endpoint_options.instructions = server_instructions(options.engine);
  // A protocol session's engine sessions are its own: they end with it.
  endpoint_options.owner_ended = [&engine](const std::string& owner, const std::string& why) {
    engine->close_sessions_of(owner, why);
  };
  // Unsent response bytes per client and for the whole server (output_budget.h).
  const auto budget = std::make_shared<http::OutputBudget>(http::output_limits(options.engine));
  endpoint_options.budget = budget;
  http::Endpoint endpoint(io, registry, endpoint_options);
  http::ListenerOptions listener_options;
  listener_options.budget = budget;
  listener_options.host = options.http.host;
  listener_options.port = options.http.port;
  listener_options.max_connections = bound.max_connections;
  listener_options.read_timeout = std::chrono::seconds(options.http.read_timeout_seconds);
  http::Listener listener(
      io, listener_options,
      [&endpoint](http::Request request, std::shared_ptr<http::Response> response) {
        endpoint.handle(std::move(request), std::move(response));
      },
      [&endpoint](std::uint64_t connection) { endpoint.connection_closed(connection); });
  try {
    listener.open();
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    io.shutdown();
    return 1;
  }
  const std::string host = options.http.host.find(':') == std::string::npos
                               ? options.http.host
                               : "[" + options.http.host + "]";
  spdlog::info("listening on http://{}:{}{} ({}{})", host, listener.port(), http::kEndpointPath,
               options.http.auth_token ? "bearer token required" : "no authentication",
               options.http.loopback ? ", loopback only" : "");
  engine->start_warmup();

  GracefulStop stop(io, *engine,
                    {[&listener] { listener.stop_accepting(); },
                     [&endpoint] { endpoint.stop_accepting_and_cancel(); },
                     [&endpoint](const std::string& why) { endpoint.abandon_in_flight(why); },
                     [&listener](std::function<void()> then) { listener.when_flushed(std::move(then)); }},
                    hooks.handle_signals);
  auto begin_shutdown = [&stop](const std::string& why) { stop.begin(why); };
  if (on_listening) {
    on_listening(listener.port(), [&io, &begin_shutdown] {
      asio::post(io, [&begin_shutdown] { begin_shutdown("stop requested"); });
    });
  }
  io.run();
  if (stop.forced() || hooks.handle_signals) {
    engine::kill_running_probes();
    sandbox::kill_user_networks();
    spdlog::default_logger()->flush();
    std::_Exit(0);
  }
  io.shutdown();
  return 0;
}

int run_once(const CliOptions& options, sandbox::UniqueFd out, ServerHooks hooks) {
  fill_defaults(hooks);
  // Read with the same bound the command line checked (the file may have changed since).
  std::ifstream file(*options.run_file, std::ios::binary);
  std::string script;
  char chunk[65536];
  while (file && script.size() <= kMaxRunFileBytes) {
    file.read(chunk, sizeof chunk);
    script.append(chunk, static_cast<std::size_t>(file.gcount()));
  }
  if (file.bad() || (!file && !file.eof())) {
    spdlog::error("--run: cannot read '{}'", *options.run_file);
    return 2;
  }
  if (script.size() > kMaxRunFileBytes) {
    spdlog::error("--run: '{}' is over 16 MiB; a script may be at most 16 MiB", *options.run_file);
    return 2;
  }
  asio::io_context io;
  std::unique_ptr<engine::Engine> engine = hooks.make_engine(io, options.engine);
  engine::RunRequest request;
  request.script = std::move(script);
  request.timeout_seconds = options.engine.default_timeout_seconds;
  request.python_version = options.engine.python_version;

  int exit_status = 125;
  asio::signal_set signals(io);
  std::shared_ptr<engine::Engine::RunHandle> handle;
  engine->start_warmup();
  handle = engine->execute(std::move(request), nullptr, [&](engine::RunResult result) {
    asio::error_code ignored;
    signals.cancel(ignored);
    std::string text = format_run_text(result) + "\n";
    if (!result.images.empty()) {
      text += std::to_string(result.images.size()) + " image(s) not shown: --run prints text only\n";
    }
    if (!write_all(out.get(), text)) spdlog::error("--run: writing the result failed");  // stdout-ok
    if (result.service_error) {
      exit_status = 125;
    } else if (result.exit_code < 0) {
      exit_status = 128 + (-result.exit_code & 0x7f);
    } else {
      exit_status = result.exit_code & 0xff;
    }
    engine->shutdown([&io] { io.stop(); });
  });
  if (hooks.handle_signals) {
    signals.add(SIGTERM);
    signals.add(SIGINT);
    signals.async_wait([&handle](const asio::error_code& ec, int) {
      if (!ec && handle) handle->cancel();
    });
  }
  io.run();
  return exit_status;
}

}  // namespace mcp
