// The tools through a real session, with a fake engine and a fixed interpreter list.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include "engine/event_loop.h"
#include "engine/interpreters/catalog.h"
#include "mcp/call_table.h"
#include "mcp/session.h"
#include "mcp/tools/arguments.h"
#include "mcp/tools/services.h"
#include "mcp/tools/validate_script_tool.h"

using nlohmann::json;

namespace {

struct FakeHandle final : engine::Engine::RunHandle {
  int cancels = 0;
  void cancel() override { ++cancels; }
};

engine::Interpreter fake_interpreter(const std::string& version, const std::string& path) {
  engine::Interpreter in;
  in.version = version;
  in.major_minor = version.substr(0, version.rfind('.'));
  in.executable = path;
  in.prefix = "/usr";
  in.libpython = "/usr/lib/libpython" + in.major_minor + ".so.1.0";
  in.source = "/usr/bin";
  return in;
}

// Records requests; runs finish when the test says so. Interpreters come from a real catalog
// over fake sources (a quick default 3.11.2; a discovery that also finds 3.12.8).
class FakeEngine final : public engine::Engine {
 public:
  explicit FakeEngine(asio::io_context& io)
      : io_(io),
        catalog_(io, worker_.get_executor(),
                 engine::InterpreterSources{[this]() -> std::optional<engine::Interpreter> {
                                              ++quick_probes;
                                              return fake_interpreter("3.11.2", "/usr/bin/python3.11");
                                            },
                                            [this] {
                                              ++discoveries;
                                              return std::vector<engine::Interpreter>{
                                                  fake_interpreter("3.11.2", "/usr/bin/python3.11"),
                                                  fake_interpreter("3.12.8", "/opt/py/bin/python3.12")};
                                            }},
                 std::nullopt) {
    report.sandbox_status = "ready (test)";
    report.network = true;
    report.network_isolation = "host network: (test)";
    report.run_scoping = "landlock ABI 7 (test)";
    report.limits.memory_bytes = 1024;
    report.probe = sandbox::ProbeResult{};
    report.probe->userns_works = true;
  }
  ~FakeEngine() override { worker_.join(); }
  void start_warmup() override { ++warmups; }
  std::shared_ptr<RunHandle> execute(engine::RunRequest request, ProgressFn progress,
                                     DoneFn done) override {
    requests.push_back(request);
    progress_fns.push_back(std::move(progress));
    done_fns.push_back(std::move(done));
    handles.push_back(std::make_shared<FakeHandle>());
    return handles.back();
  }
  void find_interpreter(std::optional<std::string> version, InterpreterFn done) override {
    catalog_.select(std::move(version), [done = std::move(done)](engine::InterpreterChoice choice) {
      done(choice.interpreter, choice.error);
    });
  }
  void environment_report(std::function<void(engine::EnvironmentReport)> done) override {
    catalog_.on_discovered([this, done = std::move(done)] {
      auto r = report;
      for (const auto& in : catalog_.all()) r.interpreters.push_back({in, false, false});
      done(r);
    });
    catalog_.start_discovery();
  }
  void shutdown(std::function<void()> done) override { asio::post(io_, std::move(done)); }
  bool busy() const { return catalog_.busy(); }

  int warmups = 0;
  int quick_probes = 0;
  int discoveries = 0;
  engine::EnvironmentReport report;
  std::vector<engine::RunRequest> requests;
  std::vector<ProgressFn> progress_fns;
  std::vector<DoneFn> done_fns;
  std::vector<std::shared_ptr<FakeHandle>> handles;

 private:
  asio::io_context& io_;
  asio::thread_pool worker_{1};
  engine::InterpreterCatalog catalog_;
};

struct ToolHarness {
  asio::io_context io;
  FakeEngine engine{io};
  engine::EngineConfig config;
  int& quick_probes = engine.quick_probes;
  int& discoveries = engine.discoveries;
  mcp::ToolRegistry registry;
  std::vector<json> out;
  std::unique_ptr<mcp::Session> session;

  ToolHarness() {
    config.max_timeout_seconds = 60;
    config.default_timeout_seconds = 20;
    mcp::tools::register_tools(registry, mcp::tools::Services{engine, config});
    session = std::make_unique<mcp::Session>(registry, mcp::SessionOptions{},
                                             [this](std::string line) { out.push_back(json::parse(line)); });
    session->handle_line(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})");
    out.clear();
  }

  // Sends tools/call and runs the io loop until the answer (or nothing more to do).
  json call(const std::string& tool, const json& arguments, const json& id = 1, const json& meta = nullptr) {
    json params = {{"name", tool}, {"arguments", arguments}};
    if (!meta.is_null()) params["_meta"] = meta;
    session->handle_line(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", params}}.dump());
    pump();
    for (const auto& message : out) {
      if (message.contains("id") && message["id"] == id) return message;
    }
    return nullptr;
  }
  void pump() {
    // Discovery runs on a thread and posts back: wait for it while it is under way.
    for (int i = 0; i < 5000; ++i) {
      io.restart();
      io.poll();
      if (!engine.busy()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    io.restart();
    io.poll();
  }
};

std::string text_of(const json& response) { return response["result"]["content"][0]["text"].get<std::string>(); }

}  // namespace

TEST_CASE("tools/list: the tools with schemas, annotations and descriptions") {
  ToolHarness h;
  h.session->handle_line(R"({"jsonrpc":"2.0","id":5,"method":"tools/list"})");
  const auto tools = h.out.at(0)["result"]["tools"];
  REQUIRE(tools.size() == 8);
  std::vector<std::string> names;
  for (const auto& tool : tools) {
    names.push_back(tool["name"]);
    CHECK(tool["inputSchema"]["type"] == "object");
    CHECK(tool["inputSchema"]["properties"].is_object());
    CHECK(tool["outputSchema"]["type"] == "object");
    CHECK(tool["annotations"].is_object());
    CHECK(tool["description"].get<std::string>().find("xample") != std::string::npos);
  }
  CHECK(names == std::vector<std::string>{"execute_python", "validate_script", "check_environment", "create_session",
                                          "fork_session", "reset_session", "close_session", "list_sessions"});
  CHECK(tools[1]["annotations"]["readOnlyHint"] == true);
  CHECK(tools[2]["annotations"]["idempotentHint"] == true);
  CHECK(tools[0]["annotations"]["readOnlyHint"] == false);
  CHECK(tools[0]["inputSchema"]["required"] == json::array({"script"}));
  CHECK(tools[0]["inputSchema"]["properties"]["timeout_seconds"]["default"] == 20);
  CHECK(tools[2]["inputSchema"]["properties"].empty());
}

TEST_CASE("validate_script: VALID text as the Python server writes it") {
  ToolHarness h;
  const std::string script =
      "# /// script\n# requires-python = \">=3.10\"\n# dependencies = [\"requests>=2.31\", \"Rich\"]\n# ///\nimport requests\n";
  const auto response = h.call("validate_script", {{"script", script}, {"dependencies", {"rich==13.0"}}});
  REQUIRE(response.is_object());
  CHECK(text_of(response) ==
        "VALID\nrequires-python: >=3.10\ndependencies (2):\n  - requests>=2.31\n  - rich==13.0");
  const auto& s = response["result"]["structuredContent"];
  CHECK(s["valid"] == true);
  CHECK(s["requires_python"] == ">=3.10");
  CHECK(s["dependencies"] == json::array({"requests>=2.31", "rich==13.0"}));
  CHECK(s["python_version"] == "3.11.2");
  CHECK(response["result"]["isError"] == false);
}

TEST_CASE("validate_script: no block reports the interpreter constraint and no dependencies") {
  ToolHarness h;
  auto response = h.call("validate_script", {{"script", "print(1)\n"}});
  CHECK(text_of(response) == "VALID\nrequires-python: >=3.11\ndependencies: none");
  // Per call interpreter.
  CHECK(h.quick_probes == 1);
  CHECK(h.discoveries == 0);  // the default interpreter needs no full discovery
  response = h.call("validate_script", {{"script", "print(1)\n"}, {"python_version", "3.12"}}, 2);
  CHECK(text_of(response) == "VALID\nrequires-python: >=3.12\ndependencies: none");
  response = h.call("validate_script", {{"script", "print(1)\n"}, {"python_version", "3.12"}}, 3);
  CHECK(text_of(response) == "VALID\nrequires-python: >=3.12\ndependencies: none");
  CHECK(h.quick_probes == 1);
  CHECK(h.discoveries == 1);  // discovered once, then cached
}

TEST_CASE("validate_script: INVALID names the problem") {
  ToolHarness h;
  auto response = h.call("validate_script", {{"script", "print(1)\n"}, {"dependencies", {"requests>>2"}}});
  CHECK(text_of(response).rfind("INVALID: ", 0) == 0);
  CHECK(text_of(response).find("requests>>2") != std::string::npos);
  CHECK(response["result"]["structuredContent"]["valid"] == false);
  CHECK_FALSE(response["result"]["structuredContent"]["errors"].empty());

  response = h.call("validate_script",
                    {{"script", "# /// script\n# requires-python = \">=3.13\"\n# ///\n"}}, 2);
  CHECK(text_of(response).rfind("INVALID: ", 0) == 0);
  CHECK(text_of(response).find(">=3.13") != std::string::npos);
}

TEST_CASE("argument errors are tool results with isError naming the argument") {
  ToolHarness h;
  auto response = h.call("validate_script", json::object());
  CHECK(response["result"]["isError"] == true);
  CHECK(text_of(response).find("'script'") != std::string::npos);
  response = h.call("validate_script", {{"script", 5}}, 2);
  CHECK(text_of(response).find("'script'") != std::string::npos);
  response = h.call("execute_python", {{"script", "x"}, {"dependencies", "numpy"}}, 3);
  CHECK(response["result"]["isError"] == true);
  CHECK(text_of(response).find("'dependencies'") != std::string::npos);
  response = h.call("execute_python", {{"script", "x"}, {"dependencies", {"numpy", 3}}}, 4);
  CHECK(text_of(response).find("'dependencies'") != std::string::npos);
  response = h.call("execute_python", {{"script", "x"}, {"timeout_seconds", "soon"}}, 5);
  CHECK(text_of(response).find("'timeout_seconds'") != std::string::npos);
  response = h.call("execute_python", {{"script", "x"}, {"python_version", "latest"}}, 6);
  CHECK(text_of(response).find("'python_version'") != std::string::npos);
  response = h.call("validate_script", {{"script", "x"}, {"python_version", "3.7"}}, 7);
  CHECK(response["result"]["isError"] == true);
  CHECK(text_of(response).find("3.11.2") != std::string::npos);  // lists what is available
  CHECK(h.engine.requests.empty());
}

TEST_CASE("integer arguments: a string, a boolean, a fraction or a negative number is refused") {
  ToolHarness h;
  const std::string session = "0123456789abcdef0123456789abcdef";
  int id = 1;
  auto refusal = [&](const std::string& tool, const json& arguments) {
    const auto response = h.call(tool, arguments, id++);
    REQUIRE(response.is_object());
    CHECK(response["result"]["isError"] == true);
    return text_of(response);
  };
  for (const json& bad : {json("1"), json(true), json(1.5), json(-1), json("x")}) {
    INFO(bad.dump());
    auto text = refusal("fork_session", {{"session_id", session}, {"step", bad}});
    CHECK(text.find("Invalid argument 'step': expected a step number: an integer, 0 or more, got ") == 0);
    text = refusal("reset_session", {{"session_id", session}, {"step", bad}});
    CHECK(text.find("Invalid argument 'step'") == 0);
  }
  // timeout_seconds is read as the reference server reads it (pydantic's lax mode), clamped.
  for (const json& bad : {json(true), json(1.5), json("x"), json("1.5"), json::array()}) {
    INFO(bad.dump());
    CHECK(refusal("execute_python", {{"script", "x"}, {"timeout_seconds", bad}})
              .find("Invalid argument 'timeout_seconds': expected an integer (clamped to 1..60), got ") == 0);
  }
  CHECK(refusal("fork_session", {{"session_id", session}, {"step", "1"}}).find(
            "got the string \"1\" (send the number without quotes)") != std::string::npos);
  CHECK(refusal("fork_session", {{"session_id", session}, {"step", false}}).find("got the boolean false") !=
        std::string::npos);
  CHECK(h.engine.requests.empty());
}

TEST_CASE("timeout_seconds: what the reference server takes, clamped; an integer beyond 64 bits too") {
  using mcp::tools::clamped_integer_argument;
  const auto read = [](const json& value) { return clamped_integer_argument({{"t", value}}, "t", 1, 300); };
  CHECK(read(30) == 30);
  CHECK(read(0) == 1);
  CHECK(read(-5) == 1);
  CHECK(read(7.0) == 7);
  CHECK(read(1e20) == 300);
  CHECK(read(json::parse("100000000000000000000")) == 300);
  CHECK(read(json::parse("18446744073709551615")) == 300);
  CHECK(read(json::parse("-100000000000000000000")) == 1);
  CHECK(read("30") == 30);
  CHECK(read(" 45 ") == 45);
  CHECK(read("7.0") == 7);
  CHECK(read("-3") == 1);
  CHECK(read("99999999999999999999999") == 300);
  CHECK_FALSE(read(nullptr).has_value());
  for (const char* bad : {"true", "1.5", "\"1.5\"", "\"\"", "\"3x\"", "\"-\"", "\"0x10\"", "[]", "{}"}) {
    INFO(bad);
    CHECK_THROWS_AS(read(json::parse(bad)), mcp::tools::ArgumentError);
  }
  CHECK_THROWS_WITH(read("soon"), "Invalid argument 't': expected an integer (clamped to 1..300), got the string \"soon\"");

  // Through the tool: an integer literal beyond 64 bits runs with the longest timeout.
  ToolHarness h;
  h.session->handle_line(
      R"({"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"execute_python",)"
      R"("arguments":{"script":"x","timeout_seconds":100000000000000000000}}})");
  h.pump();
  REQUIRE(h.engine.requests.size() == 1);
  CHECK(h.engine.requests[0].timeout_seconds == h.config.max_timeout_seconds);
}

TEST_CASE("check_environment: the nine lines in order, then the engine's report") {
  ToolHarness h;
  h.config.warm_cache = false;
  const auto response = h.call("check_environment", json::object());
  REQUIRE(response.is_object());
  const auto text = text_of(response);
  std::vector<std::string> lines;
  for (std::size_t start = 0; start <= text.size();) {
    const auto end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  REQUIRE(lines.size() > 9);
  CHECK(lines[0] == "Python version: 3.11.2");
  CHECK(lines[1].rfind("uv: ", 0) == 0);
  CHECK(lines[2].rfind("Platform: Linux ", 0) == 0);
  CHECK(lines[3] == "Sandbox backend: native");
  CHECK(lines[4] == "Sandbox status: ready (test)");
  CHECK(lines[5] == "Default timeout: 20s");
  CHECK(lines[6] == "Max timeout: 60s");
  CHECK(lines[7] == "Max output: 102400 bytes");
  CHECK(lines[8] == "Cache warming: disabled");
  CHECK(text.find("Network: on") != std::string::npos);
  CHECK(text.find("\nNetwork isolation: host network: (test)\n") != std::string::npos);
  CHECK(text.find("\nRun scoping: landlock ABI 7 (test)\n") != std::string::npos);
  CHECK(text.find("  Memory bytes: 1024") != std::string::npos);
  CHECK(text.find("  Userns works: yes") != std::string::npos);
  CHECK(text.find("Problem") == std::string::npos);  // empty values are left out
  CHECK(text.find("3.12.8 /opt/py/bin/python3.12") != std::string::npos);
  const auto& s = response["result"]["structuredContent"];
  CHECK(s["sandbox_status"] == "ready (test)");
  CHECK(s["cache_warming"] == false);
  CHECK(s["interpreters"].size() == 2);
  CHECK(s["engine"]["network"] == "on");
  CHECK(s["engine"]["network_isolation"] == "host network: (test)");
  CHECK(s["engine"]["run_scoping"] == "landlock ABI 7 (test)");
}

TEST_CASE("execute_python: clamps the timeout, forwards progress, formats the result") {
  ToolHarness h;
  CHECK(h.call("execute_python", {{"script", "print(1)"}}, 1).is_null());
  CHECK(h.call("execute_python", {{"script", "a"}, {"timeout_seconds", 0}}, 2).is_null());
  CHECK(h.call("execute_python", {{"script", "b"}, {"timeout_seconds", 10000}}, 3).is_null());
  CHECK(h.call("execute_python", {{"script", "c"}, {"timeout_seconds", 7.0}, {"dependencies", {"rich"}},
                                  {"python_version", "3.12"}},
               4, {{"progressToken", "p"}})
            .is_null());
  REQUIRE(h.engine.requests.size() == 4);
  CHECK(h.engine.requests[0].timeout_seconds == 20);
  CHECK(h.engine.requests[0].script == "print(1)");
  CHECK_FALSE(h.engine.requests[0].python_version.has_value());
  CHECK(h.engine.requests[1].timeout_seconds == 1);
  CHECK(h.engine.requests[2].timeout_seconds == 60);
  CHECK(h.engine.requests[3].timeout_seconds == 7);
  CHECK(h.engine.requests[3].dependencies == std::vector<std::string>{"rich"});
  CHECK(h.engine.requests[3].python_version == std::optional<std::string>("3.12"));

  h.engine.progress_fns[3](0.5, 1.0, "installing rich");
  REQUIRE(h.out.size() == 1);
  CHECK(h.out[0]["params"]["progressToken"] == "p");
  CHECK(h.out[0]["params"]["message"] == "installing rich");
  h.out.clear();

  engine::RunResult result;
  result.stdout_stream.text = "1\n";
  result.duration_ms = 3;
  result.usage.wall_ms = 3;
  h.engine.done_fns[0](result);
  REQUIRE(h.out.size() == 1);
  CHECK(h.out[0]["id"] == 1);
  CHECK(text_of(h.out[0]) ==
        "--- stdout ---\n1\n\n--- exit_code: 0 ---\n--- duration_ms: 3 ---\n--- usage: wall_ms=3 end=exit ---");
  CHECK(h.out[0]["result"]["structuredContent"]["stdout"] == "1\n");
  CHECK(h.out[0]["result"]["isError"] == false);
}

TEST_CASE("execute_python: the engine learns who asked (clients take turns for run slots)") {
  ToolHarness h;
  const auto* tool = h.registry.find("execute_python");
  REQUIRE(tool != nullptr);
  mcp::CallTable table;
  mcp::CallOptions options;
  options.client = "192.0.2.7";
  table.call_tool(h.registry, 9, "9", {{"name", "execute_python"}, {"arguments", {{"script", "x"}}}},
                  options, mcp::Outlet{nullptr, [](std::optional<json>) {}});
  h.pump();
  h.call("execute_python", {{"script", "y"}}, 2);  // on stdio: one client, no name
  REQUIRE(h.engine.requests.size() == 2);
  CHECK(h.engine.requests[0].client == "192.0.2.7");
  CHECK(h.engine.requests[1].client.empty());
}

TEST_CASE("execute_python: cancellation reaches the engine and suppresses the answer") {
  ToolHarness h;
  h.call("execute_python", {{"script", "while True: pass"}}, "run-1");
  REQUIRE(h.engine.handles.size() == 1);
  h.session->handle_line(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"run-1"}})");
  CHECK(h.engine.handles[0]->cancels == 1);
  engine::RunResult cancelled;
  cancelled.end_reason = engine::EndReason::cancelled;
  cancelled.exit_code = -9;
  h.engine.done_fns[0](cancelled);
  CHECK(h.out.empty());
}

TEST_CASE("execute_python: a service error is isError and leads the text") {
  ToolHarness h;
  h.call("execute_python", {{"script", "print(1)"}});
  engine::RunResult failed;
  failed.service_error = "sandbox unavailable: bubblewrap is not installed (apt install bubblewrap)";
  failed.end_reason = engine::EndReason::sandbox_error;
  failed.exit_code = -1;
  h.engine.done_fns[0](failed);
  const auto& response = h.out.back();
  CHECK(response["result"]["isError"] == true);
  CHECK(text_of(response).rfind("sandbox unavailable", 0) == 0);
}

TEST_CASE("validation text for warnings and several errors") {
  engine::Interpreter in = fake_interpreter("3.11.2", "/usr/bin/python3.11");
  engine::ScriptValidation ok;
  ok.warnings = {"unknown key 'tool'"};
  CHECK(mcp::tools::validation_text(ok, in) ==
        "VALID\nrequires-python: >=3.11\ndependencies: none\nwarnings:\n  - unknown key 'tool'");
  engine::ScriptValidation bad;
  bad.valid = false;
  bad.errors = {"line 2, column 3: bad TOML", "second"};
  CHECK(mcp::tools::validation_text(bad, in) == "INVALID: line 2, column 3: bad TOML; second");
}

TEST_CASE("integer_argument: whole numbers from 0 to 2^64-1; 7.0 counts, null is absent") {
  using mcp::tools::ArgumentError;
  using mcp::tools::integer_argument;
  const auto read = [](const json& value) { return integer_argument({{"n", value}}, "n", "a count"); };
  CHECK(read(0) == 0u);
  CHECK(read(7.0) == 7u);
  CHECK(read(json::parse("18446744073709551615")) == 18446744073709551615ULL);
  CHECK_FALSE(read(nullptr).has_value());
  CHECK_FALSE(integer_argument(json::object(), "n", "a count").has_value());
  for (const char* bad : {"-1", "-0.5", "1.5", "\"3\"", "true", "[]", "{}", "18446744073709551616", "1e300"}) {
    INFO(bad);
    CHECK_THROWS_AS(read(json::parse(bad)), ArgumentError);
  }
  CHECK_THROWS_WITH(read(-3), "Invalid argument 'n': expected a count, got -3");
  CHECK_THROWS_WITH(read(json::parse("18446744073709551616")),
                    "Invalid argument 'n': expected a count, got a number beyond 64 bits (1.8446744073709552e+19)");
  CHECK_THROWS_WITH(read("3"), "Invalid argument 'n': expected a count, got the string \"3\" (send the number "
                               "without quotes)");
  CHECK_THROWS_WITH(read("soon"), "Invalid argument 'n': expected a count, got the string \"soon\"");
  CHECK_THROWS_WITH(read(json::array()), "Invalid argument 'n': expected a count, got an array");
}

TEST_CASE("input_files: text, {text}, {base64}; strict base64; bad shapes name the argument") {
  using mcp::tools::base64_decode;
  using mcp::tools::input_files_argument;
  CHECK(base64_decode("") == std::string());
  CHECK(base64_decode("aGk=") == std::string("hi"));
  CHECK(base64_decode("AP8=") == std::string("\x00\xff", 2));
  for (const char* bad : {"aGk", "a=Gk", "aG k=", "!!!!", "aGk==="}) {
    INFO(bad);
    CHECK_FALSE(base64_decode(bad));
  }
  const auto files = input_files_argument(
      json{{"input_files", {{"a.txt", "plain"}, {"b.txt", {{"text", "t"}}}, {"c.bin", {{"base64", "AP8="}}}}}});
  REQUIRE(files.size() == 3);
  CHECK(files[0].path == "a.txt");
  CHECK(files[0].content == "plain");
  CHECK(files[1].content == "t");
  CHECK(files[2].content == std::string("\x00\xff", 2));
  CHECK(input_files_argument(json::object()).empty());
  for (const json& bad : {json{{"input_files", "x"}}, json{{"input_files", {{"a", 1}}}},
                          json{{"input_files", {{"a", {{"base64", "!!"}}}}}},
                          json{{"input_files", {{"a", {{"text", "x"}, {"base64", "eA=="}}}}}}}) {
    INFO(bad.dump());
    CHECK_THROWS_WITH(input_files_argument(bad), Catch::Contains("input_files"));
  }
}
