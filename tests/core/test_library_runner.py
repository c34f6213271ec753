"""The library runner on Dask (``scripts/cli/library.py``): a two-worker LocalCluster over a small
generated library gives what the single-clip commands give one by one; a rerun does nothing; a worker
killed mid-task (after writing its .blend under the temporary name, before the rename) and a client
killed while replacing the manifest still end in a complete, correct result; a corrupt clip is listed
with its error while the rest finish; no half-written file is ever left under a result's name.

Needs the bpy module and dask.distributed (the project's .venv); skipped with the reason otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from anim_signals.library import find_clips, humanoid_bvh, write_library

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "scripts" / "anim_signals_cli.py"
MISSING = [m for m in ("bpy", "distributed") if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"needs {' and '.join(MISSING)} (the project's .venv)")

CORRUPT = "walks/zz_truncated.bvh"


def cli(*args, env=None, timeout=300, **kwargs):
    return subprocess.run([sys.executable, str(CLI), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})}, **kwargs)


def make_library(folder: Path, n: int, corrupt: bool = False) -> Path:
    write_library(folder, n)
    if corrupt:  # cut short inside the motion: the CLI's BVH check refuses it with the line
        good = (folder / "walks" / "walks_000.bvh").read_text().splitlines()
        (folder / CORRUPT).write_text("\n".join(good[:-5]) + "\n")
    return folder


def runner():
    sys.path.insert(0, str(ROOT / "scripts"))
    from cli.library import run_library  # noqa: PLC0415

    return run_library


def result_files(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def no_partials(out: Path) -> bool:
    return not [p for p in out.rglob("*") if ".partial-" in p.name]


def one_by_one_fit(path: str, tmp: Path) -> tuple[int, str]:
    """(keys after, E_D as printed) of the single-clip ``fit`` command on one clip."""
    r = cli("fit", path, "--mode", "LATENT", "--out", tmp / (Path(path).stem + ".blend"))
    assert r.returncode == 0, r.stderr
    m = re.search(r"keys \d+ -> (\d+) .*E_D ([0-9.e+-]+)", r.stdout)
    assert m, r.stdout
    return int(m.group(1)), m.group(2)


def test_two_workers_killed_worker_and_corrupt_clip_match_one_by_one_runs(tmp_path, monkeypatch):
    lib = make_library(tmp_path / "lib", 4, corrupt=True)
    out = tmp_path / "out"
    marker = tmp_path / "worker_killed"
    # the worker running this clip dies once, its .blend complete under the temporary name, not renamed
    monkeypatch.setenv("ANIM_SIGNALS_LIBRARY_CRASH", f"walks/walks_003.bvh:{marker}:write")
    lines: list[str] = []
    s = runner()("fit", str(lib), str(out), workers=2, options={"mode": "LATENT"}, echo=lines.append)
    assert marker.exists(), "the crash hook did not fire: the test proves nothing"
    names = [c.name for c in find_clips(lib)]
    assert sorted(s.processed) == names and s.skipped == []
    assert s.failed == [CORRUPT]
    assert "malformed BVH" in s.clips[CORRUPT]["error"] and "truncated" in s.clips[CORRUPT]["error"]
    assert s.dashboard.startswith("http")
    assert sum(1 for ln in lines if re.match(r"\[[#.]+\] \d/5 ", ln)) == 5  # one progress line per task
    assert no_partials(out)
    good = [n for n in names if n != CORRUPT]
    for n in good:
        for rel in s.clips[n]["outputs"]:
            assert (out / rel).is_file()
        report = json.loads((out / s.clips[n]["outputs"][1]).read_text())
        assert without_seconds(report["result"]["objects"]) == without_seconds(s.clips[n]["result"]["objects"])
    summary_md = (out / "summary.md").read_text()
    assert f"| {CORRUPT} | failed |" in summary_md and summary_md.count("| done |") == 4

    # the same clips one by one through the single-clip command (its own process each)
    for n in good:
        obj = s.clips[n]["result"]["objects"][0]
        keys, e_d = one_by_one_fit(str(lib / n), tmp_path)
        assert obj["keys_after"] == keys, n
        assert f"{obj['E_D']:.3g}" == e_d, n
        assert obj["within"]

    # a rerun does nothing: no cluster started, no file touched
    monkeypatch.delenv("ANIM_SIGNALS_LIBRARY_CRASH")
    before = {p: (out / p).stat().st_mtime_ns for p in result_files(out) if p.startswith("clips/")}
    again = runner()("fit", str(lib), str(out), workers=2, options={"mode": "LATENT"}, echo=lines.append)
    assert again.processed == [] and sorted(again.skipped) == names and again.dashboard == ""
    assert {p: (out / p).stat().st_mtime_ns for p in before} == before

    # a changed clip (and only it) is redone
    changed = lib / good[0]
    changed.write_text(changed.read_text().replace("Frame Time: 0.0333333", "Frame Time: 0.0333334"))
    third = runner()("fit", str(lib), str(out), workers=2, options={"mode": "LATENT"}, echo=lines.append)
    assert third.processed == [good[0]]


def without_seconds(objects: list[dict]) -> list[dict]:
    return [{k: v for k, v in o.items() if k != "seconds"} for o in objects]


def loop_results(out: Path) -> dict:
    manifest = json.loads((out / "manifest.json").read_text())
    return {n: without_seconds(e["result"]["objects"]) for n, e in manifest["clips"].items()}


def test_client_killed_while_writing_the_manifest_resumes_to_the_same_result(tmp_path):
    lib = make_library(tmp_path / "lib", 5)
    clean, out = tmp_path / "clean", tmp_path / "out"
    r = cli("library", "loop", lib, "--out", clean, "--workers", "2", "--auto")
    assert r.returncode == 0, r.stderr

    # killed (SIGKILL) after the third result, the new manifest written under its temporary name
    proc = subprocess.Popen([sys.executable, str(CLI), "library", "loop", str(lib), "--out", str(out), "--workers",
                             "2", "--auto"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "ANIM_SIGNALS_LIBRARY_CRASH_CLIENT": "3"}, start_new_session=True)
    try:
        stdout, _ = proc.communicate(timeout=300)
    finally:
        try:  # the killed client's worker processes, by their session
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == -signal.SIGKILL, stdout
    assert "3/5" in stdout
    assert [p.name for p in out.glob(".manifest.json.partial-*")], "no temporary manifest: the kill came elsewhere"
    if (out / "manifest.json").exists():  # an earlier complete save, never the interrupted one
        assert len(json.loads((out / "manifest.json").read_text())["clips"]) < 3
    assert not (out / "summary.md").exists()

    r = cli("library", "loop", lib, "--out", out, "--workers", "2", "--auto")
    assert r.returncode == 0, r.stderr
    assert loop_results(out) == loop_results(clean)
    assert no_partials(out)
    assert result_files(out) == result_files(clean)


def test_compare_and_db_build_on_two_workers(tmp_path):
    lib = make_library(tmp_path / "lib", 6)
    out = tmp_path / "cmp"
    s = runner()("compare", str(lib), str(out), workers=2, options={"k": 2, "candidates": 5, "clusters": 3},
                 echo=lambda line: None)
    data = json.loads((out / "neighbours.json").read_text())
    # the families of the generated library are the clusters, each with a representative from it
    families = {n: n.split("/")[0] for n in data["clips"]}
    by_cluster: dict[int, set] = {}
    for n, c in data["clusters"].items():
        by_cluster.setdefault(c, set()).add(families[n])
    assert sorted(len(v) for v in by_cluster.values()) == [1, 1, 1] and len(by_cluster) == 3
    assert sorted(families[r] for r in data["representatives"]) == ["marches", "walks", "waves"]
    for n, nearest in data["neighbours"].items():
        assert families[nearest[0][0]] == families[n]  # each clip's nearest is of its family
    assert (out / "dendrogram.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert s.extra["compare"]["pairs"] <= 15
    again = runner()("compare", str(lib), str(out), workers=2, options={"k": 2, "candidates": 5, "clusters": 3},
                     echo=lambda line: None)
    assert again.processed == [] and again.dashboard == ""

    db = tmp_path / "db"
    r = cli("library", "db-build", lib, "--out", db, "--workers", "2")
    assert r.returncode == 0, r.stderr
    assert "motion database: 6 clips" in r.stdout
    q = cli("reconstruct", db / "motion_db.blend", lib / "walks" / "walks_000.bvh", "--k", "4", "--window", "4",
            "--paths", "2", "--output", "BEST_PATH", "--out", tmp_path / "rec.blend")
    assert q.returncode == 0, q.stderr
    assert ".reconstructed" in q.stdout


def test_bad_input_is_refused_before_any_work(tmp_path):
    run_library = runner()
    from cli.errors import CliError  # noqa: PLC0415

    with pytest.raises(CliError, match="does not exist"):
        run_library("fit", str(tmp_path / "missing"), str(tmp_path / "out"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(CliError, match="no clips found"):
        run_library("fit", str(tmp_path / "empty"), str(tmp_path / "out"))
    lib = make_library(tmp_path / "lib", 1)
    (tmp_path / "file").write_text("")
    with pytest.raises(CliError, match="is a file"):
        run_library("fit", str(lib), str(tmp_path / "file" / "out"))
    r = cli("library", "fit", lib, "--out", tmp_path / "o", "--scheduler", "tcp://127.0.0.1:9")
    assert r.returncode == 2 and "cannot reach the Dask scheduler" in r.stderr and "dask scheduler" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "o" / "summary.md").exists()


def test_workers_without_a_package_are_named_with_the_versions_found(monkeypatch):
    runner()
    import distributed  # noqa: PLC0415
    from cli import library, library_tasks  # noqa: PLC0415
    from cli.errors import CliError  # noqa: PLC0415

    monkeypatch.setattr(library_tasks, "REQUIRED", (*library_tasks.REQUIRED, "no_such_package"))
    monkeypatch.setattr(library_tasks, "worker_environment", lambda: {
        **{p: "1.0" for p in library_tasks.REQUIRED[:-1]}, "python": "3.11.9", "no_such_package": None})
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with pytest.raises(CliError, match=r"missing no_such_package \(found python 3\.11\.9, numpy 1\.0"):
            library.check_workers(client)


def test_channels_compare_refuses_clips_of_another_rig(tmp_path):
    import numpy as np  # noqa: PLC0415

    from anim_signals.library import Manifest  # noqa: PLC0415

    runner()
    from cli.errors import CliError  # noqa: PLC0415
    from cli.library_compare import load_features  # noqa: PLC0415

    m = Manifest(tmp_path / "manifest.json", "compare")
    (tmp_path / "clips").mkdir()
    rigs = {"a.bvh": ["Hips", "Spine"], "b.bvh": ["Hips", "Spine"], "c.bvh": ["hip", "abdomen"]}
    for name, bones in rigs.items():
        keys = [f'pose.bones["{b}"].rotation_euler[{i}]' for b in bones for i in range(3)]
        np.savez(tmp_path / "clips" / (name[:-4] + ".npz"), curve=np.random.default_rng(0).normal(size=(20, 6)),
                 keys=np.array(keys), kinds=np.array(["EULER"] * 6), owners=np.array([b for b in bones for _ in range(3)]))
        m.record(name, "d", {}, result={}, outputs=[f"clips/{name[:-4]}.npz"])
    names, curves = load_features(m, str(tmp_path), "BODY")  # body features: any rigs
    assert names == ["a.bvh", "b.bvh", "c.bvh"]
    with pytest.raises(CliError, match=r"c\.bvh has other rotation channels than a\.bvh .*--features BODY"):
        load_features(m, str(tmp_path), "CHANNELS")


def test_a_scheduler_and_worker_started_elsewhere_run_the_library(tmp_path):
    """``dask scheduler`` and ``dask worker`` started outside the checkout (no PYTHONPATH): the runner
    puts the checkout on their paths itself (the scheduler unpickles the tasks, the workers run them)."""
    lib = make_library(tmp_path / "lib", 3, corrupt=True)
    dask = Path(sys.executable).parent / "dask"
    info = tmp_path / "scheduler.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    procs = [subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address",
                               ":0", "--scheduler-file", str(info)], cwd=tmp_path, env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs.append(subprocess.Popen([str(dask), "worker", "--scheduler-file", str(info), "--nthreads", "1",
                                       "--nworkers", "1"], cwd=tmp_path, env=env, start_new_session=True,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(600):  # the scheduler writes its address when it is up
            if info.exists() and info.stat().st_size:
                break
            time.sleep(0.1)
        address = json.loads(info.read_text())["address"]
        r = cli("library", "loop", lib, "--out", tmp_path / "out", "--scheduler", address, "--auto")
        assert r.returncode == 1, r.stderr  # the corrupt clip
        summary = json.loads((tmp_path / "out" / "summary.json").read_text())
        assert summary["failed"] == [CORRUPT]
        assert sorted(n for n, e in summary["clips"].items() if e["status"] == "done") == [
            "marches/marches_002.bvh", "walks/walks_000.bvh", "waves/waves_001.bvh"]
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=30)


def test_blend_clips_beside_bvh_clips_of_the_same_name(tmp_path):
    """A .blend with an action is a clip too; w.bvh and w.blend in one folder keep separate outputs."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "walk.bvh").write_text(humanoid_bvh(frames=40))
    r = cli("fit", lib / "walk.bvh", "--mode", "LATENT", "--out", lib / "walk.blend")  # a .blend holding an action
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    s = runner()("loop", str(lib), str(out), workers=1, options={"auto": True}, echo=lambda line: None)
    assert s.failed == [] and sorted(s.processed) == ["walk.blend", "walk.bvh"]
    outputs = sorted(rel for e in s.clips.values() for rel in e["outputs"])
    assert outputs == ["clips/walk.blend.blend", "clips/walk.blend.json", "clips/walk.bvh.blend", "clips/walk.bvh.json"]
    # the .blend's assigned action is the fitted copy: that is what got looped
    assert s.clips["walk.blend"]["result"]["objects"][0]["action_name"] == "walk.fit.loop"
    assert s.clips["walk.bvh"]["result"]["objects"][0]["action_name"] == "walk.loop"
