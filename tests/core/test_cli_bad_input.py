"""Every sub-command of ``scripts/anim_signals_cli.py`` through hostile input: unwritable outputs,
negative / zero / non-finite / out-of-range values, empty, binary, truncated and malformed files,
missing files.

Each refusal is asserted to be: exit code 2, one message naming the problem (the option or the file),
no traceback, and no file left behind. The refusals happen before Blender starts, so the table runs
in-process through ``main(argv)`` with Blender made unimportable (a refusal that came too late would
show up as a failed import); a few cases run the real command in a subprocess with Blender, for the
importer, an operator failure and the exit-code path end to end.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "scripts" / "anim_signals_cli.py"
SHARED_MOCAP = ROOT.parent / "shared" / "data" / "mocap"
HAS_BPY = importlib.util.find_spec("bpy") is not None
needs_bpy = pytest.mark.skipif(not HAS_BPY, reason="needs the bpy module (the project's .venv)")
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0  # root writes into read-only folders


def _load_cli():
    spec = importlib.util.spec_from_file_location("anim_signals_cli", CLI)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # imports no bpy; puts scripts/ on sys.path
    return mod


def _cli_module(name):
    _load_cli()
    return importlib.import_module(f"cli.{name}")


# --------------------------------------------------------------------------------------------------
# inputs, generated (no shared data)

CHANNELS_ROOT = "CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation"


def bvh_text(frames: int = 12, *, frame_count: int | None = None, value=None) -> str:
    """A two-joint BVH (9 channels): root position and rotation, one child rotation."""
    lines = ["HIERARCHY", "ROOT Hips", "{", "  OFFSET 0 0 0", f"  {CHANNELS_ROOT}", "  JOINT Spine", "  {",
             "    OFFSET 0 10 0", "    CHANNELS 3 Zrotation Xrotation Yrotation", "    End Site", "    {",
             "      OFFSET 0 10 0", "    }", "  }", "}", "MOTION", f"Frames: {frames if frame_count is None else frame_count}",
             "Frame Time: 0.0333333"]
    for i in range(frames):
        t = i / max(frames - 1, 1)
        v = [10 * t, 90, 0, 20 * math.sin(2 * math.pi * t), 5 * t, 0, 30 * math.sin(4 * math.pi * t), 0, 10 * t]
        lines.append(" ".join(f"{x:.4f}" for x in v))
    if value is not None:
        last = lines[-1].split()
        last[4] = value
        lines[-1] = " ".join(last)
    return "\n".join(lines) + "\n"


GOOD_BVH = bvh_text()
# name -> (file content, what the message must say); each is refused by every command reading a BVH
BAD_BVHS = {
    "empty": (b"", "the file is empty"),
    "blank": (b"\n  \n", "the file is empty"),
    "binary": (bytes(range(256)) * 8, "a binary file, not a BVH file"),
    "latin-1": (GOOD_BVH.replace("Spine", "Sp\xefne").encode("latin-1"), "not UTF-8 text (byte 0xef on line 6)"),
    "not a BVH": (b"hello world\n", "not a BVH file (it does not start with HIERARCHY)"),
    "cut in the hierarchy": (GOOD_BVH[:GOOD_BVH.index("    End Site")].encode(), "the file ends where"),
    "no MOTION": (GOOD_BVH[:GOOD_BVH.index("MOTION")].encode(), "the file ends where MOTION was expected"),
    "no frame count": (GOOD_BVH[:GOOD_BVH.index("Frames:")].encode(), "the file ends where 'Frames: N' was expected"),
    "cut mid-line": (GOOD_BVH[:GOOD_BVH.rindex(" ", 0, len(GOOD_BVH) - 20)].encode(),
                     "frame 12 has 6 values, the hierarchy has 9 channels (truncated?)"),
    "cut after a line": (GOOD_BVH[:GOOD_BVH.rindex("\n", 0, len(GOOD_BVH) - 1) + 1].encode(),
                         "11 frame line(s), the header announces 12 (truncated?)"),
    "extra frame lines": (bvh_text(12, frame_count=10).encode(), "12 frame lines, the header announces 10"),
    "Frames: 0": (bvh_text(0).encode(), "'Frames: 0': no frames to import"),
    "frame count word": (GOOD_BVH.replace("Frames: 12", "Frames: twelve").encode(), "'twelve' is not a whole number"),
    "Frame Time 0": (GOOD_BVH.replace("Frame Time: 0.0333333", "Frame Time: 0").encode(), "must be positive"),
    "a word among numbers": (bvh_text(value="abc").encode(), "frame 12: 'abc' is not a number"),
    "nan value": (bvh_text(value="nan").encode(), "frame 12: 'nan' is not a finite number"),
    "inf value": (bvh_text(value="-inf").encode(), "'-inf' is not a finite number"),
    "bad channel": (GOOD_BVH.replace("Zrotation Xrotation Yrotation\n    End", "Zrotation Xrotation Wrotation\n    End")
                    .encode(), "unknown channel 'Wrotation'"),
    "two rotations": (GOOD_BVH.replace("CHANNELS 3 Zrotation Xrotation Yrotation", "CHANNELS 2 Zrotation Xrotation")
                      .encode(), "Spine has 2 rotation channel(s)"),
    "channel count": (GOOD_BVH.replace("CHANNELS 3 Zrotation", "CHANNELS 4 Zrotation").encode(),
                      "CHANNELS says 4 but names 3"),
    "brace on the ROOT line": (GOOD_BVH.replace("ROOT Hips\n{", "ROOT Hips {").encode(), "expected '{' on its own line"),
    "unclosed brace": (GOOD_BVH.replace("    }\n  }\n}\nMOTION", "    }\n  }\nMOTION").encode(), "not closed"),
    "no channels": (GOOD_BVH.replace(CHANNELS_ROOT, "CHANNELS 0").replace("CHANNELS 3 Zrotation Xrotation Yrotation",
                                                                         "CHANNELS 0").encode(), "no channels"),
}


def write_grid(folder: Path) -> tuple[Path, Path]:
    """A 3 x 3 vertex grid as an OBJ and a 5-sample PC2 cache of it."""
    from anim_signals.meshio.meshcache import write_pc2

    u, v = np.meshgrid(np.linspace(0, 1, 3), np.linspace(0, 1, 3))
    base = np.column_stack([u.ravel(), v.ravel(), np.zeros(9)])
    faces = ["f 1 2 5 4", "f 2 3 6 5", "f 4 5 8 7", "f 5 6 9 8"]
    (folder / "grid.obj").write_text("\n".join([f"v {x} {y} {z}" for x, y, z in base] + faces) + "\n")
    frames = np.array([base + [0, 0, 0.1 * i] for i in range(5)])
    write_pc2(folder / "grid.pc2", frames)
    return folder / "grid.obj", folder / "grid.pc2"


def write_take(path: Path) -> Path:
    from anim_signals.motiondb import generated_expressions, livelink

    w = generated_expressions(30, seed=0, fps=30.0)
    values = np.zeros((30, len(livelink.CHANNELS)))
    values[:, : w.shape[1]] = w
    livelink.write_csv(path, np.arange(30) / 30.0, values)
    return path


@pytest.fixture
def files(tmp_path):
    """Good and bad inputs in ``tmp_path/in``; outputs are expected nowhere (the run's folder is
    ``tmp_path/run``, the current directory)."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "walk.bvh").write_text(GOOD_BVH)
    (d / "run.bvh").write_text(bvh_text(16))
    for i, (content, _) in enumerate(BAD_BVHS.values()):
        (d / f"bad{i}.bvh").write_bytes(content)
    obj, pc2 = write_grid(d)
    write_take(d / "take.csv")
    (d / "scene.blend").write_bytes(b"BLENDER-v500" + b"\0" * 64)  # a header only: enough for the checks
    (d / "fake.blend").write_bytes(b"PK\x03\x04 a zip, not a blend")
    (d / "empty.blend").write_bytes(b"")
    (d / "markers.yml").write_text('markers:\n  - "0:0"\n  - "4:4"\n  - "8:8"\n')
    (d / "bad.yml").write_text("markers: [[[\n")
    (d / "nomarkers.yml").write_text("markers:\n")
    (d / "binary.obj").write_bytes(b"\0\1\2\3" * 40)
    (d / "novertex.obj").write_text("# only a comment\n")
    (d / "bad.pc2").write_bytes(b"POINTCACHE2\0" + b"\1" * 7)
    (d / "cut.pc2").write_bytes(pc2.read_bytes()[:-20])
    (d / "bad.mdd").write_bytes(b"\0\0")
    (d / "bad.csv").write_text("a,b,c\n1,2,3\n")
    (d / "binary.csv").write_bytes(b"\0\xff" * 50)
    (d / "folder.blend").mkdir()
    (d / "afile").write_text("a file where a folder is expected")
    (d / "emptydir").mkdir()
    run = tmp_path / "run"
    run.mkdir()
    return d


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def run_cli(tmp_path, monkeypatch, capsys):
    """``run_cli(*argv) -> (code, stderr)``: main() in-process in ``tmp_path/run`` with Blender unimportable."""
    cli = _load_cli()
    monkeypatch.setitem(sys.modules, "bpy", None)  # importing Blender now fails: refusals come first
    monkeypatch.chdir(tmp_path / "run")

    def run(*argv):
        capsys.readouterr()
        code = cli.main(["anim_signals_cli.py", *map(str, argv)])
        return code, capsys.readouterr().err

    return run


def assert_refused(run_cli, tmp_path, argv, message):
    before = listing(tmp_path)
    code, err = run_cli(*argv)
    assert code == 2, (argv, code, err)
    assert message in err, (argv, err)
    assert "Traceback" not in err, err
    assert err.count("error:") == 1, err  # one message
    assert listing(tmp_path) == before, f"{argv} left {set(listing(tmp_path)) - set(before)}"


# --------------------------------------------------------------------------------------------------
# the table: per command, hostile outputs, values and files


def I(name):  # noqa: E743 - an input file of the fixture
    return f"@in/{name}"


BAD_OUTPUTS = [  # (option value, message); {option} stands for the option's name
    (I("afile") + "/x.blend", "afile is a file, not a folder"),
    (I("afile") + "/deeper/x.blend", "afile is a file, not a folder"),
    (I("folder.blend"), "is a folder, expected a .blend file name"),
    (I("emptydir"), "is a folder, expected a .blend file name"),
    ("out.txt", "must be a .blend file"),
]

COMMANDS = {  # command -> (a valid command line, its output options)
    "fit": ([I("walk.bvh")], ["--out"]),
    "loop": ([I("walk.bvh")], ["--out"]),
    "blend": ([I("walk.bvh"), I("run.bvh")], ["--out"]),
    "compare": ([I("walk.bvh"), I("run.bvh")], ["--save"]),
    "pose-build": ([I("grid.obj"), "--cache", I("grid.pc2")], ["--out"]),
    "pose-resample": ([I("scene.blend"), "--speed", "0.5"], ["--out"]),
    "pose-bake": ([I("scene.blend")], ["--out"]),
    "db-build": ([I("take.csv")], ["--out"]),
    "reconstruct": ([I("scene.blend"), I("take.csv")], ["--out"]),
    "transfer": ([I("grid.obj"), "--cache", I("grid.pc2"), "--target", I("grid.obj"), "--markers", I("markers.yml")],
                 ["--out"]),
    "sk-compact": ([I("walk.bvh")], []),  # its --out is a folder: tests/core/test_cli_sk_compact.py
    "sk-build": ([I("walk.bvh"), "--count", "3"], ["--out"]),
}

VALUE_CASES = [  # (command, option, bad values, message)
    ("fit", "--max-error-rotation", ["-1", "0", "1e-5", "nan", "inf"], "argument --max-error-rotation: must be"),
    ("fit", "--max-error-location", ["-0.01", "0", "-inf"], "argument --max-error-location: must be"),
    ("fit", "--max-error-other", ["-1", "NaN"], "argument --max-error-other: must be"),
    ("fit", "--internal-knots", ["-3", "1.5", "3e9"], "argument --internal-knots:"),
    ("fit", "--internal-knots", ["1001", "2147483647"], "argument --internal-knots: must be between 0 and 1000"),
    ("fit", "--seed", ["-1", "99999999999"], "argument --seed: must be"),
    ("loop", "--velocity-window", ["-1", "100001"], "argument --velocity-window: must be between 0 and 100000"),
    ("loop", "--min-period", ["-5"], "argument --min-period: must be at least 0"),
    ("loop", "--max-period", ["-5"], "argument --max-period: must be at least 0"),
    ("loop", "--start", ["1.5", "x", "4294967296"], "argument --start:"),
    ("blend", "--weight", ["-0.1", "1.5", "nan", "inf"], "argument --weight: must be"),
    ("blend", "--count", ["0", "-2"], "argument --count: must be between 1 and 100"),
    ("blend", "--count", ["101", "100000"], "argument --count: must be between 1 and 100"),
    ("compare", "--samples", ["0", "3", "-100"], "argument --samples: must be between 4 and 10000"),
    ("compare", "--samples", ["10001", "2147483647"], "argument --samples: must be between 4 and 10000"),
    ("compare", "--clusters", ["-1", "1001"], "argument --clusters: must be between 0 and 1000"),
    ("pose-build", "--step", ["0", "-1"], "argument --step: must be at least 1"),
    ("pose-build", "--k", ["-3"], "argument --k: must be at least 0"),
    ("pose-build", "--l", ["-1"], "argument --l: must be at least 0"),
    ("pose-build", "--m", ["-1"], "argument --m: must be at least 0"),
    ("pose-build", "--tolerance", ["-0.1", "nan", "inf"], "argument --tolerance: must be"),
    ("pose-resample", "--speed", ["-1", "0", "0.001", "nan"], "argument --speed: must be"),
    ("pose-resample", "--frames", ["0", "1", "-5"], "argument --frames: must be at least 2"),
    ("pose-resample", "--fps-to", ["-30", "0", "inf"], "argument --fps-to: must be"),
    ("db-build", "--fps", ["-30", "0", "40000", "29.97"], "argument --fps:"),
    ("reconstruct", "--k", ["-3", "0"], "argument --k: must be at least 1"),
    ("reconstruct", "--window", ["0"], "argument --window: must be at least 1"),
    ("reconstruct", "--paths", ["-1"], "argument --paths: must be at least 1"),
    ("transfer", "--frames", ["x"], "argument --frames:"),
    ("sk-compact", "--ratio", ["0", "-0.1", "1.5", "nan", "inf"], "argument --ratio: must be"),
    ("sk-build", "--ratio", ["0", "0.0005", "1.5", "nan"], "argument --ratio: must be"),
    ("sk-build", "--count", ["2", "-1", "x"], "argument --count:"),
]

MISUSE_CASES = [  # (command line, message): option combinations and values refused by the command's checks
    (["loop", I("walk.bvh"), "--auto", "--min-period", "30", "--max-period", "10"],
     "--max-period (10) must not be shorter than --min-period (30)"),
    (["loop", I("walk.bvh"), "--start", "9", "--end", "3"], "--end (3) must come after --start (9)"),
    (["pose-build", I("grid.obj"), "--cache", I("grid.pc2"), "--start", "9", "--end", "3"], "must not come before"),
    (["pose-resample", I("scene.blend"), "--speed", "0.5", "--frames", "10"], "exactly one of"),
    (["compare", I("walk.bvh")], "need at least 2 clips to compare, got 1"),
    (["transfer", I("grid.obj"), "--cache", I("grid.pc2"), "--target", I("grid.obj"), "--markers", I("markers.yml"),
      "--frames", "-5", "2"], "the cache"),
    (["transfer", I("grid.obj"), "--cache", I("grid.pc2"), "--target", I("grid.obj"), "--markers", I("markers.yml"),
      "--frames", "0", "9"], "has frames 0-4"),
    (["transfer", I("grid.obj"), "--cache", I("grid.pc2"), "--target", I("grid.obj"), "--markers", I("walk.bvh")],
     "expected a .yml or .yaml file"),
    (["transfer", I("grid.obj"), "--cache", I("grid.pc2"), "--target", I("grid.obj"), "--markers", I("markers.yml"),
      "--pc2", I("grid.pc2")], "is the source's --cache"),
]

FILE_CASES = [  # (command line, message): missing, empty, binary, malformed inputs other than BVH
    (["fit", I("missing.bvh")], "no such file"),
    (["fit", I("emptydir")], "is a folder, expected a .bvh or .blend file"),
    (["fit", I("fake.blend")], "not a .blend file (no BLENDER header)"),
    (["fit", I("empty.blend")], "the file is empty, not a .blend file"),
    (["loop", I("take.csv")], "expected a .bvh or .blend file"),
    (["blend", I("walk.bvh"), I("missing.bvh")], "no such file"),
    (["blend", I("walk.bvh"), I("fake.blend")], "not a .blend file"),
    (["compare", I("emptydir"), I("walk.bvh")], "no .bvh files in the folder"),
    (["compare", I("walk.bvh"), I("fake.blend")], "not a .blend file"),
    (["pose-build", I("binary.obj"), "--cache", I("grid.pc2")], "a binary file, not an OBJ file"),
    (["pose-build", I("novertex.obj"), "--cache", I("grid.pc2")], "no vertices"),
    (["pose-build", I("grid.obj"), "--cache", I("bad.pc2")], "cannot read the point cache"),
    (["pose-build", I("grid.obj"), "--cache", I("cut.pc2")], "cannot read the point cache"),
    (["pose-build", I("grid.obj"), "--cache", I("bad.mdd")], "cannot read the point cache"),
    (["pose-build", I("grid.obj"), "--cache", I("missing.pc2")], "no such file"),
    (["pose-build", I("grid.obj")], "needs --cache"),
    (["pose-resample", I("fake.blend"), "--speed", "2"], "not a .blend file"),
    (["pose-bake", I("walk.bvh")], "expected a .blend saved by pose-build"),
    (["pose-bake", I("missing.blend")], "no such file"),
    (["db-build", I("bad.csv")], "not a Live Link Face CSV"),
    (["db-build", I("binary.csv")], "a binary file, not a Live Link Face CSV"),
    (["db-build", I("take.csv"), I("walk.bvh")], "one kind of clip"),
    (["db-build", I("emptydir")], "no .csv or .bvh files in the folder"),
    (["reconstruct", I("fake.blend"), I("take.csv")], "not a .blend file"),
    (["reconstruct", I("scene.blend"), I("bad.csv")], "not a Live Link Face CSV"),
    (["reconstruct", I("scene.blend"), I("missing.csv")], "no such file"),
    (["transfer", I("binary.obj"), "--cache", I("grid.pc2"), "--target", I("grid.obj"), "--markers", I("markers.yml")],
     "a binary file, not an OBJ file"),
    (["transfer", I("grid.obj"), "--cache", I("cut.pc2"), "--target", I("grid.obj"), "--markers", I("markers.yml")],
     "cannot read the point cache"),
    (["transfer", I("grid.obj"), "--cache", I("grid.pc2"), "--target", I("novertex.obj"), "--markers", I("markers.yml")],
     "no vertices"),
    (["transfer", I("grid.obj"), "--cache", I("grid.pc2"), "--target", I("grid.obj"), "--markers", I("bad.yml")],
     "bad markers file"),
    (["transfer", I("grid.obj"), "--cache", I("grid.pc2"), "--target", I("grid.obj"), "--markers", I("nomarkers.yml")],
     "markers"),
    (["transfer", I("grid.obj"), "--cache", I("grid.pc2"), "--target", I("grid.obj"), "--examples-source",
      I("binary.obj"), "--examples-target", I("grid.obj")], "a binary file, not an OBJ file"),
]

# every command that reads a BVH, with the bad one at {bvh}
BVH_READERS = [
    ["fit", "{bvh}"], ["loop", "{bvh}"], ["blend", I("walk.bvh"), "{bvh}"], ["compare", I("walk.bvh"), "{bvh}"],
    ["pose-build", "{bvh}"], ["db-build", I("walk.bvh"), "{bvh}"], ["reconstruct", I("scene.blend"), "{bvh}"],
    ["sk-compact", I("walk.bvh"), "{bvh}"], ["sk-build", "{bvh}", "--count", "3"],
]


def resolve(argv, folder: Path):
    return [str(folder / a[4:]) if isinstance(a, str) and a.startswith("@in/") else a for a in argv]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_unwritable_outputs_are_refused_before_any_work(command, files, tmp_path, run_cli):
    good, options = COMMANDS[command]
    for option in options:
        for value, message in BAD_OUTPUTS:
            assert_refused(run_cli, tmp_path, [command, *resolve(good, files), option, *resolve([value], files)],
                           message)


def test_compare_out_dir_and_png_and_pc2_outputs(files, tmp_path, run_cli):
    good = resolve(COMMANDS["compare"][0], files)
    assert_refused(run_cli, tmp_path, ["compare", *good, "--out-dir", files / "afile"], "is a file, expected a folder")
    assert_refused(run_cli, tmp_path, ["compare", *good, "--out-dir", files / "afile" / "sub"], "is a file, not a folder")
    # a folder where one of its files goes
    (files / "outdir" / "distances.json").mkdir(parents=True)
    assert_refused(run_cli, tmp_path, ["compare", *good, "--out-dir", files / "outdir"],
                   "distances.json is a folder, expected a .json file name")
    build = resolve(COMMANDS["pose-build"][0], files)
    assert_refused(run_cli, tmp_path, ["pose-build", *build, "--png", files / "afile" / "c.png"], "is a file, not a folder")
    assert_refused(run_cli, tmp_path, ["pose-build", *build, "--png", files / "emptydir"], "is a folder, expected a .png")
    assert_refused(run_cli, tmp_path, ["pose-build", *build, "--png", "canvas.jpg"], "--png must be a .png file")
    transfer = resolve(COMMANDS["transfer"][0], files)
    assert_refused(run_cli, tmp_path, ["transfer", *transfer, "--pc2", files / "afile" / "x.pc2"], "is a file, not a folder")
    assert_refused(run_cli, tmp_path, ["transfer", *transfer, "--pc2", files / "x.mdd"], "--pc2 must be a .pc2 file")


@pytest.mark.skipif(AS_ROOT, reason="root writes into read-only folders")
def test_read_only_folder_and_file_are_refused(files, tmp_path, run_cli):
    ro = files / "readonly"
    ro.mkdir()
    (ro / "old.blend").write_bytes(b"BLENDER")
    os.chmod(ro / "old.blend", 0o444)
    os.chmod(ro, 0o555)
    try:
        good = resolve(COMMANDS["fit"][0], files)
        assert_refused(run_cli, tmp_path, ["fit", *good, "--out", ro / "x.blend"], "permission denied")
        assert_refused(run_cli, tmp_path, ["fit", *good, "--out", ro / "sub" / "x.blend"], "permission denied")
        assert_refused(run_cli, tmp_path, ["compare", *resolve(COMMANDS["compare"][0], files), "--out-dir", ro],
                       "permission denied")
    finally:
        os.chmod(ro, 0o755)


def test_folders_without_write_permission_are_refused(files, tmp_path, run_cli, monkeypatch):
    """As the previous test where it cannot run (as root every folder is writable): the folder's
    permission as os.access reports it."""
    locked = files / "locked"
    (locked / "old.blend").parent.mkdir()
    (locked / "old.blend").write_bytes(b"BLENDER")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).startswith(str(locked)) and mode & os.W_OK
                        else real_access(p, mode))
    good = resolve(COMMANDS["fit"][0], files)
    assert_refused(run_cli, tmp_path, ["fit", *good, "--out", locked / "x.blend"],
                   f"cannot write in the folder {locked} (permission denied)")
    assert_refused(run_cli, tmp_path, ["fit", *good, "--out", locked / "new" / "x.blend"],
                   f"cannot write in the folder {locked} (permission denied)")
    assert_refused(run_cli, tmp_path, ["fit", *good, "--out", locked / "old.blend"], "cannot overwrite it")
    assert_refused(run_cli, tmp_path, ["db-build", files / "take.csv", "--out", locked / "db.blend"], "permission denied")


@pytest.mark.parametrize("command,option,values,message", VALUE_CASES, ids=[f"{c} {o}" for c, o, _, _ in VALUE_CASES])
def test_bad_values_are_refused_naming_the_option(command, option, values, message, files, tmp_path, run_cli):
    good = resolve(COMMANDS[command][0], files)
    for value in values:
        # --option=value: argparse would take a separate '-inf' for an option of its own
        extra = [option, value, "3"] if option == "--frames" else [f"{option}={value}"]
        before = listing(tmp_path)
        code, err = run_cli(command, *good, *extra)
        assert code == 2 and message in err, (value, code, err)
        assert repr(value) in err or value in err, err  # the value is quoted back
        assert "Traceback" not in err and listing(tmp_path) == before


@pytest.mark.parametrize("argv,message", MISUSE_CASES, ids=[" ".join(a[:1] + a[-2:]) for a, _ in MISUSE_CASES])
def test_option_misuse_is_refused(argv, message, files, tmp_path, run_cli):
    assert_refused(run_cli, tmp_path, resolve(argv, files), message)


@pytest.mark.parametrize("argv,message", FILE_CASES, ids=[" ".join(Path(x).name for x in a[:3]) for a, _ in FILE_CASES])
def test_unusable_input_files_are_refused(argv, message, files, tmp_path, run_cli):
    assert_refused(run_cli, tmp_path, resolve(argv, files), message)


@pytest.mark.parametrize("name", list(BAD_BVHS))
def test_malformed_bvh_refused_by_every_command_reading_one(name, files, tmp_path, run_cli):
    bvh = files / f"bad{list(BAD_BVHS).index(name)}.bvh"
    message = BAD_BVHS[name][1]
    for template in BVH_READERS:
        argv = [str(bvh) if a == "{bvh}" else a for a in resolve(template, files)]
        assert_refused(run_cli, tmp_path, argv, message)
        code, err = run_cli(*argv)
        assert str(bvh) in err  # the file is named


def test_help_documents_the_exit_codes(files, run_cli, capsys):
    cli = _load_cli()
    for argv in (["--help"], ["fit", "--help"], ["transfer", "--help"]):
        assert cli.main(["anim_signals_cli.py", *argv]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert "exit codes: 0 success; 2 the command line or a file it names is unusable" in out
        assert "1 the work itself failed" in out
    code, err = run_cli("no-such-command")
    assert code == 2 and "invalid choice" in err
    code, err = run_cli("fit")
    assert code == 2 and "the following arguments are required: input" in err


# --------------------------------------------------------------------------------------------------
# the pieces: argument types, the BVH check, output checks and atomic writing


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers(-2**40, 2**40).map(str),
                 st.text(max_size=8)))
def test_argument_types_accept_exactly_their_range(text):
    values = _cli_module("values")
    try:
        number = float(text)
    except ValueError:
        number = None
    checks = [(values.positive_float, lambda x: math.isfinite(x) and x > 0),
              (values.non_negative_float, lambda x: math.isfinite(x) and x >= 0),
              (values.unit_interval, lambda x: 0 <= x <= 1),
              (values.float_range(0.01), lambda x: math.isfinite(x) and x >= 0.01)]
    for parse, accepts in checks:
        if number is not None and accepts(number):
            assert parse(text) == number
        else:
            with pytest.raises(argparse.ArgumentTypeError):
                parse(text)
    try:
        whole = int(text)
    except ValueError:
        whole = None
    for parse, lo in ((values.positive_int, 1), (values.non_negative_int, 0), (values.frame_number, -2**31)):
        if whole is not None and lo <= whole <= 2**31 - 1:
            assert parse(text) == whole
        else:
            with pytest.raises(argparse.ArgumentTypeError):
                parse(text)


def test_bvh_check_reads_what_it_counts(tmp_path):
    inputs = _cli_module("inputs")
    path = tmp_path / "a.bvh"
    path.write_text(bvh_text(7))
    assert inputs.check_bvh(str(path)) == inputs.BvhSummary(joints=2, channels=9, frames=7, frame_time=0.0333333)
    # old Mac line endings and a name with spaces, as Blender's importer accepts them
    path.write_bytes(bvh_text(3).replace("JOINT Spine", "JOINT Upper Spine").replace("\n", "\r").encode())
    assert inputs.check_bvh(str(path)).frames == 3
    # the problem's line number is the file's
    path.write_text(bvh_text(value="abc"))
    with pytest.raises(inputs.CliError, match=r"\(line 30\)"):
        inputs.check_bvh(str(path))


@pytest.mark.shared_data
@pytest.mark.skipif(not SHARED_MOCAP.is_dir(), reason=f"shared mocap clips not present ({SHARED_MOCAP})")
def test_bvh_check_accepts_every_shared_clip():
    """Clips Blender imports (CMU, Xia, iClone, acRNN exports) pass the check, with their frame counts."""
    inputs = _cli_module("inputs")
    for path in sorted(SHARED_MOCAP.glob("*.bvh")):
        summary = inputs.check_bvh(str(path))
        header = next(ln for ln in path.read_text().splitlines() if ln.startswith("Frames:"))
        assert summary.frames == int(header.split()[1]) and summary.channels % 3 == 0, path


def test_written_atomically_renames_on_success_and_leaves_nothing_on_failure(tmp_path):
    outputs = _cli_module("outputs")
    target = tmp_path / "new" / "deeper" / "result.json"
    with pytest.raises(RuntimeError, match="half way"):
        with outputs.written_atomically(str(target)) as partial:
            assert Path(partial).parent == target.parent and Path(partial).name.startswith(".result.partial-")
            Path(partial).write_text("half")
            raise RuntimeError("half way")
    assert not (tmp_path / "new").exists()  # the folders made for it are gone too
    outputs.write_text(str(target), "whole")
    assert target.read_text() == "whole" and listing(tmp_path) == ["new", "new/deeper", "new/deeper/result.json"]
    with pytest.raises(RuntimeError):  # an existing result survives a failed rewrite untouched
        with outputs.written_atomically(str(target)) as partial:
            Path(partial).write_text("broken")
            raise RuntimeError
    assert target.read_text() == "whole" and len(listing(tmp_path)) == 3


def test_blender_errors_become_one_line(capfd):
    common = _cli_module("common")
    wrapped = RuntimeError(
        "Error: Python: Traceback (most recent call last):\n"
        '  File "/x/io_anim_bvh/__init__.py", line 134, in execute\n'
        "    return import_bvh.load(context, report=self.report, **keywords)\n"
        "IndexError: list index out of range\n"
        "Location: /x/bpy/ops.py:109\n")
    assert common.blender_message(wrapped) == "IndexError: list index out of range"
    assert common.blender_message(RuntimeError("Error: At least 3 markers are needed, got 2\n")) == \
        "At least 3 markers are needed, got 2"
    # what Blender prints on stderr itself is held back when the call fails, passed on when it succeeds
    with pytest.raises(ValueError):
        with common.stderr_kept_back():
            os.write(2, b"Traceback (most recent call last): printed by Blender\n")
            raise ValueError
    with common.stderr_kept_back():
        os.write(2, b"a warning\n")
    with common.stdout_dropped():
        os.write(1, b"Info: Saved copy as .x.partial-1234.blend\n")
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "a warning" in captured.err and "partial" not in captured.out


def test_unexpected_errors_are_one_line_with_exit_code_1(files, run_cli, monkeypatch):
    fit = _cli_module("fit_spline")

    def broken(args):
        raise KeyError("boom")

    monkeypatch.setattr(fit, "load_input", lambda path: broken(path))
    monkeypatch.delenv("ANIM_SIGNALS_DEBUG", raising=False)
    code, err = run_cli("fit", files / "walk.bvh", "--out", files / "x.blend")
    assert code == 1 and "error: unexpected KeyError: 'boom'" in err and "Traceback" not in err
    assert not (files / "x.blend").exists()


# --------------------------------------------------------------------------------------------------
# end to end with Blender (few: each starts Blender)


def run(*args):
    return subprocess.run([sys.executable, str(CLI), *map(str, args)], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


@needs_bpy
def test_end_to_end_refusal_and_operator_failure(tmp_path):
    """The real process: a truncated BVH is one line with exit code 2; an operator's refusal (a cycle
    outside the clip) is one line with exit code 1; neither leaves a file."""
    bvh = tmp_path / "cut.bvh"
    bvh.write_text(GOOD_BVH[: GOOD_BVH.rindex(" ", 0, len(GOOD_BVH) - 20)])
    out = tmp_path / "out" / "x.blend"
    r = run("fit", bvh, "--out", out)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (f"error: {bvh}: malformed BVH (line 30): frame 12 has 6 values, the hierarchy "
                                "has 9 channels (truncated?)")
    good = tmp_path / "walk.bvh"
    good.write_text(GOOD_BVH)
    r = run("loop", good, "--start", "500", "--end", "900", "--out", out)
    assert r.returncode == 1, (r.stdout, r.stderr)
    errors = [ln for ln in r.stderr.splitlines() if "error" in ln.lower()]  # (pycma may warn on 4.2)
    assert len(errors) == 1 and errors[0].startswith("error: walk: "), r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()
