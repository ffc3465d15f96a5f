// Files in and out of a run's work dir: the rules a path or glob must follow (checked when a call
// arrives: a bad one is refused, never sent), the request the runner reads (python_stubs/files.py
// writes the inputs and matches the outputs from inside the sandbox, one directory fd at a time,
// never following a symlink), and the MIME type a returned file is labelled with.
//
// Files request (a sealed memfd attached to the run or step), little-endian:
//   "MPESF2\n"
//   u32 input count,  then per input:  u32 path length, path, u64 content length, content
//   u32 glob count,   then per glob:   u32 length, pattern
//   u64 max output bytes (all files together), u32 max output files
//   u32 max path bytes, u32 max path depth (kMaxWorkPathBytes, kMaxPathDepth: a match beyond
//   them could not come back, so the runner neither searches nor sends it)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace engine {

inline constexpr std::size_t kMaxInputFiles = 256;
inline constexpr std::size_t kMaxOutputGlobs = 32;
inline constexpr std::size_t kMaxOutputFiles = 64;
inline constexpr std::size_t kMaxWorkPathBytes = 1024;
inline constexpr std::size_t kMaxPathComponentBytes = 255;
inline constexpr std::size_t kMaxPathDepth = 32;
inline constexpr std::string_view kFilesRequestMagic = "MPESF2\n";

struct InputFile {
  std::string path;     // relative to the work dir, as checked by check_work_path
  std::string content;  // bytes
};

struct OutputFile {
  std::string path;  // relative to the work dir
  std::string mime_type;
  std::string content;  // bytes
};

struct WorkPath {
  std::string path;   // normalised ("./a//b" is refused, "./a/b" becomes "a/b")
  std::string error;  // non-empty: why it is refused
};

// A path (or, with `pattern`, a glob) inside the work dir: relative, no "..", no empty
// component, no NUL, within the length and depth bounds. "." components are dropped.
// `pattern` allows *, ? and [...] (and ** as a whole component).
WorkPath check_work_path(std::string_view path, bool pattern);

// Every rule over a call's files: counts, each path, and no input path that is also the
// directory of another. The first problem, naming the argument, or nullopt.
std::optional<std::string> check_files(std::vector<InputFile>& inputs, std::vector<std::string>& globs);

struct FilesRequest {
  std::vector<InputFile> inputs;
  std::vector<std::string> output_globs;
  std::uint64_t max_output_bytes = 10ull << 20;
  std::uint32_t max_output_files = kMaxOutputFiles;
};
std::string encode_files_request(const FilesRequest& request);

// The MIME type of a file by its name (extension), "application/octet-stream" when unknown.
std::string mime_type_for(std::string_view path);
// Whether a file of this type is returned as text (when its bytes are valid UTF-8).
bool is_textual_mime(std::string_view mime);

}  // namespace engine
