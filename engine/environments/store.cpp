#include "engine/environments/store.h"

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
#include <stdexcept>
#include <system_error>

#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include "engine/cache_dir.h"
#include "sandbox/read_file.h"

namespace engine {

namespace fs = std::filesystem;

// ---- SHA-256 (OpenSSL's libcrypto)

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed in libcrypto (is OpenSSL's default provider available?)");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xf]);
  }
  return out;
}

// ---- Keys

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
        {"offline", index.offline},
        {"user_configuration", index.user_configuration}}}};
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

// Small whole-file reads (sandbox/read_file.h) and writes with close-on-exec fds (iostreams
// cannot promise that). Metadata is small: a file past 16 MiB is not ours.
std::optional<std::string> read_small_file(const std::string& path) { return sandbox::read_file(path, 16u << 20); }

void write_small_file(const std::string& path, const std::string& text) {
  sandbox::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
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
    : cache_dir_(engine::cache_dir(cache_dir)),
      max_bytes_(max_bytes) {
  while (cache_dir_.size() > 1 && cache_dir_.back() == '/') cache_dir_.pop_back();
}

void EnvironmentStore::open() {
  if (cache_dir_.empty()) {
    throw StoreError("no directory for the environment cache: XDG_CACHE_HOME and HOME are unset, "
                     "the account has no home directory and /tmp/mcp-python-exec-sandbox-" +
                     std::to_string(::geteuid()) + " is not a private directory of this user; "
                     "choose one with --cache-dir");
  }
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
        sandbox::UniqueFd held = lock_key(key, LockKind::build, LOCK_EX | LOCK_NB);
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
    sandbox::UniqueFd build = lock_key(key, LockKind::build, LOCK_EX | LOCK_NB);
    if (!build) continue;
    sandbox::UniqueFd lease = lock_key(key, LockKind::lease, LOCK_EX | LOCK_NB);
    if (!lease || ::access(root_of(key).c_str(), F_OK) == 0) continue;
    ::unlink(lock_path(key, LockKind::lease).c_str());
    ::unlink(lock_path(key, LockKind::build).c_str());
  }
}

sandbox::UniqueFd EnvironmentStore::lock_key(const std::string& key, LockKind kind, int operation) const {
  const std::string path = lock_path(key, kind);
  for (;;) {
    sandbox::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!fd) throw StoreError("cannot open the lock " + path + ": " + errno_text(errno));
    int rc;
    do {
      rc = ::flock(fd.get(), operation);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      if (errno == EWOULDBLOCK) return sandbox::UniqueFd();
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
  sandbox::UniqueFd lock = lock_key(key, LockKind::lease, LOCK_SH);
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
  sandbox::UniqueFd build_lock = lock_key(key, LockKind::build, LOCK_EX);
  if (auto env = find(key)) return std::move(*env);
  // Leased before it exists, so no evictor can take it between the rename and the caller.
  sandbox::UniqueFd lease = lock_key(key, LockKind::lease, LOCK_SH);
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
    sandbox::UniqueFd lock = lock_key(c.key, LockKind::lease, LOCK_EX | LOCK_NB);
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

namespace {
std::string warm_status_path(const std::string& cache_dir, const std::string& interpreter) {
  return cache_dir + "/warm-cache-" + sha256_hex(interpreter).substr(0, 16) + ".status";
}
}  // namespace

std::optional<EnvironmentStore::WarmRecord> EnvironmentStore::last_warm(const std::string& interpreter) const {
  const std::string path = warm_status_path(cache_dir_, interpreter);
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  auto text = read_small_file(path);
  if (!text) return std::nullopt;
  const auto end = text->find('\n');
  // A file written this second may carry a time ahead of time()'s: the kernel stamps files from a
  // finer clock (multigrain timestamps, Linux 6.13) than the seconds time() reads. Never negative.
  WarmRecord record{text->substr(0, end), std::max<std::int64_t>(0, ::time(nullptr) - st.st_mtime)};
  return record;
}

void EnvironmentStore::record_warm(const std::string& interpreter, const std::string& status) const {
  write_small_file(warm_status_path(cache_dir_, interpreter), status + "\n");
}

}  // namespace engine
