"""Bounded libFuzzer runs of liveprof's parsers of hostile input.

Each tests/fuzz/fuzz_NAME.c is built with clang -fsanitize=fuzzer,address,
undefined against the sources it needs (not through the Makefile) and run for
LIVEPROF_FUZZ_SECONDS (default 10) from the seed corpus tests/fuzz/corpus/NAME.
New inputs go to a scratch directory, never into the committed corpus. A
crash, sanitizer report, leak or hang fails the test and prints the
reproducer (path, hex dump, and the command that replays it).
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FUZZ = ROOT / "tests" / "fuzz"
SECONDS = int(os.environ.get("LIVEPROF_FUZZ_SECONDS", "10"))
CLANG = shutil.which("clang")

PROFILE = ["user/profile/read_folded.c", "user/profile/read_pprof.c", "user/profile/pb_read.c",
           "user/profile/profile.c", "user/util/util.c"]
EMIT = ["user/synth/emit.c", "user/synth/emit_c.c", "user/synth/emit_go.c", "user/synth/emit_python.c",
        "user/synth/emit_ruby.c", "user/synth/emit_tree.c", "user/util/atomic_file.c"]
HARNESSES = {
    "folded": PROFILE,
    "pprof": PROFILE,
    "scenario": ["user/synth/scenario.c"] + PROFILE + EMIT,
    "query": ["user/serve/query.c"],
    "elf": ["dwarf/elf_symtab.c", "dwarf/sym_dwarf.c", "user/util/util.c"],
}
LIBS = ["-lelf", "-ldw", "-lz", "-lm", "-lpthread"]


def _fuzzer_works():
    if not CLANG:
        return "clang is not installed"
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "t.c"
        src.write_text("#include <stdint.h>\n#include <stddef.h>\n"
                       "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)"
                       "{ (void)d; (void)n; return 0; }\n")
        r = subprocess.run([CLANG, "-fsanitize=fuzzer", str(src), "-o", str(Path(d) / "t")],
                           capture_output=True, text=True)
        if r.returncode:
            return "clang cannot link -fsanitize=fuzzer (libclang-rt-14-dev missing?)"
    return None


SKIP = _fuzzer_works()


def _build_cmd(name, out):
    srcs = [str(FUZZ / f"fuzz_{name}.c")] + [str(ROOT / s) for s in HARNESSES[name]]
    return [CLANG, "-g", "-O1", "-fsanitize=fuzzer,address,undefined",
            "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer",
            "-D_GNU_SOURCE", "-std=gnu11", f"-I{ROOT}", f"-I{ROOT / 'build'}",
            "-o", str(out)] + srcs + LIBS


@pytest.fixture(scope="module")
def fuzz_dir():
    """Builds every harness at once (in parallel), then hands out the dir."""
    d = Path(tempfile.mkdtemp(prefix="liveprof-fuzz-"))
    builds = {}
    if SKIP is None:
        for name in HARNESSES:
            cmd = _build_cmd(name, d / f"fuzz_{name}")
            builds[name] = (cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                                  stderr=subprocess.STDOUT, text=True))
        for name, (cmd, p) in builds.items():
            out, _ = p.communicate()
            (d / f"build_{name}.log").write_text(" ".join(cmd) + "\n" + out)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _build(name, out):
    if not out.exists():
        log = out.parent / f"build_{name}.log"
        pytest.fail("building the fuzzer failed:\n"
                    + (log.read_text()[-3000:] if log.exists() else "no log"))


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


@pytest.mark.skipif(SKIP is not None, reason=SKIP or "")
@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_fuzz(name, fuzz_dir):
    seeds = FUZZ / "corpus" / name
    assert seeds.is_dir() and any(seeds.iterdir()), f"no seed corpus in {seeds}"
    exe = fuzz_dir / f"fuzz_{name}"
    _build(name, exe)
    work = fuzz_dir / f"work_{name}"
    arts = fuzz_dir / f"crash_{name}"
    work.mkdir()
    arts.mkdir()
    cmd = [str(exe), str(work), str(seeds), f"-max_total_time={SECONDS}",
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
