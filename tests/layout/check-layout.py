#!/usr/bin/env python3
"""check-layout.py - the folder rules of docs/ARCHITECTURE.md, checked on the tree.

1. Folders are layered: a file may include a header of its own folder or of a
   folder listed BELOW it in LAYERS, never one above nor a sibling runtime
   (launchers/<a>/ never includes launchers/<b>/). So no two folders depend on
   each other, and the order below is the build's dependency order.
2. No C source or header of the product or its tests is over 900 lines, and
   no function of the product over 150 (counted as file lines are: from the
   line of its name to its closing brace, kernel style puts both braces of a
   function body alone at the start of a line).
3. docs/ARCHITECTURE.md names every product .c file by its path, and every
   path it names in backticks exists (its file tables match the tree).
4. The link keeps the layers too (with --program, which make check-layout
   passes for every installed program and the plugin): a program links no
   product folder that its sources do not reach through their includes. A
   header is reached through an include; the .c files of its folder that
   include it are its implementation, and their includes are followed in
   turn. What a program links is read from its symbols (nm): every symbol it
   defines is matched to the product object that defines it. So a function in
   runtime/ that reaches the runtime table (defined in launchers/) makes every
   program that calls it link every runtime, and this check names it.
   One edge goes up on purpose: runtime/runtime.h declares the runtime table,
   dlrt_runtimes[], which launchers/runtimes.c defines and fills with every
   runtime's `struct dlrt_runtime`; so that header leads to those files too
   (RUNTIME_TABLE_HEADER).
5. Every program but the plugin (--plugin) carries nothing of LINK_CLASS
   (the runtimes, the GPU planner, the runtime interface, dlrt-infer) unless
   the Makefile says which of those folders it needs and why
   (--may-link OUTPUT=FOLDER ...: WHY, from dlrt_may_link); such a line that
   no longer matches what the program links is reported too, so the list
   stays the list of real exceptions.
6. The files call one way (drawn from the built objects, as rule 4 is: an
   object that needs a symbol another product object defines depends on that
   file; nm, not the sources, because the link is exact where reading C for
   calls is not: macros, a declaration written in place of an include, a
   function reached through a table all show up there as what they are). No
   arrow goes up the layers or between two runtimes' folders (the include rule
   does not see a call whose declaration was written in place), except the
   runtime table's (RUNTIME_TABLE_SYMBOL, as in rule 4); and no files call one
   another in a circle (a strongly connected component of more than one file),
   except the circles designed so, DESIGNED_CIRCLES, each with its reason: a
   file of any other circle cannot be read, tested or changed alone. A
   designed circle that is one no longer is reported too, so the list stays
   true.

Run from the repository root (make check-layout); prints one line per
violation and exits 1 if there is any.
"""
import argparse
import os
import re
import subprocess
import sys

# Bottom first. Each folder's one-line purpose is in docs/ARCHITECTURE.md.
LAYERS = [
    "common",           # the core: errors, buffers, clock, crypto, env, hostlists, layout, processes
    "gpubind",          # the GPU/NIC plan from hwloc
    "services",         # event loop, TCP server, authentication, relay, service start
    "logs",             # task log lines, the log relay, the retry record
    "jobpolicy",        # pure job policy: warning, requeue, hang report, command checks
    "preflight",        # --dl-preflight's spec, node checks, probes, result line, verdict
    "runtime",          # the runtime interface, role model, options and site keys
    "pmix-bridge",      # PMIx key/value exchange and dlrt-kv
    "exchange",         # the task's side of the step's address exchange
    "launchers/*",      # one folder per runtime (peers: none includes another)
    "inference/models", # dlrt-infer's built-in models
    "inference/proto",  # dlrt-infer's wire: frames, messages, the pre-authentication gate
    "inference/pool",   # how a pool's elements meet: access and array records, claims, auth
    "inference/state",  # the durable state: state changes, journal, hot standby, timeline files
    "inference",        # dlrt-infer's runtime entry, failure rules, fair shares
    "inference/worker", # a worker: tasks, models, inputs, heartbeats
    "inference/coord",  # the coordinator
    "inference/cli",    # the dlrt-infer command line
    "launchers",        # the list of runtimes (launchers/runtimes.c)
    "spank",            # the SPANK plugin
    "tools",            # commands that belong to no runtime
]
PRODUCT = tuple(l.rstrip("*") for l in LAYERS)
# What a program other than the plugin must not carry unless the Makefile says
# why (rule 5): the helper programs run next to every task, so they stay small
# and do not change when a runtime, the GPU planner or dlrt-infer does. A folder
# names its sub-folders too.
LINK_CLASS = ("launchers", "gpubind", "runtime", "inference")
MAX_LINES = 900
MAX_FUNCTION_LINES = 150
FUNC_NAME = re.compile(r"(\w+)\s*\(")
# The header that declares the runtime table, and what defines the table and
# its rows (rule 4).
RUNTIME_TABLE_HEADER = "runtime/runtime.h"
RUNTIME_TABLE = "launchers/runtimes.c"
RUNTIME_ROW = re.compile(r"^const struct dlrt_runtime dlrt_runtime_\w+ =", re.M)
# Rule 6: the runtime table is the one arrow up the layers (runtime/ reads the
# table launchers/runtimes.c fills, rule 4); a reference to it is no arrow.
RUNTIME_TABLE_SYMBOL = "dlrt_runtimes"
# Rule 6: the circles of files that are circles on purpose, and why.
DESIGNED_CIRCLES = {
    frozenset(f"inference/coord/coord_{n}.c"
              for n in ("dispatch", "jobs", "replication", "results", "timeline")):
        "the coordinator's concerns are peers over the shared state in coord_int.h, not "
        "layers (a result ends a job, a job's end is committed, a timeline flush checks "
        "the fence); coord_run.c above them and coord.c below keep the calls one way "
        "around them (docs/ARCHITECTURE.md, \"The coordinator's calls go one way\")",
    frozenset(f"launchers/caffe2/{n}.c" for n in ("kvcmd", "kvstore", "kvttl", "kvtx")):
        "the Caffe2 store is redis-server's shape: the command table (kvcmd.c) names the "
        "handlers of the expiry commands (kvttl.c) and the transactions (kvtx.c), which "
        "use its argument checks, replies and (EXEC) its dispatcher, and the keyspace "
        "(kvstore.c) tells the transactions when a watched key changes",
}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def layer_of(folder):
    if folder.startswith("launchers/") and folder.count("/") == 1:
        return LAYERS.index("launchers/*")
    return LAYERS.index(folder) if folder in LAYERS else None


def long_functions(text):
    """(name, lines) of every function body longer than MAX_FUNCTION_LINES."""
    lines = text.split("\n")
    found = []
    start = None
    for i, line in enumerate(lines):
        if line == "{" and start is None:
            # The signature: back to the line that starts at column 0 with a name.
            head = i - 1
            while head > 0 and (not lines[head] or lines[head][0] in " \t"):
                head -= 1
            start = head
        elif line.startswith("}") and start is not None:
            n = i - start + 1
            if n > MAX_FUNCTION_LINES:
                m = FUNC_NAME.search(" ".join(lines[start:start + 3]))
                found.append((m.group(1) if m else f"line {start + 1}", n))
            start = None
    return found


def resolve_include(src, inc):
    """The repository path a quoted include of src names, or None (a generated
    or system header)."""
    here = os.path.normpath(os.path.join(os.path.dirname(src), inc))
    if os.path.isfile(here):
        return here
    return inc if os.path.isfile(inc) else None


def include_closure(roots, includes_of, includers_of, defined_elsewhere):
    """Every file reached from roots: their headers, the .c files of a
    header's folder that include it (and defined_elsewhere's files for a
    header that declares what another folder defines), and so on."""
    seen = set()
    todo = list(roots)
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        for h in includes_of.get(f, ()):
            todo.append(h)
            todo.extend(c for c in includers_of.get(h, ())
                        if os.path.dirname(c) == os.path.dirname(h))
            todo.extend(defined_elsewhere.get(h, ()))
    return seen


def product_folder(path):
    """The product folder of a source file, or None (tests, bench)."""
    folder = os.path.dirname(path)
    return folder if layer_of(folder) is not None else None


def defined_symbols(path, global_only):
    """Names of the functions and data an object or program defines."""
    out = subprocess.check_output(["nm", "--defined-only", path], text=True,
                                  stderr=subprocess.DEVNULL)
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] in "aANUVvWw":
            continue
        if global_only and not parts[1].isupper():
            continue
        names.add(parts[2])
    return names


def undefined_symbols(path):
    """Names an object needs from elsewhere."""
    out = subprocess.check_output(["nm", "--undefined-only", path], text=True,
                                  stderr=subprocess.DEVNULL)
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def product_objects(build, sources):
    """{source: its object} for every product .c file built. Objects of
    sources no longer in the tree (a moved file's old object) are left out."""
    objroot = os.path.join(build, "obj")
    objs = {}
    for f in sources:
        obj = os.path.join(objroot, f[:-2] + ".o")
        if f.endswith(".c") and product_folder(f) and os.path.isfile(obj):
            objs[f] = obj
    return objs


def symbol_owners(objects):
    """{global symbol: the product sources whose objects define it}."""
    owner = {}
    for f, obj in objects.items():
        for sym in defined_symbols(obj, True):
            owner.setdefault(sym, set()).add(f)
    return owner


def under(folder, tops):
    """The first of tops that folder is or lies in, or None."""
    return next((t for t in tops if folder == t or folder.startswith(t + "/")), None)


def parse_may_link(specs, bad):
    """{OUTPUT: set of folders} from 'OUTPUT=FOLDER ...: WHY' (rule 5)."""
    may = {}
    for spec in specs:
        out, _, rest = spec.partition("=")
        folders, _, why = rest.partition(":")
        if not why.strip() or not folders.split():
            bad.append(f"--may-link {spec}: give OUTPUT=FOLDER ...: WHY (dlrt_may_link's "
                       "three arguments in the Makefile)")
            continue
        for folder in folders.split():
            if not under(folder, LINK_CLASS):
                bad.append(f"{out}: may link {folder}/ says the Makefile, but only "
                           f"{', '.join(LINK_CLASS)} need that: drop it")
            may.setdefault(out, set()).add(folder)
    return may


def check_links(owner, programs, plugins, may_link, sources, bad):
    """Rules 4 and 5: owner says which product object defines each symbol
    (symbol_owners), programs and plugins are lists of 'OUTPUT=SOURCE SOURCE
    ...', may_link {OUTPUT: folders} (rule 5's exceptions)."""
    includes_of, includers_of = {}, {}
    table = {RUNTIME_TABLE}
    for f in sources:
        text = open(f, encoding="utf-8", errors="replace").read()
        if f.endswith(".c") and RUNTIME_ROW.search(text):
            table.add(f)
        for inc in INCLUDE.findall(text):
            h = resolve_include(f, inc)
            if h:
                includes_of.setdefault(f, set()).add(h)
                if f.endswith(".c"):
                    includers_of.setdefault(h, set()).add(f)
    defined_elsewhere = {RUNTIME_TABLE_HEADER: table}
    for spec in programs + plugins:
        out, _, srcs = spec.partition("=")
        srcs = srcs.split()
        if not os.path.isfile(out):
            bad.append(f"{out}: not built (make check-layout builds the product first)")
            continue
        reached = include_closure(srcs, includes_of, includers_of, defined_elsewhere)
        allowed = {product_folder(f) for f in reached} - {None}
        own = {s for f in srcs for s in owner if f in owner[s]}
        pulled = {}
        for sym in defined_symbols(out, False) - own:
            if len(owner.get(sym, ())) != 1:
                continue  # no product object's, or a name two programs' mains share
            for src in owner[sym]:
                pulled.setdefault(product_folder(src), {}).setdefault(src, []).append(sym)
        classed = spec not in plugins
        may = may_link.get(out, set())
        for folder in sorted(may):
            if classed and not any(under(f, (folder,)) for f in pulled):
                bad.append(f"{out}: links nothing of {folder}/ any more: drop its "
                           "dlrt_may_link line from the Makefile")
        for folder in sorted(pulled):
            what = "; ".join(f"{os.path.basename(src)[:-2]}.o: {', '.join(sorted(syms)[:3])}"
                             f"{' ...' if len(syms) > 3 else ''}"
                             for src, syms in sorted(pulled[folder].items()))
            nsyms = sum(len(v) for v in pulled[folder].values())
            if classed and under(folder, LINK_CLASS) and not under(folder, may):
                bad.append(f"{out}: carries {nsyms} symbols of {folder}/ ({what}); a program "
                           f"other than the plugin links none of {', '.join(LINK_CLASS)} "
                           "unless the Makefile says why (dlrt_may_link)")
            elif folder not in allowed:
                bad.append(f"{out}: links {folder}/ ({nsyms} symbols: {what}) but its sources "
                           f"include nothing that leads there: a function it calls reaches "
                           f"{folder}/ at link time only")


def file_graph(objects, owner):
    """Rule 6's arrows: {file: {file it needs: [symbols]}} (a symbol two
    objects define, like two programs' main, leads nowhere)."""
    arrows = {}
    for f, obj in objects.items():
        for sym in undefined_symbols(obj):
            if sym == RUNTIME_TABLE_SYMBOL or len(owner.get(sym, ())) != 1:
                continue
            (to,) = owner[sym]
            if to != f:
                arrows.setdefault(f, {}).setdefault(to, []).append(sym)
    return arrows


def circles(arrows):
    """The strongly connected components of more than one file: each file
    with every file it reaches that reaches it back."""
    reach = {}
    for f in arrows:
        seen, todo = set(), [f]
        while todo:
            for to in arrows.get(todo.pop(), ()):
                if to not in seen:
                    seen.add(to)
                    todo.append(to)
        reach[f] = seen
    found = set()
    for f in arrows:
        comp = frozenset({f} | {g for g in reach[f] if f in reach.get(g, ())})
        if len(comp) > 1:
            found.add(comp)
    return found


def arrow_text(arrows, a, b):
    syms = sorted(arrows[a][b])
    return f"{a} -> {b} ({', '.join(syms[:2])}{' ...' if len(syms) > 2 else ''})"


def check_graph(objects, owner, bad):
    """Rule 6: no arrow up the layers, no circle but the designed ones."""
    arrows = file_graph(objects, owner)
    for a in sorted(arrows):
        fa = os.path.dirname(a)
        for b in sorted(arrows[a]):
            fb = os.path.dirname(b)
            if fa == fb:
                continue
            la, lb = layer_of(fa), layer_of(fb)
            if lb >= la:  # the same layer, other folder: two runtimes' folders
                bad.append(f"{arrow_text(arrows, a, b)}: an arrow up the layers ({fb}/ is not "
                           f"below {fa}/): move what {a} needs down, or pass it in "
                           "(tests/layout/check-layout.py, LAYERS)")
    found = circles(arrows)
    for comp in sorted(found, key=sorted):
        if comp in DESIGNED_CIRCLES:
            continue
        inner = "; ".join(arrow_text(arrows, a, b) for a in sorted(comp)
                          for b in sorted(arrows[a]) if b in comp)
        bad.append(f"a circle of {len(comp)} files: {inner}: none of them can be read or "
                   "changed alone; move what two of them both need into a lower file, or "
                   "pass it in (or, designed so, name it in DESIGNED_CIRCLES with the reason)")
    for comp in sorted(set(DESIGNED_CIRCLES) - found, key=sorted):
        bad.append(f"{', '.join(sorted(comp))}: a designed circle no longer: drop it from "
                   "DESIGNED_CIRCLES in tests/layout/check-layout.py (or name its files as "
                   "they are now)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--program", action="append", default=[],
                    help="OUTPUT=SOURCES: check what OUTPUT links (rules 4 and 5)")
    ap.add_argument("--plugin", action="append", default=[],
                    help="OUTPUT=SOURCES: the plugin, checked by rule 4 only")
    ap.add_argument("--may-link", action="append", default=[],
                    help="OUTPUT=FOLDER ...: WHY: rule 5's exception for OUTPUT")
    args = ap.parse_args()
    files = subprocess.check_output(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], text=True).split()
    sources = [f for f in files if f.endswith((".c", ".h", ".cc")) and os.path.isfile(f)]
    bad = []
    for f in sources:
        text = open(f, encoding="utf-8", errors="replace").read()
        n = text.count("\n")
        if n > MAX_LINES:
            bad.append(f"{f}: {n} lines, over {MAX_LINES}: split it by concern")
        folder = os.path.dirname(f)
        mine = layer_of(folder)
        if mine is None:
            continue  # tests, bench, examples: above everything
        if f.endswith(".c"):
            for name, lines in long_functions(text):
                bad.append(f"{f}: {name}() is {lines} lines, over {MAX_FUNCTION_LINES}: "
                           "split it into steps that each do one thing")
        for inc in INCLUDE.findall(text):
            target = os.path.dirname(os.path.normpath(os.path.join(folder, inc)))
            if os.path.exists(os.path.join(folder, inc)):
                if target == folder:
                    continue
            else:
                target = os.path.dirname(inc)
            if target == folder or target == "":
                continue
            theirs = layer_of(target)
            if theirs is None:
                bad.append(f"{f}: includes {inc} from {target}/, which is no product folder")
            elif theirs >= mine:
                bad.append(f"{f}: includes {inc}: {target}/ is not below {folder}/ "
                           "(tests/layout/check-layout.py, LAYERS)")

    arch = open("docs/ARCHITECTURE.md", encoding="utf-8").read()
    named = set(re.findall(r"`([\w./-]+\.(?:c|h|mk|sh|py))`", arch))
    for f in sources:
        if f.endswith(".c") and f.startswith(tuple(p + "/" for p in PRODUCT)) and \
                f not in named:
            bad.append(f"docs/ARCHITECTURE.md: {f} is in no file table")
    for p in sorted(named):
        if "/" in p and not os.path.exists(p):
            bad.append(f"docs/ARCHITECTURE.md: names {p}, which is not in the tree")

    # Which product object defines each global symbol (rules 4 and 6).
    objects = product_objects(args.build, sources)
    owner = symbol_owners(objects)
    check_links(owner, args.program, args.plugin, parse_may_link(args.may_link, bad),
                sources, bad)
    check_graph(objects, owner, bad)

    for line in bad:
        print(line)
    print(f"check-layout: {len(sources)} files, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
