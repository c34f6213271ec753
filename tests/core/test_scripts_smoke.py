"""Smoke tests of the command-line scripts (run as subprocesses; skipped without the bpy module)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from anim_signals.library.generated import humanoid_bvh

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
    spec.loader.exec_module(mod)  # imports no bpy at module level; puts scripts/ on sys.path
    return mod


def _cli_tool(name):
    """A tool module of the command line (``scripts/cli/<name>.py``)."""
    _load_cli()
    return importlib.import_module(f"cli.{name}")


def test_cli_arguments_after_double_dash():
    cli = _load_cli()
    assert cli.script_args(["blender", "-b", "--python", "x.py", "--", "fit", "a.bvh"]) == ["fit", "a.bvh"]
    assert cli.script_args(["anim_signals_cli.py", "fit", "a.bvh"]) == ["fit", "a.bvh"]
    args = cli.build_parser().parse_args(["fit", "a.bvh", "--max-error-rotation", "1", "--mode", "LATENT"])
    assert args.max_error_rotation == 1.0 and args.mode == "LATENT" and args.max_error_location == 0.01


def test_cli_runs_without_scripts_on_the_path(tmp_path):
    """As under ``blender --python``: the entry point finds its ``cli`` package by itself."""
    code = (f"import runpy, sys; sys.argv = ['anim_signals_cli.py', '--help']; "
            f"runpy.run_path({str(CLI)!r}, run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    for command in ("fit", "loop", "blend", "compare", "pose-build", "pose-resample", "pose-bake", "db-build",
                    "reconstruct", "transfer", "sk-compact", "sk-build"):
        assert command in r.stdout


def test_cli_common_objects_and_folders(tmp_path):
    common = _cli_tool("common")

    class Ob:
        def __init__(self, name):
            self.name = name

    obs = [Ob("A"), Ob("B"), Ob("C")]
    assert common.pick_objects(obs, "") == obs
    assert [o.name for o in common.pick_objects(obs, "C, A")] == ["C", "A"]
    with pytest.raises(common.CliError, match="no pose space named X in f.blend") as ex:
        common.pick_objects(obs, "A,X", "pose space", "f.blend")
    assert ex.value.code == 2 and "pose spaces: A, B, C" in str(ex.value)
    (tmp_path / "b.csv").write_text("x")
    (tmp_path / "a.bvh").write_text("x")
    (tmp_path / "n.txt").write_text("x")
    found = common.expand_folders([tmp_path, tmp_path / "n.txt"], (".csv", ".bvh"))
    assert [p.rsplit("/", 1)[1] for p in found] == ["a.bvh", "b.csv", "n.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(common.CliError, match="no .csv files in the folder"):
        common.expand_folders([empty], (".csv",))
    db = _cli_tool("motion_db")
    with pytest.raises(db.CliError, match="one kind of clip"):
        db.db_inputs([tmp_path])


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


# --------------------------------------------------------------------------------------------------
# loop / blend / compare (motion manifolds)


def test_loop_arguments():
    cli = _cli_tool("loop_blend_compare")
    parse = _load_cli().build_parser().parse_args
    p = cli.loop_params(parse(["loop", "a.bvh"]))
    assert p["range_mode"] == "ACTION" and p["add_cycles"] and p["keep_original"] and p["travel"] == "AUTO"
    assert "frame_start" not in p
    p = cli.loop_params(parse(["loop", "a.bvh", "--start", "10", "--end", "50", "--no-cycles", "--replace"]))
    assert p["range_mode"] == "CUSTOM" and (p["frame_start"], p["frame_end"]) == (10, 50)
    assert not p["add_cycles"] and not p["keep_original"]
    p = cli.loop_params(parse(["loop", "a.blend", "--auto", "--min-period", "20", "--in-place"]))
    assert p["range_mode"] == "AUTO" and p["min_period"] == 20 and p["max_period"] == 0 and p["travel"] == "NONE"
    for bad, msg in ((["--auto", "--start", "3", "--end", "9"], "exclude"), (["--start", "3"], "together"),
                     (["--start", "9", "--end", "3"], "after"), (["--min-period", "5"], "--auto")):
        with pytest.raises(cli.CliError, match=msg) as ex:
            cli.loop_params(parse(["loop", "a.bvh", *bad]))
        assert ex.value.code == 2


def test_blend_arguments():
    cli = _cli_tool("loop_blend_compare")
    parse = _load_cli().build_parser().parse_args
    args = parse(["blend", "a.bvh", "b.bvh"])
    assert args.inputs == ["a.bvh", "b.bvh"] and args.cyclic == "AUTO" and not args.no_align
    assert cli.blend_weights(args) == {"weight": 0.5, "count": 0}
    assert cli.blend_weights(parse(["blend", "a.bvh", "b.bvh", "--weight", "0.25"])) == {"weight": 0.25, "count": 0}
    assert cli.blend_weights(parse(["blend", "a.bvh", "b.bvh", "--count", "3"]))["count"] == 3
    args = parse(["blend", "x.blend", "--action-a", "Walk", "--action-b", "Run", "--cyclic", "CLOSED"])
    assert args.action_a == "Walk" and args.action_b == "Run" and args.cyclic == "CLOSED"
    with pytest.raises(cli.CliError, match="exclude each other"):
        cli.blend_weights(parse(["blend", "a.bvh", "b.bvh", "--weight", "0.3", "--count", "2"]))
    for bad in (["--weight", "1.5"], ["--weight", "nan"], ["--count", "0"], ["--cyclic", "MAYBE"]):
        with pytest.raises(SystemExit):  # refused by the argument types (tests/core/test_cli_bad_input.py)
            parse(["blend", "a.bvh", "b.bvh", *bad])


def test_compare_arguments_and_inputs(tmp_path):
    cli = _cli_tool("loop_blend_compare")
    args = _load_cli().build_parser().parse_args(["compare", "dir", "x.bvh", "--features", "BODY", "--metric", "LINEAR",
                                          "--clusters", "4", "--out-dir", "o"])
    assert args.inputs == ["dir", "x.bvh"] and args.features == "BODY" and args.metric == "LINEAR"
    assert args.clusters == 4 and args.out_dir == "o" and not args.open and args.samples == 100
    folder = tmp_path / "clips"
    folder.mkdir()
    for n in ("b.bvh", "a.BVH", "notes.txt"):
        (folder / n).write_text("x")
    extra = tmp_path / "c.bvh"
    extra.write_text("x")
    scene = tmp_path / "s.blend"
    scene.write_text("x")
    bvhs, blend = cli.compare_inputs([folder, extra, folder / "b.bvh", scene])
    assert [p.rsplit("/", 1)[1] for p in bvhs] == ["a.BVH", "b.bvh", "c.bvh"] and blend == str(scene)
    with pytest.raises(cli.CliError, match="no such"):
        cli.compare_inputs([tmp_path / "missing"])
    with pytest.raises(cli.CliError, match="at most one"):
        cli.compare_inputs([scene, scene])
    with pytest.raises(cli.CliError, match="unsupported"):
        cli.compare_inputs([folder / "notes.txt"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(cli.CliError, match="no .bvh"):
        cli.compare_inputs([empty])


def test_compare_report_is_pure_python():
    cli = _cli_tool("loop_blend_compare")
    d = [[0.0, 1.0, 3.0], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]]
    meta = dict(features="BODY", metric="ELASTIC", cyclic=True, dendrogram="/x/dendrogram.png")
    payload, md = cli.compare_report(["a", "b", "c"], ["a.bvh", "b.bvh", "c.bvh"], d, [1, 1, 2], meta)
    assert payload["nearest"]["c"][0] == ["b", 2.0] and payload["clusters"] == {"a": 1, "b": 1, "c": 2}
    assert payload["distances"] == d and payload["metric"] == "ELASTIC"
    assert "| 1 | a, b |" in md and "| c | 2 | b (2), a (3) |" in md and "dendrogram.png" in md
    payload, md = cli.compare_report(["a", "b"], ["a.bvh", "b.bvh"], None, [1, 2], meta)
    assert payload["distances"] is None and "not available" in md


def write_humanoid_bvh(path, frames=48, *, swing=30.0, arms=0.0, cycles=1.0, speed=1.0, phase=0.0):
    """A tiny humanoid BVH (``anim_signals.library.generated.humanoid_bvh``) written to ``path``."""
    path.write_text(humanoid_bvh(frames, swing=swing, arms=arms, cycles=cycles, speed=speed, phase=phase))
    return path


@needs_bpy
def test_cli_loop_end_to_end(tmp_path):
    bvh = write_humanoid_bvh(tmp_path / "walk.bvh", frames=50, cycles=1.08)
    out = tmp_path / "walk_loop.blend"
    r = run(CLI, "loop", bvh, "--out", out, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert out.is_file() and "seam pose" in r.stdout and "walk.loop" in r.stdout
    r = run(CLI, "loop", bvh, "--start", "5", "--end", "3", timeout=60)
    assert r.returncode == 2 and "after" in r.stderr


@needs_bpy
def test_cli_blend_end_to_end(tmp_path):
    a = write_humanoid_bvh(tmp_path / "a.bvh", frames=40, swing=25.0)
    b = write_humanoid_bvh(tmp_path / "b.bvh", frames=50, swing=40.0, arms=20.0)
    out = tmp_path / "ab.blend"
    r = run(CLI, "blend", a, b, "--count", "2", "--out", out, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert out.is_file() and "a+b 0.33" in r.stdout and "a+b 0.67" in r.stdout


@needs_bpy
def test_cli_compare_end_to_end(tmp_path):
    import json

    clips = tmp_path / "clips"
    clips.mkdir()
    write_humanoid_bvh(clips / "walk1.bvh", frames=40, swing=30.0)
    write_humanoid_bvh(clips / "walk2.bvh", frames=46, swing=32.0, phase=0.8)
    write_humanoid_bvh(clips / "wave.bvh", frames=40, swing=5.0, arms=70.0, cycles=2.0)
    out = tmp_path / "cmp"
    r = run(CLI, "compare", clips, "--features", "BODY", "--clusters", "2", "--out-dir", out, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads((out / "distances.json").read_text())
    assert data["actions"] == ["walk1", "walk2", "wave"]
    d = data["distances"]
    assert d is not None and len(d) == 3 and d[0][0] == 0.0 and d[0][1] < d[0][2]
    assert data["clusters"]["walk1"] == data["clusters"]["walk2"] != data["clusters"]["wave"]
    assert data["nearest"]["walk1"][0][0] == "walk2"
    assert (out / "dendrogram.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| walk1 |" in (out / "compare.md").read_text()


def _load_benchmark_motion():
    spec = importlib.util.spec_from_file_location("benchmark_motion", ROOT / "scripts" / "benchmark_motion.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # no bpy at import: Blender is only loaded to read BVH clips
    return mod


def test_benchmark_motion_helpers_and_times_section(tmp_path):
    import json

    import numpy as np

    bm = _load_benchmark_motion()
    assert bm.purity(["a", "a", "b", "b"], [1, 1, 1, 2]) == 0.75
    d = np.array([[0, 1, 5, 6], [1, 0, 5, 6], [5, 5, 0, 2], [6, 6, 2, 0]], float)
    labels, sources = ["w", "w", "h", "h"], ["c1", "c2", "c3", "c3"]
    assert bm.nn_accuracy(d, labels, sources, cross_clip=False) == (1.0, 4)
    assert bm.nn_accuracy(d, labels, sources, cross_clip=True) == (1.0, 2)  # "h" only in one clip: left out
    feats = np.zeros((500, 3))
    assert [w.shape[0] for _, w in bm.windows_of(feats, 120.0)] == [240, 240]
    assert [w.shape[0] for _, w in bm.windows_of(feats[:100], 120.0)] == [100]
    r = bm.bone_matrices(np.array([[0.0, 0.0, np.pi / 2]]), [("b", [0, 1, 2], "XYZ")])[0, 0]
    assert np.allclose(r @ [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    assert np.isclose(bm.rot_angle(r, np.eye(3)), 90.0)
    assert bm.main(["--sections", "times", "--repeats", "1", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "benchmark_motion.json").read_text())
    assert res["times"]["project_closed"]["100"]["converged"]
    assert "srv.project_closed" in (tmp_path / "benchmark_motion.md").read_text()


def test_benchmark_report_helpers(tmp_path):
    _load_cli()  # scripts/ on sys.path
    report = importlib.import_module("benchmarking.report")
    assert [report.fmt(v) for v in (None, True, 0.0, float("nan"), 1234.5, 0.012345, 12.345, 7)] == [
        "—", "✓", "0", "–", "1234", "0.0123", "12.3", "7"]
    assert report.fmt(12.345, digits_from_one=4) == "12.35" and report.fmt(0.5, digits_from_one=4) == "0.5"
    assert report.table(("a", "b"), "lr", [(1, "x")]) == ["| a | b |", "|---|---:|", "| 1 | x |"]
    with pytest.raises(ValueError):
        report.table(("a", "b"), "l", [])
    report.write_report(tmp_path / "o", "r", "# r\n", {"x": __import__("numpy").float32(0.5)})
    assert (tmp_path / "o" / "r.md").read_text() == "# r\n" and '"x": 0.5' in (tmp_path / "o" / "r.json").read_text()


def test_benchmark_fit_speed_table():
    """The speed benchmark's table: before / after per row, the speed-up, the goal only for ours."""
    _load_cli()  # scripts/ on sys.path
    spec = importlib.util.spec_from_file_location("benchmark_fit_speed", ROOT / "scripts" / "benchmark_fit_speed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # no bpy at module level

    def clip(seconds, decimate=None):
        rows = {"FEWEST": dict(seconds=seconds, keys=100, keyed_frames=40, within=True, load=0.5)}
        if decimate is not None:
            rows["Decimate"] = dict(seconds=decimate, keys=300, load=0.5)
        return dict(clip="walk", frames=1500, curves=306, note="", rows=rows)

    runs = {"compiled": dict(warm_up_seconds=0.4, compiled=True, clips=[clip(1.5, decimate=30.0)]),
            "numpy": dict(warm_up_seconds=0.1, compiled=False, clips=[clip(9.0)])}
    text = mod.markdown(runs, mod.parse_args(["--out", "x"]))
    ours = next(line for line in text.splitlines() if "| FEWEST |" in line)
    assert "| 1.5 | 9 | 6 | ✓ |" in ours, ours
    decimate = next(line for line in text.splitlines() if "Blender Decimate" in line)
    assert "| 30 | — | — | — |" in decimate, decimate
    assert "within 2 s: 1 of 1" in text


@needs_bpy
def test_benchmark_pose_space_quick(tmp_path):
    """The pose-space benchmark runs end to end (--quick) and writes its tables; interpolation is exact."""
    import json

    r = run(ROOT / "scripts" / "benchmark_pose_space.py", "--quick", "--repeats", "2", "--out", tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((tmp_path / "benchmark_pose_space.json").read_text())
    assert (tmp_path / "benchmark_pose_space.md").read_text().startswith("# Pose-space benchmark")
    exact = [e for e in res["errors"] if e["k"] - 2 == e["l"] == e["m"] + 1]
    # exact up to near-duplicate frames merged as one site (the horse repeats after 24 frames to 4e-5)
    assert exact and all(e["max"] < 1e-4 for e in exact)
    assert all(r["blender_check_max_abs"] < 1e-4 for r in res["latency"] if "blender_check_max_abs" in r)


def _tiny_obj_and_pc2(folder):
    """A 6 x 4 grid bending over 12 frames, as an OBJ and a PC2 cache (generated; no shared data)."""
    import numpy as np

    from anim_signals.meshio.meshcache import write_pc2

    u, v = np.meshgrid(np.linspace(0, 1, 6), np.linspace(0, 1, 4))
    base = np.column_stack([u.ravel(), v.ravel(), np.zeros(u.size)])
    lines = [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in base]
    for r in range(3):
        for c in range(5):
            a = r * 6 + c + 1
            lines.append(f"f {a} {a + 1} {a + 7} {a + 6}")
    (folder / "grid.obj").write_text("\n".join(lines) + "\n")
    frames = []
    for i in range(12):
        w = np.sin(2 * np.pi * i / 12)
        p = base.copy()
        p[:, 2] = 0.3 * w * p[:, 0] ** 2 + 0.1 * np.cos(2 * np.pi * i / 12) * p[:, 1]
        frames.append(p)
    write_pc2(folder / "grid.pc2", np.array(frames))
    return folder / "grid.obj", folder / "grid.pc2"


def test_pose_cli_arguments():
    cli = _load_cli()
    args = cli.build_parser().parse_args(["pose-build", "a.obj", "--cache", "a.pc2", "--exact", "--png", "c.png"])
    assert args.cache == "a.pc2" and args.exact and args.png == "c.png" and args.k == 0
    args = cli.build_parser().parse_args(["pose-resample", "a.blend", "--speed", "0.5"])
    assert args.speed == 0.5 and args.frames is None


@needs_bpy
def test_pose_cli_build_resample_bake(tmp_path):
    obj, pc2 = _tiny_obj_and_pc2(tmp_path)
    out = tmp_path / "grid_ps.blend"
    r = run(CLI, "pose-build", obj, "--cache", pc2, "--exact", "--png", tmp_path / "canvas.png", "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    # exact: k - 2 = l = n = 12 (m is the sequence's rank, 6 here); the error is at rounding level
    import re

    got = re.search(r"n (\d+), k (\d+), l (\d+), m (\d+); error RMS ([0-9.e+-]+)", r.stdout)
    assert got, r.stdout
    n, k, ell = (int(got.group(i)) for i in (1, 2, 3))
    assert (n, k, ell) == (12, 14, 12) and float(got.group(5)) < 1e-6
    assert out.exists() and (tmp_path / "canvas.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = run(CLI, "pose-resample", out, "--speed", "0.5", "--out", tmp_path / "slow.blend")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "baked frames 0-22" in r.stdout  # 12 frames (0-11) at half speed: 23 frames
    r = run(CLI, "pose-bake", out, "--out", tmp_path / "baked.blend")
    assert r.returncode == 0 and (tmp_path / "baked.blend").exists(), r.stderr[-2000:]
    r = run(CLI, "pose-resample", out, "--speed", "0.5", "--frames", "10")
    assert r.returncode == 2 and "exactly one" in r.stderr
    r = run(CLI, "pose-build", obj)
    assert r.returncode == 2 and "--cache" in r.stderr


@needs_bpy
def test_pose_cli_gradient_shape_space(tmp_path):
    """--shape-space GRADIENT builds on deformation gradients and bakes to a PC2 cache whose samples
    reproduce the input cache (exact build)."""
    import numpy as np

    from anim_signals.meshio.meshcache import read_pc2

    obj, pc2 = _tiny_obj_and_pc2(tmp_path)
    out = tmp_path / "grid_gradient.blend"
    r = run(CLI, "pose-build", obj, "--cache", pc2, "--exact", "--shape-space", "GRADIENT", "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    r = run(CLI, "pose-bake", out, "--out", tmp_path / "baked.blend")
    assert r.returncode == 0, r.stderr[-2000:]
    baked = [p for p in tmp_path.rglob("*.pc2") if p.name != "grid.pc2"]
    assert baked, (r.stdout, sorted(tmp_path.rglob("*")))
    samples, _, _ = read_pc2(baked[0])
    source, _, _ = read_pc2(pc2)
    assert samples.shape == source.shape
    assert np.abs(samples - source).max() < 1e-3
    r = run(CLI, "pose-build", obj, "--cache", pc2, "--shape-space", "EDGES")
    assert r.returncode == 2 and "--shape-space" in r.stderr


def test_benchmark_motion_db_quick(tmp_path):
    """The motion-database benchmark runs end to end (--quick) on generated data when ../shared/data is absent."""
    import json

    shared = (ROOT.parent / "shared" / "data" / "facial").is_dir()
    args = ["--quick", "--out", tmp_path] + ([] if shared else ["--synthetic"])
    r = run(ROOT / "scripts" / "benchmark_motion_db.py", *args, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((tmp_path / "benchmark_motion_db.json").read_text())
    assert (tmp_path / "benchmark_motion_db.md").read_text().startswith("# Motion-database benchmark")
    rows = {(s["scenario"], s["input"]): s for s in res["scenarios"]}
    assert {("#1", "full"), ("#2", "full"), ("#3", "full"), ("#4", "full"), ("#1", "no eyes"), ("#3", "no eyes")} <= set(rows)
    one = rows[("#1", "full")]
    assert one["hits_total"] > 0 and one["hits_olng"] / one["hits_total"] > 0.5  # denoising a database clip works
    assert one["olng"] < one["noise"] and rows[("#1", "no eyes")]["query_channels"] == 38
    assert [r["k"] for r in res["latency"]["kt"]] == [128, 256] and all(r["total"] > 0 for r in res["latency"]["kt"])
    assert max(s["db_frames"] for s in res["latency"]["sizes"]) < 1_000_000  # --quick skips the 1M case


@needs_bpy
def test_db_cli_build_and_reconstruct(tmp_path):
    """db-build from generated Live Link Face CSVs, then reconstruct one of them (eyes dropped)."""
    import numpy as np

    from anim_signals.motiondb import generated_expressions, livelink

    for i in range(3):
        w = generated_expressions(90, seed=i, fps=30.0)
        values = np.zeros((90, len(livelink.CHANNELS)))
        values[:, : w.shape[1]] = w
        livelink.write_csv(tmp_path / f"take{i}.csv", np.arange(90) / 30.0, values)
    db = tmp_path / "db.blend"
    r = run(CLI, "db-build", tmp_path, "--out", db)
    assert r.returncode == 0 and db.exists(), r.stderr[-2000:]
    out = tmp_path / "rec.blend"
    r = run(CLI, "reconstruct", db, tmp_path / "take1.csv", "--drop-eyes", "--k", "64", "--out", out)
    assert r.returncode == 0 and out.exists(), r.stderr[-2000:]
    assert "from 38 channels" in r.stdout and "ms per frame" in r.stdout  # 52 minus the 14 eye channels
    r = run(CLI, "reconstruct", db, tmp_path / "missing.csv", "--out", out)
    assert r.returncode == 2


# --------------------------------------------------------------------------------------------------
# transfer (deformation transfer)

CAT_LION = ROOT.parent / "shared" / "data" / "mesh" / "cat_lion_poses"
CYLINDER_RADIUS, CYLINDER_LENGTH = 0.3, 2.0
BEND_DEGREES = (0.0, 18.0, 36.0, 54.0, 72.0, 90.0)  # the source's frames 0-5


def _cylinder(around, along, *, triangles=False):
    """An open cylinder along z (radius 0.3, z from 0 to 2): quads, or checkerboard triangles."""
    from anim_signals.transfer import open_cylinder

    return open_cylinder(around, along, radius=CYLINDER_RADIUS, length=CYLINDER_LENGTH, triangles=triangles)


def _bend(verts, degrees):
    """The cylinder bent about x towards +y by ``degrees`` over its length (its axis an arc)."""
    import numpy as np

    if degrees == 0.0:
        return verts.copy()
    radius = CYLINDER_LENGTH / np.radians(degrees)
    x, y, z = verts.T
    return np.column_stack([x, radius - (radius - y) * np.cos(z / radius), (radius - y) * np.sin(z / radius)])


def _write_obj(path, verts, faces):
    lines = [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in verts]
    lines += ["f " + " ".join(str(i + 1) for i in face) for face in faces]
    path.write_text("\n".join(lines) + "\n")


def _ring_markers(around, along):
    """Vertices at 0, 90, 180, 270 degrees on the bottom, middle and top rings."""
    return [r * around + q * around // 4 for r in (0, (along - 1) // 2, along - 1) for q in range(4)]


def _transfer_inputs(folder):
    """Generated inputs: a quad cylinder (12 x 9) bending 0-90 degrees over 6 frames (OBJ + PC2), a
    triangulated cylinder with other vertices (16 x 11, OBJ), a markers file (12 pairs), example poses
    (bent 45 and 90 degrees) of both as OBJ folders. Returns the paths and the target bent as the
    source is on each frame (the exact answer, as both have the same size)."""
    import numpy as np

    from anim_signals.meshio.meshcache import write_pc2

    sv, sf = _cylinder(12, 9)
    tv, tf = _cylinder(16, 11, triangles=True)
    _write_obj(folder / "source.obj", sv, sf)
    _write_obj(folder / "target.obj", tv, tf)
    write_pc2(folder / "source.pc2", np.array([_bend(sv, a) for a in BEND_DEGREES]))
    pairs = zip(_ring_markers(12, 9), _ring_markers(16, 11))
    (folder / "markers.yml").write_text("markers:\n" + "".join(f'  - "{a}:{b}"  # ring marker\n' for a, b in pairs))
    for side, verts, faces in (("ex_source", sv, sf), ("ex_target", tv, tf)):
        (folder / side).mkdir()
        for degrees in (45.0, 90.0):
            _write_obj(folder / side / f"bend{degrees:.0f}.obj", _bend(verts, degrees), faces)
    want = np.array([_bend(tv, a) for a in BEND_DEGREES])
    return folder / "source.obj", folder / "source.pc2", folder / "target.obj", folder / "markers.yml", want


def _mesh_cache_of(blend, name, frame):
    """Open ``blend`` in a fresh process: the Mesh Cache path of object ``name``, that path made
    absolute, and the object's evaluated vertices at ``frame``."""
    import json

    import numpy as np

    code = (
        "import json, sys; sys.path.insert(0, 'scripts'); import _blender_env as be; bpy = be.import_bpy(); "
        f"bpy.ops.wm.open_mainfile(filepath={str(blend)!r}, load_ui=False); ob = bpy.data.objects[{name!r}]; "
        "mod = next(m for m in ob.modifiers if m.type == 'MESH_CACHE'); "
        f"bpy.context.scene.frame_set({int(frame)}); "
        "me = ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).data; "
        "print('JSON' + json.dumps([mod.filepath, bpy.path.abspath(mod.filepath), [list(v.co) for v in me.vertices]]))"
    )
    r = run("-c", code)
    assert r.returncode == 0, r.stderr[-2000:]
    path, absolute, co = json.loads(r.stdout.split("JSON", 1)[1])
    return path, Path(absolute).resolve(), np.array(co)


def test_transfer_cli_arguments(tmp_path):
    """Parsing and the checks made before Blender loads anything (method, pairing, paths)."""
    cli = _load_cli()
    tool = _cli_tool("transfer")
    common = _cli_tool("common")
    for name in ("s.obj", "t.obj", "s.pc2", "m.yml", "scene.blend"):
        (tmp_path / name).write_text("x")
    parse = cli.build_parser().parse_args

    def checked(*argv):
        args = parse(["transfer", *map(str, argv)])
        args.input = os.path.abspath(args.input)
        return tool.check_arguments(args)

    s, t, pc2, markers = (tmp_path / n for n in ("s.obj", "t.obj", "s.pc2", "m.yml"))
    got = checked(s, "--cache", pc2, "--target", t, "--markers", markers, "--frames", "2", "8",
                  "--out", tmp_path / "o.blend", "--pc2", tmp_path / "o.pc2")
    assert got["method"] == "CORRESPONDENCE" and got["target_obj"] == str(t) and got["markers"] == str(markers)
    args = parse(["transfer", "scene.blend", "--source", "Cat", "--target", "Lion", "--method", "EXAMPLES",
                  "--space", "Vertex", "--pairs", "a:b, c:d"])
    assert (args.method, args.space, args.frames) == ("examples", "vertex", None)
    assert tool.parse_pairs(args.pairs) == [("a", "b"), ("c", "d")]
    got = checked(tmp_path / "scene.blend", "--source", "Cat", "--target", "Lion")
    assert got["method"] == "EXAMPLES" and got["target_obj"] == "" and got["out"].endswith("scene_transfer.blend")
    bad = [
        ((s, "--target", t, "--markers", markers), "needs --cache"),
        ((s, "--cache", tmp_path / "m.yml", "--target", t), "expected a .pc2 or .mdd"),
        ((s, "--cache", pc2, "--target", "Lion", "--markers", markers), "expected an .obj file"),
        ((s, "--cache", pc2, "--markers", markers), "no target"),
        ((s, "--cache", pc2, "--target", t), "an OBJ has no example poses"),
        ((s, "--cache", pc2, "--target", t, "--method", "correspondence"), "--markers FILE.yml"),
        ((s, "--cache", pc2, "--target", t, "--method", "examples", "--markers", markers), "--method correspondence"),
        ((s, "--cache", pc2, "--target", t, "--markers", markers, "--examples-source", s), "give one"),
        ((s, "--cache", pc2, "--target", t, "--examples-source", s), "go together"),
        ((s, "--cache", pc2, "--target", t, "--markers", tmp_path / "none.yml"), "no such markers file"),
        ((s, "--cache", pc2, "--target", t, "--markers", markers, "--frames", "5", "2"), "end comes before"),
        ((s, "--cache", pc2, "--target", t, "--markers", markers, "--out", tmp_path / "o.txt"), "must be a .blend"),
        ((s, "--cache", pc2, "--target", t, "--markers", markers, "--pc2", tmp_path / "o.mdd"), "must be a .pc2"),
        ((tmp_path / "scene.blend", "--target", "Lion"), "needs --source"),
        ((tmp_path / "scene.blend", "--source", "Cat", "--cache", pc2, "--target", "Lion"), "--cache goes with"),
        ((tmp_path / "scene.blend", "--source", "Cat", "--target", "Lion", "--pairs", "a"), "SOURCE_KEY:TARGET_KEY"),
    ]
    for argv, message in bad:
        with pytest.raises(common.CliError, match=re.escape(message)) as err:
            checked(*argv)
        assert err.value.code == 2
    # example OBJ files: paired by file name when both sides have the same names, else in order
    assert tool.pair_examples(["/s/b.obj", "/s/a.obj"], ["/t/a.obj", "/t/b.obj"]) == [("/s/b.obj", "/t/b.obj"),
                                                                                     ("/s/a.obj", "/t/a.obj")]
    assert tool.pair_examples(["/s/cat-01.obj", "/s/cat-02.obj"], ["/t/lion-01.obj", "/t/lion-02.obj"]) == [
        ("/s/cat-01.obj", "/t/lion-01.obj"), ("/s/cat-02.obj", "/t/lion-02.obj")]
    with pytest.raises(common.CliError, match="2 source example"):
        tool.pair_examples(["/s/a.obj", "/s/b.obj"], ["/t/c.obj"])


@needs_bpy
def test_transfer_cli_correspondence_obj_pc2_and_blend(tmp_path):
    """OBJ + PC2 onto an OBJ with markers from a file: the PC2 beside the .blend (relative path) matches
    the target bent as the source is; then the saved .blend as input (--source / --target names)."""
    import numpy as np

    from anim_signals.meshio.meshcache import read_pc2

    obj, pc2, target, markers, want = _transfer_inputs(tmp_path)
    out = tmp_path / "out" / "bend.blend"
    r = run(CLI, "transfer", obj, "--cache", pc2, "--target", target, "--markers", markers, "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "source -> target.transfer: frames 0-5 (6), correspondence, 12 markers; 108 -> 176 vertices" in r.stdout
    cache = tmp_path / "out" / "bend_target_transfer.pc2"
    assert out.is_file() and cache.is_file() and sorted(p.name for p in out.parent.iterdir()) == [out.name, cache.name]
    frames, start, _ = read_pc2(cache)
    assert frames.shape == (6, 176, 3) and start == 0.0
    diag = np.linalg.norm([2 * CYLINDER_RADIUS, 2 * CYLINDER_RADIUS, CYLINDER_LENGTH])
    err = np.linalg.norm(frames - want, axis=2) / diag
    assert err.mean() < 0.01 and err.max() < 0.03, (err.mean(), err.max())
    stored, absolute, co = _mesh_cache_of(out, "target.transfer", 5)
    assert stored == "//" + cache.name and absolute == cache.resolve()
    np.testing.assert_allclose(co, frames[5], atol=1e-5)  # the saved .blend plays the PC2
    # the .blend as input: its meshes by name, a sub-range, the PC2 written where asked
    again = tmp_path / "again.blend"
    r = run(CLI, "transfer", out, "--source", "source", "--target", "target", "--markers", markers,
            "--frames", "2", "4", "--pc2", tmp_path / "caches" / "part.pc2", "--out", again)
    assert r.returncode == 0, r.stderr[-2000:]
    part, start, _ = read_pc2(tmp_path / "caches" / "part.pc2")
    assert part.shape == (3, 176, 3) and start == 2.0
    np.testing.assert_allclose(part, frames[2:5], atol=1e-5)
    stored, absolute, _ = _mesh_cache_of(again, "target.transfer", 3)
    assert stored == "//caches/part.pc2" and absolute == (tmp_path / "caches" / "part.pc2").resolve()


@needs_bpy
def test_transfer_cli_examples_from_obj_files(tmp_path):
    """Examples as OBJ folders (loaded as shape keys, paired by file name), gradient space: the frame at
    an example pose gives the target's example, and the result follows the bend."""
    import numpy as np

    from anim_signals.meshio.meshcache import read_pc2

    obj, pc2, target, _, want = _transfer_inputs(tmp_path)
    out = tmp_path / "ex.blend"
    r = run(CLI, "transfer", obj, "--cache", pc2, "--target", target, "--examples-source", tmp_path / "ex_source",
            "--examples-target", tmp_path / "ex_target", "--pc2", tmp_path / "ex.pc2", "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "examples: bend45, bend90" in r.stdout and "examples, gradient space, 2 pair(s)" in r.stdout
    frames = read_pc2(tmp_path / "ex.pc2")[0]
    diag = np.linalg.norm([2 * CYLINDER_RADIUS, 2 * CYLINDER_RADIUS, CYLINDER_LENGTH])
    np.testing.assert_allclose(frames[0], want[0], atol=1e-4 * diag)  # the rest pose
    np.testing.assert_allclose(frames[5], want[5], atol=1e-3 * diag)  # 90 degrees: an example pose
    err = np.linalg.norm(frames - want, axis=2) / diag
    assert err.mean() < 0.02, err.mean()


@needs_bpy
def test_transfer_cli_bad_input(tmp_path):
    """Bad input: a clear message, exit code 2 (the command's checks) or 1 (the operator's refusal,
    its message), and nothing written."""
    obj, pc2, target, _, _ = _transfer_inputs(tmp_path)
    out = tmp_path / "out" / "x.blend"
    two = tmp_path / "two.yml"
    two.write_text('markers:\n  - "0:0"\n  - "3:4"\n')
    cases = [
        ((obj, "--cache", tmp_path / "missing.pc2", "--target", target, "--markers", two), 2, "no such file"),
        ((target, "--cache", pc2, "--target", target, "--markers", two), 2, "has 108 vertices, the OBJ"),
        ((obj, "--cache", pc2, "--target", target, "--markers", two), 1, "source -> target: At least 3 markers are "
         "needed, got 2"),
        ((obj, "--cache", pc2, "--target", target, "--markers", two, "--frames", "3", "9"), 2, "has frames 0-5"),
        ((obj, "--cache", pc2, "--target", target, "--examples-source", tmp_path / "ex_source",
          "--examples-target", tmp_path / "ex_source"), 2, "has 108 vertices, the target mesh \"target\" 176"),
    ]
    for argv, code, message in cases:
        r = run(CLI, "transfer", *argv, "--out", out)
        assert r.returncode == code and message in r.stderr, (argv, r.returncode, r.stderr[-2000:])
        assert not out.parent.exists(), list(out.parent.iterdir())


@needs_bpy
@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.skipif(not (CAT_LION / "cat-poses.tgz").is_file(), reason=f"shared cat/lion data not present ({CAT_LION})")
def test_transfer_cli_cat_to_lion(tmp_path):
    """Sumner's cat pose 01 (a 1-frame PC2 on the cat reference) onto the lion with the shipped markers,
    compared with Sumner's own lion pose 01 up to translation."""
    import tarfile

    import numpy as np

    from anim_signals.meshio.meshcache import read_pc2, write_pc2
    from anim_signals.transfer import read_obj

    for archive in ("cat-poses.tgz", "lion-poses.tgz"):
        with tarfile.open(CAT_LION / archive) as tar:
            tar.extractall(tmp_path, filter="data")
    write_pc2(tmp_path / "cat-01.pc2", read_obj(tmp_path / "cat-poses" / "cat-01.obj").vertices[None])
    lion = tmp_path / "lion-poses" / "lion-reference.obj"
    r = run(CLI, "transfer", tmp_path / "cat-poses" / "cat-reference.obj", "--cache", tmp_path / "cat-01.pc2",
            "--target", lion, "--markers", CAT_LION / "markers-cat-lion.yml", "--pc2", tmp_path / "lion-01.pc2",
            "--out", tmp_path / "cat_lion.blend")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "frames 0-0 (1), correspondence, 55 markers; 7207 -> 5000 vertices" in r.stdout
    got = read_pc2(tmp_path / "lion-01.pc2")[0][0]
    want = read_obj(tmp_path / "lion-poses" / "lion-01.obj").vertices
    dist = np.linalg.norm((got - got.mean(axis=0)) - (want - want.mean(axis=0)), axis=1)
    dist /= read_obj(lion).bbox_diagonal()
    assert dist.mean() < 0.02 and dist.max() < 0.10, (dist.mean(), dist.max())  # ~0.8 % / 6 % measured


# --------------------------------------------------------------------------------------------------
# deformation-transfer benchmark (numpy/scipy only: no bpy needed)

TRANSFER_BENCHMARK = ROOT / "scripts" / "benchmark_transfer.py"
SHARED_MESH = ROOT.parent / "shared" / "data" / "mesh"


def test_benchmark_transfer_quick(tmp_path):
    """--quick runs on generated meshes only: a bending, twisting tube onto a remeshed, scaled copy."""
    import json

    r = run(TRANSFER_BENCHMARK, "--quick", "--out", tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "benchmark_transfer.md").read_text().startswith("# Deformation-transfer benchmark")
    res = json.loads((tmp_path / "benchmark_transfer.json").read_text())
    assert "cat_lion" not in res and "horse_remesh" not in res and res["quick"]
    rows = {row["method"]: row for row in res["tube"]["rows"]}
    ours = rows["ours (correspondence)"]
    assert ours["mean_pct"] < 0.5 and ours["max_pct"] < 3.0  # exact target animation known
    assert ours["mean_pct"] < rows["nearest point, marker similarity"]["mean_pct"]
    spaces = {x["space"]: x for x in res["tube"]["examples"]}
    assert spaces["gradient"]["mean_pct"] < spaces["vertex"]["mean_pct"]  # ±150° bends: linear blends shrink
    assert [s["target"][0] for s in res["sizes"]] == [1000, 2000]
    assert all(s["solve_ms"] > 0 and s["factor_ms"] > 0 and s["setup_s"] > 0 for s in res["sizes"])


def test_benchmark_transfer_without_shared_data_says_so(tmp_path):
    """The full run without ../shared/data skips the cat/lion and horse sections with a clear note."""
    import json

    out = tmp_path / "out"
    r = run(TRANSFER_BENCHMARK, "--data", tmp_path / "missing", "--sizes", "600", "--repeats", "1", "--no-png",
            "--out", out, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    md = (out / "benchmark_transfer.md").read_text()
    assert "Sections 1-2 skipped: the cat/lion data is not there" in md and "cat-poses.tgz" in md
    assert "Horse sections skipped" in md and "horse_gallop.pc2" in md
    res = json.loads((out / "benchmark_transfer.json").read_text())
    assert "tube" in res and res["sizes"][0]["target"][0] == 600 and "generated tube" in res["sizes_base"]


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.skipif(not ((SHARED_MESH / "cat_lion_poses" / "cat-poses.tgz").is_file()
                         and (SHARED_MESH / "horse_gallop" / "horse_gallop.pc2").is_file()),
                    reason=f"shared cat/lion and horse gallop data not present ({SHARED_MESH})")
def test_benchmark_transfer_on_shared_data(tmp_path):
    """Every section on Sumner's cat/lion and the horse gallop (one small size for the times, ~1.5 min)."""
    import json

    r = run(TRANSFER_BENCHMARK, "--sizes", "2000", "--repeats", "1", "--out", tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((tmp_path / "benchmark_transfer.json").read_text())
    methods = res["cat_lion"]["methods"]
    ours = methods["ours"]["overall"]
    assert ours["mean_pct"] < 1.5  # ~1.0 % measured against Sumner's lion poses
    assert ours["mean_pct"] < 0.6 * methods["nearest point, marker similarity"]["overall"]["mean_pct"]
    assert res["cat_lion"]["setup_s"] < 60.0
    assert len(res["cat_lion_examples"]["rows"]) == 9
    assert res["horse_remesh"]["rows"][0]["mean_pct"] < 0.5 and res["horse_lion"]["lion"]["inverted_pct"] < 1.0
    if importlib.util.find_spec("matplotlib") is not None:  # the strip is drawn with matplotlib when present
        assert (tmp_path / "horse_to_lion.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
