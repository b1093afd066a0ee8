#!/bin/bash
# Users meet dlrt through --help and man: srun/sbatch/salloc --help list every dlrt
# option on ONE line each; dlrt(7) documents exactly the options the plugin registers;
# every installed command has a man page that renders cleanly and a --help that exits 0.
. "$(dirname "$0")/../lib.sh"

P=$DLRT_CLUSTER_DIR/prefix
man7=$(MANWIDTH=200 man -l "$P/share/man/man7/dlrt.7" 2>/dev/null)
# The sections' indent: 7 columns up to groff 1.23, 5 in 1.24 (Debian unstable).
IN=$(sed -n '/^NAME/{n;p;q}' <<<"$man7" | sed -E 's/^( *).*/\1/' | wc -L)
[ "$IN" -gt 0 ] || IN=7
# Options documented in dlrt(7): the OPTIONS section's tags ("--dl-foo=ARG" or "--dl-foo").
doc_opts=$(sed -n '/^OPTIONS/,/^RUNTIMES/p' <<<"$man7" | grep -oE "^ {$IN}--dl-[a-z-]+" | tr -d ' ' | sort -u)
ok "$([ -n "$doc_opts" ]; echo $?)" "dlrt(7) has an OPTIONS section ($(echo $doc_opts))"

for client in srun sbatch salloc; do
	help=$(as_user "$client" --help 2>&1)
	opts=$(grep -oE '^ +--dl-[a-z-]+' <<<"$help" | tr -d ' ' | sort -u)
	is "$(echo $opts)" "$(echo $doc_opts)" "$client --help lists exactly the options of dlrt(7)"
	# A usage that wraps continues on a line that starts with blanks and no option.
	wrapped=$(grep -A1 -E '^ +--dl-' <<<"$help" | grep -vE '^ +--dl-|^--$' | grep -E '^ {20,}[^ -]')
	is "$wrapped" "" "$client --help: every dlrt usage fits on its own line"
	unlike "$(grep -E '^ +--dl-' <<<"$help" | grep -v '\[dlrt\] [a-zA-Z]')" "." \
		"$client --help: every dlrt usage starts with [dlrt] and a word"
done

# Commands only: libexec/dlrt also holds python/, the torch tasks' sitecustomize.
cmds=$(find "$P/bin" "$P/libexec/dlrt" -maxdepth 1 -type f -perm -u+x -printf '%f\n' | sort)
for c in $cmds; do
	page=$(ls "$P"/share/man/man[18]/"$c".[18] 2>/dev/null | head -1)
	ok "$([ -n "$page" ]; echo $?)" "$c has a man page (${page#$P/})"
	[ -n "$page" ] || continue
	warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
	is "$warn" "" "man $c renders without warnings"
	like "$(MANWIDTH=80 man -l "$page" 2>/dev/null | sed -n '/^NAME/{n;p}')" "^ +$c +- " "its NAME line"
	bin=$P/bin/$c; [ -x "$bin" ] || bin=$P/libexec/dlrt/$c
	h=$("$bin" --help 2>&1); rc=$?
	is "$rc" 0 "$c --help exits 0"
	like "$h" "^[Uu]sage: $c" "$c --help starts with its usage"
done
warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$P/share/man/man7/dlrt.7" 2>&1 >/dev/null)
is "$warn" "" "man dlrt renders without warnings"
for sec in NAME SYNOPSIS DESCRIPTION OPTIONS RUNTIMES ENVIRONMENT EXAMPLES; do
	like "$man7" "^$sec" "dlrt(7) has $sec"
done
# Every runtime the plugin offers has an entry in RUNTIMES.
rts=$(as_user srun --dl-runtime=bogus true 2>&1 | sed -n 's/.*valid runtimes: //p' | tr -d ',')
ok "$([ -n "$rts" ]; echo $?)" "the runtimes the plugin offers: $rts"
for rt in $rts; do
	like "$(sed -n '/^RUNTIMES/,/^ENVIRONMENT/p' <<<"$man7")" "^ {$IN}$rt( |$)" "dlrt(7) describes runtime $rt"
done
done_testing
