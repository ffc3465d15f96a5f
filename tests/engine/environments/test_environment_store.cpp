// The content-addressed environment store: keys, atomic builds, abandoned builds, leases, LRU.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/environments/store.h"
#include "engine/packaging/script_metadata.h"
#include "tests/support/wheel_fixtures.h"

namespace fs = std::filesystem;
using engine::EnvironmentStore;

namespace {

engine::Requirement req(const std::string& text) {
  std::string error;
  auto r = engine::parse_requirement(text, &error);
  REQUIRE(r.has_value());
  return *r;
}

engine::Interpreter fake_interpreter(const std::string& exe = "/usr/bin/python3.11",
                                     const std::string& version = "3.11.2") {
  engine::Interpreter i;
  i.executable = exe;
  i.version = version;
  i.major_minor = version.substr(0, 4);
  return i;
}

void write_file(const std::string& path, std::size_t bytes) {
  std::ofstream out(path);
  out << std::string(bytes, 'x');
}

std::size_t count_entries(const std::string& dir, const std::string& prefix) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

const std::string kKeyA(64, 'a');
const std::string kKeyB(64, 'b');
const std::string kKeyC(64, 'c');

}  // namespace

TEST_CASE("sha256_hex matches the FIPS 180-4 test vectors", "[store]") {
  CHECK(engine::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(engine::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(engine::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(engine::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Lengths around the padding boundary (55/56/64 bytes) against Python's hashlib.
  for (std::size_t n : {55u, 56u, 63u, 64u, 65u, 119u, 120u}) {
    std::string data(n, 'q');
    std::string expected = fixtures::run_python(
        "/usr/bin/python3", {}, "import hashlib; print(hashlib.sha256(b'q' * " + std::to_string(n) + ").hexdigest())");
    expected.pop_back();
    CHECK(engine::sha256_hex(data) == expected);
  }
}

TEST_CASE("canonical requirements ignore spelling, order and spaces", "[store]") {
  CHECK(engine::canonical_requirement(req("Mpes_Leaf[B,a] >= 1.0 , <3")) == "mpes-leaf[a,b]<3,>=1.0");
  CHECK(engine::canonical_requirement(req("mpes-leaf")) == "mpes-leaf");
  CHECK(engine::canonical_requirement(req("pkg @ https://example.org/pkg-1.0-py3-none-any.whl")) ==
        "pkg @ https://example.org/pkg-1.0-py3-none-any.whl");
}

TEST_CASE("environment keys depend on interpreter, requirement set and index options only", "[store]") {
  engine::IndexOptions index;
  auto py = fake_interpreter();
  auto k1 = engine::environment_key(py, {req("a>=1"), req("B")}, index);
  CHECK(k1.size() == 64);
  CHECK(engine::environment_key(py, {req("b"), req("A >= 1")}, index) == k1);
  CHECK(engine::environment_key(py, {req("a>=2"), req("b")}, index) != k1);
  CHECK(engine::environment_key(fake_interpreter("/usr/bin/python3.12", "3.12.1"), {req("a>=1"), req("b")}, index) != k1);
  CHECK(engine::environment_key(fake_interpreter("/usr/bin/python3.11", "3.11.9"), {req("a>=1"), req("b")}, index) != k1);
  engine::IndexOptions offline;
  offline.offline = true;
  CHECK(engine::environment_key(py, {req("a>=1"), req("b")}, offline) != k1);
  engine::IndexOptions links;
  links.find_links = {"/srv/wheels"};
  CHECK(engine::environment_key(py, {req("a>=1"), req("b")}, links) != k1);
  // The user's own installer configuration (its digest) is part of the key.
  engine::IndexOptions configured;
  configured.user_configuration = "digest-of-another-index-configuration";
  CHECK(engine::environment_key(py, {req("a>=1"), req("b")}, configured) != k1);
}

TEST_CASE("get_or_build builds once, then finds the environment", "[store]") {
  fixtures::TempDir dir;
  EnvironmentStore store(dir.path() + "/cache", 1ull << 30);
  store.open();
  CHECK_FALSE(store.find(kKeyA).has_value());
  int builds = 0;
  auto build = [&](const std::string& site) {
    ++builds;
    write_file(site + "/mod.py", 10);
    return std::vector<std::string>{"mod"};
  };
  auto first = store.get_or_build(kKeyA, {{"what", "test"}}, build);
  CHECK(builds == 1);
  CHECK_FALSE(first.reused);
  CHECK(first.root == dir.path() + "/cache/envs/" + kKeyA);
  CHECK(first.site_dir == first.root + "/site");
  CHECK(fs::exists(first.site_dir + "/mod.py"));
  CHECK(first.import_names == std::vector<std::string>{"mod"});
  CHECK(first.size_bytes > 0);
  REQUIRE(first.lease);

  auto second = store.get_or_build(kKeyA, {}, build);
  CHECK(builds == 1);
  CHECK(second.reused);
  CHECK(second.import_names == std::vector<std::string>{"mod"});
  auto found = store.find(kKeyA);
  REQUIRE(found.has_value());
  CHECK(found->root == first.root);
  // No build directory is left behind.
  CHECK(count_entries(store.envs_dir(), ".tmp-") == 0);
}

TEST_CASE("a failed build leaves nothing a later call could use", "[store]") {
  fixtures::TempDir dir;
  EnvironmentStore store(dir.path(), 1ull << 30);
  store.open();
  auto failing = [](const std::string& site) -> std::vector<std::string> {
    write_file(site + "/half.py", 100);
    throw std::runtime_error("installer died");
  };
  CHECK_THROWS_WITH(store.get_or_build(kKeyA, {}, failing), "installer died");
  CHECK_FALSE(store.find(kKeyA).has_value());
  CHECK_FALSE(fs::exists(dir.path() + "/envs/" + kKeyA));
  CHECK(count_entries(store.envs_dir(), ".tmp-") == 0);
  // The next call builds it afresh.
  auto env = store.get_or_build(kKeyA, {}, [](const std::string& site) {
    write_file(site + "/whole.py", 1);
    return std::vector<std::string>{};
  });
  CHECK(fs::exists(env.site_dir + "/whole.py"));
  CHECK_FALSE(fs::exists(env.site_dir + "/half.py"));
}

TEST_CASE("open() removes builds abandoned by a crash but not one in progress", "[store]") {
  fixtures::TempDir dir;
  {
    EnvironmentStore store(dir.path(), 1ull << 30);
    store.open();
  }
  // What a killed server leaves: a temporary build directory with half the packages.
  const std::string abandoned = dir.path() + "/envs/.tmp-" + kKeyA + "-zzzzzz";
  fs::create_directories(abandoned + "/site/pkg");
  write_file(abandoned + "/site/pkg/__init__.py", 10);

  EnvironmentStore store(dir.path(), 1ull << 30);
  CHECK_FALSE(store.find(kKeyA).has_value());  // never used as an environment

  // A build of key B is in progress in another thread while open() runs.
  std::atomic<bool> building{false}, release{false};
  std::thread builder([&] {
    store.get_or_build(kKeyB, {}, [&](const std::string& site) {
      write_file(site + "/x.py", 1);
      building = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return std::vector<std::string>{};
    });
  });
  while (!building) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EnvironmentStore other(dir.path(), 1ull << 30);  // e.g. a second server sharing the cache
  other.open();
  CHECK_FALSE(fs::exists(abandoned));
  CHECK(count_entries(other.envs_dir(), ".tmp-" + kKeyB) == 1);  // kept: its lock is held
  release = true;
  builder.join();
  CHECK(store.find(kKeyB).has_value());
}

TEST_CASE("concurrent get_or_build of one key builds once and both get it", "[store]") {
  fixtures::TempDir dir;
  EnvironmentStore a(dir.path(), 1ull << 30);
  EnvironmentStore b(dir.path(), 1ull << 30);  // a second store instance: as another process
  a.open();
  b.open();
  std::atomic<int> builds{0};
  auto build = [&](const std::string& site) {
    ++builds;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    write_file(site + "/m.py", 1);
    return std::vector<std::string>{"m"};
  };
  engine::StoredEnv ea, eb;
  std::thread t1([&] { ea = a.get_or_build(kKeyC, {}, build); });
  std::thread t2([&] { eb = b.get_or_build(kKeyC, {}, build); });
  t1.join();
  t2.join();
  CHECK(builds == 1);
  CHECK(ea.root == eb.root);
  CHECK(ea.reused != eb.reused);
  CHECK(eb.import_names == std::vector<std::string>{"m"});
}

TEST_CASE("eviction removes least recently used environments that are not leased", "[store]") {
  fixtures::TempDir dir;
  // Each environment is ~64 KiB on disk; the bound holds two of them.
  EnvironmentStore store(dir.path(), 150 * 1024);
  store.open();
  auto build = [](const std::string& site) {
    write_file(site + "/data.bin", 60 * 1024);
    return std::vector<std::string>{};
  };
  {
    auto a = store.get_or_build(kKeyA, {}, build);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto b = store.get_or_build(kKeyB, {}, build);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(store.evict().empty());  // within the bound
    CHECK(store.usage().environments == 2);
    // A is used again, so B is now the least recently used.
    CHECK(store.find(kKeyA).has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }  // leases released
  auto c = store.get_or_build(kKeyC, {}, build);
  auto evicted = store.evict();
  CHECK(evicted == std::vector<std::string>{kKeyB});
  CHECK(store.find(kKeyA).has_value());
  CHECK_FALSE(store.find(kKeyB).has_value());
  CHECK(store.find(kKeyC).has_value());
  CHECK(store.usage().environments == 2);
  CHECK(count_entries(store.envs_dir(), ".trash-") == 0);
}

TEST_CASE("a leased environment is never evicted, even when it is the oldest", "[store]") {
  fixtures::TempDir dir;
  EnvironmentStore store(dir.path(), 70 * 1024);  // holds one environment
  store.open();
  auto build = [](const std::string& site) {
    write_file(site + "/data.bin", 60 * 1024);
    return std::vector<std::string>{};
  };
  auto pinned = store.get_or_build(kKeyA, {}, build);  // keeps its lease
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  { auto b = store.get_or_build(kKeyB, {}, build); }
  auto evicted = store.evict();
  CHECK(evicted == std::vector<std::string>{kKeyB});
  CHECK(fs::exists(pinned.site_dir + "/data.bin"));
  pinned.lease.reset();
  // Once unpinned it may go: over the bound with two, the older one leaves.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  { auto c = store.get_or_build(kKeyC, {}, build); }
  CHECK(store.evict() == std::vector<std::string>{kKeyA});
}

TEST_CASE("an unwritable cache directory is an actionable error", "[store]") {
  // A file where a directory must be: fails for root too, unlike a permission bit.
  fixtures::TempDir dir;
  write_file(dir.path() + "/file", 1);
  EnvironmentStore store(dir.path() + "/file/cache", 1ull << 30);
  CHECK_THROWS_WITH(store.open(), Catch::Contains("--cache-dir"));
}

TEST_CASE("the last cache-warming outcome is kept with its age, per interpreter", "[store]") {
  fixtures::TempDir dir;
  EnvironmentStore store(dir.path() + "/cache", 1ull << 30);
  store.open();
  const std::string py311 = "/usr/bin/python3.11", py312 = "/opt/python3.12/bin/python3.12";
  CHECK_FALSE(store.last_warm(py311).has_value());
  store.record_warm(py311, "failed: no index reachable");
  auto last = store.last_warm(py311);
  REQUIRE(last.has_value());
  CHECK(last->status == "failed: no index reachable");
  CHECK(last->age_seconds >= 0);
  CHECK(last->age_seconds < 60);
  // Another interpreter has its own record: warming one says nothing of the other.
  CHECK_FALSE(store.last_warm(py312).has_value());
  store.record_warm(py312, "done: 17 package(s) cached");
  CHECK(store.last_warm(py311)->status == "failed: no index reachable");
  // An older record reads as older: the age comes from the file's modification time.
  std::string path;
  for (const auto& entry : fs::directory_iterator(dir.path() + "/cache")) {
    const auto name = entry.path().filename().string();
    std::ifstream in(entry.path());
    std::string line;
    if (name.rfind("warm-cache-", 0) == 0 && std::getline(in, line) && line == "failed: no index reachable") {
      path = entry.path().string();
    }
  }
  REQUIRE_FALSE(path.empty());
  fs::last_write_time(path, fs::last_write_time(path) - std::chrono::hours(2));
  last = store.last_warm(py311);
  REQUIRE(last.has_value());
  CHECK(last->age_seconds >= 2 * 3600 - 60);
  CHECK(store.last_warm(py312)->age_seconds < 60);
  store.record_warm(py311, "done: 3 package(s) cached");
  CHECK(store.last_warm(py311)->status == "done: 3 package(s) cached");
}
