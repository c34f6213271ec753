"""``db-build``, ``reconstruct``: the motion database (Richert, "Animation Database for real-time motion
reconstruction": an online lazy neighbourhood graph).

* ``db-build`` imports Live Link Face CSV takes (onto one generated ARKit face) or BVH clips and calls
  ``bpy.ops.anim_signals.build_motion_database`` (the database and its k-NN index: ``--backend``,
  ``--recall-target``); writes the index beside the output (``DB_motiondb/knn-<hash>.asknn``,
  ``bpy.ops.anim_signals.save_motion_db_index``), then saves ``DB.blend``;
* ``reconstruct`` imports a query take into that file and calls ``bpy.ops.anim_signals.reconstruct_motion``
  (denoising, or the missing channels from the rest), which loads the index from beside ``DB.blend``
  (rebuilt, with a message, when it is missing, stale or damaged; the rebuilt one is saved there);
  the result is the action ``<query>.reconstructed``.

Both print the k-NN backend, its measured recall, its size and whether it was loaded or built.
"""

from __future__ import annotations

import os

import _blender_env as be

from .common import (
    CliError,
    add_command,
    add_out_option,
    check_input,
    enable_operators,
    expand_folders,
    import_bvh,
    load_input,
    run_operator,
    save,
)
from .inputs import check_inputs
from .outputs import check_output_file
from .values import float_range, int_range, positive_int

MAX_SCENE_FPS = 32767  # Blender's scene frame rate (RenderSettings.fps) is an int in 1..32767

DB_OPERATORS = ("import_live_link_csv", "build_motion_database", "save_motion_db_index", "reconstruct_motion")
BACKENDS = ("AUTO", "KDTREE", "FLAT", "HNSW", "IVF")


def index_report(s) -> str:
    """One line on the k-NN index the scene's database (``s``: ``scene.anim_signals.motion_db``) used."""
    if s.index_status == "NONE":
        return "k-NN index: none in use"
    how = "loaded from its file" if s.index_status == "LOADED" else "built"
    line = (f"k-NN index: {s.index_backend}, measured recall {s.index_recall:.3f}, {s.index_mb:.1f} MB, {how}, "
            f"{s.index_channels} query channels")
    return line + (f" ({s.index_note})" if s.index_note else "")


def save_index_beside(out: str, label: str) -> None:
    """Write the database's k-NN index beside ``out`` (before the .blend itself, so a saved database
    always has its index)."""
    bpy = be.import_bpy()
    run_operator(bpy.ops.anim_signals.save_motion_db_index, label, None, filepath=out)
    stem = os.path.splitext(os.path.basename(out))[0]
    print(f"k-NN index beside it: {os.path.join(os.path.dirname(out), stem + '_motiondb')}")


def db_inputs(paths) -> tuple[list[str], list[str]]:
    """Folders -> their CSV and BVH files (sorted); returns (CSV files, BVH files). CliError on misuse."""
    csvs: list[str] = []
    bvhs: list[str] = []
    for f in expand_folders(paths, (".csv", ".bvh")):
        ext = os.path.splitext(f)[1].lower()
        if ext == ".csv":
            csvs.append(f)
        elif ext == ".bvh":
            bvhs.append(f)
        else:
            raise CliError(f"unsupported input {f!r}: expected Live Link Face .csv or .bvh files")
    if csvs and bvhs:
        raise CliError("a database holds one kind of clip: give Live Link Face CSV files or BVH files, not both")
    if not csvs and not bvhs:
        raise CliError("no input files")
    return list(dict.fromkeys(csvs)), list(dict.fromkeys(bvhs))


def import_bvh_clip(path: str):
    """A BVH clip as an active armature whose action is named after the file (kept with a fake user)."""
    bpy = be.import_bpy()
    ob = import_bvh(path)
    act = ob.animation_data.action if ob.animation_data is not None else None
    if act is None:
        raise CliError(f"{path}: the BVH has no animation")
    act.name = os.path.splitext(os.path.basename(path))[0]
    act.use_fake_user = True
    bpy.context.view_layer.objects.active = ob
    return ob


def import_csv_take(path: str, target=None):
    """A Live Link Face take onto ``target`` (None: a generated ARKit face); returns the active object."""
    bpy = be.import_bpy()
    run_operator(bpy.ops.anim_signals.import_live_link_csv, os.path.basename(path), target, filepath=path)
    return bpy.context.view_layer.objects.active


def cmd_db_build(args) -> int:
    csvs, bvhs = db_inputs(args.inputs)
    out = check_output_file(args.out or os.path.abspath("motion_db.blend"), "--out")
    check_inputs(csvs + bvhs, csv_fps=args.fps)
    bpy = be.import_bpy()
    be.clear_scene()
    enable_operators(*DB_OPERATORS)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = args.fps, 1.0
    ob = None
    names = []
    for path in csvs + bvhs:
        if path in csvs:
            ob = import_csv_take(path, ob)
        else:
            ob = import_bvh_clip(path)
            names.append(ob.animation_data.action.name)
        print(f"  imported {os.path.basename(path)}", flush=True)
    kind = "SHAPE_KEYS" if csvs else "ARMATURE"
    run_operator(bpy.ops.anim_signals.build_motion_database, "db-build", ob, kind=kind, actions=",".join(names),
                 backend=args.backend, recall_target=args.recall_target)
    s = scene.anim_signals.motion_db
    print(f"motion database: {len(s.actions)} clips, {s.n_frames} frames, {s.n_channels} channels ({kind})")
    print(index_report(s))
    save_index_beside(out, "db-build")
    print(f"saved {save(out)}")
    return 0


def cmd_reconstruct(args) -> int:
    if not args.input.lower().endswith(".blend"):
        raise CliError(f"{args.input}: expected a .blend saved by db-build")
    check_input(args.input, (".blend",))
    query = os.path.abspath(args.query)
    check_input(query, (".csv", ".bvh"))
    stem = os.path.splitext(os.path.basename(query))[0]
    out = check_output_file(args.out or os.path.abspath(f"{stem}_reconstructed.blend"), "--out")
    bpy = be.import_bpy()
    load_input(args.input)
    enable_operators(*DB_OPERATORS)
    s = bpy.context.scene.anim_signals.motion_db
    if not len(s.actions):
        raise CliError(f"{args.input} holds no motion database (run db-build first)")
    if query.lower().endswith(".csv"):
        if s.kind != "SHAPE_KEYS":
            raise CliError("the database holds armature clips: give a BVH query")
        ob = import_csv_take(query, bpy.data.objects.get(s.object_name))
    else:
        if s.kind != "ARMATURE":
            raise CliError("the database holds shape-key clips: give a Live Link Face CSV query")
        ob = import_bvh_clip(query)
    run_operator(bpy.ops.anim_signals.reconstruct_motion, "reconstruct", ob, output=args.output,
                 drop_eyes=args.drop_eyes, input_channels=args.input_channels or "ALL", k=args.k,
                 window=args.window, paths=args.paths)
    print(index_report(s))
    print(f"{s.last_action}: {s.last_frames} frames from {s.last_query_channels} channels, "
          f"{s.last_ms:.2f} ms per frame, mean best path {s.last_best_length:.1f} frames")
    print(f"saved {save(out)}")
    return 0


# --------------------------------------------------------------------------------------------------
# arguments


def add_db_build_parser(sub) -> None:
    p = add_command(sub, "db-build", cmd_db_build,
                    "build a motion database from Live Link Face CSV or BVH clips (Richert)",
                    "Import the clips (CSV: onto one generated ARKit face; BVH: Blender's importer) "
                    "and run bpy.ops.anim_signals.build_motion_database; writes its k-NN index to DB_motiondb/ "
                    "and saves DB.blend.")
    p.add_argument("inputs", nargs="+", metavar="FOLDER|FILE", help="Live Link Face .csv or .bvh files, or folders of them")
    p.add_argument("--fps", type=int_range(1, MAX_SCENE_FPS), default=30,
                   help=f"scene frame rate the CSV takes are resampled to, 1-{MAX_SCENE_FPS} (default 30)")
    add_index_options(p)
    add_out_option(p, "./motion_db.blend")


def add_index_options(p) -> None:
    """``--backend`` and ``--recall-target``: the k-NN index settings (db-build, library db-build)."""
    p.add_argument("--backend", default="AUTO", choices=BACKENDS,
                   help="k-NN search: AUTO (by database size and recall target), KDTREE / FLAT (exact), "
                        "HNSW / IVF (approximate, recall measured at build) (default AUTO)")
    p.add_argument("--recall-target", type=float_range(0.5, 1.0), default=0.95,
                   help="recall an approximate index must reach, 0.5-1 (default 0.95)")


def add_reconstruct_parser(sub) -> None:
    p = add_command(sub, "reconstruct", cmd_reconstruct,
                    "rebuild a clip from a motion database (denoise / missing channels)",
                    "Import QUERY into DB.blend and run bpy.ops.anim_signals.reconstruct_motion; "
                    "the result is the action '<query>.reconstructed'.")
    p.add_argument("input", metavar="DB.blend", help="a .blend saved by db-build")
    p.add_argument("query", metavar="QUERY.csv|QUERY.bvh")
    p.add_argument("--drop-eyes", action="store_true", help="leave the eye channels out of the query")
    p.add_argument("--input-channels", default="", help="comma-separated query channels (default: all)")
    p.add_argument("--output", default="SYNTHESIS", choices=("BEST_PATH", "SYNTHESIS"))
    p.add_argument("--k", type=positive_int, default=256, help="neighbours per frame (K, default 256)")
    p.add_argument("--window", type=positive_int, default=32, help="window (T, default 32)")
    p.add_argument("--paths", type=positive_int, default=50, help="paths blended by the synthesis (I, default 50)")
    add_out_option(p, "./<query>_reconstructed.blend")


PARSERS = (add_db_build_parser, add_reconstruct_parser)
