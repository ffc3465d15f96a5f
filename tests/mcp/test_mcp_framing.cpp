// Line framing and the over-long line path of the stdio transport.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "mcp/framing.h"
#include "mcp/id_sniffer.h"

namespace {

struct Collected {
  std::vector<std::string> lines;
  std::vector<mcp::OversizeLine> oversize;
};

mcp::LineFramer make_framer(Collected& c, std::size_t max = mcp::kMaxLineBytes) {
  return mcp::LineFramer([&c](std::string_view line) { c.lines.emplace_back(line); },
                         [&c](const mcp::OversizeLine& o) { c.oversize.push_back(o); }, max);
}

std::optional<nlohmann::json> sniff(std::string_view text) {
  mcp::IdSniffer sniffer;
  sniffer.feed(text);
  return sniffer.id();
}

}  // namespace

TEST_CASE("lines come out whole whatever the read boundaries") {
  const std::string input = "{\"a\":1}\n{\"b\":2}\r\n\n   \n{\"c\":3}\n";
  Collected whole;
  auto f1 = make_framer(whole);
  f1.feed(input);
  Collected bytewise;
  auto f2 = make_framer(bytewise);
  for (char c : input) f2.feed(std::string_view(&c, 1));
  const std::vector<std::string> expected = {"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"};
  CHECK(whole.lines == expected);
  CHECK(bytewise.lines == expected);
  CHECK(whole.oversize.empty());
}

TEST_CASE("only one trailing carriage return is removed") {
  Collected c;
  auto framer = make_framer(c);
  framer.feed("x\r\r\ny\r\n");
  REQUIRE(c.lines.size() == 2);
  CHECK(c.lines[0] == "x\r");
  CHECK(c.lines[1] == "y");
}

TEST_CASE("a last line without newline is delivered at end of input") {
  Collected c;
  auto framer = make_framer(c);
  framer.feed("{\"a\":1}\n{\"tail\"");
  CHECK(c.lines.size() == 1);
  framer.feed(":true}");
  framer.finish();
  REQUIRE(c.lines.size() == 2);
  CHECK(c.lines[1] == "{\"tail\":true}");
}

TEST_CASE("a line over the cap is reported, discarded, and the next line still served") {
  Collected c;
  auto framer = make_framer(c, 64);
  const std::string big(100, 'x');
  framer.feed("{\"ok\":1}\n");
  framer.feed(big.substr(0, 30));
  framer.feed(big.substr(30));
  CHECK(framer.buffered_bytes() <= 65);
  framer.feed("\n{\"after\":2}\n");
  REQUIRE(c.oversize.size() == 1);
  CHECK(c.oversize[0].bytes == 100);
  CHECK(c.oversize[0].limit == 64);
  CHECK_FALSE(c.oversize[0].id.has_value());
  CHECK(c.lines == std::vector<std::string>{"{\"ok\":1}", "{\"after\":2}"});
}

TEST_CASE("a line of exactly the cap is accepted, with or without a carriage return") {
  Collected c;
  auto framer = make_framer(c, 16);
  const std::string exact(16, 'a');
  framer.feed(exact + "\r\n");
  framer.feed(exact);
  framer.feed("\n");
  framer.feed(exact + "b\n");
  CHECK(c.lines == std::vector<std::string>{exact, exact});
  REQUIRE(c.oversize.size() == 1);
  CHECK(c.oversize[0].bytes == 17);
}

TEST_CASE("a 17 MiB line is never buffered whole and its id is recovered") {
  Collected c;
  auto framer = make_framer(c);
  const std::string head = R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"execute_python","arguments":{"script":")";
  const std::string tail = R"("}},"id":42})";
  const std::size_t body = (std::size_t{17} << 20);
  framer.feed(head);
  const std::string chunk(64 * 1024, 'p');
  std::size_t max_buffered = 0;
  for (std::size_t sent = 0; sent < body; sent += chunk.size()) {
    framer.feed(chunk);
    max_buffered = std::max(max_buffered, framer.buffered_bytes());
  }
  framer.feed(tail + "\n" + R"({"jsonrpc":"2.0","id":43,"method":"ping"})" + "\n");
  CHECK(max_buffered <= mcp::kMaxLineBytes + 1);
  REQUIRE(c.oversize.size() == 1);
  CHECK(c.oversize[0].bytes == head.size() + body + tail.size());
  REQUIRE(c.oversize[0].id.has_value());
  CHECK(*c.oversize[0].id == 42);
  REQUIRE(c.lines.size() == 1);
  CHECK(c.lines[0] == R"({"jsonrpc":"2.0","id":43,"method":"ping"})");
}

TEST_CASE("the id sniffer finds only the top-level id") {
  CHECK(sniff(R"({"id":7,"method":"x"})") == nlohmann::json(7));
  CHECK(sniff(R"({"params":{"id":1,"a":[{"id":2}]},"id":"abc"})") == nlohmann::json("abc"));
  CHECK(sniff(R"({"params":{"s":"\"id\":5,"},"id":"q\"x"})") == nlohmann::json("q\"x"));
  CHECK(sniff(R"({ "id" : -3 , "x": 1})") == nlohmann::json(-3));
  CHECK_FALSE(sniff(R"({"params":{"id":1}})").has_value());
  CHECK_FALSE(sniff(R"([{"id":1}])").has_value());
  CHECK_FALSE(sniff(R"({"id":null})").has_value());
  CHECK_FALSE(sniff(R"({"id":{"x":1}})").has_value());
  // Not ids: a fraction, an exponent, an integer beyond 64 bits (it would come back a double).
  CHECK_FALSE(sniff(R"({"id":40.5})").has_value());
  CHECK_FALSE(sniff(R"({"id":40.0})").has_value());
  CHECK_FALSE(sniff(R"({"id":18446744073709551616})").has_value());
  CHECK(sniff(R"({"id":18446744073709551615})") == nlohmann::json(18446744073709551615ULL));
  CHECK_FALSE(sniff("not json at all").has_value());
  // An id whose value was cut off (the line never ended) is not guessed at.
  CHECK_FALSE(sniff(R"({"id":"unterminated)").has_value());
}

TEST_CASE("an oversize line's length leaves out its \\r, however the reads cut it") {
  // Found by fuzz/fuzz_framing (fuzz/regressions/framing/): a line discarded across reads
  // counted its "\r", the same line in one read did not.
  const std::string input = "abcdef\r\nabcde\r\nabcdefgh\r";
  for (std::size_t cut = 0; cut <= input.size(); ++cut) {
    Collected c;
    auto framer = make_framer(c, 5);
    framer.feed(input.substr(0, cut));
    framer.feed(input.substr(cut));
    framer.finish();
    INFO("cut at " << cut);
    CHECK(c.lines == std::vector<std::string>{"abcde"});
    REQUIRE(c.oversize.size() == 2);
    CHECK(c.oversize[0].bytes == 6);
    CHECK(c.oversize[1].bytes == 8);
  }
}

TEST_CASE("a reader pausing after a line takes one message at a time") {
  std::vector<std::string> lines;
  mcp::LineFramer* self = nullptr;
  mcp::LineFramer framer(
      [&](std::string_view line) {
        lines.emplace_back(line);
        self->pause();
      },
      [](const mcp::OversizeLine&) {});
  self = &framer;
  const std::string_view input = "{\"a\":1}\n{\"b\":2}\r\n{\"c\":3}\n{\"d\"";
  const std::size_t first = framer.feed(input);
  CHECK(first == 8);  // "{\"a\":1}\n" and nothing after it
  CHECK(lines == std::vector<std::string>{"{\"a\":1}"});
  CHECK(framer.paused());
  CHECK(framer.feed(input.substr(first)) == 0);  // paused: takes nothing
  framer.resume();
  const std::size_t second = framer.feed(input.substr(first));
  CHECK(second == 9);
  CHECK(lines.back() == "{\"b\":2}");
  framer.resume();
  const std::size_t third = framer.feed(input.substr(first + second));
  CHECK(third == 8);
  framer.resume();
  CHECK(framer.feed(input.substr(first + second + third)) == 4);  // a partial line is kept
  CHECK(lines.size() == 3);
  framer.resume();
  framer.feed(":4}\n");
  CHECK(lines.back() == "{\"d\":4}");
}

TEST_CASE("a line ending a read that is over the limit pauses too, and its rest is taken after") {
  std::vector<std::string> lines;
  std::size_t oversize = 0;
  mcp::LineFramer* self = nullptr;
  mcp::LineFramer framer([&](std::string_view line) { lines.emplace_back(line); },
                         [&](const mcp::OversizeLine&) {
                           ++oversize;
                           self->pause();
                         },
                         8);
  self = &framer;
  framer.feed("0123456789");
  const std::size_t taken = framer.feed("abc\n{}\n");
  CHECK(oversize == 1);
  CHECK(taken == 4);
  framer.resume();
  CHECK(framer.feed(std::string_view("abc\n{}\n").substr(taken)) == 3);
  CHECK(lines == std::vector<std::string>{"{}"});
}
