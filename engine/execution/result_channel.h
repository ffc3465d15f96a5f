// The result channel: a pipe from a run's process to the server, carrying what is not output
// (the value of the script's last expression, figures, notes, the runner's end record) in small
// frames, never parsed out of stdout. The runner (python_stubs/runner.py) writes it on fd
// engine::zygote::kRunResultFd; the server decodes it here, incrementally, as it arrives.
//
// Frame: u32 payload length (little-endian), u8 type, payload.
//   value_repr  UTF-8 repr of the value, already bounded by the runner (head + marker + tail)
//   value_json  the value as JSON text (only when it serialises)
//   image_png   one PNG file (a figure)
//   note        UTF-8 text for the caller, e.g. "2 figures dropped (--max-images 4)"
//   end         i32 exit code, then i64 user, system, children's user, children's system CPU
//               microseconds (the runner's own os.times() just before it exits); last frame
//   file        an output file (engine/files/work_files.h): u32 path length, the path relative
//               to the work dir, then its bytes; within --max-output-file-bytes all together
// A run with nothing to report (no value, no figure, no note) writes nothing at all: an empty
// stream is a valid, empty result.
//
// The script can reach the fd, so nothing in it is trusted: a result counts only when the
// stream is empty or a well-formed sequence within the limits that ends with exactly one `end`
// frame. Anything else (garbage, a closed fd, a run killed midway) yields no value, no images
// and no notes; the run's output and exit status are unaffected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/files/work_files.h"
#include "engine/run.h"

namespace engine {

enum class ResultFrame : std::uint8_t { value_repr = 1, value_json = 2, image_png = 3, note = 4, end = 5, file = 6 };

inline constexpr std::size_t kResultFrameHeaderBytes = 5;
inline constexpr std::size_t kMaxImageBytes = 1 << 20;
inline constexpr std::uint32_t kMaxImageSide = 1568;  // pixels, longest side
inline constexpr std::size_t kMaxNoteBytes = 1024;
inline constexpr std::size_t kMaxNotes = 8;
inline constexpr std::size_t kEndFrameBytes = 4 + 4 * 8;
// Deepest value_json kept (deeper ones keep their repr only): the server serialises it recursively.
inline constexpr int kMaxValueJsonNesting = 1000;

struct ResultLimits {
  std::size_t max_value_bytes = 102400;  // repr and JSON text each (--max-output-bytes)
  unsigned max_images = 4;               // --max-images
  std::size_t max_file_bytes = 10u << 20;  // output files together (--max-output-file-bytes)
};

// The runner's end record.
struct RunnerEnd {
  std::int32_t exit_code = 0;
  std::int64_t user_cpu_us = 0, system_cpu_us = 0;
  std::int64_t children_user_cpu_us = 0, children_system_cpu_us = 0;
};

struct RunnerResult {
  std::optional<std::string> value_repr;
  std::optional<nlohmann::json> value_json;
  std::vector<Image> images;  // base64-encoded PNGs
  std::vector<std::string> notes;
  std::vector<OutputFile> files;  // output files, with their MIME types
  std::optional<RunnerEnd> end;  // absent for an empty stream
};

class ResultDecoder {
 public:
  explicit ResultDecoder(ResultLimits limits) : limits_(limits) {}

  // Feeds bytes as read from the pipe. Memory stays bounded by the largest allowed frame:
  // a frame declaring more is rejected from its header, before its payload is read.
  void append(std::string_view bytes);

  // Once the pipe is at EOF (or the run is over): the validated result, or an empty one when
  // the stream was malformed, over a limit or cut short (then error() says why). An empty
  // stream is an empty result without error.
  RunnerResult finish();

  bool failed() const { return !error_.empty(); }
  // The end frame, once it came with nothing after it and nothing wrong before (the script may
  // have written it: it says only what the script could have said by exiting).
  std::optional<RunnerEnd> end_record() const {
    if (failed() || !pending_.empty()) return std::nullopt;
    return result_.end;
  }
  const std::string& error() const { return error_; }

 private:
  void take_frame(ResultFrame type, std::string_view payload);
  void reject(std::string why);

  ResultLimits limits_;
  std::string pending_;  // an incomplete frame
  std::size_t frames_ = 0;
  bool json_seen_ = false;  // a value_json frame came (kept or, too deep, dropped)
  std::size_t file_bytes_ = 0;
  RunnerResult result_;
  std::string error_;
};

// One frame as the runner writes it (tests, and the reference for runner.py).
std::string encode_result_frame(ResultFrame type, std::string_view payload);
std::string encode_runner_end(const RunnerEnd& end);

std::string base64_encode(std::string_view bytes);

// Width and height from a PNG's IHDR; nullopt when `bytes` is not a PNG.
struct PngSize {
  std::uint32_t width = 0, height = 0;
};
std::optional<PngSize> png_size(std::string_view bytes);

}  // namespace engine
