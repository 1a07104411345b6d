#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Compare a liveprof folded profile with `perf script` output of the same run.

    compare_perf.py LIVEPROF.folded PERF_SCRIPT.txt [--top 10] [--tolerance 5]

perf's samples are turned into folded stacks (root first), and both profiles
into inclusive shares per function: the percentage of samples whose stack
contains the function at least once. The top functions of either side are
compared; the exit status is 1 if any differs by more than the tolerance
(percentage points), or, with --rate R, if any differs by more than the
sampling noise of the two sample counts allows: Fisher's exact test per
function (H0: both tools draw from one share), Bonferroni over the functions
compared, so that two correct profilers disagree with probability <= R.
Used by tests/e2e/test_unwind.py, usable by hand:

    perf record --call-graph dwarf -F 99 -p PID -o perf.data -- sleep 10
    perf script -i perf.data -F comm,tid,time,ip,sym > perf.txt

Names are compared after removing what only one tool writes: symbol version
suffixes (foo@@GLIBC_2.34), offsets (+0x12) and clone suffixes (.part.0,
.isra.0, .constprop.0, .cold). Frames without a name ([unknown], liveprof's
[module+0xoff]) and markers ([truncated]) are never ranked: their spelling
differs per tool, and they name no function. The root frame (the process
name) is left out too.
"""
import argparse
import collections
import os
import re
import sys

# Two names for one function: glibc >= 2.34 exports __libc_start_main as a
# versioned alias of __libc_start_main_impl; tools pick either.
ALIASES = {"__libc_start_main_impl": "__libc_start_main"}
CLONE_RE = re.compile(r"\.(part|isra|constprop|cold|lto_priv)(\.\d+)*$")
KERNEL_START = 0xffff800000000000  # x86-64: the upper half is the kernel
FRAME_RE = re.compile(r"^\s+([0-9a-fA-F]+)\s+(.*?)(?:\s+\(([^()]*)\))?\s*$")


def address_aliases(elf):
    """{name: canonical} for the functions of `elf` (or of its debug file,
    found by build id under /usr/lib/debug) that share an address with
    another: glibc's memcpy variants are the memmove code under a second
    local symbol, and perf and liveprof may pick either name. The
    canonical name is the plainest (fewest leading underscores, then the
    shortest); names seen at one address only are left alone."""
    import subprocess
    note = subprocess.run(["readelf", "-n", elf], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", note)
    files = [elf]
    if m:
        files.insert(0, f"/usr/lib/debug/.build-id/{m.group(1)[:2]}/{m.group(1)[2:]}.debug")
    by_addr = collections.defaultdict(set)
    for path in files:
        if not os.path.exists(path):
            continue
        out = subprocess.run(["readelf", "-Ws", path], capture_output=True, text=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 8 and f[3] == "FUNC" and f[1] != "0000000000000000":
                by_addr[f[1]].add(f[7].split("@", 1)[0])
        if by_addr:
            break
    out = {}
    for names in by_addr.values():
        if len(names) > 1:
            first = min(names, key=lambda n: (len(n) - len(n.lstrip("_")), len(n), n))
            out.update({n: first for n in names if n != first})
    return out


def normalize(name):
    """The comparable spelling of a frame name, or None for unnamed frames."""
    name = name.strip()
    if not name or name.startswith("["):
        return None
    name = re.sub(r"\+0x[0-9a-fA-F]+$", "", name)
    name = name.split("@", 1)[0]
    while True:
        short = CLONE_RE.sub("", name)
        if short == name:
            break
        name = short
    # glibc's hidden aliases name the same code as the public symbol; the
    # two tools may pick either at one address (__GI___libc_read = read)
    name = re.sub(r"^__GI___libc_(?=[a-z])", "", name)
    name = re.sub(r"^__GI_", "", name)
    name = ALIASES.get(name, name)
    return name or None


def perf_script_to_folded(text):
    """Counter of folded stacks ("root;...;leaf") from `perf script` text.

    A sample is a header line starting in column 0 followed by indented
    frame lines, leaf first, and ends at a blank line. The comm, first
    field of the header, becomes the root frame.
    """
    stacks = collections.Counter()
    comm, frames = None, []

    def flush():
        if comm is not None:
            names = [n.replace(";", ":") for _, n in reversed(frames)]
            stacks[";".join([comm] + names)] += 1

    for line in text.splitlines():
        if not line.strip():
            flush()
            comm, frames = None, []
            continue
        if not line[0].isspace():
            flush()
            comm, frames = line.split()[0], []
            continue
        m = FRAME_RE.match(line)
        if not m or comm is None:
            continue
        # perf lists the inline chain of an address before the function
        # that contains it, all at the same address: keep one frame per
        # address, the outermost, as liveprof shows them with --no-inline. Its "(inlined)" tag goes, for when perf found
        # only inlined entries there.
        addr = m.group(1)
        # perf records the kernel part of the chain too; liveprof without
        # --kernel shows the user part only: compare like with like.
        if int(addr, 16) >= KERNEL_START:
            continue
        name = re.sub(r"\s*\(inlined\)$", "", m.group(2) or "[unknown]")
        if m.group(3) == "inlined":
            name = m.group(2)
        if frames and frames[-1][0] == addr:
            frames[-1] = (addr, name)
        else:
            frames.append((addr, name))
    flush()
    return stacks


def read_folded(path):
    stacks = collections.Counter()
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            stacks[stack] += int(count)
    return stacks


def inclusive_counts(stacks):
    """Function -> number of samples whose stack contains it (root frame left out)."""
    seen = collections.Counter()
    for stack, count in stacks.items():
        names = {normalize(f) for f in stack.split(";")[1:]}
        names.discard(None)
        for n in names:
            seen[n] += count
    return seen


def inclusive_shares(stacks):
    """Function -> % of samples whose stack contains it (root frame left out)."""
    total = sum(stacks.values())
    if not total:
        return {}
    return {n: 100.0 * c / total for n, c in inclusive_counts(stacks).items()}


def top(shares, n):
    return [k for k, _ in sorted(shares.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def compare(live, perf, n=10):
    """Rows (name, liveprof %, perf %, delta) for the union of both top-n lists."""
    names = list(dict.fromkeys(top(perf, n) + top(live, n)))
    rows = []
    for name in names:
        a, b = live.get(name, 0.0), perf.get(name, 0.0)
        rows.append((name, a, b, a - b))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folded", help="liveprof folded output")
    ap.add_argument("perf_script", help="text of `perf script` (- for stdin)")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--tolerance", type=float, default=5.0, help="points")
    ap.add_argument("--rate", type=float, help="false-failure rate: test against sampling "
                    "noise (Fisher, Bonferroni) instead of --tolerance")
    args = ap.parse_args(argv)

    live_stacks = read_folded(args.folded)
    if args.perf_script == "-":
        text = sys.stdin.read()
    else:
        with open(args.perf_script, errors="replace") as f:
            text = f.read()
    perf_stacks = perf_script_to_folded(text)
    rows = compare(inclusive_shares(live_stacks), inclusive_shares(perf_stacks), args.top)
    n_live, n_perf = sum(live_stacks.values()), sum(perf_stacks.values())
    k_live, k_perf = inclusive_counts(live_stacks), inclusive_counts(perf_stacks)
    if args.rate:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2e"))
        import stats
        each = args.rate / max(1, len(rows))
    print(f"liveprof {n_live} samples, perf {n_perf} samples")
    print(f"{'function':40s} {'liveprof%':>9s} {'perf%':>7s} {'delta':>7s}" +
          (f" {'Fisher p':>9s}" if args.rate else ""))
    worst, bad = 0.0, 0
    for name, a, b, d in rows:
        extra = ""
        if args.rate:
            p = stats.fisher_p(k_live[name], n_live, k_perf[name], n_perf)
            bad += p <= each
            extra = f" {p:9.1e}{' *' if p <= each else ''}"
        print(f"{name[:40]:40s} {a:9.1f} {b:7.1f} {d:+7.1f}{extra}")
        worst = max(worst, abs(d))
    if args.rate:
        print(f"max |delta| {worst:.1f} points; {bad} of {len(rows)} differ beyond sampling "
              f"noise (* : Fisher p <= {args.rate:g} / {len(rows)})")
        return 1 if bad else 0
    print(f"max |delta| {worst:.1f} points (tolerance {args.tolerance})")
    return 0 if worst <= args.tolerance else 1

if __name__ == "__main__":
    sys.exit(main())
