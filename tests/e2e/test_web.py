"""The live web UI in a real browser: Debian's chromium driven by puppeteer-core
(tests/web/drive_ui.js, installed by `make deps`).

Ground truth: handler.c (cpu mode) runs slow_path() only in every 32nd call of
handle(), so a split of handle must rank slow_path first, significant.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from serve_util import Server

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "tests" / "web"


def test_web_ui_flame_zoom_split(liveprof, procs, wl, tmp_path):
    if not (WEB / "node_modules" / "puppeteer-core").exists():
        pytest.skip("puppeteer-core is not installed (make deps)")
    if not shutil.which("chromium") or not shutil.which("node"):
        pytest.skip("chromium or node missing (make deps)")
    p = procs.start([wl("handler"), "cpu", "180"])
    s = Server(liveprof, ["-p", p.pid, "-F", "499"], tmp_path)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    try:
        r = subprocess.run(["node", str(WEB / "drive_ui.js"), s.url + "/", str(shots), "handle"],
                           capture_output=True, text=True, timeout=240, cwd=str(WEB))
        err = s.stderr()
        alive = s.alive()
    finally:
        s.stop()
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"\nweb UI: {out['updates']} updates in {out['update_seconds']:.1f}s, "
          f"longest gap {out['max_gap_ms']} ms; ranks {[x['frame'] for x in out['ranks']]}; "
          f"screenshots in {shots}")
    assert not out["errors"], out["errors"]
    assert alive, err
    # At least one update a second, without a reload, and the data moved.
    assert out["updates"] >= out["update_seconds"] - 1, out
    assert out["max_gap_ms"] is not None and out["max_gap_ms"] <= 1000, out
    assert out["samples_grew"], out
    # Names in the DOM; slow_path is a share of handle's samples that the
    # source fixes only roughly (20x the work in 1 of 20 calls), so just ask
    # that both are drawn.
    for name in ("handle", "slow_path", "parse_request"):
        assert out["frames"].get(name, 0) > 0, out["frames"]
    # Zoom: the clicked frame becomes the full-width top box.
    z = out["zoom"]
    assert "zoomed on handle" in z["what"] and z["first"] == "handle", z
    assert z["firstWidth"] >= 0.95 * z["svgWidth"], z
    assert out["search"]["matches"] >= 1 and "matched" in out["search"]["text"], out["search"]
    # The split, started from the page, ranks slow_path first and significant.
    assert "splitting 'handle'" in out["split_msg"], out
    assert out["ranks"] and out["ranks"][0]["frame"] == "slow_path", out["ranks"]
    assert out["ranks"][0]["sig"], out["ranks"]
    assert out["mode"] == "diff"
    assert out["window_set"] and out["untraced"], out
    assert out["csrf_less"] == 403, out
    assert "403 POST '/api/command'" in err, err
    for shot in ("1-flame.png", "2-zoomed.png", "3-split-diff.png"):
        assert (shots / shot).stat().st_size > 1000, shot
