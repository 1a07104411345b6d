"""`make check-layers` (tests/layers/check_layers.py) passes on the tree and
fails, naming the file, on a reference against the arrows planted in a copy:

    user/cli -> {ui-tui, user/serve} -> user/session -> user/profile
             -> {dwarf, bpf} -> user/util          (user/synth -> user/profile)

Includes are checked on a copy of the layer folders with one line added;
symbols on a build directory of links to the real objects plus one small
object, compiled here, that calls a function of a higher layer.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tests" / "layers" / "check_layers.py"
BUILD = ROOT / "build"
LAYER_DIRS = ["user", "dwarf", "bpf", "ui-tui"]  # every folder check_layers reads


def run_check(*args):
    return subprocess.run([sys.executable, str(CHECK), *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def objects_of(folder):
    objs = sorted((BUILD / folder).rglob("*.o"))
    if not objs:
        pytest.fail(f"no objects in build/{folder}: run `make`", pytrace=False)
    return objs


@pytest.fixture(scope="module")
def tree_copy():
    """The layer folders' sources, copied (without build products)."""
    d = Path(tempfile.mkdtemp(prefix="liveprof-layers-"))
    for folder in LAYER_DIRS:
        shutil.copytree(ROOT / folder, d / folder,
                        ignore=shutil.ignore_patterns("*.o", "*.d", "*.a", "node_modules"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_tree_passes():
    objects_of("user/profile")  # the symbol check needs `make` to have run
    r = run_check("--root", ROOT, "--build", BUILD)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "every include and symbol follows the arrows" in r.stdout


def test_copy_passes(tree_copy):
    """The control: the copy itself is clean, so a failure below is the plant's."""
    r = run_check("--no-symbols", "--root", tree_copy)
    assert r.returncode == 0, r.stdout + r.stderr


# (folder of the file that gets the line, the line): each points against an arrow
PLANTS = [
    ("user/profile", '#include "ui-tui/tui.h"'),  # profile -> tui: the brief's example
    ("user/profile", '#include "user/session/daemon.h"'),  # profile -> session
    ("dwarf", '#include "bpf/liveprof.h"'),  # dwarf knows nothing of BPF
    ("user/util", '#include "user/profile/profile.h"'),  # util uses nothing
    ("user/session", '#include "user/serve/serve.h"'),  # session -> serve
    ("user/synth", '#include "user/session/daemon.h"'),  # synth -> session
    ("ui-tui", '#include "liveprof.skel.h"'),  # only the session loads BPF
    ("ui-tui", '#include "user/session/bpf_session.h"'),  # the session's private header
]


@pytest.mark.parametrize("folder,line", PLANTS, ids=[f"{f}:{l.split()[1]}" for f, l in PLANTS])
def test_planted_include_fails(tree_copy, folder, line):
    victim = sorted((tree_copy / folder).glob("*.c"))[0]
    rel = victim.relative_to(tree_copy)
    original = victim.read_text()
    victim.write_text(original + "\n" + line + "\n")
    try:
        r = run_check("--no-symbols", "--root", tree_copy)
    finally:
        victim.write_text(original)
    assert r.returncode != 0, f"check_layers accepted {line} in {rel}:\n{r.stdout}"
    assert str(rel) in r.stderr, f"the message does not name {rel}:\n{r.stderr}"
    assert line.split('"')[1] in r.stderr, r.stderr


def defined_functions(objs):
    """Global functions (nm type T) the objects define."""
    out = subprocess.run(["nm", "-g", "--defined-only", *map(str, objs)], capture_output=True,
                         text=True, check=True).stdout
    return sorted({p[2] for p in (l.split() for l in out.splitlines()) if len(p) == 3
                   and p[1] == "T"})


@pytest.fixture(scope="module")
def linked_build():
    """A build directory of links to the real objects of every layer."""
    d = Path(tempfile.mkdtemp(prefix="liveprof-layers-build-"))
    for folder in LAYER_DIRS:
        for obj in (BUILD / folder).rglob("*.o"):
            link = d / obj.relative_to(BUILD)
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(obj, link)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_linked_build_passes(linked_build):
    """The control for the symbol plants."""
    objects_of("ui-tui")
    r = run_check("--root", ROOT, "--build", linked_build)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("lower,higher", [("user/profile", "ui-tui"),
                                          ("dwarf", "user/session"),
                                          ("user/util", "user/profile")])
def test_planted_symbol_fails(tmp_path, linked_build, lower, higher):
    target = defined_functions(objects_of(higher))[0]
    src = tmp_path / "planted.c"
    src.write_text(f"void {target}(void);\nvoid planted_ref(void)\n{{\n\t{target}();\n}}\n")
    obj = linked_build / lower / "planted.o"
    subprocess.run(["cc", "-c", "-o", str(obj), str(src)], check=True)
    try:
        r = run_check("--root", ROOT, "--build", linked_build)
    finally:
        obj.unlink()
    assert r.returncode != 0, f"check_layers accepted {lower} calling {higher}'s {target}"
    assert f"{lower}/planted.o" in r.stderr and target in r.stderr, r.stderr
