#!/bin/bash
# The installed modulefiles under real Lmod (Debian lmod), as a user would use them:
# module load dlrt, then the commands' --help and `man dlrt` work; module help/whatis;
# module unload gives back exactly the environment from before. The Tcl file (for
# Environment Modules) goes through Lmod's Tcl reader with the same checks.
. "$(dirname "$0")/../lib.sh"

P=$DLRT_CLUSTER_DIR/prefix
VER=$(sed -n 's/^VERSION *:= *//p' "$HERE/../../Makefile")
LMOD_INIT=/usr/share/lmod/lmod/init/bash
ok "$([ -r "$LMOD_INIT" ]; echo $?)" "Lmod is installed ($LMOD_INIT)"

# One login-like shell per flavour, as the test user, with a minimal environment.
# Lmod's own bookkeeping variables are left out of the before/after comparison.
cat >"$WORK/session.sh" <<'SH'
set -u
. /usr/share/lmod/lmod/init/bash
module use "$1"
snap() { env | grep -Ev '^(_ModuleTable|__LMOD|LMOD_|_LMFILES_|LOADEDMODULES|BASH_FUNC|_=|SHLVL)' | sort; }
snap >"$2.before"
module load dlrt || { echo "LOAD FAILED"; exit 1; }
echo "ROOT=$DLRT_ROOT VERSION=$DLRT_VERSION LIBEXEC=$DLRT_LIBEXECDIR"
echo "WHICH=$(command -v dlrt-kv)"
for c in "$DLRT_ROOT"/bin/*; do
	"$(basename "$c")" --help >/dev/null 2>&1; echo "HELP $(basename "$c") $?"
done
echo "MANFILE=$(man -w dlrt 2>&1)"
man dlrt 2>/dev/null | grep -q -- '--dl-runtime=NAME' && echo "MAN_OK"
module help dlrt 2>&1 | grep -q 'man dlrt' && echo "HELP_OK"
module whatis dlrt 2>&1 | grep -q 'Description: distributed deep-learning' && echo "WHATIS_OK"
module unload dlrt
snap >"$2.after"
command -v dlrt-kv >/dev/null || echo "GONE_OK"
SH
chmod 0644 "$WORK/session.sh"

for flavour in lua tcl; do
	if [ $flavour = lua ]; then mp=$P/etc/modulefiles; else mp=$P/etc/modulefiles-tcl; fi
	out=$(timeout -k 5 60 runuser -u "$DLRT_TEST_USER" -- env -i HOME="$WORK" USER="$DLRT_TEST_USER" \
		PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb LANG=C.UTF-8 \
		bash --noprofile --norc "$WORK/session.sh" "$mp" "$WORK/env-$flavour" 2>&1)
	like "$out" "ROOT=$P VERSION=$VER LIBEXEC=$P/libexec/dlrt" "$flavour: module load dlrt sets DLRT_*"
	like "$out" "WHICH=$P/bin/dlrt-kv" "$flavour: the commands are on PATH"
	is "$(grep -c '^HELP ' <<<"$out")" "$(ls "$P/bin" | wc -l)" "$flavour: every command was tried"
	unlike "$out" "^HELP [^ ]+ [^0]" "$flavour: every command's --help exits 0"
	like "$out" "MANFILE=$P/share/man/man7/dlrt.7" "$flavour: man finds dlrt(7) through MANPATH"
	like "$out" "MAN_OK" "$flavour: man dlrt shows the options"
	like "$out" "HELP_OK" "$flavour: module help"
	like "$out" "WHATIS_OK" "$flavour: module whatis"
	like "$out" "GONE_OK" "$flavour: module unload takes the commands off PATH"
	d=$(diff "$WORK/env-$flavour.before" "$WORK/env-$flavour.after")
	is "$d" "" "$flavour: module unload restores the environment exactly"
done
done_testing
