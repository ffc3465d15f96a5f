#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/execution/output_capture.h"
#include "engine/execution/utf8.h"

using engine::CapturedStream;
using engine::OutputCapture;
using engine::sanitize_utf8;

namespace {

CapturedStream capture(const std::string& input, std::size_t limit, std::size_t chunk = 4096) {
  OutputCapture c(limit);
  for (std::size_t i = 0; i < input.size(); i += chunk) c.append(std::string_view(input).substr(i, chunk));
  return c.finish();
}

bool is_valid_utf8(const std::string& s) { return sanitize_utf8(s) == s; }

// Splits a truncated text into head, dropped count and tail around its marker.
struct Parts {
  std::string head, tail;
  std::uint64_t dropped = 0;
};
Parts split(const std::string& text) {
  static const std::regex re(R"(\n\[\.\.\. (\d+) bytes dropped \.\.\.\]\n)");
  std::smatch m;
  REQUIRE(std::regex_search(text, m, re));
  Parts p;
  p.head = m.prefix().str();
  p.tail = m.suffix().str();
  p.dropped = std::stoull(m[1].str());
  return p;
}

std::string numbered_lines(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "line " + std::to_string(i) + "\n";
  return s;
}

}  // namespace

TEST_CASE("output under the limit is kept whole", "[output]") {
  const std::string input = numbered_lines(50);
  for (std::size_t chunk : {1u, 7u, 4096u}) {
    const auto r = capture(input, 4096, chunk);
    CHECK(r.text == input);
    CHECK(r.dropped_bytes == 0);
  }
}

TEST_CASE("output of exactly the limit has no marker", "[output]") {
  const std::string input(2048, 'x');
  const auto r = capture(input, 2048);
  CHECK(r.text == input);
  CHECK(r.dropped_bytes == 0);
}

TEST_CASE("output over the limit keeps head and tail around an exact marker", "[output]") {
  const std::size_t limit = 1024;
  const std::string input = numbered_lines(5000);  // ~44 KB
  for (std::size_t chunk : {3u, 100u, 65536u}) {
    const auto r = capture(input, limit, chunk);
    CHECK(r.text.size() <= limit);
    const Parts p = split(r.text);
    CHECK(r.dropped_bytes == p.dropped);
    CHECK(p.head.size() + p.tail.size() + p.dropped == input.size());
    CHECK(input.compare(0, p.head.size(), p.head) == 0);
    CHECK(input.compare(input.size() - p.tail.size(), p.tail.size(), p.tail) == 0);
    CHECK(p.head.rfind("line 0\n", 0) == 0);
    CHECK(p.tail.size() >= p.head.size());  // the tail (end of a traceback) gets more room
    CHECK(p.tail.find("line 4999\n") != std::string::npos);
    // Cuts fall on line boundaries when one is near.
    CHECK(p.head.back() == '\n');
    CHECK(p.tail.rfind("line ", 0) == 0);
  }
}

TEST_CASE("output just over the limit (no gap between buffers) is cut consistently", "[output]") {
  const std::size_t limit = 1024;
  const std::string input(limit + 10, 'y');
  const auto r = capture(input, limit);
  CHECK(r.text.size() <= limit);
  const Parts p = split(r.text);
  CHECK(p.head.size() + p.tail.size() + p.dropped == input.size());
  CHECK(p.dropped >= 10);
}

TEST_CASE("a huge line without newline keeps its start and end", "[output]") {
  const std::size_t limit = 102400;
  std::string input = "START";
  input.append(8 * 1024 * 1024, 'a');
  input += "END";
  const auto r = capture(input, limit, 65536);
  CHECK(r.text.size() <= limit);
  CHECK(r.text.size() > limit - 200);  // the budget is used, not wasted
  const Parts p = split(r.text);
  CHECK(p.head.rfind("START", 0) == 0);
  CHECK(p.tail.size() >= 3);
  CHECK(p.tail.substr(p.tail.size() - 3) == "END");
  CHECK(p.head.size() + p.tail.size() + p.dropped == input.size());
}

TEST_CASE("truncation never splits a UTF-8 character", "[output][utf8]") {
  std::string input;
  for (int i = 0; i < 3000; ++i) input += "Hello 世界 🌍 ";
  for (std::size_t limit : {1024u, 1025u, 1026u, 1027u, 2000u, 4099u}) {
    for (std::size_t chunk : {1u, 5u, 4096u}) {
      const auto r = capture(input, limit, chunk);
      INFO("limit " << limit << " chunk " << chunk);
      CHECK(r.text.size() <= limit);
      CHECK(is_valid_utf8(r.text));
      const Parts p = split(r.text);
      CHECK(p.head.size() + p.tail.size() + p.dropped == input.size());
      CHECK(input.compare(0, p.head.size(), p.head) == 0);
      CHECK(input.compare(input.size() - p.tail.size(), p.tail.size(), p.tail) == 0);
    }
  }
}

TEST_CASE("invalid UTF-8 is replaced and the result still fits", "[output][utf8]") {
  SECTION("short output") {
    const auto r = capture(std::string("ok \xff\xfe end"), 1024);
    CHECK(r.text == "ok \xEF\xBF\xBD\xEF\xBF\xBD end");
    CHECK(r.dropped_bytes == 0);
  }
  SECTION("all bytes invalid and over the limit: replacement triples their size") {
    const std::string input(10000, '\xff');
    const auto r = capture(input, 1024);
    CHECK(r.text.size() <= 1024);
    CHECK(is_valid_utf8(r.text));
    const Parts p = split(r.text);
    CHECK(p.head.size() % 3 == 0);
    CHECK(p.head.size() / 3 + p.tail.size() / 3 + p.dropped == input.size());
  }
  SECTION("fits raw but not once replaced") {
    const std::string input(1000, '\x80');
    const auto r = capture(input, 1024);
    CHECK(r.text.size() <= 1024);
    CHECK(is_valid_utf8(r.text));
    CHECK(r.dropped_bytes > 0);
  }
}

TEST_CASE("sanitize_utf8 rejects overlongs, surrogates and truncated sequences", "[utf8]") {
  CHECK(sanitize_utf8("plain") == "plain");
  CHECK(sanitize_utf8("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");       // overlong '/'
  CHECK(sanitize_utf8("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  CHECK(sanitize_utf8("\xE4\xB8") == "\xEF\xBF\xBD\xEF\xBF\xBD");       // cut sequence
  CHECK(sanitize_utf8("\xF4\x90\x80\x80").find("\xF4") == std::string::npos);  // > U+10FFFF
  CHECK(sanitize_utf8("世界 🌍") == "世界 🌍");
  CHECK(engine::valid_utf8("世界 🌍"));
  CHECK_FALSE(engine::valid_utf8("\xC0\xAF"));
  CHECK_FALSE(engine::valid_utf8(std::string(33, 'x') + "\xE4\xB8"));  // cut after the scans' blocks
}

TEST_CASE("output capture: the limit bounds the JSON-escaped size, so control bytes cannot inflate a reply") {
  CHECK(engine::json_string_size("ab") == 2);
  CHECK(engine::json_string_size("a\"\\\n") == 7);
  CHECK(engine::json_string_size(std::string(1, '\x01')) == 6);
  const std::string controls(100000, '\x01');
  const auto kept = engine::OutputCapture::capture(controls, 10240);
  CHECK(engine::json_string_size(kept.text) <= 10240);
  CHECK(kept.dropped_bytes > 0);
  CHECK(kept.text.find("bytes dropped") != std::string::npos);
  // Plain text is kept byte for byte up to the limit, as before.
  const std::string plain(10000, 'x');
  CHECK(engine::OutputCapture::capture(plain, 10240).text == plain);
  // A short control-heavy stream that fits raw but not escaped is cut too.
  const auto cut = engine::OutputCapture::capture(std::string(2000, '\x02'), 1024);
  CHECK(engine::json_string_size(cut.text) <= 1024);
}

TEST_CASE("json_string_size is the size the reply writer gives a string, at every alignment", "[utf8]") {
  // Every special byte at every offset of a 40-byte string, so that the sixteen- and
  // eight-at-a-time scans meet it in each lane and in the tail.
  for (int b = 0; b < 256; ++b) {
    for (std::size_t at = 0; at < 40; ++at) {
      std::string text(40, 'x');
      text[at] = static_cast<char>(b);
      std::string written;
      if (engine::append_json_string(written, text)) {
        CHECK(engine::json_string_size(text) + 2 == written.size());
        CHECK(written == nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      } else {
        CHECK(b >= 0x80);  // a lone high byte is not UTF-8
      }
      if (b >= 0x80) CHECK(sanitize_utf8(text).find("\xEF\xBF\xBD") != std::string::npos);
      CHECK(engine::valid_utf8(text) == (sanitize_utf8(text) == text));
    }
  }
  // A well-formed sequence at every offset passes whole, wherever the scans break off for it.
  for (std::size_t at = 0; at + 2 <= 40; ++at) {
    std::string text(40, 'x');
    text.replace(at, 2, "\xC3\xA9");  // é
    CHECK(sanitize_utf8(text) == text);
    CHECK(engine::valid_utf8(text));
    std::string written;
    REQUIRE(engine::append_json_string(written, text));
    CHECK(written == "\"" + text + "\"");
  }
  CHECK(engine::json_string_size("\x7f") == 1);  // written as it is
  CHECK(engine::json_string_size(std::string(1, '\0')) == 6);
}
