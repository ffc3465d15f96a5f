#include "engine/files/work_files.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace engine {
namespace {

void put(std::string& out, std::uint64_t value, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

WorkPath check_work_path(std::string_view path, bool pattern) {
  WorkPath out;
  const std::string what = pattern ? "glob" : "path";
  auto refuse = [&](const std::string& why) {
    out.path.clear();
    out.error = "the " + what + " '" + std::string(path.substr(0, 200)) + "' " + why;
    return out;
  };
  if (path.empty()) return refuse("is empty");
  if (path.size() > kMaxWorkPathBytes) return refuse("is longer than " + std::to_string(kMaxWorkPathBytes) + " bytes");
  if (path.find('\0') != std::string_view::npos) return refuse("contains a NUL byte");
  if (path.front() == '/') return refuse("is absolute: paths are relative to the work dir");
  if (path.back() == '/') return refuse("ends with '/': name a file");
  std::size_t depth = 0;
  for (std::size_t start = 0; start <= path.size();) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty()) return refuse("has an empty component ('//')");
    if (part == ".") continue;
    if (part == "..") return refuse("leaves the work dir ('..')");
    if (part.size() > kMaxPathComponentBytes) {
      return refuse("has a component longer than " + std::to_string(kMaxPathComponentBytes) + " bytes");
    }
    if (pattern && part != "**" && part.find("**") != std::string_view::npos) {
      return refuse("uses '**' inside a name (it stands alone between slashes)");
    }
    if (++depth > kMaxPathDepth) return refuse("is deeper than " + std::to_string(kMaxPathDepth) + " directories");
    if (!out.path.empty()) out.path += '/';
    out.path += part;
  }
  if (out.path.empty()) return refuse("names the work dir itself");
  return out;
}

std::optional<std::string> check_files(std::vector<InputFile>& inputs, std::vector<std::string>& globs) {
  if (inputs.size() > kMaxInputFiles) {
    return "Invalid argument 'input_files': at most " + std::to_string(kMaxInputFiles) + " files, got " +
           std::to_string(inputs.size());
  }
  if (globs.size() > kMaxOutputGlobs) {
    return "Invalid argument 'output_files': at most " + std::to_string(kMaxOutputGlobs) + " patterns, got " +
           std::to_string(globs.size());
  }
  for (auto& input : inputs) {
    WorkPath checked = check_work_path(input.path, false);
    if (!checked.error.empty()) return "Invalid argument 'input_files': " + checked.error;
    input.path = std::move(checked.path);
  }
  for (auto& glob : globs) {
    WorkPath checked = check_work_path(glob, true);
    if (!checked.error.empty()) return "Invalid argument 'output_files': " + checked.error;
    glob = std::move(checked.path);
  }
  // One name, one meaning: not twice, and not a file that another's path needs as a directory.
  std::vector<std::string> paths;
  for (const auto& input : inputs) paths.push_back(input.path);
  std::sort(paths.begin(), paths.end());
  for (std::size_t i = 0; i + 1 < paths.size(); ++i) {
    const std::string& a = paths[i];
    for (std::size_t j = i + 1; j < paths.size() && paths[j].compare(0, a.size(), a) == 0; ++j) {
      if (paths[j].size() == a.size()) return "Invalid argument 'input_files': '" + a + "' is given twice";
      if (paths[j][a.size()] == '/') {
        return "Invalid argument 'input_files': '" + a + "' is a file, but '" + paths[j] + "' needs it as a directory";
      }
    }
  }
  return std::nullopt;
}

std::string encode_files_request(const FilesRequest& request) {
  std::size_t size = kFilesRequestMagic.size() + 32;
  for (const auto& input : request.inputs) size += 12 + input.path.size() + input.content.size();
  for (const auto& glob : request.output_globs) size += 4 + glob.size();
  std::string out;
  out.reserve(size);
  out.append(kFilesRequestMagic);
  put(out, request.inputs.size(), 4);
  for (const auto& input : request.inputs) {
    put(out, input.path.size(), 4);
    out.append(input.path);
    put(out, input.content.size(), 8);
    out.append(input.content);
  }
  put(out, request.output_globs.size(), 4);
  for (const auto& glob : request.output_globs) {
    put(out, glob.size(), 4);
    out.append(glob);
  }
  put(out, request.max_output_bytes, 8);
  put(out, request.max_output_files, 4);
  put(out, kMaxWorkPathBytes, 4);
  put(out, kMaxPathDepth, 4);
  return out;
}

std::string mime_type_for(std::string_view path) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 40> kTypes = {{
      {"txt", "text/plain"}, {"log", "text/plain"}, {"md", "text/markdown"}, {"csv", "text/csv"},
      {"tsv", "text/tab-separated-values"}, {"json", "application/json"}, {"jsonl", "application/jsonl"},
      {"ndjson", "application/x-ndjson"}, {"xml", "application/xml"}, {"html", "text/html"},
      {"htm", "text/html"}, {"css", "text/css"}, {"js", "text/javascript"}, {"py", "text/x-python"},
      {"yaml", "application/yaml"}, {"yml", "application/yaml"}, {"toml", "application/toml"},
      {"ini", "text/plain"}, {"sql", "application/sql"}, {"tex", "text/x-tex"}, {"svg", "image/svg+xml"},
      {"png", "image/png"}, {"jpg", "image/jpeg"}, {"jpeg", "image/jpeg"}, {"gif", "image/gif"},
      {"webp", "image/webp"}, {"bmp", "image/bmp"}, {"pdf", "application/pdf"}, {"zip", "application/zip"},
      {"gz", "application/gzip"}, {"tar", "application/x-tar"}, {"parquet", "application/vnd.apache.parquet"},
      {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
      {"npy", "application/octet-stream"}, {"pkl", "application/octet-stream"}, {"wav", "audio/wav"},
      {"mp3", "audio/mpeg"}, {"mp4", "video/mp4"}, {"ipynb", "application/x-ipynb+json"},
      {"sh", "text/x-shellscript"},
  }};
  const auto slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const auto dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) return "application/octet-stream";
  const std::string ext = lower(name.substr(dot + 1));
  for (const auto& [e, type] : kTypes) {
    if (e == ext) return std::string(type);
  }
  return "application/octet-stream";
}

bool is_textual_mime(std::string_view mime) {
  if (mime.rfind("text/", 0) == 0) return true;
  for (std::string_view t : {"application/json", "application/jsonl", "application/x-ndjson", "application/xml",
                             "application/yaml", "application/toml", "application/sql", "image/svg+xml",
                             "application/x-ipynb+json"}) {
    if (mime == t) return true;
  }
  return false;
}

}  // namespace engine
