// The result channel decoder (engine/execution/result_channel.*): the frames a script's process
// writes, and a script can write anything there.
// Input: byte 0 = limits (max images 0..7, a small or the default value limit), bytes 1..8 = read
// sizes, the rest = the stream.
// Properties: however the stream is cut into reads, the result and the error are the same; a
// result that counts never exceeds the limits and its images are PNGs within the side limit;
// a failed stream yields an empty result.
#include <string>

#include "engine/execution/result_channel.h"
#include "fuzz/fuzz_check.h"

namespace {

engine::RunnerResult decode(const engine::ResultLimits& limits, std::string_view stream,
                            std::string_view sizes, std::string& error) {
  engine::ResultDecoder decoder(limits);
  for (std::string_view chunk : fuzz::chunks(stream, sizes)) decoder.append(chunk);
  auto result = decoder.finish();
  error = decoder.error();
  return result;
}

bool same(const engine::RunnerResult& a, const engine::RunnerResult& b) {
  auto end_equal = [](const std::optional<engine::RunnerEnd>& x, const std::optional<engine::RunnerEnd>& y) {
    if (x.has_value() != y.has_value()) return false;
    if (!x) return true;
    return x->exit_code == y->exit_code && x->user_cpu_us == y->user_cpu_us &&
           x->system_cpu_us == y->system_cpu_us && x->children_user_cpu_us == y->children_user_cpu_us &&
           x->children_system_cpu_us == y->children_system_cpu_us;
  };
  if (a.images.size() != b.images.size()) return false;
  for (std::size_t i = 0; i < a.images.size(); ++i) {
    if (a.images[i].data_base64 != b.images[i].data_base64) return false;
  }
  return a.value_repr == b.value_repr && a.value_json == b.value_json && a.notes == b.notes &&
         end_equal(a.end, b.end);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 9) return 0;
  engine::ResultLimits limits;
  limits.max_images = data[0] & 7;
  if (data[0] & 8) limits.max_value_bytes = 16;
  const std::string_view sizes = fuzz::as_text(data + 1, 8);
  const std::string_view stream = fuzz::as_text(data + 9, size - 9);

  std::string whole_error, cut_error;
  const auto whole = decode(limits, stream, {}, whole_error);
  engine::ResultDecoder at_once(limits);
  at_once.append(stream);
  const auto one_read = at_once.finish();
  const auto cut = decode(limits, stream, sizes, cut_error);
  FUZZ_CHECK(same(whole, cut) && whole_error == cut_error);
  FUZZ_CHECK(same(one_read, cut) && at_once.error() == cut_error);

  if (!cut_error.empty()) {
    FUZZ_CHECK(!cut.value_repr && !cut.value_json && cut.images.empty() && cut.notes.empty() && !cut.end);
    return 0;
  }
  if (stream.empty()) FUZZ_CHECK(!cut.end);
  if (!stream.empty()) FUZZ_CHECK(cut.end.has_value());
  FUZZ_CHECK(cut.images.size() <= limits.max_images);
  FUZZ_CHECK(cut.notes.size() <= engine::kMaxNotes);
  if (cut.value_repr) FUZZ_CHECK(cut.value_repr->size() <= limits.max_value_bytes);
  if (cut.value_json) {
    FUZZ_CHECK(cut.value_repr.has_value());
    // What the server does with it: serialise it into the call's structuredContent.
    (void)cut.value_json->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  for (const auto& image : cut.images) FUZZ_CHECK(image.mime_type == "image/png");
  return 0;
}
