"""Off-CPU ground truth for liveprof's Python frames (issue 15).

Each round sleeps 120 ms in nap_long() and 40 ms in nap_short(), so of
the time the main thread spends blocked inside the two, 3/4 is in
nap_long, give or take each sleep's overshoot (its wake-up latency).
Usage: py_offcpu.py SECONDS
"""
import sys
import time


def nap_long():
    time.sleep(0.120)


def nap_short():
    time.sleep(0.040)


def main(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        nap_long()
        nap_short()


if __name__ == "__main__":
    main(float(sys.argv[1]))
