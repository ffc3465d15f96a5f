#!/usr/bin/env bash
# Builds the default image of --sandbox-backend docker offline, from Debian's packages: a Debian
# 12 root filesystem made by mmdebstrap (the Debian archive is the only thing it reaches; no
# container registry) with CPython, its shared libpython (the zygote embeds it) and the libraries
# the zygote links, imported with `docker import`. Where a registry is reachable,
# profiles/Dockerfile builds an equivalent image from a slim Python base.
#
#   scripts/build-image.sh [--docker-path PATH] [--tag NAME]   (default tag: the server's default image)
#
# Idempotent: does nothing when the tag exists already (unless --force).
set -euo pipefail
cd "$(dirname "$0")/.."

docker=docker
tag=mcp-python-exec-sandbox:bookworm
force=0
while (($#)); do
  case "$1" in
    --docker-path) docker=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --force) force=1; shift ;;
    *) echo "build-image: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done

if ((!force)) && "$docker" image inspect "$tag" >/dev/null 2>&1; then
  echo "build-image: $tag exists (use --force to rebuild)" >&2
  exit 0
fi
command -v mmdebstrap >/dev/null || { echo "build-image: mmdebstrap is missing (apt install mmdebstrap)" >&2; exit 1; }

# python3 and libpython3.11: the interpreter and the shared library the zygote loads;
# libseccomp2, libstdc++6: what the zygote links (glibc comes with every Debian root);
# ca-certificates: TLS for scripts with network access; pip, the installer of dependency
# environments when uv is not there (they are installed in a container of the image); numpy, pandas and matplotlib, which the
# native backend's runs find in Debian's python3 and agents use most (figures come back as
# images). No shell tools beyond Debian's essential set.
packages=python3,libpython3.11,libseccomp2,libstdc++6,ca-certificates,python3-pip,python3-numpy,python3-pandas,python3-matplotlib
work=$(mktemp -d /tmp/mpes-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "build-image: mmdebstrap bookworm ($packages)" >&2
mmdebstrap --quiet --variant=essential --include="$packages" --aptopt='APT::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log' \
  --customize-hook='mkdir -p "$1"/run/mpes' \
  --format=tar bookworm "$work/rootfs.tar"
echo "build-image: docker import as $tag" >&2
"$docker" import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8' \
  --change 'LABEL org.opencontainers.image.title=mcp-python-exec-sandbox-runtime' \
  --change 'CMD ["/usr/bin/python3"]' \
  "$work/rootfs.tar" "$tag" >/dev/null
"$docker" image inspect --format '{{.Id}} {{.Size}}' "$tag"
