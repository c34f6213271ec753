"""Anim Signals headless command line: the entry point; each tool's sub-commands live in ``scripts/cli/``.

Works the same in the Blender binary and with the ``bpy`` module from a virtual environment::

    blender --background --python scripts/anim_signals_cli.py -- fit IN.bvh --out OUT.blend
    .venv/bin/python scripts/anim_signals_cli.py fit IN.bvh --out OUT.blend

Commands, by tool (a new tool adds its module's ``PARSERS`` to ``COMMANDS``):

``cli/fit_spline.py``
    fit IN.bvh|IN.blend [--max-error-rotation 0.5] [--max-error-location 0.01] [--max-error-other 0.01]
                        [--mode FEWEST|EDITABLE|AUTO|LATENT|PER_CHANNEL] [--share-keys CURVE|BONE|ALL] [--snap-to-frames] [--internal-knots N]
                        [--objects NAME[,NAME...]] [--replace] [--out OUT.blend]
``cli/loop_blend_compare.py``
    loop IN.bvh|IN.blend [--start F --end F | --auto [--min-period P] [--max-period P]] [--in-place]
                         [--velocity-window W] [--no-cycles] [--replace] [--objects ...] [--out OUT.blend]
    blend A.bvh|A.blend [B.bvh|B.blend] [--action-a NAME] [--action-b NAME] (--weight 0.5 | --count N)
                         [--cyclic AUTO|OPEN|CLOSED] [--no-align] [--out OUT.blend]
    compare FOLDER|FILES... [--actions A,B,...] [--features CHANNELS|BODY] [--metric ELASTIC|LINEAR]
                         [--clusters K] [--open] [--samples 100] [--out-dir DIR] [--save OUT.blend]
``cli/pose_space.py``
    pose-build IN.blend|IN.bvh|IN.obj [--cache IN.pc2|IN.mdd] [--exact] [--tolerance T] [--k K] [--l L] [--m M]
                         [--start F --end F] [--step S] [--png CANVAS.png] [--objects ...] [--out OUT.blend]
    pose-resample PS.blend (--speed S | --frames N | --fps-to F [--fps-from F]) [--objects ...] [--out OUT.blend]
    pose-bake PS.blend [--objects ...] [--out OUT.blend]
``cli/motion_db.py``
    db-build FOLDER|FILES... [--fps 30] [--backend AUTO|KDTREE|FLAT|HNSW|IVF] [--recall-target 0.95] [--out DB.blend]
                         (Live Link Face CSV or BVH clips; the k-NN index goes to DB_motiondb/)
    reconstruct DB.blend QUERY.csv|QUERY.bvh [--drop-eyes] [--input-channels A,B] [--output BEST_PATH|SYNTHESIS]
                         [--k 256] [--window 32] [--paths 50] [--out OUT.blend]
``cli/transfer.py``
    transfer SOURCE.obj --cache SOURCE.pc2|.mdd --target TARGET.obj | SCENE.blend --source NAME --target NAME|TARGET.obj
                         [--method examples|correspondence] [--space gradient|vertex] [--translation follow|fixed]
                         [--markers MARKERS.yml | --marker-prefix P]
                         [--examples-source OBJ_OR_DIR... --examples-target OBJ_OR_DIR... | --pairs SRC:TGT,...]
                         [--frames START END] [--pc2 OUT.pc2] [--out OUT.blend]
``cli/spatial_keyframes.py``
    sk-compact FOLDER|FILES... [--out DIR] [--ratio 0.03] [--selection uniform,scs,pb,rols|all]
                         [--projection pca,mds,force,isomap,lle,tsne,rbfp|all] [--optimise/--no-optimise]
                         [--keep-moving] [--seed 0]
    sk-build IN.bvh|IN.blend [--objects ...] [--projection mds|pca|force|isomap|lle|tsne|rbfp]
                         [--selection uniform|scs|pb|rols] [--ratio 0.03 | --count M] [--optimise/--no-optimise]
                         [--png CANVAS.png [--width 800 --height 600]] [--out OUT.blend]
``cli/library.py`` (whole libraries on Dask; resumable: DIR/manifest.json)
    library fit|loop|compare|db-build FOLDER --out DIR [--scheduler ADDRESS] [--workers N] [--retry-failed]
                         [the command's options: fit's tolerances and mode; loop --auto/--in-place;
                          compare --features BODY|CHANNELS --k 10 --candidates 0 --clusters 0; db-build --fps 30
                          --backend AUTO --recall-target 0.95]

Every command but ``sk-compact`` enables the extension and calls its operators (``bpy.ops.anim_signals.*``,
the ones the UI uses); ``sk-compact`` does not start Blender (it reads BVH with the core's reader and calls
``anim_signals.spatialkeys`` directly). ``cli/common.py`` holds what they share. Every option value, input
file and output path is checked before Blender loads anything (``cli/values.py``, ``cli/inputs.py``, ``cli/outputs.py``), and
outputs are written under a temporary name and renamed at the end.

Exit codes (``cli/errors.py``, the same for every command): 0 success; 2 the command line or a file it
names is unusable -- refused before any work, nothing written; 1 the work itself failed (the operator's
message is printed). An error is one ``error: ...`` line, no traceback (``ANIM_SIGNALS_DEBUG=1`` shows it).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # blender --python: scripts/ is not on the path
from cli import fit_spline, library, loop_blend_compare, motion_db, pose_space, spatial_keyframes, transfer  # noqa: E402
from cli.common import debugging  # noqa: E402
from cli.errors import EXIT_CODES_HELP, EXIT_FAILED, EXIT_UNUSABLE, CliError  # noqa: E402

COMMANDS = [*fit_spline.PARSERS, *loop_blend_compare.PARSERS, *pose_space.PARSERS, *motion_db.PARSERS,
            *transfer.PARSERS, *spatial_keyframes.PARSERS, *library.PARSERS]


def build_parser():
    ap = argparse.ArgumentParser(
        prog="anim_signals_cli.py",
        description="Anim Signals headless tools (blender --background --python ... -- <command>, "
                    "or a python with the bpy module).",
        epilog=EXIT_CODES_HELP)
    sub = ap.add_subparsers(dest="command", metavar="command")
    sub.required = True
    for add in COMMANDS:
        add(sub)
    return ap


def script_args(argv=None):
    """Arguments for this script: after ``--`` when run by the Blender binary, else ``sys.argv[1:]``."""
    argv = list(sys.argv if argv is None else argv)
    if "--" in argv:
        return argv[argv.index("--") + 1:]
    return argv[1:]


def main(argv=None) -> int:
    """Run one command; returns its exit code (see ``cli/errors.py``). ``argv`` as ``sys.argv``."""
    try:
        args = build_parser().parse_args(script_args(argv))
    except SystemExit as ex:  # --help (0), or a usage error argparse has printed (2)
        return ex.code if isinstance(ex.code, int) else EXIT_UNUSABLE
    if getattr(args, "input", None):
        args.input = os.path.abspath(args.input)
    if getattr(args, "inputs", None):
        args.inputs = [os.path.abspath(p) for p in args.inputs]
    try:
        return args.func(args)
    except CliError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return ex.code
    except Exception as ex:  # a bug, or an error no check foresaw: one line unless debugging
        if isinstance(ex, ModuleNotFoundError) and ex.name == "bpy":
            print("error: Blender is needed: run with blender --background --python scripts/anim_signals_cli.py "
                  "-- ..., or a python with the bpy module (the project's .venv)", file=sys.stderr)
            return EXIT_FAILED
        if debugging():
            traceback.print_exc()
        print(f"error: unexpected {type(ex).__name__}: {ex}"
              f"{'' if debugging() else ' (ANIM_SIGNALS_DEBUG=1 shows the traceback)'}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    # sys.exit also ends the Blender binary with this code (Blender handles SystemExit from --python)
    sys.exit(main())
