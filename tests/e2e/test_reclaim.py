"""Reclaim of idle stacks (user/session/reclaim.h): memory that stays flat
over long runs must not cost the whole-run profile anything it shows.

tests/workloads/phases.c runs phase A (a_l/a_r paths to a_leaf) for 4 s,
then phase B (b_l/b_r to b_leaf) for 10 s, then phase A again for 3 s.
With a 2 s window, phase A's stacks are idle from the first reclaim pass
on (every 10 s, here at 10 s): they are folded into kept stacks with the
same frames and released. A stack sheds its addresses once symbolized,
as it is sampled first, and is still found by them. Phase A's second run
samples those very stacks again: the kept ones are found under their ids,
the released ones are new again, with a kept twin. The whole-run profile
must still give phase A its share of the CPU, which the workload measures
itself (thread CPU time per phase), lose no sample, and show each path
once.
"""
import stats


def folded_counts(path):
    rows = []
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        rows.append((stack.split(";"), int(n)))
    return rows


def test_idle_stacks_folded_whole_run_kept(run_lp, wl, tmp_path):
    truth = tmp_path / "phases.truth"
    r = run_lp(["-F", "499", "--window", "2", "-d", "60", "--",
                wl("phases"), "4", "10", str(truth), "3"], timeout=90)
    assert r.rc == 0, r.stderr
    js = r.json
    cpu = dict(line.split() for line in truth.read_text().splitlines())
    a_cpu, b_cpu = float(cpu["a"]), float(cpu["b"])
    rows = folded_counts(r.outdir / "out.folded")
    total = sum(n for _, n in rows)
    a = sum(n for fr, n in rows if "a_l" in fr)
    b = sum(n for fr, n in rows if "b_l" in fr)
    mixed = [";".join(fr) for fr, _ in rows if "a_l" in fr and "b_l" in fr]
    print(f"samples {js['samples']}, folded {total}, A {a}, B {b}; stacks held "
          f"{js['distinct_stacks']}, released {js['stacks_released']}, kept "
          f"{js['stacks_kept']}, shed {js['stacks_shed']}; CPU A {a_cpu:.3f} s, "
          f"B {b_cpu:.3f} s")
    # The pass ran and released phase A's stacks: without reclaim, nothing is.
    assert js["stacks_released"] > 0, "no stack was reclaimed"
    assert js["stacks_kept"] > 0
    # Stacks gave up their addresses as they were symbolized, not only
    # the kept ones as reclaim kept them.
    assert js["stacks_shed"] > js["stacks_kept"]
    # A path sampled again after its kept stack was shed is one path.
    paths = [";".join(fr) for fr, _ in rows]
    assert len(set(paths)) == len(paths), "a path shows more than once"
    # Folding loses no sample and moves none to another path.
    assert total == js["samples"], "samples lost or made up by folding"
    assert not mixed, f"a folded stack crosses the phases: {mixed[:3]}"
    # Every phase A path is a walk of a_l/a_r frames down to a_leaf or in
    # one of them: folding kept the frames of what it folded.
    for fr, _ in rows:
        if "a_l" in fr:
            walk = fr[fr.index("a_l"):]
            assert all(f in ("a_l", "a_r", "a_leaf") for f in walk), fr
            assert len(walk) <= 8, fr
    stats.share(a, a + b, a_cpu / (a_cpu + b_cpu),
                "phase A's share of the whole run, after its stacks were folded")
