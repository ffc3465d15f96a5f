// JSON-RPC message helpers.
#include <catch2/catch.hpp>

#include <string>

#include "mcp/jsonrpc.h"

namespace rpc = mcp::jsonrpc;
using nlohmann::json;

TEST_CASE("parse accepts JSON and refuses garbage and absurd nesting") {
  CHECK(rpc::parse(R"({"a":[1,2]})").has_value());
  CHECK_FALSE(rpc::parse("{not json").has_value());
  CHECK_FALSE(rpc::parse("").has_value());
  std::string deep(rpc::kMaxNesting + 1, '[');
  deep += std::string(rpc::kMaxNesting + 1, ']');
  CHECK_FALSE(rpc::parse(deep).has_value());
  std::string ok(rpc::kMaxNesting, '[');
  ok += std::string(rpc::kMaxNesting, ']');
  CHECK(rpc::parse(ok).has_value());
  // Brackets inside strings do not count.
  CHECK(rpc::parse("\"" + deep + "\"").has_value());
}

TEST_CASE("an error without id has no id member at all") {
  const auto error = rpc::error_response(std::nullopt, rpc::kParseError, "Parse error");
  CHECK_FALSE(error.contains("id"));
  CHECK(error["error"]["code"] == -32700);
  const auto with_id = rpc::error_response(json("a"), rpc::kMethodNotFound, "nope", json{{"x", 1}});
  CHECK(with_id["id"] == "a");
  CHECK(with_id["error"]["data"]["x"] == 1);
}

TEST_CASE("serialize writes one line even for text with newlines and bad UTF-8") {
  const auto line = rpc::serialize(json{{"text", std::string("a\nb\xff")}});
  CHECK(line.find('\n') == std::string::npos);
  CHECK(json::parse(line)["text"].get<std::string>().substr(0, 3) == "a\nb");
}

TEST_CASE("classify tells requests, notifications, responses and invalid messages apart") {
  auto c = rpc::classify(json::parse(R"({"jsonrpc":"2.0","id":1,"method":"ping"})"));
  CHECK(c.kind == rpc::Kind::request);
  CHECK(c.method == "ping");
  CHECK(*c.id == 1);
  c = rpc::classify(json::parse(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  CHECK(c.kind == rpc::Kind::notification);
  c = rpc::classify(json::parse(R"({"jsonrpc":"2.0","id":"r","result":{}})"));
  CHECK(c.kind == rpc::Kind::response);
  c = rpc::classify(json::parse(R"({"jsonrpc":"1.0","id":5,"method":"ping"})"));
  CHECK(c.kind == rpc::Kind::invalid);
  CHECK(*c.id == 5);
  c = rpc::classify(json::parse(R"({"jsonrpc":"2.0","id":null,"method":"ping"})"));
  CHECK(c.kind == rpc::Kind::invalid);
  CHECK_FALSE(c.id.has_value());
  c = rpc::classify(json::parse(R"({"jsonrpc":"2.0","id":2,"method":7})"));
  CHECK(c.kind == rpc::Kind::invalid);
  c = rpc::classify(json::parse(R"({"jsonrpc":"2.0","id":2,"method":"x","params":"s"})"));
  CHECK(c.kind == rpc::Kind::invalid);
  c = rpc::classify(json(3));
  CHECK(c.kind == rpc::Kind::invalid);
}
