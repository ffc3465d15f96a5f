// Content-addressed dependency environments under the cache directory:
//   <cache>/envs/<key>/site/         the installed packages (what goes on sys.path)
//   <cache>/envs/<key>/mpes-env.json what it holds; its mtime is the LRU clock
//   <cache>/envs/.tmp-<key>-XXXXXX/  a build in progress (never used; removed when abandoned)
//   <cache>/locks/<key>.build        flock: exclusive while one thread/process builds the key
//   <cache>/locks/<key>.lease        flock: shared while the environment is leased (in use by a
//                                    zygote), exclusive while it is evicted
//   <cache>/installer-cache/         uv's / pip's own cache (never mounted into runs)
// An environment appears only by rename() of a complete build, so a crash, kill or failure never
// leaves a half environment that a later call could use. Blocking and thread-safe: call from
// worker threads, not from the event loop.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/environments/index_options.h"
#include "engine/environments/installer.h"
#include "engine/interpreters/discovery.h"
#include "engine/packaging/script_metadata.h"
#include "sandbox/unique_fd.h"

namespace engine {

// SHA-256 of `data`, lowercase hex.
std::string sha256_hex(std::string_view data);

// One requirement in a canonical form: normalised name, sorted extras, specifier clauses without
// spaces and sorted, url. Markers are not part of it (they are evaluated before).
std::string canonical_requirement(const Requirement& requirement);

// The store key: SHA-256 over (interpreter real path + version, the sorted canonical requirement
// set, the index options).
std::string environment_key(const Interpreter& interpreter, const std::vector<Requirement>& requirements,
                            const IndexOptions& index);

// Keeps an environment pinned (not evictable, by this or another server sharing the cache)
// while alive: a shared flock on its lock file.
class EnvLease {
 public:
  EnvLease(sandbox::UniqueFd lock, std::string root) : lock_(std::move(lock)), root_(std::move(root)) {}
  const std::string& root() const { return root_; }

 private:
  sandbox::UniqueFd lock_;
  std::string root_;
};

struct StoredEnv {
  std::string key;
  std::string root;      // <cache>/envs/<key>: mount this read-only
  std::string site_dir;  // <root>/site: put this first on sys.path
  std::vector<std::string> import_names;  // recorded at build time
  std::uint64_t size_bytes = 0;
  bool reused = false;   // existed before this call
  std::shared_ptr<EnvLease> lease;
};

struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class EnvironmentStore {
 public:
  EnvironmentStore(std::string cache_dir, std::uint64_t max_bytes);

  const std::string& cache_dir() const { return cache_dir_; }
  std::string installer_cache_dir() const { return cache_dir_ + "/installer-cache"; }
  std::string envs_dir() const { return cache_dir_ + "/envs"; }
  std::uint64_t max_bytes() const { return max_bytes_; }

  // Creates the directories and removes builds abandoned by a crash (those no process holds the
  // lock of) and half-evicted leftovers. Throws StoreError (e.g. unwritable cache dir).
  void open();

  // The complete environment `key`, leased and marked used; nullopt when absent.
  std::optional<StoredEnv> find(const std::string& key);

  // Fills a fresh temporary site dir; returns the import names to record. Throws to abort.
  using BuildFn = std::function<std::vector<std::string>(const std::string& site_dir)>;
  // The environment `key`: found, or built by `build` once (waiting while another thread or
  // process builds the same key) and renamed into place. `description` is recorded in its
  // metadata. Rethrows what `build` throws, after removing the temporary directory.
  StoredEnv get_or_build(const std::string& key, const nlohmann::json& description,
                         const BuildFn& build);

  // Evicts least recently used environments that are not leased until the total size is within
  // max_bytes. Returns the evicted keys.
  std::vector<std::string> evict();

  struct Usage {
    std::uint64_t bytes = 0;
    std::size_t environments = 0;
  };
  Usage usage() const;

  // The last cache-warming outcome (one line) for one interpreter (`interpreter`: its
  // executable; wheels and what the interpreter already has differ from one to another) and its
  // age in seconds; nullopt when none.
  struct WarmRecord {
    std::string status;
    std::int64_t age_seconds = 0;
  };
  std::optional<WarmRecord> last_warm(const std::string& interpreter) const;
  void record_warm(const std::string& interpreter, const std::string& status) const;

 private:
  enum class LockKind { build, lease };
  std::string lock_path(const std::string& key, LockKind kind) const {
    return cache_dir_ + "/locks/" + key + (kind == LockKind::build ? ".build" : ".lease");
  }
  // flock(operation) on the key's lock file; an invalid Fd when LOCK_NB would block.
  sandbox::UniqueFd lock_key(const std::string& key, LockKind kind, int operation) const;
  std::string root_of(const std::string& key) const { return envs_dir() + "/" + key; }
  std::optional<StoredEnv> load(const std::string& key) const;

  std::string cache_dir_;
  std::uint64_t max_bytes_;
};

}  // namespace engine
