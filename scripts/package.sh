#!/usr/bin/env bash
# Builds the packages into dist/:
#   wheel  the Python wheel (scikit-build-core builds the CMake project into build-wheel/,
#          auditwheel checks it against the manylinux policy and tags it)
#   deb    the Debian package (CPack, from the build tree $BUILD_DIR, default build/)
# `scripts/package.sh [wheel] [deb] [-DVAR=VALUE...]`: both when neither is named; -D arguments go
# to CMake's configure step of both builds (as scripts/build.sh's do).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build_dir=${BUILD_DIR:-build}
# Wheel platform tag claimed: auditwheel refuses the wheel if the binaries need a newer glibc or
# libstdc++ than this policy allows (README, "Install": which distributions that covers).
plat=${MPES_WHEEL_PLAT:-manylinux_2_34_x86_64}

want_wheel=0; want_deb=0; cmake_args=()
for arg in "$@"; do
  case $arg in
    wheel) want_wheel=1 ;;
    deb) want_deb=1 ;;
    -D*) cmake_args+=("$arg") ;;
    *) echo "package.sh: unknown argument '$arg' (expected wheel, deb or -DVAR=VALUE)" >&2; exit 2 ;;
  esac
done
((want_wheel || want_deb)) || { want_wheel=1; want_deb=1; }

scripts/install-deps.sh >&2
tools=$root/.tools/venv/bin
# Paths relative to the checkout in ccache's keys: another clone of the same sources hits too.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
mkdir -p dist

if ((want_deb)); then
  BUILD_DIR=$build_dir scripts/build.sh "${cmake_args[@]}" >&2
  rm -rf "$build_dir/cpack" dist/*.deb
  (cd "$build_dir" && cpack -G DEB -B cpack >&2)
  mv "$build_dir"/cpack/*.deb dist/
  echo "package.sh: $(ls dist/*.deb)" >&2
fi

if ((want_wheel)); then
  rm -rf build-wheel/unrepaired dist/*.whl
  # Its own build (header-only logging, static libseccomp and libcrypto: see
  # cmake/Dependencies.cmake) in build-wheel/, kept between runs; with ccache when there is one.
  wheel_cmake_args=("${cmake_args[@]}")
  if command -v ccache >/dev/null && [[ " ${cmake_args[*]} " != *COMPILER_LAUNCHER* ]]; then
    wheel_cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  # scikit-build-core reads CMake arguments from CMAKE_ARGS.
  CMAKE_ARGS="${wheel_cmake_args[*]}" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    "$tools/python" -m pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps \
    --wheel-dir build-wheel/unrepaired . >&2
  # --patcher none: nothing may need grafting in (the binaries need only the policy's libraries),
  # so auditwheel only checks the symbol versions and tags the wheel.
  "$tools/auditwheel" repair --patcher none --plat "$plat" --only-plat --wheel-dir dist \
    build-wheel/unrepaired/*.whl >&2
  echo "package.sh: $(ls dist/*.whl)" >&2
fi
