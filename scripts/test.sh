#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds with warnings as errors, runs the Catch2
# unit tests (plain and under ASan+UBSan), every fuzz target for a short fixed time (replaying its
# regressions), the e2e tests with real MCP clients (the TypeScript SDK and inspector on stdio and
# Streamable HTTP, the official conformance suite for both protocol eras, three replicas behind
# HAProxy) and the Python MCP SDK client tests, as the invoking user and, when that is root, again
# as a freshly created unprivileged user, and on the docker backend; builds the wheel and the .deb and tests their installed
# commands, runs the soak's short form, and the benchmark harness in --quick smoke mode. Ends with
# one "N passed, N failed" line over the suites.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
passed=0; failed=0; failures=()
suite() {  # suite NAME COMMAND...
  local name=$1; shift
  echo "=== $name" >&2
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); fi
}

scripts/install-deps.sh || { echo "install-deps failed" >&2; exit 1; }
BUILD_DIR=build scripts/build.sh -DMPES_WERROR=ON || { echo "build failed" >&2; exit 1; }
BUILD_DIR=build-asan BUILD_TYPE=Debug scripts/build.sh -DMPES_WERROR=ON -DMPES_SANITIZE=ON \
  || { echo "sanitizer build failed" >&2; exit 1; }

suite "unit" build/unit_tests
suite "unit (ASan+UBSan)" env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 build-asan/unit_tests

# libFuzzer (clang, ASan+UBSan): each target from its seed corpus, its regressions replayed.
suite "fuzz (each target 15 s)" scripts/fuzz.sh all 15

export MPES_SERVER="$root/build/mcp-python-exec-sandbox"
suite "e2e ($(id -un))" bash -c 'cd e2e_tests && node --test --test-concurrency=1 --test-reporter=spec .'
suite "python sdk ($(id -un))" .tools/venv/bin/python e2e_tests/python/test_python_sdk.py

if [ "$(id -u)" -eq 0 ]; then
  # The same e2e suite as an unprivileged user: the sandbox must hold without root too.
  user=mpes-test
  id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
  stage=$(mktemp -d /tmp/mpes-unpriv.XXXXXX)
  mkdir -p "$stage/build"
  cp build/mcp-python-exec-sandbox build/mcp-python-exec-sandbox-zygote build/mcp-python-exec-sandbox-build-python build/mcp-python-exec-sandbox-network "$stage/build/"
  cp -r e2e_tests "$stage/e2e_tests"
  # The Python tools' packages (built for Debian's python3), readable by that user.
  cp -r .tools/venv/lib/python3*/site-packages "$stage/pylib"
  # The pinned uv (a static binary), where the e2e tests look for the checkout's tools.
  mkdir -p "$stage/.tools/venv/bin"
  cp .tools/venv/bin/uv "$stage/.tools/venv/bin/"
  chown -R "$user:$user" "$stage"; chmod 755 "$stage"
  # A small filesystem the user owns, for the full --cache-dir fault (only root can mount it).
  # Under the home directory: a run's sandbox replaces /tmp with its own.
  small_fs=$(runuser -u "$user" -- mktemp -d "/home/$user/.mpes-fault-fs.XXXXXX")
  small_fs_env=()
  if mount -t tmpfs -o "size=4m,mode=0755,uid=$(id -u "$user"),gid=$(id -g "$user")" tmpfs "$small_fs"; then
    small_fs_env=(MPES_FAULT_SMALL_FS="$small_fs")
  fi
  suite "e2e ($user)" runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="/home/$user" \
    MPES_SERVER="$stage/build/mcp-python-exec-sandbox" "${small_fs_env[@]}" \
    bash -c "cd '$stage/e2e_tests' && node --test --test-concurrency=1 --test-reporter=spec ."
  suite "python sdk ($user)" runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="/home/$user" \
    MPES_SERVER="$stage/build/mcp-python-exec-sandbox" PYTHONPATH="$stage/pylib" \
    /usr/bin/python3 "$stage/e2e_tests/python/test_python_sdk.py"
  # Unprivileged with a user-mode network: where /dev/net/tun is open to the user (udev's default
  # mode 0666; many container hosts keep it root's), pasta runs without root. The suites that test
  # networks run again with the device opened so, then its mode is put back.
  if [ -c /dev/net/tun ] && command -v pasta >/dev/null; then
    tun_mode=$(stat -c %a /dev/net/tun)
    chmod 0666 /dev/net/tun
    cp build/unit_tests "$stage/build/" && chown "$user:$user" "$stage/build/unit_tests"
    suite "unit network, /dev/net/tun open ($user)" runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin \
      HOME="/home/$user" bash -c "cd '$stage' && build/unit_tests '[user_network],[run_network],[network_agent]'"
    suite "e2e network, /dev/net/tun open ($user)" runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin \
      HOME="/home/$user" MPES_SERVER="$stage/build/mcp-python-exec-sandbox" \
      bash -c "cd '$stage/e2e_tests' && node --test --test-concurrency=1 --test-reporter=spec escape.test.mjs hostile_dependencies.test.mjs"
    chmod "$tun_mode" /dev/net/tun
  fi
  if ((${#small_fs_env[@]})); then umount "$small_fs"; fi
  rmdir "$small_fs"
  rm -rf "$stage"
fi

# The docker backend (as root): the daemon is started when none answers (and stopped again at
# the end), the image built offline from Debian's packages, then the e2e suites that matter for
# it run with --sandbox-backend docker: its own scenarios, execute (output, deadlines), rich
# results, dependencies, sessions (snapshots, files, limits) and the escape suite.
docker_started=
if [ "$(id -u)" -eq 0 ]; then
  docker_ready() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
  if ! docker_ready && command -v dockerd >/dev/null; then
    docker_log=$(mktemp /tmp/mpes-dockerd.XXXXXX.log)
    dockerd >"$docker_log" 2>&1 &
    docker_started=$!
    for _ in $(seq 60); do docker_ready && break; sleep 1; done
  fi
  suite "docker: the image (scripts/build-image.sh)" scripts/build-image.sh
  suite "e2e (docker backend)" env MPES_SANDBOX_BACKEND=docker bash -c 'cd e2e_tests && node --test \
    --test-concurrency=1 --test-reporter=spec docker.test.mjs execute.test.mjs rich.test.mjs \
    dependencies.test.mjs sessions.test.mjs escape.test.mjs'
fi

# The packages users install, built from this checkout (the .deb from build/, the wheel in
# build-wheel/), installed the ways users do and driven through each installed command.
suite "packages: build the wheel and the .deb" scripts/package.sh -DMPES_WERROR=ON
suite "packages: install them, drive each command" scripts/test-packages.sh
# Soak, short form (3,000 mixed runs; the long form is bench/soak/run.sh --long).
suite "soak (3,000 runs)" bench/soak/run.sh --server "$MPES_SERVER"

if [ -x bench/run.sh ]; then
  suite "bench --quick" bench/run.sh --quick
fi

if [ -n "$docker_started" ]; then
  kill "$docker_started"
  wait "$docker_started" 2>/dev/null
  # The daemon's log says why when a docker suite failed; otherwise it is not kept.
  if [[ " ${failures[*]} " == *docker* ]]; then
    echo "--- the end of dockerd's log ($docker_log) ---" >&2
    tail -n 40 "$docker_log" >&2
  else
    rm -f "$docker_log"
  fi
fi

((failed)) && echo "failed suites: ${failures[*]}" >&2
echo "suites: $passed passed, $failed failed"
((failed == 0))
