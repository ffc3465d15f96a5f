#include "tests/support/wheel_fixtures.h"

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "sandbox/process.h"

namespace fixtures {

namespace {

constexpr const char* kPython = "/usr/bin/python3";

// argv[1] = JSON {"dir", "name", "version", "files", "requires", "requires_python", "top_level"}.
constexpr const char* kWriteWheel = R"PY(
import base64, hashlib, json, os, sys, zipfile
s = json.loads(sys.argv[1])
dist = "%s-%s.dist-info" % (s["name"], s["version"])
meta = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (s["name"], s["version"])
if s["requires_python"]:
    meta += "Requires-Python: %s\n" % s["requires_python"]
meta += "".join("Requires-Dist: %s\n" % r for r in s["requires"])
entries = dict(s["files"])
entries[dist + "/METADATA"] = meta
entries[dist + "/WHEEL"] = "Wheel-Version: 1.0\nGenerator: mpes-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
if s["top_level"]:
    entries[dist + "/top_level.txt"] = s["top_level"]
record = []
for path, text in entries.items():
    data = text.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
record.append(dist + "/RECORD,,")
entries[dist + "/RECORD"] = "\n".join(record) + "\n"
out = os.path.join(s["dir"], "%s-%s-py3-none-any.whl" % (s["name"], s["version"]))
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for path, text in entries.items():
        z.writestr(path, text)
)PY";

// argv[1] = JSON {"dir", "name", "version", "backend"}.
constexpr const char* kWriteSdist = R"PY(
import io, json, os, sys, tarfile
s = json.loads(sys.argv[1])
base = "%s-%s" % (s["name"], s["version"])
files = {
    "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "mpes_backend"\nbackend-path = ["."]\n',
    "PKG-INFO": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (s["name"], s["version"]),
    "mpes_backend.py": s["backend"],
}
with tarfile.open(os.path.join(s["dir"], base + ".tar.gz"), "w:gz") as t:
    for name, text in files.items():
        data = text.encode()
        info = tarfile.TarInfo(base + "/" + name)
        info.size = len(data)
        info.mode = 0o644
        t.addfile(info, io.BytesIO(data))
)PY";

constexpr const char* kProbe = R"PY(
import json, site, sys, sysconfig
paths = []
for p in site.getsitepackages() + [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]:
    if p not in paths:
        paths.append(p)
libdir = sysconfig.get_config_var("LIBDIR") or ""
ldlib = sysconfig.get_config_var("LDLIBRARY") or ""
shared = bool(sysconfig.get_config_var("Py_ENABLE_SHARED"))
print(json.dumps({"version": "%d.%d.%d" % sys.version_info[:3],
                  "major_minor": "%d.%d" % sys.version_info[:2],
                  "executable": sys.executable, "prefix": sys.prefix,
                  "base_prefix": sys.base_prefix,
                  "libpython": (libdir + "/" + ldlib) if shared else "",
                  "site_packages": paths, "sys_path": [p for p in sys.path if p]}))
)PY";

std::string run(const std::vector<std::string>& argv) {
  sandbox::ProcessSpec spec;
  spec.argv = argv;
  spec.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"};
  spec.timeout_ms = 60000;
  auto r = sandbox::run_process(spec);
  if (!r.ok()) {
    throw std::runtime_error(argv[0] + " failed (exit " + std::to_string(r.exit_code) + "): " + r.err);
  }
  return r.out;
}

}  // namespace

TempDir::TempDir() {
  std::string tmpl = "/tmp/mpes-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
  // Readable by the unprivileged uid the installer runs as when the tests run as root.
  std::filesystem::permissions(path_, std::filesystem::perms(0755));
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_wheel(const std::string& dir, const WheelSpec& spec) {
  nlohmann::json j = {{"dir", dir},
                      {"name", spec.name},
                      {"version", spec.version},
                      {"files", spec.files},
                      {"requires", spec.requires_dist},
                      {"requires_python", spec.requires_python},
                      {"top_level", spec.top_level}};
  run({kPython, "-I", "-c", kWriteWheel, j.dump()});
}

void write_sdist(const std::string& dir, const std::string& name, const std::string& version,
                 const std::string& backend_code) {
  nlohmann::json j = {{"dir", dir}, {"name", name}, {"version", version}, {"backend", backend_code}};
  run({kPython, "-I", "-c", kWriteSdist, j.dump()});
}

void write_standard_packages(const std::string& dir) {
  write_wheel(dir, {"mpes_leaf", "1.0", {{"mpes_leaf/__init__.py", "VERSION = '1.0'\n"}}, {}, "", ""});
  write_wheel(dir, {"mpes_leaf", "2.0", {{"mpes_leaf/__init__.py", "VERSION = '2.0'\n"}}, {}, "", ""});
  write_wheel(dir, {"mpes_chain",
                    "1.0",
                    {{"mpes_chain/__init__.py", "import mpes_leaf\nLEAF = mpes_leaf.VERSION\n"}},
                    {"mpes-leaf>=1.0"},
                    "",
                    ""});
  write_wheel(dir, {"mpes_modern", "1.0", {{"mpes_modern/__init__.py", ""}}, {"mpes-leaf>=2.0"}, "", ""});
  write_wheel(dir, {"mpes_slow", "1.0",
                    {{"mpes_slow/__init__.py", "import time\ntime.sleep(0.3)\nREADY = True\n"}},
                    {}, "", "mpes_slow\n"});
  write_wheel(dir, {"mpes_future", "1.0", {{"mpes_future/__init__.py", ""}}, {}, ">=3.99", ""});
  write_sdist(dir, "mpes_hang", "1.0", "import time\ntime.sleep(120)\n");
}

engine::Interpreter probe_interpreter(const std::string& python) {
  auto j = nlohmann::json::parse(run({python, "-I", "-c", kProbe}));
  engine::Interpreter i;
  i.version = j.at("version");
  i.major_minor = j.at("major_minor");
  i.executable = std::filesystem::canonical(j.at("executable").get<std::string>()).string();
  i.prefix = j.at("prefix");
  i.base_prefix = j.at("base_prefix");
  i.libpython = j.at("libpython");
  for (const auto& p : j.at("site_packages")) {
    if (std::filesystem::exists(p.get<std::string>())) i.site_packages.push_back(p);
  }
  i.sys_path = j.at("sys_path").get<std::vector<std::string>>();
  i.source = "test";
  return i;
}

std::string run_python(const std::string& python, const std::vector<std::string>& paths,
                       const std::string& code) {
  std::string prelude = "import sys\nsys.path[0:0] = " + nlohmann::json(paths).dump() + "\n";
  return run({python, "-I", "-c", prelude + code});
}

}  // namespace fixtures
