#!/bin/bash
# The packages, as an HPC centre installs them: `make deb` builds dlrt, dlrt-tools and
# dlrt-infer with dpkg-buildpackage (lintian: no error), `make rpm` builds the same
# split with rpmbuild and the two file lists agree. The .debs are then extracted with
# dpkg-deb -x into a folder (the host's real /usr stays untouched), the cluster's
# plugstack is pointed at the packaged plugin, and a step of every runtime runs with
# the packaged plugin and its packaged services (the plugin's compiled-in
# /usr/libexec/dlrt does not exist here, so it takes the same place relative to
# itself: the one lookup rule, common/instpath.h). The packaged commands and man pages
# work from the extracted tree. Last, the module layout moved as a whole: make install
# DESTDIR=..., used from there.
. "$(dirname "$0")/../lib.sh"

SRC=$(cd "$HERE/../.." && pwd)
VER=$(sed -n 's/^VERSION *:= *//p' "$SRC/Makefile")
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
B=$WORK/pkgbuild

# The weights the package trains at build time (deterministic), taken from the
# cluster's install when it has them so the test does not spend 90 s of CPU on them.
# (make dist keeps the sources' times, so weights newer than them and than their
# training options are up to date for make.)
mkdir -p "$B/models"
if [ -s "$DLRT_CLUSTER_DIR/prefix/share/dlrt/models/lenet5.dlrtw" ]; then
	make -s -C "$SRC" DLRT_MODEL_DIR="$B/models" "$B/models/lenet5.opts" "$B/models/deepcnn.opts"
	cp "$DLRT_CLUSTER_DIR"/prefix/share/dlrt/models/*.dlrtw "$B/models/"
	touch "$B"/models/*.dlrtw
fi

# 1. make deb: three packages, lintian without errors (make deb runs it), with the
# package's own test step (dh_auto_test: make unit in BUILD=build-deb, as root), as a
# packager runs it.
DLRT_MODEL_DIR="$B/models" \
	timeout -k 5 900 make -s -C "$SRC" deb BUILD="$B" >"$WORK/deb.log" 2>&1
ok $? "make deb (dpkg-buildpackage -us -uc with its unit tests, lintian --fail-on error)"
[ $_failed -eq 0 ] || fail_detail "$(tail -15 "$WORK/deb.log" | tr '\n' '|')"
for p in dlrt dlrt-tools dlrt-infer; do
	ok "$([ -s "$B/packages/${p}_${VER}_$(dpkg --print-architecture).deb" ]; echo $?)" "package $p built"
done
like "$(grep -E '^[EW]: ' "$WORK/deb.log" | grep -c '^E: ')" '^0$' "lintian reported no error"
deps=$(dpkg-deb -f "$B/packages/dlrt_${VER}_$(dpkg --print-architecture).deb" Depends)
like "$deps" "libpmix2" "dlrt depends on PMIx ($deps)"
like "$deps" "libhwloc15" "dlrt depends on hwloc"
like "$deps" "slurm-client \\(>= 22.05\\)" "dlrt depends on Slurm's client"
like "$deps" "munge" "dlrt depends on munge"

# 2. make rpm: the same split, the same files (the plugin folder and man page
# compression are the distributions' own).
DLRT_MODEL_DIR="$B/models" timeout -k 5 900 make -s -C "$SRC" rpm BUILD="$B" >"$WORK/rpm.log" 2>&1
ok $? "make rpm (rpmbuild -bb dlrt.spec)"
[ $_failed -eq 0 ] || fail_detail "$(tail -15 "$WORK/rpm.log" | tr '\n' '|')"
norm() { sed -e "s|^/usr/lib/$MA/slurm-wlm/|PLUGINDIR/|" -e 's|^/usr/lib64/slurm/|PLUGINDIR/|' \
	-e 's|\.gz$||' | grep -v '^/usr/share/doc/' | sort; }
for p in dlrt dlrt-tools dlrt-infer; do
	deb=$(dpkg-deb -c "$B/packages/${p}_${VER}_"*.deb | awk '$1 !~ /^d/ { print substr($6, 2) }' | norm)
	rpm=$(rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$B"/packages/rpmbuild/RPMS/*/"$p-$VER"-*.rpm \
		2>/dev/null | awk '$1 ~ /^-/ { print $2 }' | grep -v '^/usr/lib/\.build-id' | norm)
	ok "$([ -n "$deb" ] && [ "$deb" = "$rpm" ]; echo $?)" "$p: the RPM holds the files of the .deb ($(wc -l <<<"$deb") files)"
	[ "$deb" = "$rpm" ] || fail_detail "$(diff <(echo "$deb") <(echo "$rpm") | tr '\n' ' ')"
done

# 3. The Debian layout, extracted into a root-owned folder.
R=$WORK/root
for d in "$B"/packages/*.deb; do dpkg-deb -x "$d" "$R"; done
chmod 0755 "$R"
SO=$R/usr/lib/$MA/slurm-wlm/dlrt.so
for f in "usr/lib/$MA/slurm-wlm/dlrt.so" usr/libexec/dlrt/dlrt-hvd-driver usr/libexec/dlrt/dlrt-store \
	usr/libexec/dlrt/dlrt-relay usr/libexec/dlrt/dlrt-oci-run usr/bin/dlrt-kv usr/bin/dlrt-topo usr/bin/dlrt-logs usr/bin/dlrt-infer \
	usr/share/dlrt/models/lenet5.dlrtw etc/slurm/plugstack.conf.d/dlrt.conf; do
	ok "$([ -s "$R/$f" ]; echo $?)" "packaged /$f"
done
is "$(grep -v '^#' "$R/etc/slurm/plugstack.conf.d/dlrt.conf" | grep -v '^$')" \
	"optional /usr/lib/$MA/slurm-wlm/dlrt.so" "the packaged plugstack line names Debian's Slurm plugin folder"
is "$(find "$R" -perm /o+w ! -type l | wc -l)" 0 "nothing world-writable"
ok "$(strings "$SO" | grep -qx /usr/libexec/dlrt; echo $?)" "the plugin has /usr/libexec/dlrt compiled in"

D=$DLRT_CLUSTER_DIR/etc/plugstack.conf.d
cp -a "$D/dlrt.conf" "$WORK/saved.conf"
trap 'cp -a "$WORK/saved.conf" "$D/dlrt.conf"' EXIT
sed "s|/usr/lib/|$R/usr/lib/|" "$R/etc/slurm/plugstack.conf.d/dlrt.conf" >"$D/dlrt.conf"

# Every runtime, with the packaged plugin mapped by the task's slurmstepd (root
# reads the daemon's maps, so this step runs as root: with MASTER_PORT exported
# dlrt hosts no store for it, as it never runs a service as root).
MASTER_PORT=29517 timeout -k 5 60 srun -N2 -n2 --dl-runtime=torch bash -c \
	'echo "$RANK $MASTER_ADDR $(grep -c " '"$SO"'$" /proc/$PPID/maps)"' >"$OUT" 2>"$ERR"
is "$?" 0 "torch step with the packaged plugin"
is "$(awk '{print $1, ($3 > 0)}' "$OUT" | sort | tr '\n' ' ')" "0 1 1 1 " "both tasks' slurmstepd mapped $SO"

run_srun -N3 -n4 --dl-runtime=mxnet --dl-servers=1 "$TESTS_BIN/pslite_contract" --timeout-s 20 --rounds 3
is "$RC" 0 "mxnet step (ps-lite contract job) with the packaged plugin"
is "$(grep -c '3 rounds ok, sum=3$' "$OUT")" 2 "mxnet: both workers pulled correct sums"
[ "$RC" -eq 0 ] || fail_detail "$(head -5 "$ERR" | tr '\n' '|')"

# driver_from DIR: the step's rendezvous driver is DIR/dlrt-hvd-driver: a real gloo
# job runs; then, with that file made group-writable, the plugin refuses it by name.
driver_from() {
	local drv=$1/dlrt-hvd-driver what=$2
	run_srun -N2 -n4 --dl-runtime=horovod "$TESTS_BIN/gloo_hvd_allreduce"
	is "$RC" 0 "$what: horovod step (a real gloo job)"
	[ "$RC" -eq 0 ] || fail_detail "$(head -5 "$ERR" | tr '\n' '|')"
	chmod g+w "$drv"
	run_srun -N2 -n4 --dl-runtime=horovod true
	chmod g-w "$drv"
	like "$(srun_errors)" "$drv is not an executable file writable only by its owner" \
		"$what: the driver is $drv (a group-writable one is refused by name)"
}
driver_from "$R/usr/libexec/dlrt" "packaged plugin"

run_srun -N3 -n3 --dl-runtime=caffe2 "$TESTS_BIN/gloo_redis_allreduce"
is "$RC" 0 "caffe2 step (gloo on the packaged dlrt-store) with the packaged plugin"
is "$(grep -c 'summed correctly through the redis store' "$OUT")" 3 "caffe2: 3 ranks summed"
[ "$RC" -eq 0 ] || fail_detail "$(head -5 "$ERR" | tr '\n' '|')"

# The packaged commands and man pages, from the extracted tree.
for c in dlrt-kv dlrt-topo dlrt-logs dlrt-infer dlrt-train; do
	as_user "$R/usr/bin/$c" --help >/dev/null 2>&1
	ok $? "packaged $c --help"
done
out=$(as_user env MANPATH="$R/usr/share/man" man -P cat dlrt 2>/dev/null)
like "$out" "--dl-runtime" "man dlrt (packaged, gzip'd) shows the options"
out=$(as_user env MANPATH="$R/usr/share/man" man -w dlrt-store 2>&1)
is "$out" "$R/usr/share/man/man8/dlrt-store.8.gz" "man finds the packaged dlrt-store(8)"

# 4. The module layout moved as a whole: built for /opt/dlrt/VER, staged elsewhere.
# Its compiled-in folders do not exist, so the plugin uses the relative place.
make -s -C "$SRC" install DESTDIR="$WORK/stage" PREFIX=/opt/dlrt/"$VER" >"$WORK/make.log" 2>&1
ok $? "make install DESTDIR=... PREFIX=/opt/dlrt/$VER"
M=$WORK/stage/opt/dlrt/$VER
echo "optional $M/lib/dlrt/dlrt.so" >"$D/dlrt.conf"
driver_from "$M/libexec/dlrt" "moved module tree"

cp -a "$WORK/saved.conf" "$D/dlrt.conf"
trap - EXIT
done_testing
