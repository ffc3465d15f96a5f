#!/usr/bin/env bash
# Installs the packages of dist/ (scripts/package.sh builds them) the ways users do, and drives each
# installed command with the real MCP SDK client (e2e_tests/installed_command.mjs: --version,
# hello with no Python left between client and server, a dependency from the package index,
# check_environment):
#   the wheel in a fresh virtual environment (pip install), the wheel through `uvx --from`, and,
#   as root, the .deb with dpkg -i (removed again afterwards unless it was installed before), with
#   its man page and its systemd unit (systemd-analyze verify);
#   as root, the venv's and the .deb's commands again as the unprivileged user mpes-test (hello).
# Ends with one "N passed, N failed" line; exits non-zero when a check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
tools=$root/.tools/venv/bin
version=$(sed -nE 's/^project\([^)]*VERSION ([0-9][0-9.]*).*/\1/p' CMakeLists.txt)
wheels=(dist/*.whl); debs=(dist/*.deb)
[ -f "${wheels[0]}" ] || { echo "test-packages: no wheel in dist/ (run scripts/package.sh)" >&2; exit 1; }
[ -x "$tools/uvx" ] || { echo "test-packages: no $tools/uvx (run scripts/install-deps.sh)" >&2; exit 1; }
wheel=$root/${wheels[0]}

passed=0; failed=0; failures=()
check() {  # check NAME COMMAND...
  local name=$1; shift
  echo "=== package: $name" >&2
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); fi
}
# installed_test [VAR=VALUE...] -- COMMAND_JSON: the SDK client against one installed command.
installed_test() {
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  (cd e2e_tests && env "${env[@]}" MPES_COMMAND="$1" MPES_EXPECT_VERSION="$version" \
    node --test --test-concurrency=1 --test-reporter=spec installed_command.mjs)
}

work=$(mktemp -d /tmp/mpes-packages.XXXXXX)
chmod 755 "$work"
deb_installed_here=0; deb_ok=0
cleanup() {
  if ((deb_installed_here)); then dpkg -r mcp-python-exec-sandbox >/dev/null 2>&1; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The wheel in a fresh virtual environment. It has no dependencies: nothing comes from an index.
/usr/bin/python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps "$wheel"
check "wheel, pip install into a venv" installed_test -- "[\"$work/venv/bin/mcp-python-exec-sandbox\"]"

# The wheel through uvx, with a uv cache of its own (so that no earlier build of the same version
# is reused).
check "wheel, uvx --from" installed_test UV_CACHE_DIR="$work/uv-cache" -- \
  "[\"$tools/uvx\", \"--from\", \"$wheel\", \"mcp-python-exec-sandbox\"]"

if [ -f "${debs[0]}" ]; then
  # The man page in the package is generated from --help: it documents every flag.
  check ".deb, man page" bash -c "dpkg-deb --fsys-tarfile '${debs[0]}' \
    | tar -xO ./usr/share/man/man1/mcp-python-exec-sandbox.1.gz | zcat | grep -qF -- 'sandbox\\-backend'"
fi
if [ "$(id -u)" -eq 0 ] && [ -f "${debs[0]}" ]; then
  if dpkg-query -W -f='${Status}' mcp-python-exec-sandbox 2>/dev/null | grep -q 'install ok installed'; then
    echo "test-packages: mcp-python-exec-sandbox was installed before; it is replaced and left installed" >&2
  else
    deb_installed_here=1
  fi
  if dpkg -i "${debs[0]}" >&2; then
    deb_ok=1
    check ".deb, dpkg -i" installed_test -- '["/usr/bin/mcp-python-exec-sandbox"]'
    # The unit parses, its command exists and its man page is installed (it is not started: the
    # machine may have no systemd running).
    if command -v systemd-analyze >/dev/null; then
      check ".deb, systemd unit" systemd-analyze verify /usr/lib/systemd/system/mcp-python-exec-sandbox.service
    fi
  else
    failed=$((failed + 1)); failures+=(".deb, dpkg -i")
  fi
elif [ "$(id -u)" -ne 0 ]; then
  echo "test-packages: not root: the .deb is not installed" >&2
fi

if [ "$(id -u)" -eq 0 ]; then
  # The installed commands as an unprivileged user: the sandbox holds without root too.
  user=mpes-test
  id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
  cp -r e2e_tests "$work/e2e_tests"
  chown -R "$user:$user" "$work/e2e_tests"
  as_user() {  # as_user COMMAND_JSON
    runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="/home/$user" \
      MPES_COMMAND="$1" MPES_EXPECT_VERSION="$version" MPES_HELLO_ONLY=1 \
      bash -c "cd '$work/e2e_tests' && node --test --test-concurrency=1 --test-reporter=spec installed_command.mjs"
  }
  check "wheel venv, as $user" as_user "[\"$work/venv/bin/mcp-python-exec-sandbox\"]"
  if ((deb_ok)); then
    check ".deb, as $user" as_user '["/usr/bin/mcp-python-exec-sandbox"]'
  fi
fi

((failed)) && echo "failed package checks: ${failures[*]}" >&2
echo "package checks: $passed passed, $failed failed"
((failed == 0))
