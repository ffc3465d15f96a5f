// JSON-RPC message helpers.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>

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

namespace {

std::string nlohmann_text(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

TEST_CASE("serialize writes exactly what nlohmann's dump writes") {
  // Every byte value alone and in context, including the escapes, 0x7f, and each way UTF-8 can
  // be malformed (stray continuation, truncated, overlong, surrogate, above U+10FFFF).
  for (int b = 0; b < 256; ++b) {
    const std::string s = "a" + std::string(1, static_cast<char>(b)) + "z";
    CHECK(rpc::serialize(json{{"s", s}}) == nlohmann_text(json{{"s", s}}));
  }
  const char* samples[] = {"", "plain", "quote\" backslash\\ tab\t nl\n cr\r bs\b ff\f",
                           "\x01\x1f\x7f", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                           "\x80", "\xc3", "\xe2\x82", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
                           "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "ok then \xff bad"};
  for (const char* sample : samples) {
    const std::string s(sample);
    const json value = {{"text", s}, {s, {1, -2, 3.25, 1e300, nullptr, true, false, json::object()}},
                        {"n", std::numeric_limits<std::uint64_t>::max()}, {"list", json::array({s, s})}};
    CAPTURE(s);
    CHECK(rpc::serialize(value) == nlohmann_text(value));
  }
  CHECK(rpc::serialize(json(std::string("a\0b", 3))) == nlohmann_text(json(std::string("a\0b", 3))));
  CHECK(rpc::serialize(json::binary({1, 2, 3})) == nlohmann_text(json::binary({1, 2, 3})));

  // Random strings of bytes biased towards the interesting ones.
  std::mt19937 random(12345);
  const unsigned char pool[] = {'a', '"', '\\', '\n', 0x01, 0x7f, 0x80, 0xbf, 0xc2, 0xc3, 0xe0,
                                0xe2, 0xed, 0xf0, 0xf4, 0xf5, 0xff, 0x82, 0xac, 0x9f, 0x90};
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    const int length = static_cast<int>(random() % 12);
    for (int k = 0; k < length; ++k) s.push_back(static_cast<char>(pool[random() % sizeof pool]));
    CAPTURE(s);
    REQUIRE(rpc::serialize(json::array({s})) == nlohmann_text(json::array({s})));
  }
}

TEST_CASE("serialize writes a reply of output lines into the buffer it reserved first") {
  // Output has a newline (two bytes written) every line: a reservation that ignored escapes would
  // be outgrown at the end and the whole reply copied into a buffer twice its size.
  std::string lines;
  for (int i = 0; i < 16384; ++i) lines += std::string(63, 'x') + "\n";
  const json reply = {{"content", json::array({{{"type", "text"}, {"text", lines}}})},
                      {"structuredContent", {{"stdout", lines}}}};
  const std::string line = rpc::serialize(reply);
  CHECK(line == nlohmann_text(reply));
  CHECK(line.capacity() < line.size() + line.size() / 4);
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

TEST_CASE("an id is a string or a 64-bit integer; any other number is an invalid request") {
  for (const char* id : {"0", "-1", "9223372036854775807", "-9223372036854775808", "18446744073709551615",
                         "\"40.0\""}) {
    const auto c = rpc::classify(json::parse(std::string(R"({"jsonrpc":"2.0","method":"ping","id":)") + id + "}"));
    INFO(id);
    CHECK(c.kind == rpc::Kind::request);
    REQUIRE(c.id.has_value());
    CHECK(c.id->dump() == id);  // echoed as sent
  }
  // nlohmann keeps the first three only as doubles: answered, they would come back
  // 1.2345678901234568e+29. Numbers with a fraction or an exponent are no MCP ids either.
  const std::pair<const char*, const char*> refused[] = {
      {"123456789012345678901234567890", "outside the 64-bit range"},
      {"-9223372036854775809", "outside the 64-bit range"},
      {"18446744073709551616", "outside the 64-bit range"},
      {"40.5", "must be a string or an integer"},
      {"40.0", "must be a string or an integer"},
      {"4e1", "must be a string or an integer"},
  };
  for (const auto& [id, problem] : refused) {
    const auto c = rpc::classify(json::parse(std::string(R"({"jsonrpc":"2.0","method":"ping","id":)") + id + "}"));
    INFO(id);
    CHECK(c.kind == rpc::Kind::invalid);
    CHECK_FALSE(c.id.has_value());
    CHECK(c.problem.find(problem) != std::string::npos);
  }
  CHECK(rpc::is_valid_id(json("a")));
  CHECK(rpc::is_valid_id(json(-5)));
  CHECK_FALSE(rpc::is_valid_id(json(1.0)));
  CHECK_FALSE(rpc::is_valid_id(json(true)));
  CHECK_FALSE(rpc::is_valid_id(json()));
  CHECK(rpc::id_problem(json(7)).empty());
}
