"""``scripts/benchmark_spatial_keyframes.py``: its box-plot rule (the seed's Table 1 footnote) and an end-to-end
quick run on generated clips (no shared data needed)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "benchmark_spatial_keyframes.py"


def _load_benchmark():
    spec = importlib.util.spec_from_file_location("benchmark_spatial_keyframes", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_box_stats_follow_the_seeds_footnote():
    """Whiskers at the furthest data points within 1.5 IQR of the quartiles; points beyond are outliers."""
    bench = _load_benchmark()
    b = bench.box_stats([1.0, 2.0, 3.0, 4.0, 100.0, -50.0, 2.5])
    assert (b["q1"], b["q2"], b["q3"]) == (1.5, 2.5, 3.5)
    assert (b["w_bot"], b["w_top"], b["outliers"]) == (1.0, 4.0, 2)


def test_quick_run_on_generated_clips(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--generated", "--live-moves", "40", "--out",
                        str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((tmp_path / "benchmark_spatial_keyframes.json").read_text())
    assert len(res["clips"]) == 3
    # per clip: 2 selections x (4 temporal + 2 projections x 2 Algorithm 1 readings)
    assert all(len(c["rows"]) == 2 * (4 + 2 * 2) for c in res["clips"])
    table1 = res["summary"]["table1"]
    assert {"Linear", "Hermite", "Slerp", "1D-RBF", "MDS + Alg. 1", "t-SNE + Alg. 1"} == set(table1)
    anchor = res["summary"]["anchor"]
    assert anchor["tsne_us_ratio"] == pytest.approx(anchor["tsne_us"] / anchor["slerp_scs"])
    live = res["live"]
    assert live["bones"] == 60 and live["markers"] == 30 and live["max_error_at_markers"] < 1e-9
    md = (tmp_path / "benchmark_spatial_keyframes.md").read_text()
    assert md.startswith("# Spatial-keyframe benchmark") and "## Table 1 layout" in md and "| goal | met |" in md
    blender = res["live_blender"]
    if importlib.util.find_spec("bpy") is None:
        assert "no bpy module" in blender["skipped"] and "Skipped: no bpy module" in md
        return
    assert (blender["bones"], blender["markers"]) == (60, 30)
    for tool in ("navigate", "navigate_depsgraph", "move_marker"):
        assert blender[tool]["moves"] == 40 and 0.0 < blender[tool]["median_ms"] <= blender[tool]["p95_ms"]
    # the bones hold the core's pose after the last move (float32 storage), and no move was refused
    assert blender["navigate"]["max_error"] < 1e-6 and blender["move_marker"]["max_error"] < 1e-6
    assert blender["move_marker"]["refused"] == 0
    assert "## Live cursor pose update in Blender" in md and "| Navigate + depsgraph update" in md


def test_live_only_without_bpy_skips_the_blender_side(tmp_path, monkeypatch, capsys):
    """Plain Python (bpy not importable): --live-only times the core's update and says why Blender's is skipped."""
    bench = _load_benchmark()
    monkeypatch.setitem(sys.modules, "bpy", None)  # import bpy raises ImportError
    assert bench.main(["--live-only", "--live-calls", "30", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "benchmark_spatial_keyframes_live.json").read_text())
    assert "no bpy module" in res["live_blender"]["skipped"] and "clips" not in res
    assert res["live"]["calls"] == 30 and res["live"]["max_error_at_markers"] < 1e-9
    md = (tmp_path / "benchmark_spatial_keyframes_live.md").read_text()
    assert "Skipped: no bpy module" in md and "(core: RBF evaluation) | met" in md
    assert "skipped: no bpy module" in capsys.readouterr().err


def test_no_clips_is_a_clear_message(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), "--mocap", str(tmp_path / "absent"), "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0 and "no BVH clips in" in r.stderr and not list(tmp_path.iterdir())
