#include "engine/environments/record_check.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <system_error>

#include "sandbox/unique_fd.h"

namespace engine::deps {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxRecordBytes = 64u << 20;
constexpr std::size_t kMaxProblems = 50;

const EVP_MD* digest_named(std::string_view algorithm) {
  if (algorithm == "sha256") return EVP_sha256();
  if (algorithm == "sha384") return EVP_sha384();
  if (algorithm == "sha512") return EVP_sha512();
  return nullptr;
}

// urlsafe base64 without padding (OpenSSL's EVP_EncodeBlock writes the standard alphabet, padded).
std::string urlsafe_base64(const unsigned char* bytes, std::size_t size) {
  std::string out(4 * ((size + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes, static_cast<int>(size));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

// Opens `relative` beneath the directory `dir` without following any symlink, for reading.
sandbox::UniqueFd open_beneath(int dir, const std::string& relative) {
  open_how how{};
  how.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const long fd = ::syscall(SYS_openat2, dir, relative.c_str(), &how, sizeof how);
  if (fd >= 0) return sandbox::UniqueFd(static_cast<int>(fd));
  if (errno != ENOSYS) return sandbox::UniqueFd();
  // Before Linux 5.6: no symlink as the last component at least (the installer is gone by now).
  return sandbox::UniqueFd(::openat(dir, relative.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
}

// "" when `fd` is a regular file whose digest was computed into `out`; else what it is.
std::string digest_file(int fd, const EVP_MD* md, std::string& out, std::uint64_t& size) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1) return "the digest could not be computed (libcrypto)";
  std::array<char, 1 << 16> buffer{};
  size = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::string("cannot read: ") + std::strerror(errno);
    }
    if (n == 0) break;
    size += static_cast<std::uint64_t>(n);
    if (EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<std::size_t>(n)) != 1) {
      return "the digest could not be computed (libcrypto)";
    }
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest.data(), &length) != 1) return "the digest could not be computed (libcrypto)";
  out = urlsafe_base64(digest.data(), length);
  return {};
}

// The whole file (up to kMaxRecordBytes), or nothing with `error` set.
std::string read_small(int dir, const std::string& relative, std::string& error) {
  sandbox::UniqueFd fd = open_beneath(dir, relative);
  if (!fd) {
    error = errno == ENOENT ? "missing" : std::string("cannot open: ") + std::strerror(errno);
    return {};
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "not a regular file";
    return {};
  }
  std::string text;
  std::array<char, 1 << 16> buffer{};
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = std::string("cannot read: ") + std::strerror(errno);
      return {};
    }
    if (n == 0) break;
    text.append(buffer.data(), static_cast<std::size_t>(n));
    if (text.size() > kMaxRecordBytes) {
      error = "larger than " + std::to_string(kMaxRecordBytes >> 20) + " MiB";
      return {};
    }
  }
  return text;
}

// A RECORD path relative to the target: normalised, leading ".." dropped (see the header); "" for
// an absolute or empty one.
std::string target_relative(const std::string& path) {
  const fs::path p = fs::path(path).lexically_normal();
  if (p.empty() || p.is_absolute()) return {};
  fs::path out;
  bool leading = true;
  for (const auto& part : p) {
    if (leading && part == "..") continue;
    leading = false;
    out /= part;
  }
  const std::string text = out.string();
  return text == "." ? std::string() : text;
}

bool generated_by_installer(const fs::path& relative, const std::set<std::string>& listed) {
  if (relative == ".lock") return true;  // uv's lock on the target
  const fs::path parent = relative.parent_path();
  const std::string name = relative.filename().string();
  if (parent.has_filename() && !parent.has_parent_path() && parent.string().ends_with(".dist-info")) {
    static const std::set<std::string> kMarkers = {"INSTALLER", "REQUESTED", "direct_url.json", "uv_cache.json",
                                                   "uv_build.json"};
    return kMarkers.count(name) != 0;
  }
  if (parent.filename() == "__pycache__" && name.ends_with(".pyc")) {
    const std::string stem = name.substr(0, name.find('.'));
    return listed.count((parent.parent_path() / (stem + ".py")).string()) != 0;
  }
  return false;
}

}  // namespace

std::string record_digest(std::string_view algorithm, std::string_view data) {
  const EVP_MD* md = digest_named(algorithm);
  if (md == nullptr) return {};
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, md, nullptr) != 1) return {};
  return urlsafe_base64(digest.data(), length);
}

std::vector<std::string> record_fields(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

std::string RecordCheck::describe() const {
  if (problems.empty()) return {};
  std::string text = "the installed files do not match what their distributions' RECORD lists, so the "
                     "environment was not published:";
  const std::size_t shown = std::min<std::size_t>(problems.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) text += "\n" + problems[i];
  if (problems.size() > shown) {
    text += "\n[... " + std::to_string(problems.size() - shown) +
            (problems.size() >= kMaxProblems ? " or more" : "") + " more]";
  }
  return text;
}

RecordCheck check_records(const std::string& target) {
  RecordCheck check;
  auto problem = [&](std::string text) {
    if (check.problems.size() < kMaxProblems) check.problems.push_back(std::move(text));
  };
  sandbox::UniqueFd dir(::open(target.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) {
    problem(target + ": cannot open: " + std::strerror(errno));
    return check;
  }
  std::set<std::string> listed;
  std::error_code ec;
  std::vector<std::string> dists;
  for (const auto& entry : fs::directory_iterator(target, ec)) {
    const std::string name = entry.path().filename().string();
    std::error_code e;
    if (name.ends_with(".dist-info") && entry.is_directory(e) && !entry.is_symlink(e)) dists.push_back(name);
  }
  if (ec) problem(target + ": cannot list: " + ec.message());
  std::sort(dists.begin(), dists.end());
  for (const auto& dist : dists) {
    ++check.distributions;
    const std::string record = dist + "/RECORD";
    std::string error;
    const std::string text = read_small(dir.get(), record, error);
    if (!error.empty()) {
      problem(dist + ": RECORD: " + error);
      continue;
    }
    listed.insert(record);
    for (std::size_t start = 0; start < text.size();) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      const std::string_view line(text.data() + start, end - start);
      start = end + 1;
      if (line.empty() || line == "\r") continue;
      const auto fields = record_fields(line);
      const std::string relative = target_relative(fields[0]);
      if (relative.empty()) {
        problem(dist + ": " + fields[0] + ": not a path inside the environment");
        continue;
      }
      listed.insert(relative);
      const std::string hash = fields.size() > 1 ? fields[1] : std::string();
      if (hash.empty()) continue;
      const auto eq = hash.find('=');
      const EVP_MD* md = eq == std::string::npos ? nullptr : digest_named(std::string_view(hash).substr(0, eq));
      if (md == nullptr) {
        problem(dist + ": " + fields[0] + ": unverifiable hash " + hash.substr(0, hash.find('=')) +
                " (RECORD needs sha256, sha384 or sha512)");
        continue;
      }
      sandbox::UniqueFd fd = open_beneath(dir.get(), relative);
      if (!fd) {
        problem(dist + ": " + fields[0] + ": " +
                (errno == ENOENT ? std::string("missing") : std::string("cannot open: ") + std::strerror(errno)));
        continue;
      }
      std::string digest;
      std::uint64_t size = 0;
      error = digest_file(fd.get(), md, digest, size);
      if (!error.empty()) {
        problem(dist + ": " + fields[0] + ": " + error);
        continue;
      }
      const std::string expected_size = fields.size() > 2 ? fields[2] : std::string();
      if (digest != hash.substr(eq + 1)) {
        problem(dist + ": " + fields[0] + ": its " + hash.substr(0, eq) + " digest differs from RECORD's");
      } else if (!expected_size.empty() && expected_size != std::to_string(size)) {
        problem(dist + ": " + fields[0] + ": " + std::to_string(size) + " bytes, RECORD says " + expected_size);
      } else {
        ++check.files;
      }
    }
  }
  // What is there that no RECORD lists.
  for (fs::recursive_directory_iterator it(target, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e;
    if (it->is_directory(e) && !it->is_symlink(e)) continue;
    const fs::path relative = it->path().lexically_relative(target);
    if (listed.count(relative.string()) != 0 || generated_by_installer(relative, listed)) continue;
    problem(relative.string() + ": listed by no RECORD");
  }
  if (ec) problem(target + ": cannot list: " + ec.message());
  return check;
}

}  // namespace engine::deps
