#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Why `validate --lang go` drifted between runs (issue 12): a simulation.

The Go backend used to run rounds of ~10 ms of CPU whose lengths followed a
golden-ratio sequence (0.75x-1.25x), each round doing the 5 functions of the
issue's profile one after the other. A 99 Hz sampling clock has a period of
10.10 ms. When the calibration (best of 5 timings, so it varies 3-6% between
runs) put the mean round near that period, the samples kept landing at the
same point of the rounds and one function got far more than its share.

This replays that schedule against a periodic sampling clock (with and
without timer jitter) for mean rounds from -20% to +20% of the target, and
the fixed schedule (~1 ms rounds of random length, 0.5x-1.5x, as the C
backend had) the same way. No profiler is involved: it isolates the schedule.
Run it with no argument for the summary, with "sweep" for TVD per mean round.
"""
import bisect
import random
import sys

SHARE = [.30, .25, .20, .15, .10]  # decode_frame, parse_header, checksum, write_reply, log_line
PHI = 0.6180339887498949


def schedule(mean_round, total, scheme, rng):
    t, r, seg = 0.0, 0, []
    while t < total:
        if scheme == "golden":  # before the fix
            g = r * PHI
            length = mean_round * (0.75 + 0.5 * (g - int(g)))
        else:  # after: random lengths
            length = mean_round * (0.5 + rng.random())
        for i, s in enumerate(SHARE):
            seg.append((t, i))
            t += length * s
        r += 1
    return seg


def run(mean_round, scheme, n=990, period=1 / 99, jitter=0.0, seed=0):
    """TVD of @n samples taken every @period (+- @jitter) from the schedule."""
    rng = random.Random(seed)
    seg = schedule(mean_round, n * period + 1, scheme, rng)
    starts = [s for s, _ in seg]
    t, cnt = rng.random() * period, [0] * len(SHARE)
    for _ in range(n):
        cnt[seg[bisect.bisect_right(starts, t) - 1][1]] += 1
        t += period + rng.gauss(0, jitter)
    return 0.5 * sum(abs(c / n - s) for c, s in zip(cnt, SHARE)), cnt[0] / n


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "sweep":
        for k in range(41):
            m = 0.010 * (0.8 + 0.4 * k / 40)
            tvds = [run(m, "golden", jitter=20e-6, seed=s)[0] for s in range(3)]
            print("golden, mean round %.2f ms (period %.2f ms): TVD %s"
                  % (m * 1e3, 1e3 / 99, " ".join("%.3f" % v for v in tvds)))
        return
    for scheme, base in (("golden", 0.010), ("random", 0.001)):
        for jitter in (0.0, 20e-6):
            worst, tvds = (0, 0), []
            for k in range(41):
                m = base * (0.8 + 0.4 * k / 40)  # the calibration off by -20%..+20%
                vals = [run(m, scheme, jitter=jitter, seed=s) for s in range(5)]
                tvds += [v[0] for v in vals]
                worst = max(worst, max(vals))
            tvds.sort()
            print("%-6s rounds %4.1f ms, jitter %2.0f us: TVD median %.3f, 90%% %.3f, max %.3f "
                  "(decode_frame %.1f%% there)" % (scheme, base * 1e3, jitter * 1e6,
                                                   tvds[len(tvds) // 2], tvds[int(.9 * len(tvds))],
                                                   worst[0], 100 * worst[1]))
    print("multinomial noise alone at n=990: mean ~0.022, 99% ~0.045")


if __name__ == "__main__":
    main()
