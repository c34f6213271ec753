#!/usr/bin/env python3
"""Fit Spline beside the rest of a scene: what a character's skinned mesh costs the fit of its rig.

Run from the repository root (Blender as the ``bpy`` module)::

    .venv/bin/python scripts/benchmark_fit_scene.py                  # the shared walk, or the demo biped
    .venv/bin/python scripts/benchmark_fit_scene.py --vertices 100000 --out out

The fit reads the rig's joints over time through the depsgraph: for the report (bone heads at 48
frames before and after every fit of an armature) and, in the Joints error space, to check every
frame. Changing the frame of the user's scene evaluates all of it, meshes included; ours reads the
rig in an evaluation scene holding only the rig (``operators/blender_data/frames.py``,
``evaluation_scene``). One run, the same clip, side by side:

* two scenes: the rig alone, and the rig with two skinned spheres (``--vertices`` each; an Armature
  modifier on bone envelopes) parented to it, as characters' bodies would be;
* ours as it is, and ours reading the rig in the user's scene (the code before the evaluation scene:
  ``evaluation_scene`` made to hand back the user's scene), both through the operator (read, fit,
  write; the keys must be the same);
* Blender's Graph Editor Decimate (ERROR mode, margins at the tolerances): it reads no frame;
* the mesh reader of the pose space and deformation transfer (``meshes.mesh_sequence_rows``) on one
  body at every frame of the clip, ours and as before (the same vertices: a digest).

Clip: ``cmu_iclone_02_01_walk`` (171 frames x 306 curves) from ``../shared/data/mocap`` when present,
else the demo's generated biped (240 frames). Writes ``benchmark_fit_scene.md`` / ``.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import math
import sys
import time
from pathlib import Path

import _blender_env as be

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmarking import report  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CLIP = REPO.parent / "shared" / "data" / "mocap" / "cmu_iclone_02_01_walk.bvh"
MODES = [  # (row name, operator keywords)
    ("Fewest Keys", dict(mode="FEWEST")),
    ("Fewest Keys, Joints 1 cm", dict(mode="FEWEST", error_space="JOINTS", max_joint_error=1.0)),
]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clip", default=str(DEFAULT_CLIP), help="a BVH clip (the demo biped when absent)")
    ap.add_argument("--vertices", type=int, default=32_000, help="vertices of the skinned mesh (about)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each row (the fastest is reported)")
    ap.add_argument("--rot", type=float, default=0.5, help="rotation tolerance, degrees")
    ap.add_argument("--loc", type=float, default=0.01, help="location tolerance, scene units")
    ap.add_argument("--out", default="out", help="output folder")
    return ap.parse_args(argv)


def _rig(bpy, args):
    """(name, armature) of the clip."""
    be.clear_scene()
    path = Path(args.clip)
    if path.is_file():
        return path.stem, be.import_bvh(path)
    sys.path.insert(0, str(REPO / "scripts"))
    import demo

    ob = demo.build_armature()
    demo.animate(ob, demo.generate_motion())
    return "demo biped (generated)", ob


def _skin(bpy, rig, vertices: int):
    """A UV sphere of about ``vertices`` vertices around the rig, deformed by it through bone envelopes."""
    rings = max(8, int(math.sqrt(vertices / 2)))
    bpy.ops.mesh.primitive_uv_sphere_add(segments=2 * rings, ring_count=rings, radius=1.0)
    body = bpy.context.active_object
    body.name = "Body"
    heads = [rig.matrix_world @ b.head_local for b in rig.data.bones]
    lo = [min(h[i] for h in heads) for i in range(3)]
    hi = [max(h[i] for h in heads) for i in range(3)]
    body.location = [(a + b) / 2 for a, b in zip(lo, hi, strict=True)]
    body.scale = [max(b - a, 1e-3) / 2 for a, b in zip(lo, hi, strict=True)]
    body.parent = rig
    body.matrix_parent_inverse = rig.matrix_world.inverted()
    modifier = body.modifiers.new("Armature", "ARMATURE")
    modifier.object = rig
    modifier.use_vertex_groups, modifier.use_bone_envelopes = False, True
    be.set_active(rig)
    return len(body.data.vertices)


@contextlib.contextmanager
def _in_the_users_scene(module: str):
    """``evaluation_scene`` made to hand back the user's scene, where its callers imported it."""

    @contextlib.contextmanager
    def users_scene(scene, _objects):
        yield scene

    owners = [sys.modules[f"{module}.operators.blender_data.{m}"] for m in ("frames", "armatures", "meshes")]
    owners.append(sys.modules[f"{module}.operators.fit_spline.object_space"])
    saved = [owner.evaluation_scene for owner in owners]
    for owner in owners:
        owner.evaluation_scene = users_scene
    try:
        yield
    finally:
        for owner, original in zip(owners, saved, strict=True):
            owner.evaluation_scene = original


def _keys_digest(ob) -> str:
    import numpy as np

    digest = hashlib.sha1()
    for fc in be.action_fcurves(ob):
        points = np.empty(6 * len(fc.keyframe_points), dtype=np.float32)
        for k, prop in enumerate(("co", "handle_left", "handle_right")):
            part = points[2 * k * len(fc.keyframe_points):2 * (k + 1) * len(fc.keyframe_points)]
            fc.keyframe_points.foreach_get(prop, part)
        digest.update(points.tobytes())
    return digest.hexdigest()[:12]


def _fit_row(bpy, ob, args, keywords):
    orig = ob.animation_data.action
    best, row = math.inf, {}
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        with bpy.context.temp_override(**be.object_override(ob)):
            res = bpy.ops.anim_signals.fit_latent_spline(channels="ALL", max_error_rotation=args.rot,
                                                         max_error_location=args.loc, keep_original=True, **keywords)
        secs = time.perf_counter() - t0
        last = bpy.context.scene.anim_signals.last_fit
        if secs < best:
            best = secs
            row = dict(result=sorted(res), seconds=secs, keys=be.count_keys(be.action_fcurves(ob)),
                       digest=_keys_digest(ob), within=bool(last.within_tolerance),
                       joint_error_cm=float(last.joint_error_cm))
        fitted = ob.animation_data.action
        be.assign_action(ob, orig)
        if fitted is not None and fitted is not orig:
            bpy.data.actions.remove(fitted)
    return row


def _decimate_row(bpy, ob, args):
    from benchmarking.fit_peers import decimate_action_by_kind

    secs, keys = decimate_action_by_kind(ob, args.rot, args.loc)
    return dict(seconds=secs, keys=keys)


def _mesh_read_row(bpy, module, body, args):
    """The reader of the pose space's and deformation transfer's mesh sequences on one body."""
    meshes = sys.modules[f"{module}.operators.blender_data.meshes"]
    first, last = be.fcurve_frame_range(be.action_fcurves(body.parent))
    frames = [float(f) for f in range(int(first), int(last) + 1)]
    best = math.inf
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        rows = list(meshes.mesh_sequence_rows(bpy.context.scene, body, frames))
        best = min(best, time.perf_counter() - t0)
    digest = hashlib.sha1(b"".join(r.astype("float32").tobytes() for r in rows)).hexdigest()[:12]
    return dict(seconds=best, frames=len(frames), digest=digest)


def run(args) -> dict:
    bpy = be.import_bpy()
    module = be.enable_extension()
    sys.modules[f"{module}.anim_signals.splines.key_reduction"].warm_up()
    clip, ob = _rig(bpy, args)
    fcs = be.action_fcurves(ob)
    first, last = be.fcurve_frame_range(fcs)
    out = dict(clip=clip, frames=int(last - first + 1), curves=len(fcs), scenes=[])
    for weight in ("rig alone", "rig and two skinned meshes"):
        vertices, body = 0, None
        if weight != "rig alone":
            vertices = _skin(bpy, ob, args.vertices)
            body = bpy.data.objects["Body"]
            vertices += _skin(bpy, ob, args.vertices)  # a second character's body beside it
        t0 = time.perf_counter()
        for f in range(int(first), int(first) + 24):
            bpy.context.scene.frame_set(f)
        per_frame_ms = (time.perf_counter() - t0) / 24 * 1000
        bpy.context.scene.frame_set(int(first))
        scene = dict(scene=weight, vertices=vertices, frame_change_ms=per_frame_ms, rows={})
        report.log(f"{clip}, {weight}: a frame change {per_frame_ms:.2f} ms")
        for label, keywords in MODES:
            scene["rows"][f"ours: {label}"] = _fit_row(bpy, ob, args, keywords)
            with _in_the_users_scene(module):
                scene["rows"][f"ours reading the rig in the user's scene (before): {label}"] = _fit_row(
                    bpy, ob, args, keywords)
        scene["rows"]["Blender Decimate"] = _decimate_row(bpy, ob, args)
        if body is not None:
            scene["rows"]["ours: a body's evaluated vertices at every frame"] = _mesh_read_row(bpy, module, body, args)
            with _in_the_users_scene(module):
                scene["rows"]["ours reading them in the user's scene (before)"] = _mesh_read_row(bpy, module, body, args)
        out["scenes"].append(scene)
    return out


def markdown(result: dict, args) -> str:
    lines = [
        "# Fit Spline beside a skinned mesh",
        "",
        f"Run: {time.strftime('%Y-%m-%d %H:%M')}, commit {report.source_commit()}, {report.machine()}; clip "
        f"{result['clip']} ({result['frames']} frames x {result['curves']} curves); tolerances {args.rot}° / "
        f"{args.loc} (Joints: 1 cm). Seconds: the whole operator (read, fit, write), fastest of "
        f"{args.repeats}. Before = ours with the rig read over time in the user's scene, as before the "
        "evaluation scene. A frame change: `scene.frame_set` in the user's scene, mean of 24.",
        "",
    ]
    rows = []
    for scene in result["scenes"]:
        for label, row in scene["rows"].items():
            within = "" if "within" not in row else (" ✓" if row["within"] else " ✗")
            name = scene["scene"] + (f" ({scene['vertices']:,} vertices)" if scene["vertices"] else "")
            rows.append([name, report.fmt(scene["frame_change_ms"], 3), label, row.get("keys", "—"),
                         report.fmt(row["seconds"], 3) + within, row.get("digest", "—"),
                         report.fmt(row["joint_error_cm"], 3) if "joint_error_cm" in row else "—"])
    lines += report.table(["scene", "frame change ms", "row", "keys", "s", "keys digest", "joints max cm"],
                          "llrrrlr", rows)
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = parse_args(argv)
    result = run(args)
    report.publish(args.out, "benchmark_fit_scene", markdown(result, args), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
