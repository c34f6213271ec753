"""Smoke tests of the command-line scripts (run as subprocesses; skipped without the bpy module)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "scripts" / "anim_signals_cli.py"
HAS_BPY = importlib.util.find_spec("bpy") is not None
needs_bpy = pytest.mark.skipif(not HAS_BPY, reason="needs the bpy module (the project's .venv)")


def run(*args, timeout=300):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def _load_cli():
    spec = importlib.util.spec_from_file_location("anim_signals_cli", CLI)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # imports no bpy at module level
    return mod


def test_cli_arguments_after_double_dash():
    cli = _load_cli()
    assert cli.script_args(["blender", "-b", "--python", "x.py", "--", "fit", "a.bvh"]) == ["fit", "a.bvh"]
    assert cli.script_args(["anim_signals_cli.py", "fit", "a.bvh"]) == ["fit", "a.bvh"]
    args = cli.build_parser().parse_args(["fit", "a.bvh", "--max-error-rotation", "1", "--mode", "LATENT"])
    assert args.max_error_rotation == 1.0 and args.mode == "LATENT" and args.max_error_location == 0.01


@needs_bpy
def test_cli_bad_input_exits_2(tmp_path):
    r = run(CLI, "fit", tmp_path / "missing.bvh")
    assert r.returncode == 2
    assert "no such file" in r.stderr
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    r = run(CLI, "fit", bad)
    assert r.returncode == 2
    assert "expected a .bvh or .blend" in r.stderr


@needs_bpy
@pytest.mark.slow
def test_cli_fits_a_generated_bvh(tmp_path):
    bvh = tmp_path / "tiny.bvh"
    frames = 60
    lines = [
        "HIERARCHY", "ROOT Hips", "{", "  OFFSET 0 0 0",
        "  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation",
        "  JOINT Spine", "  {", "    OFFSET 0 10 0", "    CHANNELS 3 Zrotation Xrotation Yrotation",
        "    End Site", "    {", "      OFFSET 0 10 0", "    }", "  }", "}",
        "MOTION", f"Frames: {frames}", "Frame Time: 0.0333333",
    ]
    import math

    for i in range(frames):
        t = i / frames
        v = [10 * t, 90 + 2 * math.sin(6 * t), 0, 20 * math.sin(2 * math.pi * t), 5 * t, 0,
             30 * math.sin(4 * math.pi * t), 0, 10 * math.cos(2 * math.pi * t)]
        lines.append(" ".join(f"{x:.5f}" for x in v))
    bvh.write_text("\n".join(lines) + "\n")
    out = tmp_path / "tiny_fitted.blend"
    r = run(CLI, "fit", bvh, "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    assert out.is_file()
    assert "->" in r.stdout and "saved" in r.stdout
