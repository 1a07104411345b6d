"""Bounded libFuzzer runs of liveprof's parsers of hostile input.

`make fuzzers` builds each tests/fuzz/fuzz_NAME.c into build-fuzz/fuzz_NAME
(clang -fsanitize=fuzzer,address,undefined, linked against the layer archives
compiled with the same instrumentation); this driver only runs what the
Makefile built. Each runs for LIVEPROF_FUZZ_SECONDS (default 4; `make fuzz`
runs them longer) from the seed
corpus tests/fuzz/corpus/NAME. New inputs go to a scratch directory, never
into the committed corpus. A crash, sanitizer report, leak or hang fails the
test and prints the reproducer (path, hex dump, and the command that replays
it).
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "tests" / "fuzz"
BUILT = ROOT / "build-fuzz"
SECONDS = int(os.environ.get("LIVEPROF_FUZZ_SECONDS", "4"))
# make test replays a fixed seed and a fixed number of inputs, so that two
# runs of the suite test the same inputs and a red run is reproducible;
# `make fuzz` (LIVEPROF_FUZZ_SECONDS set) explores with a random seed.
EXPLORE = "LIVEPROF_FUZZ_SECONDS" in os.environ
FIXED_RUNS = 1500
HARNESSES = sorted(p.stem[len("fuzz_"):] for p in FUZZ.glob("fuzz_*.c"))


@pytest.fixture(scope="module")
def fuzz_dir():
    d = Path(tempfile.mkdtemp(prefix="liveprof-fuzz-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _built(name):
    exe = BUILT / f"fuzz_{name}"
    src = FUZZ / f"fuzz_{name}.c"
    if not exe.is_file():
        pytest.fail(f"{exe.relative_to(ROOT)} is not built: run `make fuzzers`", pytrace=False)
    if exe.stat().st_mtime < src.stat().st_mtime:
        pytest.fail(f"{exe.relative_to(ROOT)} is older than {src.relative_to(ROOT)}: "
                    "run `make fuzzers`", pytrace=False)
    return exe


def _hexdump(path, limit=512):
    data = path.read_bytes()
    lines = []
    for off in range(0, min(len(data), limit), 16):
        chunk = data[off:off + 16]
        lines.append(f"{off:06x}  {chunk.hex(' '):<48}  "
                     + "".join(chr(b) if 32 <= b < 127 else "." for b in chunk))
    if len(data) > limit:
        lines.append(f"... ({len(data)} bytes)")
    return "\n".join(lines)


def test_corpus_is_small():
    total = sum(f.stat().st_size for f in (FUZZ / "corpus").rglob("*") if f.is_file())
    assert total < 1 << 20, f"tests/fuzz/corpus is {total} bytes; keep it under 1 MiB"


@pytest.mark.parametrize("name", HARNESSES)
def test_fuzz(name, fuzz_dir):
    seeds = FUZZ / "corpus" / name
    assert seeds.is_dir() and any(seeds.iterdir()), f"no seed corpus in {seeds}"
    exe = _built(name)
    work = fuzz_dir / f"work_{name}"
    arts = fuzz_dir / f"crash_{name}"
    work.mkdir()
    arts.mkdir()
    budget = [f"-max_total_time={SECONDS}"] if EXPLORE else \
        ["-seed=1", f"-runs={FIXED_RUNS}", f"-max_total_time={SECONDS * 10}"]
    cmd = [str(exe), str(work), str(seeds), *budget,
           "-timeout=20", "-rss_limit_mb=2048", "-max_len=65536",
           f"-artifact_prefix={arts}/", "-print_final_stats=1"]
    env = dict(os.environ, ASAN_OPTIONS="abort_on_error=0:detect_leaks=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=fuzz_dir,
                       timeout=SECONDS + 120)
    crashes = sorted(arts.iterdir())
    if r.returncode != 0 or crashes:
        msg = [f"fuzz_{name} failed (exit {r.returncode})", "replay: " + str(exe) + " FILE"]
        for c in crashes:
            keep = Path(tempfile.gettempdir()) / f"liveprof-{name}-{c.name}"
            shutil.copy(c, keep)
            msg.append(f"reproducer {keep}:\n{_hexdump(c)}")
        msg.append(r.stderr[-6000:])
        pytest.fail("\n".join(msg))
    assert "Done" in r.stderr or "stat::number_of_executed_units" in r.stderr, r.stderr[-2000:]
