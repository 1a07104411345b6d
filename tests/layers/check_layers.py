#!/usr/bin/env python3
"""check_layers - fail on an include or a symbol reference against the arrows.

The arrows (DESIGN.md, README "How it works"):

    user/cli -> {ui-tui, user/serve} -> user/session -> user/profile -> {dwarf, bpf}
    user/synth -> user/profile;  every layer may use user/util, which uses nothing.

A layer may use the layers below it, transitively. Two checks:
  * includes: every `#include "x/y.h"` in a layer's .c/.h names a header of the
    same layer or of a layer it may use (build/*.skel.h count as bpf, and only
    user/session may load BPF, so only it may include skeletons);
  * symbols: every undefined symbol of a layer's objects (nm) that another
    layer defines is defined in a layer it may use.
Exit status 0 when clean, 1 with one line per violation.
"""
import argparse
import os
import re
import subprocess
import sys

LAYER_DIRS = {
    "cli": "user/cli",
    "tui": "ui-tui",
    "serve": "user/serve",
    "session": "user/session",
    "synth": "user/synth",
    "profile": "user/profile",
    "dwarf": "dwarf",
    "bpf": "bpf",
    "util": "user/util",
}

# Direct arrows; uses() below closes them transitively.
ARROWS = {
    "cli": {"tui", "serve", "session", "synth", "profile", "dwarf", "bpf", "util"},
    "tui": {"session", "profile"},
    "serve": {"session", "profile"},
    "session": {"profile", "skel"},
    "synth": {"profile"},
    "profile": {"dwarf", "bpf"},
    "dwarf": {"util"},
    "bpf": set(),
    "util": set(),
}


# Arrows that do not pass on: a layer that may use the session does not get
# to load BPF through it.
DIRECT_ONLY = {"skel"}


def uses(layer):
    """Every layer @layer may use: itself, its arrows, transitively, and util."""
    seen, pending = {layer, "util"}, [layer]
    while pending:
        cur = pending.pop()
        for nxt in ARROWS.get(cur, ()):
            if nxt in DIRECT_ONLY and cur != layer:
                continue
            if nxt not in seen:
                seen.add(nxt)
                pending.append(nxt)
    return seen


def layer_of(path):
    """The layer a repository-relative path belongs to, or None."""
    if re.fullmatch(r"[\w-]+\.skel\.h", os.path.basename(path)) and "/" not in path:
        return "skel"
    best = None
    for name, d in LAYER_DIRS.items():
        if path == d or path.startswith(d + "/"):
            if best is None or len(d) > len(LAYER_DIRS[best]):
                best = name
    return best


# Headers that are one layer's own business, whatever the arrows say.
PRIVATE_HEADERS = {
    "user/session/bpf_session.h": "session",
    "user/session/traces_internal.h": "session",
    "dwarf/probe_internal.h": "dwarf",
}

# Only the session loads and talks to BPF: libbpf and bpf_session__* symbols
# are its own, so a front end cannot reach past the daemon's commands.
PRIVATE_SYMBOLS = (("bpf_session__", "session"), ("ring_buffer__", "session"),
                   ("bpf_map", "session"), ("bpf_program__", "session"),
                   ("bpf_link__", "session"), ("bpf_object__", "session"))


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def check_includes(root):
    bad = []
    for name, d in LAYER_DIRS.items():
        top = os.path.join(root, d)
        for dirpath, _, files in os.walk(top):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                with open(os.path.join(root, rel), errors="replace") as fh:
                    text = fh.read()
                for m in INCLUDE.finditer(text):
                    inc = m.group(1)
                    # Same-folder includes ("x.h") belong to the file's own layer;
                    # vmlinux.h and bpf helper headers are the kernel side's own.
                    target = layer_of(inc) if "/" in inc or inc.endswith(".skel.h") else name
                    line = text.count("\n", 0, m.start()) + 1
                    owner = PRIVATE_HEADERS.get(inc)
                    # every *_internal.h is its own layer's business
                    if owner is None and inc.endswith("_internal.h") and "/" in inc:
                        owner = layer_of(inc)
                    if owner and owner != name:
                        bad.append(f"{rel}:{line}: {name} includes {owner}'s private header '{inc}'")
                        continue
                    if target is None or target in uses(name):
                        continue
                    bad.append(f"{rel}:{line}: {name} includes {target} header '{inc}'")
    return bad


def nm_symbols(obj):
    """(defined, undefined) global symbol names of one object file."""
    out = subprocess.run(["nm", "-g", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] not in ("U", "w", "v"):
            defined.add(parts[2])
    return defined, undefined


def check_symbols(root, build):
    owner, needs = {}, []
    for name, d in LAYER_DIRS.items():
        top = os.path.join(build, d)
        if not os.path.isdir(top):
            continue
        for dirpath, _, files in os.walk(top):
            for f in sorted(files):
                if not f.endswith(".o") or f.endswith(".bpf.o"):
                    continue
                obj = os.path.join(dirpath, f)
                defined, undefined = nm_symbols(obj)
                for s in defined:
                    owner[s] = name
                needs.append((os.path.relpath(obj, build), name, undefined))
    bad = []
    for obj, name, undefined in needs:
        for s in sorted(undefined):
            priv = next((lay for pre, lay in PRIVATE_SYMBOLS if s.startswith(pre)), None)
            if priv and priv != name:
                bad.append(f"{obj}: {name} calls {priv}'s private '{s}'")
                continue
            target = owner.get(s)
            if target is not None and target not in uses(name):
                bad.append(f"{obj}: {name} references {target} symbol '{s}'")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".")
    ap.add_argument("--build", default="build")
    ap.add_argument("--no-symbols", action="store_true", help="check includes only")
    a = ap.parse_args()
    bad = check_includes(a.root)
    if not a.no_symbols:
        bad += check_symbols(a.root, a.build)
    for b in bad:
        print(f"check-layers: {b}", file=sys.stderr)
    if bad:
        print(f"check-layers: {len(bad)} reference(s) against the arrows", file=sys.stderr)
        return 1
    print("check-layers: every include and symbol follows the arrows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
