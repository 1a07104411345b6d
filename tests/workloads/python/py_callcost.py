"""py_callcost.py - what a call of a small Python function costs, for
--trace py: (tests/bench/bench_py_trace.py).

Once GOFILE exists, calls f(i) N times in a loop and prints the
nanoseconds per iteration; f returns i + 1. With "setprofile", a
sys.setprofile callback that counts f's calls runs meanwhile (the
in-process way to time a function, for comparison).

Usage: python3.11 py_callcost.py GOFILE N [setprofile]
"""
import os
import sys
import time


def f(i):
    return i + 1


def g(i):
    return i


def main():
    go, n = sys.argv[1], int(sys.argv[2])
    while not os.path.exists(go):
        time.sleep(0.01)
    calls = [0]
    if len(sys.argv) > 3 and sys.argv[3] == "setprofile":
        def prof(frame, event, arg):
            if event == "call" and frame.f_code.co_name == "f":
                calls[0] += 1
        sys.setprofile(prof)
    t0 = time.perf_counter_ns()
    for i in range(n):
        f(i)
    t1 = time.perf_counter_ns()
    sys.setprofile(None)
    print(f"{(t1 - t0) / n:.1f}", flush=True)
    time.sleep(3600)


main()
