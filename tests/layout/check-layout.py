#!/usr/bin/env python3
"""check-layout.py - the folder rules of docs/ARCHITECTURE.md, checked on the tree.

1. Folders are layered: a file may include a header of its own folder or of a
   folder listed BELOW it in LAYERS, never one above nor a sibling runtime
   (launchers/<a>/ never includes launchers/<b>/). So no two folders depend on
   each other, and the order below is the build's dependency order.
2. No C source or header of the product or its tests is over 900 lines.
3. docs/ARCHITECTURE.md names every product .c file by its path, and every
   path it names in backticks exists (its file tables match the tree).

Run from the repository root (make check-layout); prints one line per
violation and exits 1 if there is any.
"""
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
    "runtime",          # the runtime interface, role model, options and site keys
    "pmix-bridge",      # PMIx key/value exchange and dlrt-kv
    "exchange",         # the task's side of the step's address exchange
    "launchers/*",      # one folder per runtime (peers: none includes another)
    "inference/models", # dlrt-infer's built-in models
    "inference",        # dlrt-infer
    "launchers",        # the list of runtimes (launchers/runtimes.c)
    "spank",            # the SPANK plugin
    "tools",            # commands that belong to no runtime
]
PRODUCT = tuple(l.rstrip("*") for l in LAYERS)
MAX_LINES = 900
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def layer_of(folder):
    if folder.startswith("launchers/") and folder.count("/") == 1:
        return LAYERS.index("launchers/*")
    return LAYERS.index(folder) if folder in LAYERS else None


def main():
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

    for line in bad:
        print(line)
    print(f"check-layout: {len(sources)} files, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
