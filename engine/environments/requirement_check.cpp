#include "engine/environments/requirement_check.h"

#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/environments/installer.h"
#include "sandbox/process.h"

namespace engine {

namespace {

// Runs inside the interpreter being checked (python -I -c, argv[1] = JSON request). Reads only
// metadata files; imports nothing of the distributions themselves. Works on 3.9+.
constexpr std::string_view kProbe = R"PY(
import importlib, json, os, re, sys
from importlib import metadata as md
req = json.loads(sys.argv[1])
sys.path[0:0] = req.get("paths", [])
def norm(n):
    return re.sub(r"[-_.]+", "-", n).lower()
try:
    import importlib.util
    has_pip = importlib.util.find_spec("pip") is not None
except Exception:
    has_pip = False
Req = Spec = None
for base in ("packaging", "pip._vendor.packaging"):
    try:
        Req = importlib.import_module(base + ".requirements").Requirement
        Spec = importlib.import_module(base + ".specifiers").SpecifierSet
        break
    except Exception:
        Req = Spec = None
dists = {}
for d in md.distributions(path=sys.path):
    try:
        name = d.metadata["Name"]
    except Exception:
        name = None
    if name:
        dists.setdefault(norm(name), d)  # first on sys.path wins, as for imports
def check(name, extras, spec, seen):
    key = (norm(name), tuple(sorted(extras)))
    if key in seen:
        return None
    seen.add(key)
    d = dists.get(norm(name))
    if d is None:
        return name + " is not installed"
    v = d.version
    if Spec is None:
        if spec or extras:
            return name + " " + v + ": cannot check '" + spec + "' without packaging"
        return None
    if spec:
        try:
            if not Spec(spec).contains(v, prereleases=True):
                return name + " " + v + " does not satisfy " + spec
        except Exception as e:
            return name + ": " + str(e)
    for r in d.requires or []:
        try:
            dep = Req(r)
        except Exception:
            continue
        if dep.marker is not None:
            if not any(dep.marker.evaluate({"extra": e}) for e in (list(extras) or [""])):
                continue
        why = check(dep.name, sorted(dep.extras), str(dep.specifier), seen)
        if why:
            return name + " " + v + " needs " + r.split(";")[0].strip() + ": " + why
    return None
SKIP = {"test", "tests", "testing", "docs", "doc", "examples", "benchmarks"}
def imports(d):
    names = []
    try:
        top = d.read_text("top_level.txt")
    except Exception:
        top = None
    if top:
        names = [line.strip().replace("/", ".").split(".")[0] for line in top.splitlines()]
    else:
        for f in d.files or []:
            parts = f.parts
            if len(parts) == 1 and (parts[0].endswith(".py") or ".cpython-" in parts[0] or parts[0].endswith(".abi3.so")):
                names.append(parts[0].split(".")[0])
            elif len(parts) == 2 and parts[1] == "__init__.py":
                names.append(parts[0])
    if not names:
        # Metadata alone (e.g. Debian's single-file .egg-info): the module named after the
        # distribution, when it sits beside the metadata.
        try:
            base = str(d.locate_file(""))
            for n in {d.metadata["Name"], re.sub(r"[-.]+", "_", d.metadata["Name"]).lower()}:
                if os.path.isfile(os.path.join(base, n, "__init__.py")) or os.path.isfile(os.path.join(base, n + ".py")):
                    names.append(n)
        except Exception:
            pass
    out = []
    for n in names:
        if n and n.isidentifier() and not n.startswith("_") and n not in SKIP and n not in out:
            out.append(n)
    return out
results = []
for r in req["requirements"]:
    d = dists.get(norm(r["name"]))
    if r.get("url"):
        why = "a direct URL requirement is always installed"
    else:
        why = check(r["name"], r.get("extras", []), r.get("specifier", ""), set())
    results.append({"satisfied": why is None, "version": d.version if d else "",
                    "reason": why or "", "imports": imports(d) if (d is not None and why is None) else []})
print(json.dumps({"has_pip": has_pip, "exact": Spec is not None, "results": results}))
)PY";

}  // namespace

RequirementCheck check_requirements(const Interpreter& interpreter,
                                    const std::vector<Requirement>& requirements,
                                    const std::vector<std::string>& extra_paths,
                                    const ContainerWrap& container) {
  nlohmann::json request;
  request["paths"] = extra_paths;
  request["requirements"] = nlohmann::json::array();
  for (const auto& r : requirements) {
    request["requirements"].push_back(
        {{"name", r.name}, {"extras", r.extras}, {"specifier", r.specifier}, {"url", r.url}});
  }
  sandbox::ProcessSpec spec;
  spec.argv = {interpreter.executable, "-I", "-c", std::string(kProbe), request.dump()};
  spec.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"};
  spec.timeout_ms = 60000;
  if (container) {
    std::vector<ContainerMount> mounts;
    for (const auto& path : extra_paths) mounts.push_back({path, false});
    spec.argv = container(spec.argv, spec.env, mounts, false, 65534, 65534);
    spec.env = sandbox::inherited_environment();
  }
  sandbox::ProcessResult p = sandbox::run_process(spec);
  if (!p.ok()) {
    throw std::runtime_error("could not check which requirements " + interpreter.executable +
                             " already has (exit " + std::to_string(p.exit_code) + "): " +
                             deps::decisive_lines(p.err));
  }
  nlohmann::json reply;
  try {
    reply = nlohmann::json::parse(p.out);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error("the requirement probe of " + interpreter.executable +
                             " printed no valid answer: " + deps::decisive_lines(p.out + p.err));
  }
  RequirementCheck check;
  check.interpreter_has_pip = reply.value("has_pip", false);
  check.exact = reply.value("exact", false);
  const auto& results = reply.at("results");
  if (!results.is_array() || results.size() != requirements.size()) {
    throw std::runtime_error("the requirement probe of " + interpreter.executable +
                             " answered for the wrong number of requirements");
  }
  for (std::size_t i = 0; i < requirements.size(); ++i) {
    const auto& r = results[i];
    RequirementStatus status;
    status.requirement = requirements[i];
    status.satisfied = r.value("satisfied", false);
    status.installed_version = r.value("version", "");
    status.reason = r.value("reason", "");
    status.import_names = r.value("imports", std::vector<std::string>{});
    check.statuses.push_back(std::move(status));
  }
  return check;
}

}  // namespace engine
