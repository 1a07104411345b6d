"""Every BPF program's stack, with all the calls under it, stays well
under the 512 bytes that 6.1 and 6.12 allow (issue 39).

The verifier adds up the frames along each chain of calls: a program's own
frame, each BPF-to-BPF call's, and each bpf_loop() callback's, every frame
rounded up to 32 bytes. 6.18 may give tracing programs a private stack and
accept more, so a green host says nothing about 6.1. This reads the
frames and the calls from the object file (its instructions and
relocations, by llvm-objdump) and checks every program's deepest chain
against a budget with a margin.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OBJS = [ROOT / "build" / "bpf" / "liveprof.bpf.o", ROOT / "build" / "bpf" / "alloc.bpf.o"]
LIMIT = 512
BUDGET = 416  # about a fifth of the limit kept free for what a compiler moves around

INSN = re.compile(r"^\s+(\d+):\s+((?:[0-9a-f]{2} )+)\s*(.*)$")
RELOC = re.compile(r"^\s+[0-9a-f]+:\s+(R_BPF_\S+)\s+(\S+)")
FUNC = re.compile(r"^([0-9a-f]+) <(\S+)>:$")
SECTION = re.compile(r"^Disassembly of section (\S+):")


def parse(obj):
    """{(section, func): {"frame": bytes, "calls": [(section, offset|name)]}} and
    the functions by (section, byte offset)."""
    out = subprocess.run(["llvm-objdump", "-dr", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    funcs, at = {}, {}
    sec = fn = None
    last = None  # the previous instruction: (index, bytes, text)
    for line in out.splitlines():
        if m := SECTION.match(line):
            sec = m.group(1)
            continue
        if (m := FUNC.match(line)) and not m.group(2).startswith("LBB"):
            fn = (sec, m.group(2))
            funcs[fn] = {"frame": 0, "calls": []}
            at[(sec, int(m.group(1), 16))] = fn
            continue
        if fn is None:
            continue
        if m := RELOC.match(line):
            kind, sym = m.groups()
            idx, raw, text = last
            imm = int.from_bytes(bytes.fromhex("".join(raw.split()[4:8])), "little",
                                 signed=True)
            if raw.startswith("85 10") and kind == "R_BPF_64_32":
                # a call across sections: to a named function, or to
                # .text at the offset the immediate says
                funcs[fn]["calls"].append(("name", sym) if sym != ".text"
                                          else (".text", (imm + 1) * 8))
            elif raw.startswith("18 ") and sym == ".text":
                funcs[fn]["calls"].append((".text", imm))  # a callback's address
            continue
        if m := INSN.match(line):
            idx, raw, text = int(m.group(1)), m.group(2).strip(), m.group(3)
            last = (idx, raw, text)
            for off in re.findall(r"r10 - (\d+)\)", text) + re.findall(r"r10 \+= -(\d+)", text):
                funcs[fn]["frame"] = max(funcs[fn]["frame"], int(off))
            if raw.startswith("85 10") and sec == ".text":
                imm = int.from_bytes(bytes.fromhex("".join(raw.split()[4:8])), "little",
                                     signed=True)
                if imm != -1:  # -1: a relocation follows and names it
                    funcs[fn]["calls"].append((".text", (idx + imm + 1) * 8))
    return funcs, at


def chains(funcs, at):
    """Each program's deepest chain: (bytes, [functions])."""
    by_name = {name: key for key, name in ((k, k[1]) for k in funcs)}

    def callee(c):
        if c[0] == "name":
            return by_name.get(c[1])
        return at.get(c)

    memo = {}

    def deepest(f, seen=()):
        if f in memo:
            return memo[f]
        own = max(32, -(-funcs[f]["frame"] // 32) * 32)
        best = (0, [])
        for c in funcs[f]["calls"]:
            g = callee(c)
            assert g is not None, (f, c)
            if g in seen:
                continue
            best = max(best, deepest(g, seen + (f,)))
        memo[f] = (own + best[0], [f[1]] + best[1])
        return memo[f]

    return {f[1]: deepest(f) for f in funcs if f[0] != ".text"}


@pytest.mark.skipif(not shutil.which("llvm-objdump"), reason="llvm-objdump missing (make deps)")
@pytest.mark.parametrize("obj", OBJS, ids=lambda p: p.name)
def test_every_program_within_the_stack_budget(obj):
    funcs, at = parse(obj)
    found = chains(funcs, at)
    assert found, "no programs found"
    over = {p: c for p, c in found.items() if c[0] > BUDGET}
    assert not over, "\n".join(f"{p}: {c[0]} bytes: {' -> '.join(c[1])}"
                               for p, c in sorted(over.items()))


def test_the_reader_sees_calls_and_callbacks():
    """The sampler's chain must go through its global functions and the
    unwinder's bpf_loop callback, or the check above measures nothing."""
    funcs, at = parse(OBJS[0])
    found = chains(funcs, at)
    size, path = found["lp_sample_cpu"]
    assert "unwind_step" in path or "lp_rb_walk" in path or "lp_sample_head" in path, path
    assert size > 200, (size, path)
