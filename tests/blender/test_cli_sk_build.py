"""``sk-build`` (scripts/cli/spatial_keyframes.py): spatial keyframes of a clip built by the command line
in its own process, checked from here.

The clip is the core's generated biped written as a BVH (``write_bvh`` of tests/core/test_cli_sk_compact.py).
The expectations are independent of the command: the markers the saved .blend holds (its ID properties,
read after reopening it) against ``compact_clip`` on the rotations the core's own BVH reader gets from the
same file (Blender's importer turns every bone's rotation into its rest frame, a conjugation that eq. (1),
the selections, MDS and Algorithm 1 do not see), and the PNG read back by Blender's image loader, the
MARKER colour at the markers' pixels. Bad options are refused in-process with Blender hidden (exit code
2, nothing written); a build the operator refuses exits 1 in a real run.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest
from _bl_helpers import ext_module, shared_data

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "scripts" / "anim_signals_cli.py"
PROP = "anim_signals_spatial_keyframes"
SIZE = (480, 360)


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# the sk-compact tests' BVH writer (ZXY channels, scipy's Euler conversion), shared rather than copied
write_bvh = _module("_sk_compact_bvh_writer", ROOT / "tests" / "core" / "test_cli_sk_compact.py").write_bvh


@pytest.fixture
def sk(extension):
    return ext_module("anim_signals.spatialkeys")


def run_cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    """The command line in its own process (Blender's user resources: the scripts' own, not this session's)."""
    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    return subprocess.run([sys.executable, str(CLI), *map(str, args)], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=env)


def stored_model(path: Path, name: str) -> dict:
    """The spatial-keyframe group stored on ``name`` in the .blend at ``path`` (plain lists), read after
    opening the file here."""
    bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
    group = bpy.data.objects[name][PROP]
    return {k: (group[k].to_list() if hasattr(group[k], "to_list") else group[k]) for k in group.keys()}


def png_pixels(path: Path) -> np.ndarray:
    """The PNG as Blender's loader reads it: (H, W, 4) bytes, row 0 at the bottom."""
    img = bpy.data.images.load(str(path))
    try:
        w, h = img.size
        px = np.empty(w * h * 4, dtype=np.float32)
        img.pixels.foreach_get(px)
    finally:
        bpy.data.images.remove(img)
    return np.rint(px.reshape(h, w, 4) * 255.0).astype(int)


@pytest.fixture
def biped_bvh(tmp_path, sk):
    return write_bvh(tmp_path / "biped.bvh", sk.generated_biped(80, seed=4))


def test_sk_build_stores_the_cores_markers_and_draws_them(tmp_path, biped_bvh, sk):
    out, png = tmp_path / "out" / "biped_sk.blend", tmp_path / "out" / "canvas.png"
    r = run_cli("sk-build", biped_bvh, "--count", 7, "--projection", "MDS", "--png", png,
                "--width", SIZE[0], "--height", SIZE[1], "--out", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("  ")]
    assert len(lines) == 1 and lines[0].startswith("  biped: 7 markers, 80 frames, 17 joints, error "), r.stdout
    # the importer's notes and the temporary file's name are not shown (stderr may hold a library's warning)
    assert "zero length" not in r.stdout and ".partial-" not in r.stdout and "error" not in r.stderr.lower()
    assert sorted(p.name for p in out.parent.iterdir()) == ["biped_sk.blend", "canvas.png"]

    model = stored_model(out, "biped")
    assert bpy.context.scene.anim_signals.pose_space_canvas.shows == "SPATIAL_KEYFRAMES"
    clip = sk.read_bvh(biped_bvh)
    assert model["bones"] == clip.names and model["parents"] == clip.parents
    core = sk.compact_clip(clip.quaternions, clip.parents, count=7, selection="uniform", projection="mds",
                           optimise=True)
    assert model["keys"] == core.keys.tolist()
    markers = np.reshape(model["markers"], (-1, 2))
    extent = np.ptp(core.trajectory, axis=0).max()
    # Blender's float32 keys against the file's 6 decimals: the same markers to a millionth of the canvas
    np.testing.assert_allclose(markers, core.markers, atol=1e-5 * extent)
    np.testing.assert_allclose(np.reshape(model["trajectory"], (-1, 2)), core.trajectory, atol=1e-5 * extent)
    assert model["error"] == pytest.approx(
        sk.error_per_frame_per_joint(clip.quaternions, core.reconstruct(), sk.joint_weights(clip.parents)), rel=1e-4)

    # the PNG: every marker's pixel has the MARKER colour as 8-bit RGBA (the same view fit as the canvas's)
    canvas = ext_module("anim_signals.posespace.canvas")
    palette = ext_module("anim_signals.posespace.palette")
    marker_rgba = np.rint(np.asarray(palette.MARKER) * 255.0).astype(int)
    pixels = png_pixels(png)
    assert pixels.shape == (SIZE[1], SIZE[0], 4)
    shown = sk.canvas_model(core, 1.0)
    view = canvas.fit_space_view(canvas.drawable(shown), *SIZE)
    xy = np.rint(view.to_pixels(markers) - 0.5).astype(int)  # pixel i covers [i, i + 1), rows from the bottom
    is_marker = np.all(np.abs(pixels - marker_rgba) <= 1, axis=-1)
    for i, (x, y) in enumerate(xy):
        assert is_marker[y - 1:y + 2, x - 1:x + 2].any(), f"marker {i} at pixel {(x, y)}: {pixels[y, x]}"
    # and the MARKER colour nowhere else: only the diamonds are drawn in it
    ys, xs = np.nonzero(is_marker)
    nearest = np.min(np.hypot(xs[:, None] - xy[None, :, 0], ys[:, None] - xy[None, :, 1]), axis=1)
    assert nearest.max() <= 8.0 and len(xs) >= 7 * 20

    # the saved .blend as input: rebuilt with other settings on the armature --objects names
    again = tmp_path / "again.blend"
    r = run_cli("sk-build", out, "--objects", "biped", "--count", 5, "--selection", "scs", "--no-optimise",
                "--out", again, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "  biped: 5 markers, 80 frames" in r.stdout and "scs" in r.stdout
    model = stored_model(again, "biped")
    scs = sk.compact_clip(clip.quaternions, clip.parents, count=5, selection="scs", projection="mds", optimise=False)
    assert model["keys"] == scs.keys.tolist() and model["selection"] == "scs" and not model["optimised"]


def test_sk_build_failing_build_exits_1_and_writes_nothing(tmp_path, sk):
    """A clip that holds one pose on every frame: the operator refuses it (one error line, exit code 1, no file)."""
    still = sk.generated_biped(40, seed=1)
    still = dataclasses.replace(still, quaternions=np.repeat(still.quaternions[:1], 40, axis=0))
    bvh = write_bvh(tmp_path / "still.bvh", still)
    r = run_cli("sk-build", bvh, "--count", 4, "--png", tmp_path / "o" / "c.png", "--out", tmp_path / "o" / "s.blend",
                cwd=tmp_path)
    assert r.returncode == 1, (r.stdout, r.stderr)
    errors = [ln for ln in r.stderr.splitlines() if "error" in ln.lower()]  # (4.2's venv: a cma import warning too)
    assert len(errors) == 1 and errors[0].startswith("error: still: ") and "holds only 1 distinct pose" in errors[0]
    assert "Traceback" not in r.stderr and sorted(p.name for p in tmp_path.iterdir()) == ["still.bvh"]


@pytest.fixture
def cli_in_process(monkeypatch, tmp_path):
    """``main(argv) -> (code, stderr)`` in this process in ``tmp_path/run``, with ``bpy`` unimportable: a
    refusal that came after Blender started would exit 1 ("Blender is needed"), not 2."""
    cli = _module("anim_signals_cli", CLI)
    (tmp_path / "run").mkdir()
    monkeypatch.chdir(tmp_path / "run")

    def run(*argv, capsys):
        capsys.readouterr()
        with monkeypatch.context() as m:
            m.setitem(sys.modules, "bpy", None)
            code = cli.main(["anim_signals_cli.py", *map(str, argv)])
        return code, capsys.readouterr().err

    return run


@pytest.mark.parametrize("extra, message", [
    (["--ratio", "0"], "--ratio: must be between 0.001 and 1"),
    (["--ratio", "nan"], "--ratio: must be a finite number"),
    (["--count", "2"], "--count: must be at least 3"),
    (["--count", "5", "--ratio", "0.1"], "not allowed with argument"),
    (["--projection", "umap"], "--projection: invalid choice: 'umap'"),
    (["--selection", "random"], "--selection: invalid choice: 'random'"),
    (["--width", "32", "--png", "c.png"], "--width: must be between 64 and 8192"),
    (["--width", "320"], "--width and --height go with --png"),
    (["--png", "canvas.jpg"], "--png must be a .png file"),
    (["--out", "result.txt"], "--out must be a .blend file"),
    (["--out", "notes.txt/x.blend"], "is a file, not a folder"),
    (["--count", "61"], "60 frames, fewer than the --count 61 markers"),
    ([], "60 frames at --ratio 0.03 give 2 keyframe(s)"),
])
def test_sk_build_bad_options_exit_2_before_blender(tmp_path, sk, cli_in_process, capsys, extra, message):
    bvh = write_bvh(tmp_path / "short.bvh", sk.generated_biped(60, seed=2))
    (tmp_path / "run" / "notes.txt").write_text("a file where a folder would be")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code, err = cli_in_process("sk-build", bvh, *extra, capsys=capsys)
    assert code == 2, err
    assert message in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("source, message", [("missing.bvh", "no such file"), ("clip.obj", "unsupported input")])
def test_sk_build_bad_inputs_exit_2_before_blender(tmp_path, cli_in_process, capsys, source, message):
    (tmp_path / "clip.obj").write_text("v 0 0 0\n")
    code, err = cli_in_process("sk-build", tmp_path / source, capsys=capsys)
    assert code == 2 and message in err, err


@pytest.mark.shared_data
def test_sk_build_on_a_shared_clip(tmp_path, sk):
    bvh = shared_data("mocap", "depressed_18_000.bvh")
    out, png = tmp_path / "depressed.blend", tmp_path / "depressed.png"
    r = run_cli("sk-build", bvh, "--count", 8, "--png", png, "--out", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    clip = sk.read_bvh(bvh)
    n, j = clip.quaternions.shape[:2]
    assert f"  depressed_18_000: 8 markers, {n} frames, {j} joints" in r.stdout
    model = stored_model(out, "depressed_18_000")
    core = sk.compact_clip(clip.quaternions, clip.parents, count=8)
    assert model["keys"] == core.keys.tolist() and model["bones"] == clip.names
    extent = np.ptp(core.trajectory, axis=0).max()
    np.testing.assert_allclose(np.reshape(model["markers"], (-1, 2)), core.markers, atol=1e-5 * extent)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
