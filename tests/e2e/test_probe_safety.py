"""Probe safety (issue 11): every kind of --trace spec leaves the target running
with its own checksum intact, and the hit counts are exact.

Ground truth: probesafe.c prints how many rounds it ran, how often its -O2
loop line ran and a checksum of everything it computed; this file recomputes
that checksum from the same formulas, so a probe that corrupts an
instruction shows even when nothing crashes. Instruction boundaries come
from objdump's disassembly of the original binary, never from liveprof.
Which addresses liveprof probed, and with which kind of probe, comes from
its -v log ("probe 'SPEC': KIND at 0xADDR in 'FILE'").

The target runs gated (-p PID): it waits for a file that the test creates
once liveprof prints its first --interval table (everything is attached
then), so every call is seen, and after a refusal the target still runs its
rounds and must print the right checksum (no probe was left behind).
"""

import json
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

import elf_corrupt

ROUNDS = 3000  # probesafe rounds: ~310k hits of the loop line
M64 = (1 << 64) - 1
EXIT_PROBE = 8  # README: a --trace spec cannot be resolved
READY_TIMEOUT = 120  # loading BPF can take a while on a busy 2-core VM
PROBE_LOG = re.compile(r"probe '([^']*)': (\S+) at 0x([0-9a-f]+) in '([^']*)'")


# ---- ground truth -------------------------------------------------------

def _burn(n):
    x = n
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & M64
        x ^= x >> 29
    return x


def truth(rounds):
    """(burn_iters, checksum) that probesafe.c must print for @rounds."""
    burns = {n: _burn(n) for n in range(100, 108)}
    s = iters = 0
    for r in range(rounds):
        n = 100 + (r & 7)
        t = ((r ^ (r >> 7)) * 0x9e3779b97f4a7c15 + 12345) & M64
        s = (s * 31 + t) & M64
        s = (s * 31 + (0x0807060504030104 ^ r)) & M64
        s = (s * 31 + burns[n]) & M64
        s = (s * 31 + 2 * (r & 1023)) & M64
        iters += n
    return iters, s


def source_line(h, name, marker):
    lines = (h.WORKLOADS / name).read_text().splitlines()
    hits = [i + 1 for i, s in enumerate(lines) if marker in s]
    assert len(hits) == 1, f"{marker!r} in {name}: {hits}"
    return hits[0]


def symbol(path, name):
    """(start, size) of @name in @path, from nm."""
    out = subprocess.run(["nm", "-S", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        p = line.split()
        if len(p) == 4 and p[3] == name:
            return int(p[0], 16), int(p[1], 16)
    raise AssertionError(f"no symbol {name} in {path}")


def boundaries(path):
    """Every instruction start objdump finds in @path's code."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path],
                         capture_output=True, text=True, check=True).stdout
    return {int(m, 16) for m in re.findall(r"^\s+([0-9a-f]+):\t", out, re.M)}


def func_boundaries(path, name):
    """Offsets of the instruction starts inside function @name."""
    start, size = symbol(path, name)
    return sorted(a - start for a in boundaries(path) if start <= a < start + size)


def func_entries(path):
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    return {int(p[0], 16) for p in (l.split() for l in out.splitlines())
            if len(p) == 3 and p[1] in "tTwW"}


# ---- running liveprof against a gated target ----------------------------

class Gated:
    """probesafe (or a copy) waiting for a go file, and liveprof -p on it."""

    def __init__(self, liveprof, exe, specs, tmp, rounds=ROUNDS):
        self.tmp = Path(tmp)
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.go = self.tmp / "go"
        self.json_path = self.tmp / "out.json"
        self.target = subprocess.Popen([str(exe), str(rounds), str(self.go)],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True)
        args = [str(liveprof), "--no-tui", "-v", "--interval", "0.5", "--top", "1",
                "--json", str(self.json_path), "-d", "300", "-p", str(self.target.pid)]
        for s in specs:
            args += ["--trace", s]
        self.lp = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, cwd=str(self.tmp))
        self.out, self.err = [], []
        self.ready = threading.Event()
        threading.Thread(target=self._read_out, daemon=True).start()
        self.err_thread = threading.Thread(target=lambda: self.err.extend(self.lp.stderr),
                                           daemon=True)
        self.err_thread.start()

    def _read_out(self):
        # Ready at the first report after the -v line saying the programs,
        # verified while liveprof already samples, are attached with the
        # probes (a report alone can come before them).
        for line in self.lp.stdout:
            self.out.append(line)
            if line.startswith("--- ") and any("programs verified and attached" in l
                                               for l in list(self.err)):
                self.ready.set()
        self.ready.set()

    def run(self):
        """Let the target go once liveprof is attached (or has given up);
        return (liveprof rc, target rc, target stdout)."""
        try:
            if not self.ready.wait(READY_TIMEOUT):
                pytest.fail("liveprof never started:\n" + "".join(self.err))
            self.go.touch()
            tout, terr = self.target.communicate(timeout=240)
            self.lp.wait(timeout=60)
        finally:
            for p in (self.target, self.lp):
                if p.poll() is None:
                    p.kill()
                    p.wait()
        self.err_thread.join(5)
        self.rc, self.target_rc, self.target_out = self.lp.returncode, self.target.returncode, tout
        self.json = json.loads(self.json_path.read_text()) if self.json_path.exists() else None
        return self

    @property
    def stderr(self):
        return "".join(self.err)

    def probes(self):
        """[(spec, kind, vaddr, file)] liveprof says it attached."""
        return [(m[0], m[1], int(m[2], 16), m[3]) for m in PROBE_LOG.findall(self.stderr)]

    def calls(self, spec):
        assert self.json, self.report()
        for t in self.json.get("traces", []):
            if t.get("spec") == spec:
                return t["calls"]
        raise AssertionError(f"no trace {spec!r}: {self.report()}")

    def printed(self):
        vals = dict(re.findall(r"^(\w+) (\S+)$", self.target_out, re.M))
        return vals

    def report(self):
        return (f"liveprof rc={self.rc} target rc={self.target_rc}\n"
                f"target stdout:\n{self.target_out}\nliveprof stderr:\n{self.stderr[-4000:]}")


def check_target_unharmed(g, rounds=ROUNDS):
    """The target ran every round and printed the checksum it must."""
    iters, checksum = truth(rounds)
    v = g.printed()
    assert g.target_rc == 0, f"target died: {g.report()}"
    assert int(v.get("rounds", -1)) == rounds, g.report()
    assert int(v["burn_iters"]) == iters, g.report()
    assert int(v["checksum"], 16) == checksum, \
        f"checksum {v['checksum']} != {checksum:016x}: code was corrupted\n{g.report()}"


def check_refused(g, *words):
    """A one-line error (exit 8) that names @words, and nothing attached."""
    assert g.rc == EXIT_PROBE, g.report()
    errs = [l for l in g.stderr.splitlines()
            if l.startswith("liveprof: ") and "probe '" not in l and not l.startswith(
                "liveprof: warning")]
    last = g.stderr.strip().splitlines()[-1]
    for w in words:
        assert w in last, f"{w!r} not in the error {last!r}"
    assert last.startswith("liveprof: ") and not last[len("liveprof: "):][:1].isupper(), last
    assert errs, g.report()


def check_probes_on_boundaries(g, truth_files):
    """Every probe liveprof attached is on an instruction boundary of the
    original file, and every return probe is at a function entry."""
    for spec, kind, vaddr, path in g.probes():
        orig = truth_files.get(Path(path).name)
        assert orig, f"probe in an unexpected file {path}"
        assert vaddr in boundaries(orig), \
            f"'{spec}' probed 0x{vaddr:x} in {path}: not an instruction boundary"
        if kind != "hit":
            assert vaddr in func_entries(orig), \
                f"'{spec}' has a {kind} probe at 0x{vaddr:x}, not a function entry"


@pytest.fixture
def gated(liveprof, tmp_path):
    n = [0]

    def run(specs, exe, rounds=ROUNDS):
        n[0] += 1
        return Gated(liveprof, exe, specs, tmp_path / f"g{n[0]}", rounds).run()

    return run


# ---- every kind of spec -------------------------------------------------

def test_function_entry_and_library_function(gated, wl):
    """FUNC and LIB:FUNC: latency probes at entry and return, exact counts."""
    g = gated(["ps_target", "libwl.so:lib_call"], wl("probesafe"))
    check_target_unharmed(g)
    assert g.rc == 0, g.report()
    print(f"\nps_target {g.calls('ps_target')}, libwl.so:lib_call "
          f"{g.calls('libwl.so:lib_call')} calls of {ROUNDS}")
    assert g.calls("ps_target") == ROUNDS
    assert g.calls("libwl.so:lib_call") == ROUNDS
    check_probes_on_boundaries(g, {"probesafe": wl("probesafe"), "libwl.so": wl("libwl.so")})


def test_every_offset_of_a_function(gated, wl):
    """FUNC+OFF at each instruction boundary of ps_target (straight-line code:
    each instruction runs once per call): entry-only hit counts that equal
    the call count, and the target unharmed."""
    offs = func_boundaries(wl("probesafe"), "ps_target")
    assert len(offs) >= 8, offs
    specs = [f"ps_target+0x{o:x}" for o in offs]
    g = gated(specs, wl("probesafe"))
    check_target_unharmed(g)
    assert g.rc == 0, g.report()
    got = {s: g.calls(s) for s in specs}
    print(f"\nps_target offsets {[hex(o) for o in offs]}: hits {sorted(set(got.values()))}"
          f" (calls {ROUNDS})")
    assert all(v == ROUNDS for v in got.values()), got
    kinds = {k for _, k, _, _ in g.probes()}
    assert kinds == {"hit"}, f"offset probes must be entry-only hit counters: {kinds}"
    check_probes_on_boundaries(g, {"probesafe": wl("probesafe")})


def test_every_offset_of_a_library_function(gated, wl):
    offs = func_boundaries(wl("libwl.so"), "lib_call")
    specs = [f"libwl.so:lib_call+0x{o:x}" for o in offs]
    g = gated(specs, wl("probesafe"))
    check_target_unharmed(g)
    assert g.rc == 0, g.report()
    got = {s: g.calls(s) for s in specs}
    print(f"\nlib_call offsets {[hex(o) for o in offs]}: hits {sorted(set(got.values()))}")
    assert all(v == ROUNDS for v in got.values()), got
    check_probes_on_boundaries(g, {"libwl.so": wl("libwl.so")})


def test_mid_instruction_offsets_refused(gated, wl):
    """An offset inside an instruction is refused, naming the address and the
    function; the target then runs unprobed and unharmed."""
    start, size = symbol(wl("probesafe"), "ps_target")
    offs = func_boundaries(wl("probesafe"), "ps_target")
    inside = [o for o in range(size) if o not in offs]
    # the second byte of the first two multi-byte instructions (opcode or
    # ModRM), a byte of the movabs immediate, and the last byte of the function
    longest = max(zip(offs, offs[1:]), key=lambda p: p[1] - p[0])
    picks = sorted({o for o in inside if o - 1 in offs}) [:2]
    picks = sorted(set(picks) | {longest[0] + 5, max(inside)})
    for o in picks:
        g = gated([f"ps_target+0x{o:x}"], wl("probesafe"), rounds=200)
        check_refused(g, f"0x{start + o:x}", "ps_target")
        check_target_unharmed(g, rounds=200)
        assert not g.probes(), g.report()


def test_lines_main_binary(gated, wl, h):
    """FILE:LINE in the main binary: a -O1 line (once per call) and the -O2
    loop line whose first row is not a statement (refused before)."""
    body = source_line(h, "probesafe.c", "return (frame ^ (frame >> 7))")
    burn = source_line(h, "probesafe.c", "/* BURN_BODY */")
    specs = [f"probesafe.c:{body}", f"probesafe.c:{burn}"]
    g = gated(specs, wl("probesafe"))
    check_target_unharmed(g)
    assert g.rc == 0, g.report()
    iters, _ = truth(ROUNDS)
    print(f"\nprobesafe.c:{body} {g.calls(specs[0])} of {ROUNDS}; "
          f"probesafe.c:{burn} {g.calls(specs[1])} of {iters}")
    assert g.calls(specs[0]) == ROUNDS
    assert g.calls(specs[1]) == iters
    assert {k for _, k, _, _ in g.probes()} == {"hit"}
    check_probes_on_boundaries(g, {"probesafe": wl("probesafe")})


def test_lines_of_a_library(gated, wl, h):
    """LIB:FILE:LINE, and a bare FILE:LINE found in a loaded library."""
    line = source_line(h, "libwl.c", "lib_sink += frame")
    specs = [f"libwl.so:libwl.c:{line}", f"libwl.c:{line}"]
    g = gated(specs, wl("probesafe"))
    check_target_unharmed(g)
    assert g.rc == 0, g.report()
    print(f"\n{specs[0]} {g.calls(specs[0])}, {specs[1]} {g.calls(specs[1])} of {ROUNDS}")
    assert g.calls(specs[0]) == ROUNDS
    assert g.calls(specs[1]) == ROUNDS
    assert {Path(p).name for _, _, _, p in g.probes()} == {"libwl.so"}
    check_probes_on_boundaries(g, {"libwl.so": wl("libwl.so")})


def test_bare_function_found_in_library(gated, wl):
    """A function that lives only in a loaded library is resolved there."""
    g = gated(["lib_call"], wl("probesafe"))
    check_target_unharmed(g)
    assert g.rc == 0, g.report()
    assert "libwl.so:lib_call" in g.stderr, g.report()  # the spec to write next time
    assert g.calls("lib_call") == ROUNDS


def test_line_rows_inside_an_instruction_refused(gated, wl, h):
    """probesafe.c's MIDINSN line has one row, on the third byte of a movabs:
    refused with the address and the function, the target unharmed."""
    line = source_line(h, "probesafe.c", "MIDINSN_LINE = __LINE__")
    start, _ = symbol(wl("probesafe"), "ps_mid")
    g = gated([f"probesafe.c:{line}"], wl("probesafe"), rounds=200)
    check_refused(g, f"0x{start + 2:x}", "ps_mid")
    check_target_unharmed(g, rounds=200)
    assert not g.probes()


def test_failed_spec_detaches_the_others(gated, wl):
    """Good specs first, then one that cannot be proven: nothing stays
    attached (the good probes would have counted; the target is unharmed)."""
    g = gated(["ps_target", "ps_target+0x4", "ps_target+0x2"], wl("probesafe"), rounds=200)
    check_refused(g, "ps_target")
    check_target_unharmed(g, rounds=200)


# ---- specs resolved from corrupted symbol and line tables ---------------

CORRUPT_SEEDS = range(2)  # more seeds: tests/fuzz/fuzz_probe.c covers mutated files broadly
CORRUPT_ROUNDS = 300


def _corrupt_copy(wl, tmp, name):
    d = Path(tmp) / name
    d.mkdir(parents=True)
    shutil.copy(wl("libwl.so"), d / "libwl.so")  # found through rpath $ORIGIN
    return d / "probesafe"


def _check_corrupt_run(g, wl, what):
    check_target_unharmed(g, rounds=CORRUPT_ROUNDS)
    assert g.rc in (0, EXIT_PROBE), f"{what}: {g.report()}"
    if g.rc == EXIT_PROBE:
        check_refused(g)
        assert not g.probes(), g.report()
    check_probes_on_boundaries(g, {"probesafe": wl("probesafe"), "libwl.so": wl("libwl.so")})
    last = g.stderr.strip().splitlines()[-1] if g.stderr.strip() else ""
    return "refused: " + last if g.rc else f"probed {len(g.probes())} sites"


@pytest.mark.parametrize("seed", CORRUPT_SEEDS)
def test_corrupted_line_table(gated, wl, h, tmp_path, seed):
    exe = _corrupt_copy(wl, tmp_path, "c")
    flips = elf_corrupt.flip_bytes(wl("probesafe"), exe, ".debug_line", 6, seed)
    body = source_line(h, "probesafe.c", "return (frame ^ (frame >> 7))")
    burn = source_line(h, "probesafe.c", "/* BURN_BODY */")
    outcomes = []
    for spec in (f"probesafe.c:{body}", f"probesafe.c:{burn}", f"probesafe.c:{source_line(h, 'probesafe.c', '/* CALL_LINE */')}"):
        g = gated([spec], exe, rounds=CORRUPT_ROUNDS)
        outcomes.append(f"{spec}: " + _check_corrupt_run(g, wl, f"seed {seed} {spec}"))
    print(f"\n.debug_line seed {seed} (bytes {flips}): " + "; ".join(outcomes))


@pytest.mark.parametrize("seed", CORRUPT_SEEDS)
def test_corrupted_symbol_table(gated, wl, tmp_path, seed):
    exe = _corrupt_copy(wl, tmp_path, "c")
    moved = elf_corrupt.shift_func_symbols(wl("probesafe"), exe,
                                           ["ps_target", "ps_burn", "ps_mid"], seed)
    outcomes = []
    for spec in ("ps_target", "ps_target+0x4", "ps_burn", "ps_mid"):
        g = gated([spec], exe, rounds=CORRUPT_ROUNDS)
        outcomes.append(f"{spec}: " + _check_corrupt_run(g, wl, f"seed {seed} {spec}"))
    print(f"\n.symtab seed {seed} ({ {k: (hex(a), hex(b)) for k, (a, b) in moved.items()} }): "
          + "; ".join(outcomes))


@pytest.mark.parametrize("seed", CORRUPT_SEEDS)
def test_randomly_corrupted_symbol_table(gated, wl, tmp_path, seed):
    exe = _corrupt_copy(wl, tmp_path, "c")
    flips = elf_corrupt.flip_bytes(wl("probesafe"), exe, ".symtab", 24, 100 + seed)
    outcomes = []
    for spec in ("ps_target", "ps_target+0x4", "ps_burn"):
        g = gated([spec], exe, rounds=CORRUPT_ROUNDS)
        outcomes.append(f"{spec}: " + _check_corrupt_run(g, wl, f"seed {seed} {spec}"))
    print(f"\n.symtab flips seed {seed} ({len(flips)} bytes): " + "; ".join(outcomes))
