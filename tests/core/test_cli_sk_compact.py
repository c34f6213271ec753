"""``sk-compact`` (scripts/cli/spatial_keyframes.py) on BVH files written here from the core's generated
clips: the comparison table and its JSON, that it runs without Blender, and bad input refused before any
work (exit code 2, one message naming the problem, nothing written).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from anim_signals import spatialkeys as sk

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "scripts" / "anim_signals_cli.py"


def _load_cli():
    spec = importlib.util.spec_from_file_location("anim_signals_cli", CLI)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # imports no bpy; puts scripts/ on sys.path
    return mod


def write_bvh(path: Path, clip: sk.GeneratedClip, frame_time: float = 1 / 30) -> Path:
    """A BVH of a generated clip: root with position + ZXY rotation channels, the other joints ZXY rotations
    (``Zrotation Xrotation Yrotation`` is R = Rz Rx Ry, scipy's intrinsic "ZXY"), an End Site on every leaf."""
    children: dict[int, list[int]] = {j: [] for j in range(len(clip.parents))}
    for j, p in enumerate(clip.parents):
        if p >= 0:
            children[p].append(j)
    order: list[int] = []
    lines = ["HIERARCHY"]

    def joint(j: int, depth: int) -> None:
        pad = "  " * depth
        off = " ".join(f"{v:.6f}" for v in clip.offsets[j])
        lines.append(f"{pad}{'ROOT' if clip.parents[j] < 0 else 'JOINT'} {clip.names[j]}")
        lines.append(f"{pad}{{")
        lines.append(f"{pad}  OFFSET {off}")
        pos = "Xposition Yposition Zposition " if clip.parents[j] < 0 else ""
        lines.append(f"{pad}  CHANNELS {6 if pos else 3} {pos}Zrotation Xrotation Yrotation")
        order.append(j)
        for c in children[j]:
            joint(c, depth + 1)
        if not children[j]:
            lines.extend([f"{pad}  End Site", f"{pad}  {{", f"{pad}    OFFSET 0 0.1 0", f"{pad}  }}"])
        lines.append(f"{pad}}}")

    joint(clip.parents.index(-1), 0)
    q = clip.quaternions  # (w, x, y, z) -> scipy's (x, y, z, w)
    n = len(q)
    lines += ["MOTION", f"Frames: {n}", f"Frame Time: {frame_time:.6f}"]
    for f in range(n):
        values = [0.0, 1.0, 0.01 * f]
        for j in order:
            values += list(Rotation.from_quat(np.roll(q[f, j], -1)).as_euler("ZXY", degrees=True))
        lines.append(" ".join(f"{v:.6f}" for v in values))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def clips(tmp_path):
    folder = tmp_path / "clips"
    folder.mkdir()
    write_bvh(folder / "biped.bvh", sk.generated_biped(120, seed=1))
    write_bvh(folder / "chain.bvh", sk.articulated_chain(100, 5, seed=2))
    return folder


@pytest.fixture
def run_cli(tmp_path, monkeypatch, capsys):
    """``run_cli(*argv) -> (code, stdout, stderr)``: main() in-process in ``tmp_path/run``, Blender unimportable
    (sk-compact must not need it)."""
    cli = _load_cli()
    monkeypatch.setitem(sys.modules, "bpy", None)
    (tmp_path / "run").mkdir()
    monkeypatch.chdir(tmp_path / "run")

    def run(*argv):
        capsys.readouterr()
        code = cli.main(["anim_signals_cli.py", *map(str, argv)])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_written_bvh_reads_back_as_the_generated_clip(tmp_path):
    """The test's BVH writer and the core's reader agree (rotations to the 6 decimals written)."""
    clip = sk.generated_biped(30, seed=3)
    back = sk.read_bvh(write_bvh(tmp_path / "b.bvh", clip))
    assert back.names == clip.names and back.parents == clip.parents
    assert np.allclose(sk.distance_matrix(np.concatenate([back.quaternions, clip.quaternions]))[:30, 30:].diagonal(),
                       0.0, atol=1e-5)


def test_cli_names_match_the_core():
    _load_cli()
    mod = importlib.import_module("cli.spatial_keyframes")
    assert mod.SELECTIONS == sk.SELECTIONS
    assert mod.PROJECTIONS == (*sk.PROJECTIONS, "rbfp")
    assert mod.TEMPORAL_SCHEMES == sk.TEMPORAL_SCHEMES


def test_sk_compact_writes_the_comparison_table(clips, tmp_path, run_cli):
    """Two clips, two selections, two projections, with and without Algorithm 1: every scheme's error is
    the core's compare_schemes value, Algorithm 1 never raises one, sizes follow eqs. (3) and (4)."""
    out = tmp_path / "out"
    code, stdout, err = run_cli("sk-compact", clips, "--out", out, "--ratio", "0.05", "--selection", "uniform,scs",
                                "--projection", "mds,force")
    assert code == 0, err
    assert "biped: 120 frames, 6 keys" in stdout and "chain: 100 frames, 5 keys" in stdout
    assert sorted(p.name for p in out.iterdir()) == ["sk_compact.json", "sk_compact.md"]
    payload = json.loads((out / "sk_compact.json").read_text())
    assert [c["clip"] for c in payload["clips"]] == ["biped", "chain"]
    biped = payload["clips"][0]
    assert (biped["frames"], biped["joints"], biped["keys"]) == (120, 17, 6)
    schemes = {(r["scheme"], r["selection"]) for r in biped["rows"]}
    assert schemes == {(s, sel) for s in ("linear", "hermite", "slerp", "rbf", "mds", "force")
                       for sel in ("uniform", "scs")}
    assert all(r["optimised"] for r in biped["rows"] if r["kind"] == "spatial")
    for r in biped["rows"]:
        eq = sk.spatial_size if r["kind"] == "spatial" else sk.temporal_size
        assert r["size_ratio"] == pytest.approx(eq(120, 17, 6 / 120) / sk.uncompressed_size(120, 17))
        assert np.isfinite(r["error"]) and r["error"] >= 0
    # the same numbers as the core's own comparison on the clip read back
    clip = sk.read_bvh(clips / "biped.bvh")
    core = sk.compare_schemes(clip.quaternions, clip.parents, ratio=0.05, selections=("uniform", "scs"),
                              projections=("mds", "force"), optimise=(True,))
    assert [r["error"] for r in core] == pytest.approx([r["error"] for r in biped["rows"]])
    # without Algorithm 1: no spatial error is lower than with it (a move is kept only if it lowers that frame's)
    code, _, err = run_cli("sk-compact", clips, "--out", tmp_path / "plain", "--ratio", "0.05", "--selection", "uniform,scs",
                           "--projection", "mds,force", "--no-optimise")
    assert code == 0, err
    plain = json.loads((tmp_path / "plain" / "sk_compact.json").read_text())
    for c_opt, c_plain in zip(payload["clips"], plain["clips"]):
        for a, b in zip(c_opt["rows"], c_plain["rows"]):
            assert (a["scheme"], a["selection"]) == (b["scheme"], b["selection"])
            if a["kind"] == "spatial":
                assert not b["optimised"] and a["error"] <= b["error"] + 1e-12
            else:
                assert a["error"] == pytest.approx(b["error"])
    md = (out / "sk_compact.md").read_text()
    assert md.startswith("# Spatial-keyframe compaction: 2 clip(s) at a keyframe ratio of 0.05")
    assert "| mds + Alg. 1 | spatial | uniform |" in md and "| biped | 120 | 17 | 6 |" in md
    assert not any(".partial-" in p for p in listing(tmp_path))


def test_sk_compact_summary_counts_clips_below_slerp_scs():
    _load_cli()
    mod = importlib.import_module("cli.spatial_keyframes")

    def row(scheme, sel, err, kind="temporal", opt=False):
        return dict(kind=kind, scheme=scheme, selection=sel, optimised=opt, error=err, size_ratio=0.1, keys=3)

    clips = [dict(clip=f"c{i}", frames=100, joints=2, keys=3, seconds=0.1,
                  rows=[row("slerp", "scs", 1.0), row("tsne", "uniform", e, "spatial", True)])
             for i, e in enumerate((0.5, 2.0, 0.7))]
    payload, md = mod.sk_compact_report(clips, dict(ratio=0.03, optimise=True, keep_moving=False, seed=0))
    tsne = next(s for s in payload["summary"] if s["scheme"] == "tsne + Alg. 1")
    assert tsne["below_slerp_scs"] == 2 and tsne["median_error"] == 0.7
    assert tsne["mean_error"] == pytest.approx(3.2 / 3)
    assert "| tsne + Alg. 1 | spatial | uniform | 1.067 | 0.7 | 2/3 |" in md


def test_sk_compact_help_says_it_needs_no_blender(run_cli):
    code, out, _ = run_cli("sk-compact", "--help")
    text = " ".join(out.split())
    assert code == 0 and "Does not start Blender" in text and "exit codes: 0 success" in text
    code, out, _ = run_cli("--help")
    assert code == 0 and "sk-compact" in out


def bad_cases(clips: Path, tmp_path: Path) -> list[tuple[list, str]]:
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "notes.txt").write_text("not a clip")
    short = tmp_path / "short"
    short.mkdir()
    write_bvh(short / "short.bvh", sk.articulated_chain(40, 3))
    cut = tmp_path / "cut"
    cut.mkdir()
    text = (clips / "chain.bvh").read_text()
    (cut / "cut.bvh").write_text(text[: text.rindex("\n", 0, len(text) - 1) + 1])
    (tmp_path / "afile").write_text("a file where the output folder goes")
    taken = tmp_path / "taken"
    (taken / "sk_compact.md").mkdir(parents=True)
    return [
        ([tmp_path / "missing"], "no such file or folder"),
        ([empty], "no .bvh files in the folder"),
        ([clips, tmp_path / "notes.txt"], "unsupported input"),
        ([cut], "the header announces 100 (truncated?)"),
        ([clips, cut], "cut.bvh: malformed BVH"),
        ([short], "40 frames at --ratio 0.03 give 1 keyframe(s); spatial keyframes need at least 3 markers "
                  "(--ratio 0.075 or more for this clip)"),
        ([clips, "--ratio", "0.02"], "biped.bvh: 120 frames at --ratio 0.02 give 2 keyframe(s)"),
        ([clips, "--ratio", "0"], "argument --ratio: must be"),
        ([clips, "--ratio=-0.5"], "argument --ratio: must be"),
        ([clips, "--ratio", "1.5"], "argument --ratio: must be"),
        ([clips, "--ratio", "nan"], "argument --ratio: must be a finite number"),
        ([clips, "--ratio", "x"], "argument --ratio: expected a number"),
        ([clips, "--selection", "uniform,random"], "argument --selection: unknown selection 'random'"),
        ([clips, "--projection", "umap"], "argument --projection: unknown projection 'umap'"),
        ([clips, "--projection", ","], "argument --projection: unknown projection"),
        ([clips, "--seed", "-1"], "argument --seed: must be at least 0"),
        ([clips, "--out", tmp_path / "afile"], "is a file, expected a folder"),
        ([clips, "--out", tmp_path / "afile" / "sub"], "afile is a file, not a folder"),
        ([clips, "--out", taken], "sk_compact.md is a folder, expected a .md file name"),
        ([], "the following arguments are required"),
    ]


def test_sk_compact_refuses_bad_input_before_any_work(clips, tmp_path, run_cli, monkeypatch):
    """Exit code 2, one 'error:' line naming the problem, no traceback, nothing written; the core is never
    called (its comparison is made to fail loudly)."""
    monkeypatch.setattr(sk, "compare_schemes", lambda *a, **k: pytest.fail("work started before a refusal"))
    for argv, message in bad_cases(clips, tmp_path):
        before = listing(tmp_path)
        code, _, err = run_cli("sk-compact", *argv)
        assert code == 2, (argv, code, err)
        assert message in err, (argv, err)
        assert "Traceback" not in err and err.count("error:") == 1, err
        assert listing(tmp_path) == before, (argv, set(listing(tmp_path)) - set(before))


def test_sk_compact_failure_in_the_core_is_exit_code_1(clips, tmp_path, run_cli, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("distances must be finite and non-negative")

    monkeypatch.setattr(sk, "compare_schemes", broken)
    code, _, err = run_cli("sk-compact", clips, "--out", tmp_path / "out")
    assert code == 1 and "biped.bvh: distances must be finite and non-negative" in err
    assert err.count("error:") == 1 and not (tmp_path / "out").exists()
