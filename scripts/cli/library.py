"""``library fit|loop|compare|db-build FOLDER --out DIR``: a whole library of clips on Dask.

Every ``.bvh`` and ``.blend`` under FOLDER (recursive) is one task (``cli/library_tasks.py``) on a Dask
cluster: a ``LocalCluster`` of worker processes with one thread each by default (``--workers N``;
one Blender per process), or any running scheduler (``--scheduler tcp://host:8786``). Outputs:

* ``OUT/clips/<clip>.blend`` (fit, loop, db-build) or ``.npz`` (compare features) and ``<clip>.json``;
* ``OUT/summary.md`` and ``summary.json``: one row per clip (result or error);
* ``OUT/manifest.json``: per clip its content's SHA-256, the options, result or error and outputs. A rerun
  skips what is done and redoes what changed; an interrupted run loses at most the tasks in flight
  (a lost worker's tasks are rescheduled by Dask on the others);
* compare: ``OUT/neighbours.json`` (k-NN graph, clusters, representatives), ``compare.md``,
  ``dendrogram.png`` (the representatives); db-build: ``OUT/motion_db.blend``.

Python entry point (the same as the command line, without argument parsing)::

    import sys; sys.path.insert(0, "scripts")
    from cli.library import run_library
    summary = run_library("fit", "mocap/", "out/lib", workers=2, options={"mode": "AUTO", ...})

Every file is written under a temporary name and renamed; a failing clip is listed with its error and
every other clip still finishes.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import _blender_env as be

from .common import add_command
from .errors import CliError, failed
from .motion_db import add_index_options
from .outputs import check_output_dir, write_text
from .values import float_range, int_range, non_negative_int, positive_int

__all__ = ["COMMANDS", "LibrarySummary", "default_options", "run_library", "PARSERS"]

COMMANDS = ("fit", "loop", "compare", "db-build")
# A scheduler just started may not have its workers yet (a worker registers a second or two after it
# starts): the runner waits this long for the first one before it reports a cluster without workers.
FIRST_WORKER_WAIT_SECONDS = 30.0
SAVE_EVERY_SECONDS = 1.0  # the manifest is replaced at most this often while results come in (and at the end)
# test hook: "N" kills this (the client) process while it replaces the manifest after the N-th result,
# the new manifest written under its temporary name but not yet renamed
CLIENT_CRASH_HOOK = "ANIM_SIGNALS_LIBRARY_CRASH_CLIENT"


@dataclass
class LibrarySummary:
    """What a library run did (:func:`run_library`).

    Attributes
    ----------
    clips : dict
        Clip name -> its manifest entry (status, result or error, outputs), for every clip of the library.
    processed, skipped : list of str
        Clips run now / left as they were (done before, unchanged).
    failed : list of str
        Clips whose latest run failed (now or before).
    extra : dict
        compare: the neighbour graph and clusters; db-build: the database.
    seconds : float
    task_seconds : float
        Wall time from the first task submitted to the last result (0 without tasks).
    dashboard : str
        The Dask dashboard's address ('' without one).
    """

    clips: dict[str, dict] = field(default_factory=dict)
    processed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    task_seconds: float = 0.0
    dashboard: str = ""


def default_options(command: str) -> dict[str, Any]:
    """The options a command runs with when none are given (the single-clip commands' defaults)."""
    return {
        "fit": dict(mode="FEWEST", share_keys="CURVE", max_error_rotation=0.5, max_error_location=0.01, max_error_other=0.01,
                    internal_knots=0, snap_to_frames=False, seed=0),
        "loop": dict(auto=False, in_place=False, no_cycles=False),
        "compare": dict(features="BODY", n_samples=100, closed=True, k=10, candidates=0, clusters=0, coarse=24),
        "db-build": dict(fps=30, backend="AUTO", recall_target=0.95),
    }[command]


# Options only the last step uses (db-build: the k-NN index settings): changing one rebuilds the
# database and its index, not every clip's import.
FINAL_STEP_OPTIONS = {"db-build": ("backend", "recall_target")}


# --------------------------------------------------------------------------------------------------
# the cluster


def _dask():
    try:
        import distributed  # noqa: PLC0415
    except ImportError as ex:
        raise CliError("the library commands need dask and distributed (pip install dask distributed; "
                       "the project's .venv has them: bash scripts/bootstrap.sh)") from ex
    return distributed


def connect(scheduler: str | None, workers: int | None):
    """A Dask client: to ``scheduler`` (an address), or to a new LocalCluster of ``workers`` processes
    with one thread each. Returns (client, cluster or None). CliError when the scheduler cannot be reached."""
    distributed = _dask()
    if scheduler:
        try:
            return distributed.Client(scheduler, timeout="10s"), None
        except (OSError, TimeoutError) as ex:
            raise CliError(
                f"cannot reach the Dask scheduler at {scheduler} ({type(ex).__name__}: {ex}). Start one with "
                f"'dask scheduler' and a worker per machine with 'dask worker {scheduler} --nthreads 1' "
                "(from the checkout, in the project's .venv), or leave out --scheduler to run a local cluster"
            ) from ex
    n = workers or min(os.cpu_count() or 1, 4)
    cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    client = distributed.Client(cluster)

    class LeaveCtrlCToTheRunner(distributed.WorkerPlugin):  # sent by value
        """Ctrl-C in the terminal reaches the local workers too (one process group): they ignore it and
        are closed by the runner, which keeps what finished (no traceback from every worker)."""

        def setup(self, worker):
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)

    client.register_plugin(LeaveCtrlCToTheRunner(), name="anim-signals-local-sigint")
    return client, cluster


def checkout_on_path(client) -> None:
    """Put this checkout's ``scripts/`` and root on the scheduler's and every worker's ``sys.path``, now
    and on every worker that joins or restarts later (plugins): a scheduler and workers started by
    ``dask scheduler`` / ``dask worker`` find the tasks' code at the same paths (a shared file system),
    without PYTHONPATH."""
    distributed = _dask()
    paths = [str(be.REPO_ROOT / "scripts"), str(be.REPO_ROOT)]

    def add_paths():
        for path in reversed(paths):
            if path not in sys.path:
                sys.path.insert(0, path)

    # defined here, so sent by value: the scheduler and the workers need nothing of ours to load them
    class CheckoutOnWorkers(distributed.WorkerPlugin):
        def setup(self, worker):
            add_paths()

    class CheckoutOnScheduler(distributed.SchedulerPlugin):  # it unpickles the task graph
        async def start(self, scheduler):
            add_paths()

    client.register_plugin(CheckoutOnScheduler(), name="anim-signals-checkout-scheduler")
    client.register_plugin(CheckoutOnWorkers(), name="anim-signals-checkout")


def check_workers(client) -> dict[str, dict]:
    """Every worker's package versions (once, at the start); CliError naming the workers that lack one."""
    from .library_tasks import REQUIRED, worker_environment

    try:
        client.wait_for_workers(1, timeout=FIRST_WORKER_WAIT_SECONDS)
    except TimeoutError:
        raise CliError(f"the Dask cluster has no workers (none joined in {FIRST_WORKER_WAIT_SECONDS:.0f} s): start "
                       "some with 'dask worker ADDRESS --nthreads 1'") from None
    try:
        checkout_on_path(client)
        found = client.run(worker_environment)
    except Exception as ex:  # a worker that cannot even unpickle the check: the checkout is not at this path
        raise CliError(f"the workers cannot run the library tasks ({type(ex).__name__}: {ex}): they need this "
                       f"checkout at the same path ({be.REPO_ROOT}, a shared file system) or on their PYTHONPATH "
                       "(PYTHONPATH=CHECKOUT/scripts:CHECKOUT dask worker ...), in the project's .venv") from ex
    if not found:
        raise CliError("the Dask cluster has no workers: start some with 'dask worker ADDRESS --nthreads 1'")
    bad = []
    for addr, env in sorted(found.items()):
        missing = [p for p in REQUIRED if not env.get(p)]
        if missing:
            have = ", ".join(f"{p} {env[p]}" for p in REQUIRED if env.get(p))
            bad.append(f"{addr}: missing {', '.join(missing)} (found python {env['python']}, {have or 'nothing else'})")
    if bad:
        raise CliError("workers without the required packages (bpy, numpy, scipy, dask, distributed):\n  "
                       + "\n  ".join(bad))
    return found


# --------------------------------------------------------------------------------------------------
# the run


def _clean_partials(out_dir: str) -> int:
    """Remove the hidden temporary files an interrupted earlier run left (``.name.partial-*``)."""
    removed = 0
    for here, _, files in os.walk(out_dir):
        for f in files:
            if f.startswith(".") and ".partial-" in f:
                os.remove(os.path.join(here, f))
                removed += 1
    return removed


def _progress(done: int, total: int, name: str, entry: Mapping, width: int = 24) -> str:
    filled = int(width * done / max(total, 1))
    bar = "#" * filled + "." * (width - filled)
    what = f"error: {entry['error']}" if entry.get("error") else f"{entry['result'].get('seconds', 0.0):.1f} s"
    return f"[{bar}] {done}/{total} {name}: {what}"


def run_library(command: str, folder: str, out: str, *, scheduler: str | None = None, workers: int | None = None,
                options: Mapping[str, Any] | None = None, retry_failed: bool = False,
                echo=print) -> LibrarySummary:
    """Run ``command`` over every clip under ``folder`` on Dask, resuming what ``out`` already holds.

    Parameters
    ----------
    command : {"fit", "loop", "compare", "db-build"}
    folder : str
        The library (searched recursively for .bvh and .blend).
    out : str
        Output folder (made if missing; its manifest.json says what is done).
    scheduler : str, optional
        A running Dask scheduler's address; default: a LocalCluster on this machine.
    workers : int, optional
        LocalCluster worker processes (default: the CPU count, at most 4).
    options : mapping, optional
        The command's options (:func:`default_options` fills the rest).
    retry_failed : bool
        Run clips that failed before again (default: keep their error).
    echo : callable
        Where progress lines go (``print``).

    Returns
    -------
    LibrarySummary

    Raises
    ------
    CliError
        Bad input before any work (missing folder, no clips, unwritable output, damaged manifest,
        unreachable scheduler, workers without the packages), or (code 1) every clip failed.
    """
    be.add_core_to_path()
    from anim_signals.library import Manifest, file_digest, find_clips

    from .library_tasks import clip_outputs, run_clip

    if command not in COMMANDS:
        raise CliError(f"unknown library command {command!r} (one of {', '.join(COMMANDS)})")
    opts = {**default_options(command), **dict(options or {})}
    try:
        clips = find_clips(folder)
    except (FileNotFoundError, NotADirectoryError) as ex:
        raise CliError(str(ex)) from ex
    if not clips:
        raise CliError(f"no clips found under {os.path.abspath(folder)} (looked for .bvh and .blend files, recursively)")
    out = check_output_dir(out, "--out")
    try:
        os.makedirs(out, exist_ok=True)
        manifest = Manifest(os.path.join(out, "manifest.json"), command)
    except OSError as ex:
        raise CliError(f"--out {out}: {ex}") from ex
    except ValueError as ex:
        raise CliError(str(ex)) from ex
    t0 = time.perf_counter()
    by_name = {c.name: c for c in clips}
    digests = {c.name: file_digest(c.path) for c in clips}
    clip_opts = {k: v for k, v in opts.items() if k not in FINAL_STEP_OPTIONS.get(command, ())}
    plan = manifest.plan(digests, clip_opts, retry_failed=retry_failed)
    summary = LibrarySummary(skipped=list(plan.skipped))
    _clean_partials(out)
    echo(f"library {command}: {len(clips)} clips under {os.path.abspath(folder)}: {len(plan.todo)} to do "
         f"({len(plan.new)} new, {len(plan.changed)} changed, {len(plan.missing_outputs)} with missing outputs"
         f"{f', {len(plan.retried)} retried' if plan.retried else ''}), {len(plan.skipped)} up to date")
    final_current = not plan.todo and command in ("compare", "db-build") and _final_step_current(command, out, manifest, opts)
    needs_cluster = bool(plan.todo) or (command in ("compare", "db-build") and not final_current)
    client = cluster = None
    try:
        if needs_cluster:
            client, cluster = connect(scheduler, workers)
            envs = check_workers(client)
            summary.dashboard = getattr(client, "dashboard_link", "") or ""
            first = next(iter(envs.values()))
            echo(f"dask: {len(envs)} worker(s) (bpy {first['bpy']}, numpy {first['numpy']}, scipy {first['scipy']}, "
                 f"dask {first['dask']}); dashboard {summary.dashboard or '(none)'}")
        if plan.todo:
            _run_tasks(client, command, plan.todo, by_name, digests, out, clip_opts, manifest, summary, echo, run_clip,
                       clip_outputs)
        if command == "compare":
            from .library_compare import compare_step

            summary.extra = compare_step(client, manifest, out, opts, echo)
        elif command == "db-build":
            summary.extra = _database_step(client, manifest, out, opts, echo)
    finally:
        manifest.save()
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    _clean_partials(out)  # what killed attempts left (their tasks were rerun elsewhere)
    summary.clips = {c.name: manifest.entries.get(c.name, {}) for c in clips}
    summary.failed = [n for n, e in summary.clips.items() if e.get("status") == "failed"]
    summary.seconds = time.perf_counter() - t0
    write_summary(out, command, summary, opts)
    if len(summary.failed) == len(clips):
        raise failed(f"every clip failed ({len(clips)}); the errors are in {os.path.join(out, 'summary.md')}")
    return summary


def _run_tasks(client, command, todo, by_name, digests, out, opts, manifest, summary, echo, run_clip,
               clip_outputs) -> None:
    """Submit one task per clip and record each result as it arrives (manifest saved as it goes)."""
    distributed = _dask()
    t0 = time.perf_counter()
    futures = {}
    for name in todo:
        fut = client.submit(run_clip, command, name, by_name[name].path, out, dict(opts),
                            key=f"{command}:{name}:{digests[name][:12]}", pure=False)
        futures[fut] = name
    last_save = time.monotonic()
    for done, fut in enumerate(distributed.as_completed(futures), 1):
        name = futures[fut]
        try:
            answer = fut.result()
        except Exception as ex:  # the task was lost too often (KilledWorker) or could not run at all
            answer = {"error": f"the task did not finish: {type(ex).__name__}: {ex}"}
        fut.release()  # the result is here: a worker lost later must not run the clip again
        if answer.get("error"):
            manifest.record(name, digests[name], opts, error=answer["error"])
        else:
            manifest.record(name, digests[name], opts, result=answer["result"], outputs=answer["outputs"])
        summary.processed.append(name)
        echo(_progress(done, len(futures), name, manifest.entries[name]))
        crash_now = os.environ.get(CLIENT_CRASH_HOOK, "") == str(done)
        if crash_now or time.monotonic() - last_save >= SAVE_EVERY_SECONDS:
            if crash_now:
                os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)  # type: ignore[assignment]
            manifest.save()
            last_save = time.monotonic()
    summary.task_seconds = time.perf_counter() - t0
    manifest.save()


def _final_step_current(command: str, out: str, manifest, opts) -> bool:
    """The last step's files (compare: neighbours.json ...; db-build: motion_db.blend) were made from
    these clips with these options."""
    from .library_compare import step_digest, step_is_current

    if command == "compare":
        return step_is_current(out, manifest, opts)
    try:
        with open(os.path.join(out, "motion_db.json"), encoding="utf-8") as fh:
            stamp = json.load(fh)
    except (OSError, ValueError):
        return False
    index_file = (stamp.get("database") or {}).get("index_file") or ""
    return (stamp.get("inputs_digest") == step_digest(manifest, opts) and os.path.isfile(os.path.join(out, "motion_db.blend"))
            and bool(index_file) and os.path.isfile(os.path.join(out, index_file)))


def _database_step(client, manifest, out: str, opts, echo) -> dict:
    """The motion database from every clip done: one task appends their actions and builds it."""
    from .library_compare import step_digest
    from .library_tasks import build_database

    if _final_step_current("db-build", out, manifest, opts):
        echo("db-build: motion_db.blend is current (same clips, same options): nothing to do")
        with open(os.path.join(out, "motion_db.json"), encoding="utf-8") as fh:
            return {"database": json.load(fh).get("database", {})}
    done = manifest.done()
    if not done:
        raise failed("no clip could be imported: no database to build")
    blends = [os.path.join(out, e["outputs"][0]) for _, e in sorted(done.items())]
    target = os.path.join(out, "motion_db.blend")
    echo(f"building the motion database from {len(blends)} clips ...")
    result = client.submit(build_database, blends, target, int(opts["fps"]), str(opts["backend"]),
                           float(opts["recall_target"]), pure=False).result()
    echo(f"motion database: {result['clips']} clips, {result['frames']} frames, {result['channels']} channels "
         f"-> {target}")
    echo(f"{result['index']} -> {os.path.join(out, result['index_file'])}")
    write_text(os.path.join(out, "motion_db.json"),
               json.dumps({"inputs_digest": step_digest(manifest, opts), "database": result}, indent=1))
    return {"database": result}


def write_summary(out: str, command: str, summary: LibrarySummary, opts: Mapping) -> None:
    """``OUT/summary.json`` and ``OUT/summary.md``: one row per clip."""
    rows = []
    for name, e in summary.clips.items():
        res = e.get("result") or {}
        if command in ("fit", "loop"):
            objs = res.get("objects", [])
            if command == "fit":
                detail = "; ".join(f"{o['object']}: keys {o['keys_before']} -> {o.get('keys_after', '?')}, "
                                   f"E_D {o.get('E_D', float('nan')):.3g}" for o in objs)
            else:
                detail = "; ".join(f"{o['object_name']}: seam {o['pose_before_deg']:.3g} -> {o['pose_after_deg']:.3g} deg"
                                   for o in objs)
        else:
            detail = f"{res.get('frames', '?')} frames x {res.get('channels', '?')} channels" if res else ""
        status = e.get("status", "not run")
        rows.append((name, status, f"{res.get('seconds', 0.0):.2f}" if res else "", detail or (e.get("error") or "")))
    md = [f"# library {command}: {len(rows)} clips", "",
          f"{len(rows) - len(summary.failed)} done, {len(summary.failed)} failed; {len(summary.processed)} run now, "
          f"{len(summary.skipped)} up to date; {summary.seconds:.1f} s", "",
          "| clip | status | seconds | result / error |", "|---|---|---:|---|"]
    md += [f"| {n} | {s} | {sec} | {d.replace('|', '/')} |" for n, s, sec, d in rows]
    payload = {"command": command, "options": dict(opts), "seconds": summary.seconds, "processed": summary.processed,
               "skipped": summary.skipped, "failed": summary.failed, "clips": summary.clips,
               "extra": summary.extra}
    write_text(os.path.join(out, "summary.json"), json.dumps(payload, indent=1, default=str))
    write_text(os.path.join(out, "summary.md"), "\n".join(md) + "\n")


# --------------------------------------------------------------------------------------------------
# command line


def cmd_library(args) -> int:
    command = args.library_command
    opts: dict[str, Any] = {}
    if command == "fit":
        opts = dict(mode=args.mode, share_keys=args.share_keys, max_error_rotation=args.max_error_rotation,
                    max_error_location=args.max_error_location, max_error_other=args.max_error_other,
                    internal_knots=args.internal_knots, snap_to_frames=args.snap_to_frames, seed=args.seed)
    elif command == "loop":
        opts = dict(auto=args.auto, in_place=args.in_place, no_cycles=args.no_cycles)
    elif command == "compare":
        opts = dict(features=args.features, n_samples=args.samples, closed=not args.open, k=args.k,
                    candidates=args.candidates, clusters=args.clusters, coarse=args.coarse)
    elif command == "db-build":
        opts = dict(fps=args.fps, backend=args.backend, recall_target=args.recall_target)
    be.setup_environment()
    try:
        s = run_library(command, args.folder, args.out, scheduler=args.scheduler or None, workers=args.workers,
                        options=opts, retry_failed=args.retry_failed,
                        echo=lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        print(f"interrupted: the clips finished so far are in {os.path.join(os.path.abspath(args.out), 'manifest.json')}; "
              "run the same command again to go on", file=sys.stderr)
        return 130
    print(f"{len(s.clips) - len(s.failed)} of {len(s.clips)} clips done, {len(s.failed)} failed "
          f"({len(s.processed)} run now, {len(s.skipped)} up to date) in {s.seconds:.1f} s; "
          f"summary: {os.path.join(os.path.abspath(args.out), 'summary.md')}")
    for name in s.failed:
        print(f"  failed: {name}: {s.clips[name].get('error')}", file=sys.stderr)
    return 1 if s.failed else 0


def _add_common(p) -> None:
    p.add_argument("folder", metavar="FOLDER", help="the library: .bvh and .blend files, searched recursively")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (its manifest.json makes reruns resume)")
    p.add_argument("--scheduler", default="", metavar="ADDRESS",
                   help="a running Dask scheduler (tcp://host:8786); default: a local cluster")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="local cluster: worker processes, one thread each (default: CPUs, at most 4)")
    p.add_argument("--retry-failed", action="store_true", help="run clips that failed before again")


def add_library_parser(sub) -> None:
    p = add_command(sub, "library", cmd_library, "run a tool over a whole library of clips on Dask (resumable)",
                    "One Dask task per clip (fit, loop, compare features, database import) on a local cluster "
                    "or a scheduler; outputs per clip under DIR/clips, DIR/summary.md, DIR/manifest.json.")
    lib = p.add_subparsers(dest="library_command", metavar="fit|loop|compare|db-build")
    lib.required = True
    fit = lib.add_parser("fit", help="fit every clip (bpy.ops.anim_signals.fit_latent_spline)")
    _add_common(fit)
    fit.add_argument("--mode", default="FEWEST", choices=("FEWEST", "EDITABLE", "AUTO", "LATENT", "PER_CHANNEL"))
    fit.add_argument("--share-keys", default="CURVE", choices=("CURVE", "BONE", "ALL"),
                     help="curves keyed on the same frames: each curve its own (default), per bone, all")
    fit.add_argument("--max-error-rotation", type=float_range(1e-4), default=0.5, help="degrees (default 0.5)")
    fit.add_argument("--max-error-location", type=float_range(1e-6), default=0.01, help="scene units (default 0.01)")
    fit.add_argument("--max-error-other", type=float_range(1e-6), default=0.01)
    fit.add_argument("--internal-knots", type=int_range(0, 1000), default=0, help="0 = automatic")
    fit.add_argument("--snap-to-frames", action="store_true")
    fit.add_argument("--seed", type=non_negative_int, default=0)
    loop = lib.add_parser("loop", help="loop every clip (bpy.ops.anim_signals.make_cyclic)")
    _add_common(loop)
    loop.add_argument("--auto", action="store_true", help="the best cycle inside each clip")
    loop.add_argument("--in-place", action="store_true", help="the root returns to its start too")
    loop.add_argument("--no-cycles", action="store_true", help="do not add Cycles F-modifiers")
    cmp_ = lib.add_parser("compare", help="k-NN graph, clusters and a dendrogram of the library's clips")
    _add_common(cmp_)
    cmp_.add_argument("--features", default="BODY", choices=("BODY", "CHANNELS"),
                      help="body features (any humanoid rigs, default) or rotation channels by name (one skeleton)")
    cmp_.add_argument("--k", type=int_range(1, 1000), default=10, help="neighbours per clip (default 10)")
    cmp_.add_argument("--candidates", type=int_range(0, 100000), default=0,
                      help="candidates per clip that get exact distances (0 = 1.5 k)")
    cmp_.add_argument("--clusters", type=int_range(0, 1000), default=0, help="0 = automatic (best silhouette)")
    cmp_.add_argument("--samples", type=int_range(8, 10000), default=100, help="samples per clip (default 100)")
    cmp_.add_argument("--coarse", type=int_range(4, 1000), default=32,
                      help="intervals of the cheap candidate embedding (default 24)")
    cmp_.add_argument("--open", action="store_true", help="compare as open clips (default: as cycles)")
    db = lib.add_parser("db-build", help="a motion database (.blend) from every BVH clip")
    _add_common(db)
    db.add_argument("--fps", type=int_range(1, 32767), default=30, help="scene frame rate (default 30)")
    add_index_options(db)
    for q in (fit, loop, cmp_, db):
        q.set_defaults(func=cmd_library)


PARSERS = (add_library_parser,)
