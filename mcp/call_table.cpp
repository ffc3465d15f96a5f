#include "mcp/call_table.h"

#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "mcp/era.h"
#include "mcp/jsonrpc.h"

namespace mcp {

using json = nlohmann::json;
namespace rpc = jsonrpc;

namespace {

class CallImpl;

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

}  // namespace

struct CallTable::State {
  std::map<std::string, std::shared_ptr<CallImpl>> calls;
  std::vector<std::function<void()>> empty_waiters;  // when_empty
  std::size_t reserved = 0;                          // reserve_bytes of the calls in flight
  std::function<void()> on_call_ended;

  void notify_if_empty() {
    if (!calls.empty() || empty_waiters.empty()) return;
    auto waiters = std::move(empty_waiters);
    empty_waiters.clear();
    for (auto& waiter : waiters) waiter();
  }
};

namespace {

class CallImpl final : public ToolCall, public std::enable_shared_from_this<CallImpl> {
 public:
  CallImpl(std::weak_ptr<CallTable::State> table, json id, std::string key, json arguments,
           CallOptions options, Outlet outlet)
      : table_(std::move(table)), id_(std::move(id)), key_(std::move(key)),
        arguments_(std::move(arguments)), options_(std::move(options)), outlet_(std::move(outlet)) {}

  const json& arguments() const override { return arguments_; }

  void progress(double value, std::optional<double> total, const std::string& message) override {
    if (done_ || !options_.progress_token || !std::isfinite(value) || !outlet_.notify) return;
    if (last_progress_ && !(value > *last_progress_)) return;
    last_progress_ = value;
    json params = {{"progressToken", *options_.progress_token}, {"progress", value}};
    if (total && std::isfinite(*total)) params["total"] = *total;
    if (!message.empty() && options_.progress_message) params["message"] = message;
    outlet_.notify(rpc::notification("notifications/progress", std::move(params)));
  }

  void finish(json call_tool_result) override {
    if (done_) return;
    if (options_.stateless) mark_stateless_result(call_tool_result);
    complete(rpc::result_response(id_, std::move(call_tool_result)));
  }

  void on_cancel(std::function<void()> hook) override {
    if (cancel_requested_) {
      hook();
      return;
    }
    hooks_.push_back(std::move(hook));
  }

  bool cancelled() const override { return cancel_requested_; }

  void log(LogLevel level, json data) override {
    if (done_ || !outlet_.notify || !options_.wants_log || !options_.wants_log(level)) return;
    outlet_.notify(rpc::notification("notifications/message", {{"level", to_string(level)},
                                                               {"logger", options_.logger_name},
                                                               {"data", std::move(data)}}));
  }

  const std::string& client() const override { return options_.client; }
  const std::string& owner() const override { return options_.owner; }

  void request_cancel() {
    if (cancel_requested_) return;
    cancel_requested_ = true;
    auto self = shared_from_this();
    auto hooks = std::move(hooks_);
    hooks_.clear();
    for (auto& hook : hooks) hook();
  }

  void suppress() {
    if (done_) return;
    auto self = shared_from_this();
    done_ = true;
    detach();
    outlet_.done(std::nullopt);
    if (auto table = table_.lock()) table->notify_if_empty();
  }

  void abandon(const std::string& reason) {
    if (done_) return;
    complete(rpc::error_response(id_, rpc::kInternalError, reason));
  }

  void run(const ToolDefinition& tool) {
    try {
      tool.handler(shared_from_this());
    } catch (const std::exception& e) {
      spdlog::error("mcp: tool {} failed: {}", tool.name, e.what());
      finish({{"content", json::array({{{"type", "text"},
                                        {"text", "Internal error in " + tool.name + ": " + e.what()}}})},
              {"isError", true}});
    }
  }

 private:
  void complete(json response) {
    auto self = shared_from_this();
    done_ = true;
    detach();
    outlet_.done(std::move(response));
    if (auto table = table_.lock()) table->notify_if_empty();
  }

  void detach() {
    auto table = table_.lock();
    if (!table || table->calls.erase(key_) == 0) return;
    table->reserved -= options_.reserve_bytes;
    if (table->on_call_ended) table->on_call_ended();
  }

  std::weak_ptr<CallTable::State> table_;
  json id_;
  std::string key_;
  json arguments_;
  CallOptions options_;
  Outlet outlet_;
  bool done_ = false;
  bool cancel_requested_ = false;
  std::optional<double> last_progress_;
  std::vector<std::function<void()>> hooks_;
};

}  // namespace

CallTable::CallTable() : state_(std::make_shared<State>()) {}

CallTable::~CallTable() = default;

void CallTable::call_tool(const ToolRegistry& tools, const json& id, std::string key,
                          const json& params, CallOptions options, Outlet outlet) {
  auto refuse = [&](int code, std::string message) {
    outlet.done(rpc::error_response(id, code, std::move(message)));
  };
  const auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    refuse(rpc::kInvalidParams, "Invalid params: tools/call needs \"name\" (a string)");
    return;
  }
  const auto tool_name = name->get<std::string>();
  const ToolDefinition* tool = tools.find(tool_name);
  if (tool == nullptr) {
    refuse(rpc::kInvalidParams,
           "Unknown tool: " + tool_name + " (available: " + joined(tools.names()) + ")");
    return;
  }
  json arguments = json::object();
  if (const auto args = params.find("arguments"); args != params.end() && !args->is_null()) {
    if (!args->is_object()) {
      refuse(rpc::kInvalidParams, "Invalid params: \"arguments\" must be an object");
      return;
    }
    arguments = *args;
  }
  if (state_->calls.count(key) != 0) {
    refuse(rpc::kInvalidRequest,
           "Invalid Request: id " + id.dump() + " is already used by a request in flight");
    return;
  }
  const std::size_t reserve = options.reserve_bytes;
  auto call = std::make_shared<CallImpl>(state_, id, key, std::move(arguments), std::move(options),
                                         std::move(outlet));
  state_->reserved += reserve;
  state_->calls.emplace(std::move(key), call);
  call->run(*tool);
}

bool CallTable::cancel(const std::string& key) {
  const auto it = state_->calls.find(key);
  if (it == state_->calls.end()) return false;
  auto call = it->second;
  call->suppress();
  call->request_cancel();
  return true;
}

bool CallTable::contains(const std::string& key) const { return state_->calls.count(key) != 0; }

std::size_t CallTable::size() const { return state_->calls.size(); }

std::size_t CallTable::reserved_bytes() const { return state_->reserved; }

void CallTable::set_on_call_ended(std::function<void()> hook) { state_->on_call_ended = std::move(hook); }

void CallTable::when_empty(std::function<void()> callback) {
  state_->empty_waiters.push_back(std::move(callback));
  state_->notify_if_empty();
}

void CallTable::cancel_all() {
  std::vector<std::shared_ptr<CallImpl>> calls;
  for (const auto& [key, call] : state_->calls) calls.push_back(call);
  for (const auto& call : calls) call->request_cancel();
}

void CallTable::drop_all() {
  std::vector<std::string> keys;
  for (const auto& [key, call] : state_->calls) keys.push_back(key);
  for (const auto& key : keys) cancel(key);
}

void CallTable::abandon_all(const std::string& reason) {
  std::vector<std::shared_ptr<CallImpl>> calls;
  for (const auto& [key, call] : state_->calls) calls.push_back(call);
  for (const auto& call : calls) call->abandon(reason);
}

}  // namespace mcp
