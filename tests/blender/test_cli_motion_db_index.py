"""``db-build`` and ``reconstruct`` (scripts/cli/motion_db.py) with the persisted k-NN index, each run by
the command line in its own process and checked from here: db-build writes ``DB_motiondb/knn-<hash>.asknn``
beside ``DB.blend`` and prints the backend and measured recall; reconstruct loads that file (no new one,
the same bytes), and a damaged file is reported, rebuilt and replaced by one the core's loader accepts.

Independent expectations: the files on disk; the reconstruction of a database take (a noiseless query)
read back from the saved .blend equals the take's own keys along the best path; a rebuilt file is loaded by
the next run. Bad index options are refused
in-process before Blender starts (exit 2, nothing written).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest
from _bl_helpers import ext_module, key_array

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "scripts" / "anim_signals_cli.py"
FPS = 30


def run_cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    """The command line in its own process (Blender's user resources: the scripts' own, not this session's)."""
    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    return subprocess.run([sys.executable, str(CLI), *map(str, args)], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=env)


@pytest.fixture
def takes(tmp_path, extension):
    """Three short Live Link Face takes written by the core's writer (generated expressions)."""
    ll = ext_module("anim_signals.motiondb.livelink")
    gen = ext_module("anim_signals.motiondb.generated")
    folder = tmp_path / "takes"
    folder.mkdir()
    for i, n in enumerate((60, 50, 40)):
        values = np.column_stack([gen.generated_expressions(n, seed=30 + i, fps=FPS), np.zeros((n, 9))])
        ll.write_csv(folder / f"t{i}.csv", np.arange(n) / FPS, values)
    return folder


def index_files(tmp_path) -> list[Path]:
    folder = tmp_path / "db_motiondb"
    return sorted(folder.glob("*.asknn")) if folder.is_dir() else []


def reconstructed_keys(path: Path, action: str) -> dict:
    """The shape-key curves of ``action`` in the .blend at ``path`` (name -> keys), read after opening it."""
    bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
    data = ext_module("operators.blender_data")
    curves = data.named_channels.named_channel_curves(bpy.data.actions[action], "SHAPE_KEYS")
    return {n: key_array(fc) for n, fc in curves.items()}


def test_db_build_writes_the_index_and_reconstruct_loads_it(tmp_path, takes):
    db = tmp_path / "db.blend"
    r = run_cli("db-build", takes, "--backend", "HNSW", "--recall-target", "0.9", "--out", db, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "k-NN index: HNSW" in r.stdout and "measured recall" in r.stdout and ", built," in r.stdout
    files = index_files(tmp_path)
    assert db.is_file() and len(files) == 1
    content = files[0].read_bytes()

    out = tmp_path / "rec.blend"
    r = run_cli("reconstruct", db, takes / "t1.csv", "--output", "BEST_PATH", "--k", "32", "--window", "8",
                "--out", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "k-NN index: HNSW" in r.stdout and "loaded from its file" in r.stdout
    assert index_files(tmp_path) == files and files[0].read_bytes() == content  # used as it was
    written = next(line.split(":")[0] for line in r.stdout.splitlines()
                   if " frames from " in line and " ms per frame, mean best path " in line)
    assert written.startswith("t1") and written.endswith(".reconstructed")  # the query take imported again
    got = reconstructed_keys(out, written)
    want = reconstructed_keys(db, "t1")
    assert sorted(got) == sorted(want)
    for name in ("JawOpen", "EyeBlinkLeft", "MouthSmileRight"):  # a database take comes back exactly
        np.testing.assert_allclose(got[name][:, 1], want[name][:, 1], atol=1e-6, err_msg=name)

    with open(files[0], "r+b") as fh:  # damaged: truncated to half
        fh.truncate(len(content) // 2)
    r = run_cli("reconstruct", db, takes / "t1.csv", "--output", "BEST_PATH", "--k", "32", "--window", "8",
                "--out", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert ", built," in r.stdout and "unusable" in r.stdout and files[0].name in r.stdout
    assert index_files(tmp_path) == files
    r = run_cli("reconstruct", db, takes / "t1.csv", "--output", "BEST_PATH", "--k", "32", "--window", "8",
                "--out", out, cwd=tmp_path)
    assert r.returncode == 0 and "loaded from its file" in r.stdout, r.stdout + r.stderr[-2000:]  # a good one


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("extra, message", [
    (["--recall-target", "1.5"], "--recall-target: must be between 0.5 and 1"),
    (["--recall-target", "nan"], "--recall-target: must be a finite number"),
    (["--backend", "ANNOY"], "--backend: invalid choice: 'ANNOY'"),
])
def test_bad_index_options_exit_2_before_blender(tmp_path, takes, monkeypatch, capsys, extra, message):
    cli = _module("anim_signals_cli", CLI)
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for argv in (["db-build", str(takes), *extra], ["library", "db-build", str(takes), "--out", "lib", *extra]):
        capsys.readouterr()
        with monkeypatch.context() as m:
            m.setitem(sys.modules, "bpy", None)
            code = cli.main(["anim_signals_cli.py", *argv])
        err = capsys.readouterr().err
        assert code == 2 and message in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
