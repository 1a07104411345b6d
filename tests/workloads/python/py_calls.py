"""py_calls.py - Python calls whose counts and latencies are known from
this source, for --trace py: and --split py: (tests/e2e/test_py_trace.py).

Once GOFILE exists (the test creates it when liveprof's probes are in),
it runs ROUNDS rounds and prints "done". Round i:
  - mid(i) once: mid calls leaf twice, and when i % SLOW_EVERY ==
    SLOW_EVERY - 1 also slow_extra; so mid ROUNDS times, slow_extra
    ROUNDS // SLOW_EVERY times (2% of the mid calls);
  - leaf once more directly: leaf 3 * ROUNDS times in all;
  - risky(i) under try: it raises ValueError when i % 4 == 0 (a
    quarter of its calls end by an exception), ROUNDS times;
  - fact(DEPTH), recursive: DEPTH calls of fact per round;
  - late(i), a closure made only after the go (qualname
    "make.<locals>.late", a code object that did not exist when liveprof
    attached), ROUNDS times.
Each function spins on the wall clock (time.perf_counter_ns), so a call
lasts at least its spin: leaf LEAF_US, slow_extra SLOW_US, risky
RISKY_US, late LATE_US; fact and mid do no spinning of their own.

Usage: python3.11 py_calls.py GOFILE [ROUNDS]
"""
import os
import sys
import time

LEAF_US = 200
SLOW_US = 20000
RISKY_US = 100
LATE_US = 50
SLOW_EVERY = 50
DEPTH = 8


def spin(us):
    end = time.perf_counter_ns() + us * 1000
    while time.perf_counter_ns() < end:
        pass


def leaf(i):
    spin(LEAF_US)
    return i + 1


def slow_extra():
    spin(SLOW_US)


def mid(i):
    s = leaf(i) + leaf(i + 1)
    if i % SLOW_EVERY == SLOW_EVERY - 1:
        slow_extra()
    return s


def risky(i):
    spin(RISKY_US)
    if i % 4 == 0:
        raise ValueError(i)
    return i


def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)


def make():
    def late(i):
        spin(LATE_US)
        return i

    return late


def main():
    go = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    while not os.path.exists(go):
        time.sleep(0.01)
    late = make()
    raised = 0
    for i in range(rounds):
        mid(i)
        leaf(i)
        try:
            risky(i)
        except ValueError:
            raised += 1
        fact(DEPTH)
        late(i)
    print(f"done {rounds} rounds, {raised} raised", flush=True)
    time.sleep(3600)


main()
