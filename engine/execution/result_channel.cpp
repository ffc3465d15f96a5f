#include "engine/execution/result_channel.h"

#include <utility>

#include "engine/execution/json_string.h"
#include "engine/execution/output_capture.h"

namespace engine {
namespace {

std::uint64_t little_endian(std::string_view bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = bytes.size(); i > 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i - 1]);
  return value;
}

std::uint32_t big_endian32(std::string_view bytes) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

void put_little_endian(std::string& out, std::uint64_t value, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

const char* frame_name(ResultFrame type) {
  switch (type) {
    case ResultFrame::value_repr: return "value_repr";
    case ResultFrame::value_json: return "value_json";
    case ResultFrame::image_png: return "image_png";
    case ResultFrame::note: return "note";
    case ResultFrame::end: return "end";
    case ResultFrame::file: return "file";
  }
  return "?";
}

}  // namespace

void ResultDecoder::reject(std::string why) {
  if (error_.empty()) error_ = std::move(why);
  pending_.clear();
  pending_.shrink_to_fit();
}

void ResultDecoder::append(std::string_view bytes) {
  if (failed() || bytes.empty()) return;
  pending_.append(bytes);
  std::size_t at = 0;
  while (!failed() && pending_.size() - at >= kResultFrameHeaderBytes) {
    const std::string_view rest = std::string_view(pending_).substr(at);
    const std::uint64_t length = little_endian(rest.substr(0, 4));
    const auto type_byte = static_cast<unsigned char>(rest[4]);
    std::size_t max = 0;
    switch (static_cast<ResultFrame>(type_byte)) {
      case ResultFrame::value_repr:
      case ResultFrame::value_json: max = limits_.max_value_bytes; break;
      case ResultFrame::image_png: max = kMaxImageBytes; break;
      case ResultFrame::note: max = kMaxNoteBytes; break;
      case ResultFrame::end: max = kEndFrameBytes; break;
      case ResultFrame::file: max = 4 + kMaxWorkPathBytes + limits_.max_file_bytes; break;
      default:
        reject("unknown frame type " + std::to_string(type_byte));
        return;
    }
    const auto type = static_cast<ResultFrame>(type_byte);
    if (length > max) {
      reject(std::string(frame_name(type)) + " frame of " + std::to_string(length) + " bytes exceeds " +
             std::to_string(max));
      return;
    }
    if (rest.size() - kResultFrameHeaderBytes < length) break;  // the rest of it is still coming
    take_frame(type, rest.substr(kResultFrameHeaderBytes, static_cast<std::size_t>(length)));
    at += kResultFrameHeaderBytes + static_cast<std::size_t>(length);
  }
  if (!failed()) pending_.erase(0, at);
}

void ResultDecoder::take_frame(ResultFrame type, std::string_view payload) {
  ++frames_;
  if (result_.end) {
    reject("data after the end frame");
    return;
  }
  switch (type) {
    case ResultFrame::value_repr:
      if (result_.value_repr) return reject("a second value");
      // Already bounded by the frame limit; this makes it valid UTF-8 within that bound.
      // The runner bounds the repr's bytes; a repr (unlike a str) escapes control characters, so
      // JSON at most doubles it. Bounded here as sent, at twice that: a custom __repr__ full of
      // control bytes cannot inflate the reply.
      result_.value_repr = OutputCapture::capture(payload, 2 * limits_.max_value_bytes).text;
      return;
    case ResultFrame::value_json: {
      if (!result_.value_repr || json_seen_) return reject("a JSON value without its repr, or a second one");
      json_seen_ = true;
      // Serialising and comparing JSON recurse: a value nested deeper than any the runner
      // produces (json.dumps stops near 1000 levels) keeps only its repr.
      if (!json_nesting_within(payload, kMaxValueJsonNesting)) return;
      auto parsed = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded()) return reject("a JSON value that does not parse");
      result_.value_json = std::move(parsed);
      return;
    }
    case ResultFrame::image_png: {
      if (result_.images.size() >= limits_.max_images) return reject("more images than --max-images");
      const auto size = png_size(payload);
      if (!size || size->width == 0 || size->height == 0 || size->width > kMaxImageSide ||
          size->height > kMaxImageSide) {
        return reject("an image that is not a PNG within " + std::to_string(kMaxImageSide) + " px");
      }
      result_.images.push_back({"image/png", base64_encode(payload)});
      return;
    }
    case ResultFrame::note:
      if (result_.notes.size() >= kMaxNotes) return reject("too many notes");
      result_.notes.push_back(sanitize_utf8(payload));
      return;
    case ResultFrame::file: {
      if (payload.size() < 4) return reject("a file frame without its path");
      const std::uint64_t length = little_endian(payload.substr(0, 4));
      if (length > payload.size() - 4) return reject("a file frame whose path exceeds it");
      const std::string_view path = payload.substr(4, static_cast<std::size_t>(length));
      const WorkPath checked = check_work_path(path, false);
      if (!checked.error.empty() || checked.path != path) return reject("a file outside the work dir");
      const std::string_view content = payload.substr(4 + static_cast<std::size_t>(length));
      if (result_.files.size() >= kMaxOutputFiles) return reject("more output files than allowed");
      file_bytes_ += content.size();
      if (file_bytes_ > limits_.max_file_bytes) return reject("output files over --max-output-file-bytes");
      for (const auto& f : result_.files) {
        if (f.path == path) return reject("an output file sent twice");
      }
      result_.files.push_back({std::string(path), mime_type_for(path), std::string(content)});
      return;
    }
    case ResultFrame::end: {
      if (payload.size() != kEndFrameBytes) return reject("an end frame of the wrong size");
      RunnerEnd end;
      end.exit_code = static_cast<std::int32_t>(static_cast<std::uint32_t>(little_endian(payload.substr(0, 4))));
      std::int64_t* fields[] = {&end.user_cpu_us, &end.system_cpu_us, &end.children_user_cpu_us,
                                &end.children_system_cpu_us};
      for (std::size_t i = 0; i < 4; ++i) {
        *fields[i] = static_cast<std::int64_t>(little_endian(payload.substr(4 + 8 * i, 8)));
      }
      result_.end = end;
      return;
    }
  }
}

RunnerResult ResultDecoder::finish() {
  if (!failed() && !pending_.empty()) reject("a frame cut short");
  if (!failed() && !result_.end && frames_ > 0) reject("no end frame");
  if (failed()) return {};
  return result_;
}

std::string encode_result_frame(ResultFrame type, std::string_view payload) {
  std::string out;
  out.reserve(kResultFrameHeaderBytes + payload.size());
  put_little_endian(out, payload.size(), 4);
  out.push_back(static_cast<char>(type));
  out.append(payload);
  return out;
}

std::string encode_runner_end(const RunnerEnd& end) {
  std::string payload;
  put_little_endian(payload, static_cast<std::uint32_t>(end.exit_code), 4);
  for (std::int64_t v : {end.user_cpu_us, end.system_cpu_us, end.children_user_cpu_us, end.children_system_cpu_us}) {
    put_little_endian(payload, static_cast<std::uint64_t>(v), 8);
  }
  return encode_result_frame(ResultFrame::end, payload);
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t n = (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16) |
                            (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8) |
                            static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (const std::size_t left = bytes.size() - i; left > 0) {
    std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (left == 2) n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += left == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<PngSize> png_size(std::string_view bytes) {
  // Signature, then the IHDR chunk first: length 13, "IHDR", width, height (big-endian).
  static constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);
  if (bytes.size() < 24 || bytes.substr(0, 8) != kSignature || bytes.substr(12, 4) != "IHDR") return std::nullopt;
  if (big_endian32(bytes.substr(8, 4)) != 13) return std::nullopt;
  return PngSize{big_endian32(bytes.substr(16, 4)), big_endian32(bytes.substr(20, 4))};
}

}  // namespace engine
