"""py_charge.py - Python calls whose net latency liveprof must not change
by sampling them or by probing the calls inside them (issue 15).

Once GOFILE exists (the test creates it when liveprof's probes are in),
runs MODE for SECONDS and prints "done N level NS raw A B C": N traced
calls made, NS and A B C as said below (0 where the mode has none):

  const: work() in a loop. Every call does the same ITERS iterations of
         arithmetic, with no branch that depends on anything, so which
         calls a --split py:work@p50 calls slow is the machine's noise,
         and a sample lands in a call with a chance that grows with the
         call's time on CPU: among the sampled calls, the share above the
         threshold is the length-weighted share of all calls above it
         (each call weighted by its chance of a sample, min(1, length x
         rate)), which every call's latency gives; a sample's own cost
         that is not charged back pushes it higher, an over-charge lower.
  mix:   rounds of call(kind): once() (work), down(DEEP) (DEEP levels
         of recursion, then work), and three of thrice() (work three
         times), so a --split py:call@p50 puts its threshold among the
         thrice calls, far above the others (3 x work against 1 x work,
         and this VM's slow mode runs work 1.3-1.6 x slower): a
         sample in once() or down() is in a fast call unless the call
         was preempted, as likely for one kind as the other, since both
         run the same work and a level costs a few tens of ns. Probes of
         nested frames not charged back at their cost make the deep
         calls slower (DEEP x 2.3 us before this was fixed: as slow as
         the threshold), and their samples slow. Beside "done", "raw"
         gives the mean length of each kind as this process saw it,
         probes and samples included: a longer call is likelier to be
         preempted, which no charge can undo, and the deep calls' probes
         make them longer.
  rec:   rounds of top0(), top8() and top16(): each calls down(D), which
         recurses D levels (D = 0, 8, 16) and calls work() at the bottom.
         A level does nothing but one call, so the truth is
         top16 - top0 = 2 x (top8 - top0) = 16 x what one level costs
         with no probe at all, a few tens of ns (printed beside "done" as
         "level NS", timed here with no liveprof): the probes of the
         nested frames must come back out of top's net latency, whether
         down is traced or not.

With TIMES (const only), each call's start and end on CLOCK_MONOTONIC
(the clock liveprof stamps calls with), in ns, go to that file as pairs
of native int64: a sampled call's own slowdown is its length less its
neighbours', the truth its charge is checked against.

Usage: python3.11 py_charge.py GOFILE const|mix|rec SECONDS [TIMES]
"""
import array
import os
import sys
import time

ITERS = 1200  # work(): 37-39 us on Debian's python3.11 here, 48-60 when the VM runs slow
LEVELS = 16
DEEP = 32  # levels of down() in a deep call of mode mix
MIX = (0, 1, 2, 2, 2)  # once, deep, three thrice: kinds in a round of mix


def work():
    acc = 0
    for i in range(ITERS):
        acc += i ^ 5
    return acc


def down(d):
    if d:
        return down(d - 1)
    return work()


def once():
    return work()


def thrice():
    work()
    work()
    return work()


def call(kind):
    """The traced function of mode mix: one of three kinds of call."""
    if kind == 0:
        return once()
    if kind == 1:
        return down(DEEP)
    return thrice()


def top0():
    return down(0)


def top8():
    return down(8)


def top16():
    return down(16)


def bare(d):
    """down() without the work at the bottom: what its levels cost."""
    if d:
        return bare(d - 1)
    return 0


def level_ns(batches=50):
    """ns one level of down() adds, timed with no probe (before GOFILE):
    the median of (bare(16) - bare(0)) / 16 over batches of 1000 (the
    work at the bottom would drown a level's few tens of ns in its noise)."""
    per = []
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        for _ in range(1000):
            bare(0)
        t1 = time.perf_counter_ns()
        for _ in range(1000):
            bare(LEVELS)
        t2 = time.perf_counter_ns()
        per.append(((t2 - t1) - (t1 - t0)) / 1000 / LEVELS)
    per.sort()
    return per[len(per) // 2]


def main():
    go, mode, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    level = level_ns() if mode == "rec" else 0
    while not os.path.exists(go):
        time.sleep(0.01)
    n = 0
    times = array.array("q")
    spent, calls = [0, 0, 0], [0, 0, 0]
    clock = time.monotonic_ns
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if mode == "mix":
            for _ in range(10):
                for k in MIX:
                    t0 = clock()
                    call(k)
                    spent[k] += clock() - t0
                    calls[k] += 1
            n += 10 * len(MIX)
        elif mode == "rec":
            for _ in range(20):
                top0()
                top8()
                top16()
            n += 60
        else:
            for _ in range(50):
                t0 = clock()
                work()
                t1 = clock()
                times.append(t0)
                times.append(t1)
            n += 50
    if len(sys.argv) > 4:
        with open(sys.argv[4], "wb") as f:
            times.tofile(f)
    raw = " ".join(f"{spent[k] / max(calls[k], 1):.0f}" for k in range(3))
    print(f"done {n} level {level:.1f} raw {raw}", flush=True)


main()
