# shellcheck shell=bash
# images.sh - container images for the container tests (t/89-containers.t),
# built on this machine from what is installed, with no registry; sourced
# after lib.sh. Built once per cluster under $DLRT_CLUSTER_DIR/images and
# reused (a lock keeps two tests from building at once).
#
# The image is a small root directory: the top-level folders, Debian's
# merged-/usr links, and the few /etc files a Debian program reads at start
# (the loader's cache, the alternatives links: libblas.so.3 of python3-torch
# is one, passwd/group/nsswitch.conf). /usr is bound from the host at run
# time, which stands for an image with the same packages (python3-torch,
# libgloo, redis-tools): nothing of dlrt is in it. The test programs come
# from the shared filesystem (/var/tmp here), as a user's own code would.
#
#   IMAGE            the directory image (ch-run IMAGE, and the OCI rootfs)
#   oci_bundle USER  prints the OCI bundle for USER (config.json: USER's own
#                    uid and gid mapped to themselves in a user namespace;
#                    the node's network, no network namespace; with a second
#                    argument "netns", one with a network namespace of its own)
#   user_image USER  prints a copy of the image that USER owns (for Podman)
#   CH_RUN           ch-run with the binds the image needs

IMAGES=$DLRT_CLUSTER_DIR/images
IMAGE=$IMAGES/rootfs
# Bumped when image_build changes: an image built by an older one is rebuilt.
IMAGE_STAMP="dlrt test image 4"
# shellcheck disable=SC2034 # used by the tests that source this
CH_RUN=(ch-run -b /usr:/usr -b /var/tmp:/var/tmp)

image_build() {
	local tmp=$IMAGES/rootfs.new d l f
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# var/run/slurm: Slurm 24.11 binds the task's spool folder there in every container
	# (oci.conf's MountSpoolDir, default /var/run/slurm/), and a read-only root with no
	# such folder makes crun fail the task; 22.05 binds nothing there.
	for d in usr etc dev proc sys tmp var/tmp run var/run/slurm home mnt root; do mkdir -p "$tmp/$d"; done
	for l in bin sbin lib lib32 lib64 libx32; do
		[ -L "/$l" ] && ln -s "usr/$l" "$tmp/$l"
	done
	cp -a /etc/alternatives "$tmp/etc/"
	for f in ld.so.cache ld.so.conf passwd group nsswitch.conf; do
		[ -e "/etc/$f" ] && cp -a "/etc/$f" "$tmp/etc/"
	done
	[ -d /etc/ld.so.conf.d ] && cp -a /etc/ld.so.conf.d "$tmp/etc/"
	# Bind-mount targets (ch-run binds the host's over these; crun's config too).
	for f in hosts resolv.conf machine-id; do : >"$tmp/etc/$f"; done
	ln -s ../proc/self/mounts "$tmp/etc/mtab" # as Debian's; Podman adds it otherwise
	echo "$IMAGE_STAMP" >"$tmp/.dlrt-test-image"
	chmod -R a+rX "$tmp"
	rm -rf "$IMAGE" "$IMAGES"/rootfs-* "$IMAGES"/oci-*
	mv "$tmp" "$IMAGE"
}

oci_config() { # oci_config UID GID [NETNS]: a bundle's config.json on stdout
	local net=""
	[ -n "${3:-}" ] && net=', { "type": "network" }'
	cat <<JSON
{
  "ociVersion": "1.0.2",
  "process": {
    "terminal": false,
    "user": { "uid": $1, "gid": $2 },
    "args": [ "/bin/true" ],
    "env": [ "PATH=/usr/local/bin:/usr/bin:/bin" ],
    "cwd": "/",
    "noNewPrivileges": true
  },
  "root": { "path": "rootfs", "readonly": true },
  "mounts": [
    { "destination": "/proc", "type": "proc", "source": "proc" },
    { "destination": "/dev", "type": "bind", "source": "/dev", "options": [ "rbind", "nosuid" ] },
    { "destination": "/sys", "type": "bind", "source": "/sys", "options": [ "rbind", "nosuid", "noexec", "nodev", "ro" ] },
    { "destination": "/usr", "type": "bind", "source": "/usr", "options": [ "rbind", "ro" ] },
    { "destination": "/etc/hosts", "type": "bind", "source": "/etc/hosts", "options": [ "bind", "ro" ] },
    { "destination": "/etc/resolv.conf", "type": "bind", "source": "/etc/resolv.conf", "options": [ "bind", "ro" ] },
    { "destination": "/tmp", "type": "bind", "source": "/tmp", "options": [ "rbind" ] },
    { "destination": "/var/tmp", "type": "bind", "source": "/var/tmp", "options": [ "rbind" ] }
  ],
  "linux": {
    "uidMappings": [ { "containerID": $1, "hostID": $1, "size": 1 } ],
    "gidMappings": [ { "containerID": $2, "hostID": $2, "size": 1 } ],
    "namespaces": [ { "type": "user" }, { "type": "mount" }, { "type": "pid" }, { "type": "ipc" }$net ]
  }
}
JSON
}

oci_bundle() { # oci_bundle USER [netns]: prints the bundle's folder
	local b=$IMAGES/oci-$1${2:+-$2}
	if [ ! -s "$b/config.json" ]; then
		mkdir -p "$b"
		ln -sfn "$IMAGE" "$b/rootfs"
		oci_config "$(id -u "$1")" "$(id -g "$1")" "${2:-}" >"$b/config.json.new" &&
			mv "$b/config.json.new" "$b/config.json"
		chmod -R a+rX "$b"
	fi
	echo "$b"
}

user_image() { # user_image USER: prints a copy of the image owned by USER
	# (rootless Podman writes /run/.containerenv into its overlay of the
	# image, which fails on a lower layer owned by root)
	local d=$IMAGES/rootfs-$1
	if ! cmp -s "$d/.dlrt-test-image" "$IMAGE/.dlrt-test-image"; then
		rm -rf "$d.new" "$d" && cp -a "$IMAGE" "$d.new" && chown -R "$1": "$d.new" && mv "$d.new" "$d"
	fi
	echo "$d"
}

mkdir -p "$IMAGES"
chmod 0755 "$IMAGES"
(
	flock -w 120 9 || exit 1
	[ "$(cat "$IMAGE/.dlrt-test-image" 2>/dev/null)" = "$IMAGE_STAMP" ] || image_build
) 9>"$IMAGES/.lock"
