#include <catch2/catch.hpp>

#include <string>

#include "engine/execution/output_capture.h"
#include "engine/execution/result_channel.h"

using engine::ResultDecoder;
using engine::ResultFrame;
using engine::encode_result_frame;

namespace {

// A minimal PNG header (signature + IHDR) of the given size; the decoder checks only these.
std::string png(std::uint32_t width, std::uint32_t height) {
  std::string out("\x89PNG\r\n\x1a\n", 8);
  auto be32 = [&out](std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xFF));
  };
  be32(13);
  out += "IHDR";
  be32(width);
  be32(height);
  out += std::string("\x08\x06\x00\x00\x00", 5);
  be32(0);  // CRC (not checked)
  return out;
}

engine::RunnerEnd sample_end() {
  engine::RunnerEnd end;
  end.exit_code = -2;
  end.user_cpu_us = 1234567;
  end.system_cpu_us = 89;
  end.children_user_cpu_us = 5'000'000'000LL;
  end.children_system_cpu_us = 0;
  return end;
}

std::string full_stream() {
  return encode_result_frame(ResultFrame::value_repr, "[1, 2]") +
         encode_result_frame(ResultFrame::value_json, "[1,2]") +
         encode_result_frame(ResultFrame::image_png, png(640, 480)) +
         encode_result_frame(ResultFrame::note, "1 figure dropped (--max-images 1)") +
         engine::encode_runner_end(sample_end());
}

engine::ResultLimits limits(std::size_t value_bytes = 1000, unsigned images = 1) {
  return engine::ResultLimits{value_bytes, images};
}

}  // namespace

TEST_CASE("a well-formed stream yields value, json, images, notes and the end record", "[result-channel]") {
  const std::string stream = full_stream();
  // Any split of the stream into reads decodes the same.
  for (std::size_t chunk : {stream.size(), std::size_t{1}, std::size_t{3}, std::size_t{7}}) {
    ResultDecoder d(limits());
    for (std::size_t at = 0; at < stream.size(); at += chunk) d.append(std::string_view(stream).substr(at, chunk));
    auto r = d.finish();
    INFO("chunk " << chunk << ": " << d.error());
    REQUIRE_FALSE(d.failed());
    CHECK(r.value_repr == "[1, 2]");
    REQUIRE(r.value_json);
    CHECK(*r.value_json == nlohmann::json::array({1, 2}));
    REQUIRE(r.images.size() == 1);
    CHECK(r.images[0].mime_type == "image/png");
    CHECK(r.images[0].data_base64.rfind("iVBORw0KGgo", 0) == 0);  // the PNG signature, in base64
    CHECK(r.notes == std::vector<std::string>{"1 figure dropped (--max-images 1)"});
    REQUIRE(r.end);
    CHECK(r.end->exit_code == -2);
    CHECK(r.end->user_cpu_us == 1234567);
    CHECK(r.end->system_cpu_us == 89);
    CHECK(r.end->children_user_cpu_us == 5'000'000'000LL);
  }
}

TEST_CASE("an end frame alone is a result without a value", "[result-channel]") {
  ResultDecoder d(limits());
  d.append(engine::encode_runner_end(sample_end()));
  auto r = d.finish();
  CHECK_FALSE(d.failed());
  CHECK_FALSE(r.value_repr);
  CHECK(r.images.empty());
  CHECK(r.end);
}

TEST_CASE("an empty stream is an empty result, not an error", "[result-channel]") {
  ResultDecoder d(limits());
  d.append("");
  auto r = d.finish();
  CHECK_FALSE(d.failed());
  CHECK_FALSE(r.value_repr);
  CHECK(r.images.empty());
  CHECK_FALSE(r.end);
}

TEST_CASE("a stream cut short, or without its end frame, yields nothing", "[result-channel]") {
  const std::string stream = full_stream();
  for (std::size_t cut : {std::size_t{3}, std::size_t{5}, std::size_t{20}, stream.size() - 1}) {
    ResultDecoder d(limits());
    d.append(stream.substr(0, cut));
    auto r = d.finish();
    INFO("cut at " << cut);
    CHECK(d.failed());
    CHECK_FALSE(r.value_repr);
    CHECK(r.images.empty());
    CHECK(r.notes.empty());
    CHECK_FALSE(r.end);
  }
  // Whole frames without the end record: the run was cut short.
  ResultDecoder no_end(limits());
  no_end.append(encode_result_frame(ResultFrame::value_repr, "42"));
  CHECK_FALSE(no_end.finish().value_repr);
  CHECK_THAT(no_end.error(), Catch::Contains("no end frame"));
}

TEST_CASE("garbage, unknown types and data after the end frame yield nothing", "[result-channel]") {
  SECTION("garbage before the runner's frames") {
    ResultDecoder d(limits());
    d.append("hello from the script\n");
    d.append(full_stream());
    CHECK_FALSE(d.finish().value_repr);
    CHECK(d.failed());
  }
  SECTION("an unknown frame type") {
    ResultDecoder d(limits());
    d.append(encode_result_frame(static_cast<ResultFrame>(9), "x") + full_stream());
    CHECK_FALSE(d.finish().end);
    CHECK_THAT(d.error(), Catch::Contains("unknown frame type 9"));
  }
  SECTION("anything after the end frame") {
    ResultDecoder d(limits());
    d.append(full_stream() + encode_result_frame(ResultFrame::note, "late"));
    CHECK_FALSE(d.finish().value_repr);
    CHECK_THAT(d.error(), Catch::Contains("after the end frame"));
  }
  SECTION("a second value, or JSON without a repr") {
    ResultDecoder twice(limits());
    twice.append(encode_result_frame(ResultFrame::value_repr, "1") +
                 encode_result_frame(ResultFrame::value_repr, "2") + engine::encode_runner_end({}));
    CHECK_FALSE(twice.finish().value_repr);
    ResultDecoder orphan(limits());
    orphan.append(encode_result_frame(ResultFrame::value_json, "1") + engine::encode_runner_end({}));
    CHECK_FALSE(orphan.finish().end);
  }
  SECTION("JSON that does not parse") {
    ResultDecoder d(limits());
    d.append(encode_result_frame(ResultFrame::value_repr, "x") +
             encode_result_frame(ResultFrame::value_json, "{not json") + engine::encode_runner_end({}));
    CHECK_FALSE(d.finish().value_repr);
  }
  SECTION("an end frame of the wrong size") {
    ResultDecoder d(limits());
    d.append(encode_result_frame(ResultFrame::end, "1234"));
    CHECK_FALSE(d.finish().end);
  }
}

TEST_CASE("a huge declared length is rejected from its header, without buffering", "[result-channel]") {
  ResultDecoder d(limits(1000));
  std::string header("\xff\xff\xff\x7f", 4);
  header.push_back(static_cast<char>(ResultFrame::image_png));
  d.append(header);
  CHECK(d.failed());
  CHECK_THAT(d.error(), Catch::Contains("exceeds"));
  d.append(std::string(1 << 16, 'x'));  // ignored once failed
  CHECK_FALSE(d.finish().end);

  ResultDecoder over(limits(10));
  over.append(encode_result_frame(ResultFrame::value_repr, std::string(11, 'a')));
  CHECK(over.failed());
  ResultDecoder at_limit(limits(10));
  at_limit.append(encode_result_frame(ResultFrame::value_repr, std::string(10, 'a')) + engine::encode_runner_end({}));
  CHECK(at_limit.finish().value_repr == std::string(10, 'a'));
}

TEST_CASE("images: at most --max-images, each a PNG within 1568 px", "[result-channel]") {
  const std::string end = engine::encode_runner_end({});
  auto decode = [&end](unsigned max_images, const std::string& frames) {
    ResultDecoder d(limits(1000, max_images));
    d.append(frames + end);
    return d.finish();
  };
  const std::string ok = encode_result_frame(ResultFrame::image_png, png(1568, 10));
  CHECK(decode(2, ok + ok).images.size() == 2);
  CHECK_FALSE(decode(1, ok + ok).end);
  CHECK_FALSE(decode(0, ok).end);
  CHECK_FALSE(decode(1, encode_result_frame(ResultFrame::image_png, png(1569, 10))).end);
  CHECK_FALSE(decode(1, encode_result_frame(ResultFrame::image_png, png(0, 10))).end);
  CHECK_FALSE(decode(1, encode_result_frame(ResultFrame::image_png, "GIF89a............................")).end);
  // The size limit is checked from the header.
  ResultDecoder big(limits());
  big.append(encode_result_frame(ResultFrame::image_png, png(10, 10) + std::string(engine::kMaxImageBytes, '\0')));
  CHECK(big.failed());
}

TEST_CASE("value text is made valid UTF-8; notes are bounded in number", "[result-channel]") {
  ResultDecoder d(limits());
  d.append(encode_result_frame(ResultFrame::value_repr, "caf\xc3\xa9 \xff") + engine::encode_runner_end({}));
  CHECK(d.finish().value_repr == "caf\xc3\xa9 \xef\xbf\xbd");

  std::string many;
  for (std::size_t i = 0; i <= engine::kMaxNotes; ++i) many += encode_result_frame(ResultFrame::note, "n");
  ResultDecoder notes(limits());
  notes.append(many + engine::encode_runner_end({}));
  CHECK(notes.finish().notes.empty());
}

TEST_CASE("base64 and PNG size helpers", "[result-channel]") {
  CHECK(engine::base64_encode("") == "");
  CHECK(engine::base64_encode("f") == "Zg==");
  CHECK(engine::base64_encode("fo") == "Zm8=");
  CHECK(engine::base64_encode("foo") == "Zm9v");
  CHECK(engine::base64_encode("foobar") == "Zm9vYmFy");
  CHECK(engine::base64_encode(std::string("\xff\xfe\x00", 3)) == "//4A");
  const auto size = engine::png_size(png(640, 480));
  REQUIRE(size);
  CHECK(size->width == 640);
  CHECK(size->height == 480);
  CHECK_FALSE(engine::png_size("not a png at all, but long enough"));
  CHECK_FALSE(engine::png_size(png(1, 1).substr(0, 20)));
}

TEST_CASE("a repr is bounded as sent: control bytes are cut, escapes that at most double it are kept", "[result-channel]") {
  ResultDecoder controls(limits(1000));
  controls.append(encode_result_frame(ResultFrame::value_repr, std::string(1000, '\x01')) + engine::encode_runner_end({}));
  const auto cut = controls.finish().value_repr;
  REQUIRE(cut);
  CHECK(engine::json_string_size(*cut) <= 2000);
  CHECK(cut->find("bytes dropped") != std::string::npos);

  ResultDecoder quotes(limits(1000));
  const std::string escaped = "'" + std::string(998, '"') + "'";
  quotes.append(encode_result_frame(ResultFrame::value_repr, escaped) + engine::encode_runner_end({}));
  CHECK(quotes.finish().value_repr == escaped);
}

TEST_CASE("a JSON value nested beyond what the runner makes keeps only its repr") {
  // A script can write its own frames on the result channel: with --max-output-bytes raised,
  // "[[[[..." four million levels deep crashed the server when it serialised the value.
  auto stream = [](int depth) {
    const std::string deep = std::string(static_cast<std::size_t>(depth), '[') +
                             std::string(static_cast<std::size_t>(depth), ']');
    return encode_result_frame(ResultFrame::value_repr, "deep") +
           encode_result_frame(ResultFrame::value_json, deep) + engine::encode_runner_end(sample_end());
  };
  engine::ResultLimits big;  // any frame size: --max-output-bytes raised
  big.max_value_bytes = 64 << 20;
  {
    ResultDecoder decoder(big);
    decoder.append(stream(engine::kMaxValueJsonNesting));
    const auto result = decoder.finish();
    CHECK_FALSE(decoder.failed());
    CHECK(result.value_json.has_value());
  }
  {
    ResultDecoder decoder(big);
    decoder.append(stream(4'000'000));
    const auto result = decoder.finish();
    CHECK_FALSE(decoder.failed());
    CHECK(result.value_repr == "deep");
    CHECK_FALSE(result.value_json.has_value());
    REQUIRE(result.end.has_value());
  }
  {
    // Brackets inside strings do not count.
    ResultDecoder decoder(big);
    decoder.append(encode_result_frame(ResultFrame::value_repr, "s") +
                   encode_result_frame(ResultFrame::value_json, "\"" + std::string(5000, '[') + "\"") +
                   engine::encode_runner_end(sample_end()));
    CHECK(decoder.finish().value_json.has_value());
  }
}

TEST_CASE("the end record is seen as soon as it is whole, and not when anything is wrong", "[result-channel]") {
  const std::string end = engine::encode_runner_end(sample_end());
  engine::ResultDecoder d(engine::ResultLimits{});
  CHECK_FALSE(d.end_record());
  d.append(encode_result_frame(ResultFrame::value_repr, "2"));
  CHECK_FALSE(d.end_record());
  d.append(end.substr(0, 10));  // cut short so far
  CHECK_FALSE(d.end_record());
  d.append(end.substr(10));
  REQUIRE(d.end_record());
  CHECK(d.end_record()->exit_code == sample_end().exit_code);
  CHECK(d.end_record()->user_cpu_us == sample_end().user_cpu_us);
  // Anything after it spoils the stream, and the record with it.
  d.append(encode_result_frame(ResultFrame::note, "late"));
  CHECK_FALSE(d.end_record());

  engine::ResultDecoder garbage(engine::ResultLimits{});
  garbage.append(std::string("\xff\xff\xff\xff\x09", 5) + end);
  CHECK_FALSE(garbage.end_record());
}
