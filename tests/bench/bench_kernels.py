#!/usr/bin/python3
"""make bench's kernel table: each BPF program on each kernel of the matrix.

For the host's kernel and for Debian's 6.1 and 6.12 booted in QEMU
(tests/kernels/vm.py), one row per program: the instructions the verifier
processed, its stack per function (the program's own frame first, then
each function it calls, in the verifier's order), and the time its
capability took to load (`liveprof --check -v`); and per kernel the time
from `liveprof -p PID` to its first sample (the first `--interval` line
with samples), median of REPS runs. The guests run under TCG, several
times slower than the host: their times are the guest's, not the kernel's.

Prints the section's markdown on stdout.
"""

import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "kernels"))
import vm  # noqa: E402

REPS = max(1, int(os.environ.get("REPS", "5")))

INTERVAL = re.compile(r"^--- [\d.]+ s: (\d+) samples")


def inside(out):
    """In the kernel being measured: --check -v into OUT/check.txt, and
    REPS times to the first sample into OUT/first.txt (microseconds)."""
    out = Path(out)
    with open(out / "check.txt", "w") as f:
        subprocess.run([str(ROOT / "liveprof"), "--check", "-v"], stdout=f,
                       stderr=subprocess.STDOUT, timeout=600)
    target = subprocess.Popen([str(ROOT / "tests" / "build" / "bench_spin")],
                              stdout=subprocess.DEVNULL)
    firsts = []
    try:
        time.sleep(0.5)
        for _ in range(REPS):
            t0 = time.monotonic()
            lp = subprocess.Popen([str(ROOT / "liveprof"), "-p", str(target.pid), "-F", "99",
                                   "--interval", "0.005", "--top", "0", "--no-tui", "-d", "30"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            for line in lp.stdout:
                m = INTERVAL.match(line)
                if m and int(m.group(1)) > 0:
                    firsts.append(int((time.monotonic() - t0) * 1e6))
                    break
            lp.send_signal(signal.SIGINT)
            lp.communicate(timeout=60)
    finally:
        target.kill()
        target.wait()
    (out / "first.txt").write_text(" ".join(map(str, firsts)) + "\n")


CAP = re.compile(r"^  (\S.*?)\s{2,}(yes|no: .*?)(?:  \((\d+) ms\))?$")
PROG = re.compile(r"^      (lp_\w+)\s+(\d+) insns, stack (\S+)$")


def parse(check, first_us):
    rows, cap, ms = [], None, None
    for line in check.splitlines():
        if m := CAP.match(line):
            cap, ms = m.group(1), m.group(3)
            if not m.group(2).startswith("yes") and "uprobe_multi" not in cap:
                rows.append((cap, "refused", m.group(2)[4:], "", ""))
        elif m := PROG.match(line):
            rows.append((cap, m.group(1), m.group(2), m.group(3), ms or ""))
    first = f"{statistics.median(first_us) / 1000:.0f} ms" if first_us else "n/a"
    return rows, first


def host(tmp):
    tmp.mkdir(parents=True, exist_ok=True)
    inside(tmp)
    return (tmp / "check.txt").read_text(), [int(x) for x in (tmp / "first.txt").read_text().split()]


def guest(series):
    files = {}
    vm.run(series, f"REPS={REPS} /usr/bin/python3 tests/bench/bench_kernels.py --inside "
           "$LPVM_JOB", cwd=ROOT, timeout=1200, cpus=2, files=files)
    return (files.get("check.txt", b"").decode(),
            [int(x) for x in files.get("first.txt", b"").decode().split()])


def main():
    if sys.argv[1:2] == ["--inside"]:
        inside(sys.argv[2])
        return
    kernels = [(os.uname().release + " (host)", host(Path("/tmp/lp-bench-kernels")))]
    for series in sorted(vm.SERIES):
        print(f"kernel {series} in QEMU", file=sys.stderr)
        check, first = guest(series)
        release = check.split()[1] if check.startswith("kernel ") else series
        kernels.append((f"{release} (QEMU, TCG)", (check, first)))
    print("One row per program and kernel, from `liveprof --check -v` (instructions the "
          "verifier processed; stack in bytes of the program's frame, then of each function "
          "it calls, as the verifier lists them; the load time of the program's capability, "
          "all its programs together). *First sample*: `liveprof -p PID` to its first "
          f"`--interval 0.005` line with samples, median of {REPS}. The QEMU guests run "
          "under TCG, several times slower than the host.\n")
    print("| kernel | capability | program | insns | stack | load | first sample |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, (check, first_us) in kernels:
        rows, first = parse(check, first_us)
        if not rows:
            print(f"| {name} | (no --check output) | | | | | {first} |")
        for i, (cap, prog, insns, stack, ms) in enumerate(rows):
            print(f"| {name if i == 0 else ''} | {cap} | {prog} | {insns} | {stack} | "
                  f"{ms + ' ms' if ms else ''} | {first if i == 0 else ''} |")


if __name__ == "__main__":
    main()
