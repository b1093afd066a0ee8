#!/bin/bash
# install-deps.sh - install every Debian package dlrt needs to build, test and demo.
#
# Idempotent: packages already present are skipped, so `make check` can call it every time.
# Needs root on Debian 12 (bookworm), 13 (trixie) or unstable (sid): tests/debian13/root.sh runs
# it in the roots of the last two.
# This is the only place that installs anything.
set -euo pipefail

. /etc/os-release
release=${VERSION_CODENAME:-}
# Unstable calls itself by the name of the next release (os-release's codename is testing's;
# /etc/debian_version says "forky/sid"), which changes when that one is released.
case "$(cat /etc/debian_version 2>/dev/null)" in */sid) release=sid ;; esac
case "$release" in
bookworm) CLANG_RT=libclang-rt-14-dev RELEASE_EXTRA=() ;;
# Podman 5's rootless network is pasta (passt); clang 19 is trixie's default.
trixie) CLANG_RT=libclang-rt-19-dev RELEASE_EXTRA=(passt) ;;
# Unstable's default clang moves: libclang-rt-dev follows it.
sid) CLANG_RT=libclang-rt-dev RELEASE_EXTRA=(passt) ;;
*) echo "install-deps.sh: Debian ${VERSION_CODENAME:-?} is not one dlrt is tested on (bookworm, trixie, sid)" >&2; exit 1 ;;
esac

PACKAGES=(
	# build
	build-essential pkg-config clang llvm "$CLANG_RT"
	libslurm-dev libpmix-dev libhwloc-dev libmunge-dev zlib1g-dev libhiredis-dev nettle-dev
	# the local cluster
	slurm-wlm slurmctld slurmd slurm-client munge
	openmpi-bin libopenmpi-dev hwloc iproute2 util-linux procps psmisc
	# tests and their real clients
	perl python3 python3-torch python3-numpy libgloo-dev g++ redis-tools redis-server python3-redis
	lmod man-db dataset-fashion-mnist gnuplot-nox hyperfine parallel curl e2fsprogs gdb
	# containers (t/89): Slurm's OCI runtime, Charliecloud, rootless Podman
	crun charliecloud charliecloud-runtime podman uidmap slirp4netns fuse-overlayfs debootstrap
	# packages: make deb (dpkg-buildpackage, lintian) and make rpm (rpmbuild)
	devscripts debhelper dpkg-dev lintian rpm git
	"${RELEASE_EXTRA[@]}"
)

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps.sh: must run as root (it calls apt-get); re-run with sudo" >&2
	exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#PACKAGES[@]} packages present"
	exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists yet; retry once because mirrors can hiccup.
apt-get -o DPkg::Lock::Timeout=300 update -q || { sleep 5; apt-get -o DPkg::Lock::Timeout=300 update -q; }
apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}" ||
	{ sleep 5; apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"; }
# The Debian packages start daemons through init scripts on some machines; the
# local cluster runs its own, so stop any that were started for us.
for svc in slurmctld slurmd munge redis-server; do
	if command -v service >/dev/null && service "$svc" status >/dev/null 2>&1; then
		service "$svc" stop >/dev/null 2>&1 || true
	fi
done
echo "install-deps: done"
