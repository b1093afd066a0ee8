#!/bin/bash
# make install into a fresh prefix, as docs/ADMIN.md tells an admin: the tree, the
# plugstack file (optional, every key documented), the modulefiles; then the cluster is
# pointed at the new prefix (plugstack.conf.d symlink), a site setting takes effect and a
# job runs with the new plugin; make uninstall leaves nothing behind.
. "$(dirname "$0")/../lib.sh"

SRC=$(cd "$HERE/../.." && pwd)
VER=$(sed -n 's/^VERSION *:= *//p' "$SRC/Makefile")
P=$WORK/opt/dlrt/$VER

# 1. DESTDIR staging (a package build): nothing outside DESTDIR, paths inside name PREFIX.
make -s -C "$SRC" install DESTDIR="$WORK/stage" PREFIX=/opt/dlrt/"$VER" >"$WORK/make.log" 2>&1
ok $? "make install DESTDIR=... PREFIX=/opt/dlrt/$VER"
S=$WORK/stage/opt/dlrt/$VER
for f in lib/dlrt/dlrt.so etc/plugstack.conf.d/dlrt.conf etc/modulefiles/dlrt/$VER.lua \
	etc/modulefiles-tcl/dlrt/$VER share/man/man7/dlrt.7 bin/dlrt-kv libexec/dlrt/dlrt-oci-run \
	share/man/man8/dlrt-oci-run.8; do
	ok "$([ -s "$S/$f" ]; echo $?)" "staged $f"
done
conf=$(cat "$S/etc/plugstack.conf.d/dlrt.conf")
is "$(grep -v '^#' <<<"$conf" | grep -v '^$')" "optional /opt/dlrt/$VER/lib/dlrt/dlrt.so" \
	"the one plugstack line is optional and names the final path, not DESTDIR"
# The key list in the plugin's "unknown key" message is built from the
# runtime table at run time (so `strings` cannot read it, and the linker may
# share a key's bytes with a longer string); tests/unit/test_conf_doc.c
# checks that dlrt.conf.in lists exactly the table's keys. Here: the
# installed file has them all.
keys=$(sed -n 's/^#   \([a-z_]*\)=.*/\1/p' "$SRC/etc/plugstack.conf.d/dlrt.conf.in" | sort -u)
ok "$([ "$(wc -w <<<"$keys")" -ge 5 ]; echo $?)" "dlrt.conf.in documents the plugstack keys ($(echo $keys))"
for k in $keys; do
	like "$conf" "^#   $k=" "plugstack key $k is documented in the installed dlrt.conf"
done
like "$(cat "$S/etc/modulefiles/dlrt/$VER.lua")" "local root = \"/opt/dlrt/$VER\"" "Lmod file names PREFIX"
is "$(find "$WORK/stage" -perm /o+w ! -type l | wc -l)" 0 "nothing world-writable"

# 2. A real install into a fresh prefix, and the cluster pointed at it.
make -s -C "$SRC" install PREFIX="$P" >>"$WORK/make.log" 2>&1
ok $? "make install PREFIX=$P"
D=$DLRT_CLUSTER_DIR/etc/plugstack.conf.d
cp -a "$D/dlrt.conf" "$WORK/saved.conf"
trap 'rm -f "$D/dlrt.conf"; cp -a "$WORK/saved.conf" "$D/dlrt.conf"' EXIT
# Site default, as ADMIN.md shows: offer only torch and horovod.
sed -i "s|^optional $P/lib/dlrt/dlrt.so\$|& runtimes=torch,horovod|" "$P/etc/plugstack.conf.d/dlrt.conf"
ln -sfn "$P/etc/plugstack.conf.d/dlrt.conf" "$D/dlrt.conf"
run_srun -N2 -n2 --dl-runtime=mxnet true
is "$RC" 1 "the new prefix's site setting applies: mxnet refused"
like "$(cat "$ERR")" "not enabled at this site; valid runtimes: horovod, torch" "with one line"
# The task's slurmstepd mapped the new plugin (root reads the daemon's maps).
# Root's step: dlrt runs no service as root, so torch keeps its own store.
timeout -k 5 60 srun -N2 -n2 --export=ALL,MASTER_PORT=29500 --dl-runtime=torch bash -c \
	'echo "$RANK $(grep -c " '"$P"'/lib/dlrt/dlrt.so$" /proc/$PPID/maps)"' >"$OUT" 2>"$ERR"
is "$(sort "$OUT" | awk '{print $1, ($2 > 0)}' | tr '\n' ' ')" "0 1 1 1 " \
	"a torch step ran with the plugin of the new prefix on both nodes"
rm -f "$D/dlrt.conf"; cp -a "$WORK/saved.conf" "$D/dlrt.conf"
trap - EXIT
run_srun -N2 -n3 --dl-runtime=mxnet --dl-servers=1 --dl-dry-run true
is "$RC" 0 "back on the cluster's own install, mxnet runs again"

# 3. Removal.
make -s -C "$SRC" uninstall PREFIX="$P" >>"$WORK/make.log" 2>&1
ok $? "make uninstall"
is "$(find "$P" -type f 2>/dev/null | wc -l)" 0 "no file left under the prefix"
done_testing
