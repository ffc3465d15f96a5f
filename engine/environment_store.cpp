#include "engine/environment_store.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <sstream>
#include <system_error>

#include <spdlog/spdlog.h>

namespace engine {

namespace fs = std::filesystem;

// ---- SHA-256 (FIPS 180-4); small enough that a crypto library is not worth a dependency.

namespace {

constexpr std::array<std::uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void sha256_block(std::array<std::uint32_t, 8>& h, const unsigned char* p) {
  std::array<std::uint32_t, 64> w{};
  for (std::size_t i = 0; i < 16; ++i) {
    w[i] = (std::uint32_t{p[4 * i]} << 24) | (std::uint32_t{p[4 * i + 1]} << 16) |
           (std::uint32_t{p[4 * i + 2]} << 8) | std::uint32_t{p[4 * i + 3]};
  }
  for (std::size_t i = 16; i < 64; ++i) {
    std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  auto v = h;
  for (std::size_t i = 0; i < 64; ++i) {
    std::uint32_t s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
    std::uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
    std::uint32_t t1 = v[7] + s1 + ch + kRound[i] + w[i];
    std::uint32_t s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
    std::uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
    std::uint32_t t2 = s0 + maj;
    v[7] = v[6]; v[6] = v[5]; v[5] = v[4]; v[4] = v[3] + t1;
    v[3] = v[2]; v[2] = v[1]; v[1] = v[0]; v[0] = t1 + t2;
  }
  for (std::size_t i = 0; i < 8; ++i) h[i] += v[i];
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  std::array<std::uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t full = data.size() / 64;
  for (std::size_t i = 0; i < full; ++i) sha256_block(h, bytes + 64 * i);
  // Padding: 0x80, zeros, then the bit length big-endian in the last 8 bytes.
  std::array<unsigned char, 128> tail{};
  std::size_t rest = data.size() - 64 * full;
  std::memcpy(tail.data(), bytes + 64 * full, rest);
  tail[rest] = 0x80;
  std::size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
  std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
  for (std::size_t i = 0; i < 8; ++i) {
    tail[tail_len - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  }
  for (std::size_t off = 0; off < tail_len; off += 64) sha256_block(h, tail.data() + off);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (std::uint32_t word : h) {
    for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kHex[(word >> shift) & 0xf]);
  }
  return out;
}

// ---- Keys

std::string default_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/mcp-python-exec-sandbox";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/mcp-python-exec-sandbox";
  return "/tmp/mcp-python-exec-sandbox-" + std::to_string(::geteuid());
}

std::string canonical_requirement(const Requirement& r) {
  std::string name = r.normalized_name.empty() ? normalize_name(r.name) : r.normalized_name;
  std::vector<std::string> extras;
  for (const auto& e : r.extras) extras.push_back(normalize_name(e));
  std::sort(extras.begin(), extras.end());
  extras.erase(std::unique(extras.begin(), extras.end()), extras.end());
  std::string out = name;
  if (!extras.empty()) {
    out += '[';
    for (std::size_t i = 0; i < extras.size(); ++i) out += (i ? "," : "") + extras[i];
    out += ']';
  }
  if (!r.url.empty()) return out + " @ " + r.url;
  std::vector<std::string> clauses;
  std::string clause;
  for (char c : r.specifier + ",") {
    if (c == ',') {
      if (!clause.empty()) clauses.push_back(clause);
      clause.clear();
    } else if (c != ' ' && c != '\t') {
      clause += c;
    }
  }
  std::sort(clauses.begin(), clauses.end());
  for (std::size_t i = 0; i < clauses.size(); ++i) out += (i ? "," : "") + clauses[i];
  return out;
}

std::string environment_key(const Interpreter& interpreter, const std::vector<Requirement>& requirements,
                            const IndexOptions& index) {
  std::vector<std::string> reqs;
  for (const auto& r : requirements) reqs.push_back(canonical_requirement(r));
  std::sort(reqs.begin(), reqs.end());
  reqs.erase(std::unique(reqs.begin(), reqs.end()), reqs.end());
  nlohmann::json material = {
      {"format", 1},
      {"interpreter", {{"executable", interpreter.executable}, {"version", interpreter.version}}},
      {"requirements", reqs},
      {"index",
       {{"index_url", index.index_url.value_or("")},
        {"extra_index_urls", index.extra_index_urls},
        {"find_links", index.find_links},
        {"offline", index.offline}}}};
  return sha256_hex(material.dump());
}

// ---- Store

namespace {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

std::string random_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s;
  for (int i = 0; i < 10; ++i) s.push_back(kChars[rng() % (sizeof kChars - 1)]);
  return s;
}

std::uint64_t disk_usage(const std::string& root) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    struct stat st{};
    if (::lstat(it->path().c_str(), &st) == 0) total += static_cast<std::uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

// The environment belongs to the server, not to the unprivileged installer that wrote it, and
// nobody but the server may change it afterwards.
void seal_tree(const std::string& root) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  auto seal = [&](const fs::path& p) {
    struct stat st{};
    if (::lstat(p.c_str(), &st) != 0) return;
    if (st.st_uid != uid || st.st_gid != gid) {
      if (::lchown(p.c_str(), uid, gid) != 0) {
        throw StoreError("cannot take ownership of " + p.string() + ": " + errno_text(errno));
      }
    }
    if (S_ISLNK(st.st_mode)) return;
    mode_t mode = st.st_mode & 07777;
    mode_t want = S_ISDIR(st.st_mode) ? 0755 : ((mode & 0111) ? 0755 : 0644);
    if (mode != want && ::chmod(p.c_str(), want) != 0) {
      throw StoreError("cannot set the mode of " + p.string() + ": " + errno_text(errno));
    }
  };
  seal(root);
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    seal(it->path());
  }
  if (ec) throw StoreError("cannot walk " + root + ": " + ec.message());
}

// Small whole-file reads and writes with close-on-exec fds (iostreams cannot promise that).
std::optional<std::string> read_small_file(const std::string& path) {
  deps::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  std::string text;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return text;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > (16u << 20)) return std::nullopt;  // not ours: metadata is small
  }
}

void write_small_file(const std::string& path, const std::string& text) {
  deps::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) throw StoreError("cannot write " + path + ": " + errno_text(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw StoreError("cannot write " + path + ": " + errno_text(errno));
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0) throw StoreError("cannot write " + path + ": " + errno_text(errno));
}

bool is_key(std::string_view name) {
  return name.size() == 64 &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

EnvironmentStore::EnvironmentStore(std::string cache_dir, std::uint64_t max_bytes)
    : cache_dir_(cache_dir.empty() ? default_cache_dir() : std::move(cache_dir)),
      max_bytes_(max_bytes) {
  while (cache_dir_.size() > 1 && cache_dir_.back() == '/') cache_dir_.pop_back();
}

void EnvironmentStore::open() {
  for (const auto& dir : {cache_dir_, envs_dir(), cache_dir_ + "/locks", installer_cache_dir()}) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || ::access(dir.c_str(), W_OK | X_OK) != 0) {
      throw StoreError("the environment cache " + dir + " is not a writable directory (" +
                       (ec ? ec.message() : errno_text(errno)) +
                       "); choose another with --cache-dir");
    }
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(envs_dir(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".trash-", 0) == 0) {
      fs::remove_all(entry.path(), ec);
    } else if (name.rfind(".tmp-", 0) == 0 && name.size() > 5 + 64) {
      const std::string key = name.substr(5, 64);
      // Abandoned when no one holds the key's lock; a build in progress holds it.
      if (is_key(key)) {
        deps::Fd held = lock_key(key, LockKind::build, LOCK_EX | LOCK_NB);
        if (held) {
          spdlog::info("removing an abandoned environment build {}", entry.path().string());
          fs::remove_all(entry.path(), ec);
        }
      }
    }
  }
  // Lock files of builds that failed (no environment) are removed when no one holds them.
  for (const auto& entry : fs::directory_iterator(cache_dir_ + "/locks", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != 64 + 6 || name.substr(64) != ".build") continue;
    const std::string key = name.substr(0, 64);
    if (!is_key(key) || ::access(root_of(key).c_str(), F_OK) == 0) continue;
    deps::Fd build = lock_key(key, LockKind::build, LOCK_EX | LOCK_NB);
    if (!build) continue;
    deps::Fd lease = lock_key(key, LockKind::lease, LOCK_EX | LOCK_NB);
    if (!lease || ::access(root_of(key).c_str(), F_OK) == 0) continue;
    ::unlink(lock_path(key, LockKind::lease).c_str());
    ::unlink(lock_path(key, LockKind::build).c_str());
  }
}

deps::Fd EnvironmentStore::lock_key(const std::string& key, LockKind kind, int operation) const {
  const std::string path = lock_path(key, kind);
  for (;;) {
    deps::Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!fd) throw StoreError("cannot open the lock " + path + ": " + errno_text(errno));
    int rc;
    do {
      rc = ::flock(fd.get(), operation);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      if (errno == EWOULDBLOCK) return deps::Fd();
      throw StoreError("cannot lock " + path + ": " + errno_text(errno));
    }
    // The evictor unlinks lock files while holding them: a lock on an unlinked file is stale.
    struct stat held{}, current{};
    if (::fstat(fd.get(), &held) == 0 && ::stat(path.c_str(), &current) == 0 &&
        held.st_ino == current.st_ino && held.st_dev == current.st_dev) {
      return fd;
    }
  }
}

std::optional<StoredEnv> EnvironmentStore::load(const std::string& key) const {
  const std::string root = root_of(key);
  auto text = read_small_file(root + "/mpes-env.json");
  if (!text) return std::nullopt;
  nlohmann::json meta = nlohmann::json::parse(*text, nullptr, false);
  if (meta.is_discarded() || !meta.is_object()) return std::nullopt;
  StoredEnv env;
  env.key = key;
  env.root = root;
  env.site_dir = root + "/site";
  env.import_names = meta.value("import_names", std::vector<std::string>{});
  env.size_bytes = meta.value("size_bytes", std::uint64_t{0});
  return env;
}

std::optional<StoredEnv> EnvironmentStore::find(const std::string& key) {
  const std::string root = root_of(key);
  if (::access(root.c_str(), F_OK) != 0) return std::nullopt;
  deps::Fd lock = lock_key(key, LockKind::lease, LOCK_SH);
  auto env = load(key);  // re-checked under the lock: an evictor may have been first
  if (!env) return std::nullopt;
  ::utimensat(AT_FDCWD, (root + "/mpes-env.json").c_str(), nullptr, 0);  // LRU clock
  env->reused = true;
  env->lease = std::make_shared<EnvLease>(std::move(lock), root);
  return env;
}

StoredEnv EnvironmentStore::get_or_build(const std::string& key, const nlohmann::json& description,
                                         const BuildFn& build) {
  if (!is_key(key)) throw StoreError("invalid environment key '" + key + "'");
  if (auto env = find(key)) return std::move(*env);
  // One builder per key, across threads and processes; the others wait here, then find it.
  deps::Fd build_lock = lock_key(key, LockKind::build, LOCK_EX);
  if (auto env = find(key)) return std::move(*env);
  // Leased before it exists, so no evictor can take it between the rename and the caller.
  deps::Fd lease = lock_key(key, LockKind::lease, LOCK_SH);
  const std::string root = root_of(key);
  std::string tmpl = envs_dir() + "/.tmp-" + key + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw StoreError("cannot create a build directory in " + envs_dir() + ": " + errno_text(errno));
  }
  const std::string tmp = tmpl;
  try {
    const std::string site = tmp + "/site";
    if (::mkdir(site.c_str(), 0755) != 0) {
      throw StoreError("cannot create " + site + ": " + errno_text(errno));
    }
    std::vector<std::string> imports = build(site);
    seal_tree(tmp);
    nlohmann::json meta = {{"format", 1},
                           {"key", key},
                           {"description", description},
                           {"import_names", imports},
                           {"size_bytes", disk_usage(tmp)}};
    write_small_file(tmp + "/mpes-env.json", meta.dump(2) + "\n");
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, root.c_str(), RENAME_NOREPLACE) != 0) {
      throw StoreError("cannot move the new environment into place at " + root + ": " +
                       errno_text(errno));
    }
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  auto env = load(key);
  if (!env) throw StoreError("the environment " + root + " vanished right after it was built");
  env->lease = std::make_shared<EnvLease>(std::move(lease), root);
  return std::move(*env);
}

EnvironmentStore::Usage EnvironmentStore::usage() const {
  Usage u;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(envs_dir(), ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_key(name)) continue;
    if (auto env = load(name)) {
      u.bytes += env->size_bytes;
      ++u.environments;
    }
  }
  return u;
}

std::vector<std::string> EnvironmentStore::evict() {
  struct Candidate {
    std::string key;
    std::uint64_t size;
    struct timespec used;
  };
  std::vector<Candidate> all;
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(envs_dir(), ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_key(name)) continue;
    auto env = load(name);
    struct stat st{};
    if (!env || ::stat((env->root + "/mpes-env.json").c_str(), &st) != 0) continue;
    all.push_back({name, env->size_bytes, st.st_mtim});
    total += env->size_bytes;
  }
  std::vector<std::string> evicted;
  if (total <= max_bytes_) return evicted;
  std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
  });
  for (const auto& c : all) {
    if (total <= max_bytes_) break;
    deps::Fd lock = lock_key(c.key, LockKind::lease, LOCK_EX | LOCK_NB);
    if (!lock) continue;  // leased: in use here or by another server
    const std::string root = root_of(c.key);
    const std::string trash = envs_dir() + "/.trash-" + c.key + "-" + random_suffix();
    if (::rename(root.c_str(), trash.c_str()) != 0) continue;
    ::unlink(lock_path(c.key, LockKind::lease).c_str());
    fs::remove_all(trash, ec);
    total -= std::min(total, c.size);
    evicted.push_back(c.key);
    spdlog::info("evicted environment {} ({} bytes) to stay within {} bytes", c.key, c.size, max_bytes_);
  }
  return evicted;
}

std::optional<EnvironmentStore::WarmRecord> EnvironmentStore::last_warm() const {
  const std::string path = cache_dir_ + "/warm-cache.status";
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  auto text = read_small_file(path);
  if (!text) return std::nullopt;
  const auto end = text->find('\n');
  WarmRecord record{text->substr(0, end), ::time(nullptr) - st.st_mtime};
  return record;
}

void EnvironmentStore::record_warm(const std::string& status) const {
  write_small_file(cache_dir_ + "/warm-cache.status", status + "\n");
}

}  // namespace engine
