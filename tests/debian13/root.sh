#!/bin/bash
# root.sh - a Debian root of another release for dlrt's tests, made with debootstrap from the
# same package registry as the host, and commands run in it. Two releases:
#
#   debian13 (the default)  trixie: Slurm 24.11, PMIx 5, Open MPI 5, gcc 14, torch 2.6
#   sid                     Debian unstable: Slurm 26.05, PMIx 7 (rc), Open MPI 6 (rc), gcc 16,
#                           torch 2.14
#
#   root.sh [--release R] CMD, where CMD is:
#   build          make the cached root, or bring its packages up to date (needs network)
#   run CMD...     run CMD (a bash command line) in a fresh copy of the root: the
#                  working tree's clean copy is at /src; own mount, network, PID and
#                  UTS namespaces; nothing is mounted on the host, and when CMD ends
#                  every process it started ends with it (the PID namespace's init dies)
#   shell          an interactive shell there (run bash)
#   clean          remove the cache
#
# Each release has its own cache ($DLRT_D13_CACHE, default /var/cache/dlrt/debian13;
# $DLRT_SID_CACHE, default /var/cache/dlrt/sid) holding root/, made once by debootstrap and then
# tests/cluster/install-deps.sh run inside it (the same list of packages as the host's, with the
# names the release changed); it is redone only when install-deps.sh changes. The registry's
# copy of unstable's index is weeks old: its Release file's Valid-Until has passed, so sid's apt
# is told not to check it (a file in the root's /etc/apt/apt.conf.d).
# `run` never writes to it: the root is mounted read-only under an overlay whose writable layer
# is a scratch folder removed on every exit path, so every run starts from the same root.
set -euo pipefail

die() { echo "root.sh: $*" >&2; exit 1; }
RELEASE=debian13
if [ "${1:-}" = --release ]; then
	RELEASE=${2:-}
	shift 2 || die "usage: root.sh [--release debian13|sid] build|run CMD...|shell|clean"
fi
# Per release: the suite, the cache, the name the root's host has, whether apt checks the
# index's Valid-Until, and the variables' prefix (DLRT_D13_*, DLRT_SID_*).
case "$RELEASE" in
debian13) SUITE=trixie V=D13 NAME=dlrt-d13 CHECK_VALID=true ;;
sid) SUITE=sid V=SID NAME=dlrt-sid CHECK_VALID=false ;;
*) die "unknown release '$RELEASE': debian13 or sid" ;;
esac
var() { local n="DLRT_${V}_$1"; echo "${!n:-$2}"; }
MIRROR=$(var MIRROR http://deb.debian.org/debian)
CACHE=$(var CACHE "/var/cache/dlrt/$RELEASE")
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
DEPS=$TOP/tests/cluster/install-deps.sh
MODELS=$(var MODELS "$TOP/build/models")

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, namespaces, mounts): re-run with sudo"

stamp() { sha256sum "$DEPS" | cut -d' ' -f1; }

# Run a bash command chrooted into $1 with /proc, /sys, /dev and a private /tmp, in a new
# mount and PID namespace (the host's network: apt needs it). Only for `build`.
chroot_cmd() {
	local root=$1
	shift
	unshare --mount --pid --fork --propagation private -- bash -euc '
		r=$1; shift
		mount -t proc proc "$r/proc"
		mount --rbind /sys "$r/sys"
		mount --rbind /dev "$r/dev"
		mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
		cp /etc/resolv.conf "$r/etc/resolv.conf"
		exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 bash -euc "$*"
	' chroot_cmd "$root" "$@"
}

cmd_build() {
	local root=$CACHE/root want
	want=$(stamp)
	if [ -f "$CACHE/stamp" ] && [ "$(cat "$CACHE/stamp")" = "$want" ] && [ -x "$root/usr/sbin/slurmd" ]; then
		echo "root.sh: $root is up to date"
		return 0
	fi
	mkdir -p "$CACHE"
	if [ ! -x "$root/usr/bin/apt-get" ]; then
		command -v debootstrap >/dev/null || die "debootstrap is not installed: run tests/cluster/install-deps.sh"
		rm -rf "$root.new"
		echo "root.sh: debootstrap $SUITE from $MIRROR into $root (a few minutes)"
		debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$root.new" "$MIRROR" \
			>"$CACHE/debootstrap.log" 2>&1 ||
			die "debootstrap failed: see $CACHE/debootstrap.log (the mirror is DLRT_${V}_MIRROR=$MIRROR)"
		mv "$root.new" "$root"
	fi
	if [ "$CHECK_VALID" = false ]; then
		printf 'Acquire::Check-Valid-Until "false";\n' >"$root/etc/apt/apt.conf.d/99dlrt-valid-until"
	fi
	# Packages' scripts start no daemon in the root: the tests start their own.
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 0755 "$root/usr/sbin/policy-rc.d"
	install -m 0755 "$DEPS" "$root/usr/local/sbin/dlrt-install-deps"
	chroot_cmd "$root" /usr/local/sbin/dlrt-install-deps
	apt_clean "$root"
	echo "$want" >"$CACHE/stamp"
	echo "root.sh: $root ready ($(chroot_cmd "$root" 'dpkg-query -W -f "\${Version}" slurmd') Slurm)"
}

apt_clean() { rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*_Packages; }

# The working tree as a clean clone would have it: tracked files and untracked ones git does
# not ignore (no build output, no host's state).
copy_tree() {
	(cd "$TOP" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -xf - -C "$1"
}

cmd_run() {
	[ $# -gt 0 ] || die "usage: root.sh run CMD..."
	[ -f "$CACHE/stamp" ] || die "no root at $CACHE/root yet: run 'root.sh --release $RELEASE build' first"
	[ "$(cat "$CACHE/stamp")" = "$(stamp)" ] ||
		echo "root.sh: warning: $CACHE/root predates the current install-deps.sh: run 'root.sh --release $RELEASE build'" >&2
	# Global: the EXIT trap runs after this function has returned.
	SCRATCH=$(mktemp -d "$(var SCRATCH /var/tmp)/$NAME.XXXXXX")
	local scratch=$SCRATCH
	# Every exit path (CMD's status, a signal, a failure here) removes the scratch folder; the
	# mounts live only in the namespace, which ends with its last process.
	trap 'rm -rf --one-file-system "$SCRATCH"' EXIT
	mkdir -p "$scratch"/{upper,work,merged,upper/src}
	copy_tree "$scratch/upper/src"
	# A repository of its own, as a clone has: make dist (deb, rpm) packs what git knows.
	git -C "$scratch/upper/src" init -q &&
		git -C "$scratch/upper/src" add -A &&
		git -C "$scratch/upper/src" -c user.name=dlrt -c user.email=dlrt@localhost \
			commit -qm "the working tree" || die "cannot make the copy a git repository"
	# The built-in models take minutes to train (make models): the host's, trained from
	# the same sources, are taken when present (with their times, so make keeps them).
	if [ -f "$MODELS/lenet5.dlrtw" ] && [ -f "$MODELS/deepcnn.dlrtw" ]; then
		mkdir -p "$scratch/upper/src/build"
		cp -a "$MODELS" "$scratch/upper/src/build/models"
	fi
	# --kill-child: if unshare goes, the namespace's first process (and with it every
	# process in the namespace) goes too. In the background, so that a signal to this
	# script is handled at once: it ends the namespace, then the EXIT trap cleans up.
	unshare --mount --net --pid --uts --ipc --fork --kill-child --propagation private -- bash -euc '
		s=$1 lower=$2 name=$3 cid=$4; shift 4
		r=$s/merged
		mount -t overlay -o "lowerdir=$lower,upperdir=$s/upper,workdir=$s/work" "$name" "$r"
		mount -t proc proc "$r/proc"
		mount -t sysfs sysfs "$r/sys"
		mount --rbind /sys/fs/cgroup "$r/sys/fs/cgroup" 2>/dev/null || true
		mount --rbind /dev "$r/dev"
		mount -t tmpfs -o mode=1777,size=512m tmpfs "$r/dev/shm"
		mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
		# The clusters live in /var/tmp: a folder of the host filesystem, not the
		# overlay, since rootless Podman cannot lay its overlay on a lower folder
		# that is itself on overlayfs ("userxattr: invalid argument").
		mkdir -p "$s/vartmp"
		chmod 1777 "$s/vartmp"
		mount --bind "$s/vartmp" "$r/var/tmp"
		mount -t tmpfs -o mode=0755 tmpfs "$r/run"
		mkdir -p "$r/run/lock" "$r/run/netns"
		ln -sfn /run "$r/var/run" 2>/dev/null || true
		hostname "$name"
		printf "127.0.0.1 localhost\n127.0.1.1 %s\n" "$name" >"$r/etc/hosts"
		ip link set lo up 2>/dev/null || true
		# pivot_root, not chroot: the kernel refuses a user namespace to a
		# chrooted process (EPERM), and rootless crun and ch-run need one.
		mkdir -p "$r/.dlrt-oldroot"
		cd "$r"
		pivot_root . .dlrt-oldroot
		umount -l /.dlrt-oldroot
		exec /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" DLRT_CLUSTER_ID="$cid" \
			bash -c "cd /src && $*"
	' root_run "$scratch" "$CACHE/root" "$NAME" "$(var CLUSTER_ID 1)" "$@" <&0 &
	NS_PID=$!
	trap 'kill -KILL "$NS_PID" 2>/dev/null; wait "$NS_PID"; exit 130' INT TERM HUP
	wait "$NS_PID"
}

case "${1:-}" in
build) cmd_build ;;
run) shift; cmd_run "$*" ;;
shell) TERM=${TERM:-dumb} cmd_run "exec bash -i" ;;
clean) rm -rf --one-file-system "$CACHE" ;;
*) echo "usage: $0 [--release debian13|sid] build|run CMD...|shell|clean" >&2; exit 2 ;;
esac
