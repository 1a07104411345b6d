"""py_shares.py - Python functions with a known share of the CPU.

Every call of unit() does the same work. Each round of Runner.round()
calls work_a() six times, work_b() three times and work_c() once, so of
the samples taken inside the three, 60%, 30% and 10% are in each (the
loop's own bookkeeping is outside all of them and not counted).
The ten calls come in a new random order every round: a round lasts
about a millisecond, as long as a 999 Hz sampler's period, and in a
fixed order the samples would lock onto a few places in the round
instead of being independent draws of the 60/30/10 shares.
encode() runs json.dumps, a C extension, under a Python frame.

Usage: python3 py_shares.py [SECONDS] [THREADS]
With THREADS > 1 every thread runs the same rounds.
"""
import json
import random
import sys
import threading
import time


def unit():
    s = 0
    for i in range(2000):
        s += i * i
    return s


def work_a():
    return unit()


def work_b():
    return unit()


def work_c():
    return unit()


def encode():
    return json.dumps({"k": list(range(200)), "s": "x" * 200})


class Runner:
    def __init__(self):
        self.rng = random.Random()
        self.calls = [work_a] * 6 + [work_b] * 3 + [work_c]

    def round(self):
        self.rng.shuffle(self.calls)
        for call in self.calls:
            call()
        encode()


def run(end):
    r = Runner()
    while time.monotonic() < end:
        r.round()


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1e9
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    end = time.monotonic() + seconds
    others = [threading.Thread(target=run, args=(end,)) for _ in range(threads - 1)]
    for t in others:
        t.start()
    run(end)
    for t in others:
        t.join()


if __name__ == "__main__":
    main()
