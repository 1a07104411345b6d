"""py_rate.py - a CPU-bound Python loop that reports its own throughput.

Each iteration calls down eight Python frames and does a little arithmetic
at the bottom, so a sample holds a stack of interpreter frames to read.
Every 0.5 s it prints "T_NS RATE": CLOCK_MONOTONIC in ns and the
iterations per CPU-second of the process over the last period (the
process's own CPU time, so that other load on the machine does not count
as a slowdown). tests/bench/bench_interp.py reads it.

Usage: python3 py_rate.py [SECONDS]
"""
import sys
import time


def leaf(x):
    s = x
    for i in range(40):
        s += i * i
    return s


def level(depth, x):
    if depth == 0:
        return leaf(x)
    return level(depth - 1, x + 1)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1e9
    end = time.monotonic() + seconds
    n, sink = 0, 0
    t0, c0 = time.monotonic(), time.process_time()
    while True:
        for _ in range(200):
            sink += level(8, n)
            n += 1
        t = time.monotonic()
        if t - t0 >= 0.5:
            c = time.process_time()
            print(f"{time.monotonic_ns()} {n / (c - c0):.1f}", flush=True)
            n, t0, c0 = 0, t, c
            if t >= end:
                return sink


main()
