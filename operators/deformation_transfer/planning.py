"""Checking a transfer's input and deciding what to compute: :func:`plan_transfer` -> :class:`TransferPlan`.

Every refusal is a :class:`~.sources.TransferInputError` with a message for the user, raised
before anything is read frame by frame or written; the core's own checks (faces, non-manifold
edges, loose parts, markers, dependent examples) are run here on the rest poses, their
``ValueError`` messages passed on. Only the source's frames (read frame by frame, see
:mod:`.solving`) can still be refused later: a topology change or NaN names the frame.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

import bpy
import numpy as np

from ...anim_signals.transfer import (
    TriangleMesh,
    check_examples_independent,
    check_markers,
    check_topology,
    make_shape_space,
)
from ..blender_data.actions import id_read_only_reason
from .markers import markers_from_file, markers_from_groups
from .properties import SHAPE_KEY_FRAMES
from .sources import (
    TransferInputError,
    check_evaluated,
    example_pairs,
    read_examples,
    refusing,
    rest_mesh,
    transfer_objects,
)

__all__ = ["MAX_FRAMES", "MAX_FRAME_BYTES", "MAX_SHAPE_KEY_FRAMES", "RESULT_SUFFIX", "TransferPlan", "plan_transfer"]

RESULT_SUFFIX = ".transfer"

MAX_FRAMES = 100_000
"""Frames one transfer reads and solves at most (70 minutes at 24 fps). Every frame is evaluated
in Blender (about 0.3 ms for a small mesh, several ms with modifiers): a range typed with one zero
too many would otherwise run for hours."""

MAX_FRAME_BYTES = 4 * 2**30
"""Memory the source's frames and the result may take together (float64, three coordinates per
vertex per frame): 4 GiB is about 9,000 frames of two 10k-vertex meshes, well inside the 16 GB of
a typical workstation, where a larger range would swap or be killed."""

MAX_SHAPE_KEY_FRAMES = 1_000
"""Shape-key output writes one shape key and one F-curve per frame; past this many Blender's shape
key list and the Dope Sheet become unusably slow: the PC2 output has no such limit."""
METHODS = ("EXAMPLES", "CORRESPONDENCE")
SPACES = ("GRADIENT", "VERTEX")
OUTPUTS = ("AUTO", "PC2", "SHAPE_KEYS")


@dataclass
class TransferPlan:
    """What a transfer reads and computes (from :func:`plan_transfer`), and what it found (filled by
    ``solving.iter_transfer``)."""

    scene: Any
    source: Any  # bpy.types.Object
    target: Any  # bpy.types.Object
    method: str  # EXAMPLES | CORRESPONDENCE
    space: str  # GRADIENT | VERTEX (examples)
    frames: np.ndarray  # (n,) scene frames, whole numbers
    output: str  # PC2 | SHAPE_KEYS (resolved)
    write_to: str  # NEW_OBJECT | TARGET
    result_name: str
    source_mesh: TriangleMesh
    target_mesh: TriangleMesh
    # examples
    labels: list[str] = field(default_factory=list)  # rest pose first; "<source key>" or "<source key>/<target key>"
    source_space: Any = None  # VertexSpace | GradientSpace
    target_space: Any = None
    source_features: np.ndarray | None = None  # (m + 1, d_source): rest pose, examples
    target_features: np.ndarray | None = None  # (m + 1, d_target)
    # correspondence
    markers: np.ndarray | None = None  # (K, 2)
    translation: Literal["follow", "fixed"] = "follow"
    warnings: list[str] = field(default_factory=list)
    # filled by solving.iter_transfer
    result: np.ndarray | None = None  # (n, V_target, 3)
    fit_error: np.ndarray | None = None  # (n,) examples: RMS distance of each source frame to its example blend
    seconds_read: float = 0.0
    seconds_setup: float = 0.0
    seconds_solve: float = 0.0

    @property
    def n_examples(self) -> int:
        return max(len(self.labels) - 1, 0)

    @property
    def n_markers(self) -> int:
        return 0 if self.markers is None else len(self.markers)


def _frames(scene: Any, range_mode: str, frame_start: int, frame_end: int) -> np.ndarray:
    start, end = (scene.frame_start, scene.frame_end) if range_mode == "SCENE" else (frame_start, frame_end)
    if end < start:
        raise TransferInputError(f"The frame range {start}-{end} is empty: the end must come after the start")
    return np.arange(int(start), int(end) + 1, dtype=np.float64)


def _check_size(frames: np.ndarray, n_source: int, n_target: int) -> None:
    """Refuse a range that would take unbounded time (:data:`MAX_FRAMES`) or memory
    (:data:`MAX_FRAME_BYTES`), naming the range and what to do."""
    n = int(frames.size)
    span = f"frames {int(frames[0])}-{int(frames[-1])}"
    if n > MAX_FRAMES:
        raise TransferInputError(f"The range ({span}) has {n} frames: at most {MAX_FRAMES} are transferred at once; "
                                 "narrow the frame range (or transfer it in parts)")
    needed = n * (n_source + n_target) * 3 * 8
    if needed > MAX_FRAME_BYTES:
        most = MAX_FRAME_BYTES // ((n_source + n_target) * 3 * 8)
        raise TransferInputError(
            f"The range ({span}) has {n} frames of {n_source} + {n_target} vertices: {needed / 2**30:.1f} GiB in memory "
            f"(at most {MAX_FRAME_BYTES / 2**30:.0f} GiB, {most} frames of these meshes); narrow the frame range"
        )


def _output(output: str, write_to: str, n_frames: int) -> str:
    if output not in OUTPUTS:
        raise TransferInputError(f"Unknown output {output!r}: one of {', '.join(OUTPUTS)}")
    if write_to == "TARGET":
        if output == "SHAPE_KEYS":
            raise TransferInputError("Shape-key output needs a new object (the target's own shape keys would blend "
                                     "in): write to a New Object, or use the PC2 output")
        return "PC2"
    if output == "AUTO":
        return "SHAPE_KEYS" if n_frames <= SHAPE_KEY_FRAMES else "PC2"
    if output == "SHAPE_KEYS" and n_frames > MAX_SHAPE_KEY_FRAMES:
        raise TransferInputError(f"Shape-key output makes one shape key per frame: {n_frames} frames are more than "
                                 f"{MAX_SHAPE_KEY_FRAMES}; use the PC2 output (or Auto)")
    return output


def plan_transfer(context: Any, *, source: str = "", target: str = "", method: str = "EXAMPLES",
                  space: str = "GRADIENT", pairs: list[tuple[str, str]] | None = None,
                  marker_source: str = "VERTEX_GROUPS", marker_prefix: str = "marker", markers_file: str = "",
                  translation: str = "FOLLOW", range_mode: str = "SCENE", frame_start: int = 1,
                  frame_end: int = 250, output: str = "AUTO", write_to: str = "NEW_OBJECT") -> TransferPlan:
    """Check the input and prepare what the transfer needs; reads rest poses, changes nothing.

    ``source`` / ``target``: object names (empty: the selection, see
    :func:`~.sources.transfer_objects`). ``pairs``: (source key, target key) example pairs
    (empty: the keys named alike). The keyword arguments are the operator's settings
    (``properties.TransferSettings``).

    Raises
    ------
    TransferInputError
        With a message naming what is wrong (objects, faces, topology, markers, examples, frames).
    """
    scene = context.scene
    if method not in METHODS:
        raise TransferInputError(f"Unknown method {method!r}: one of {', '.join(METHODS)}")
    if space not in SPACES:
        raise TransferInputError(f"Unknown shape space {space!r}: one of {', '.join(SPACES)}")
    src, tgt = transfer_objects(context, source, target)
    if write_to == "TARGET":
        reason = id_read_only_reason(tgt, tgt.data)
        if reason:
            raise TransferInputError(f"{reason}: write to a New Object instead")
    result_name = tgt.name + RESULT_SUFFIX
    if write_to == "NEW_OBJECT" and src.name == result_name:
        raise TransferInputError(f'The source "{src.name}" is the result of transferring onto "{tgt.name}": '
                                 "transferring again would overwrite it; duplicate it or pick another target")
    frames = _frames(scene, range_mode, frame_start, frame_end)
    target_mesh = rest_mesh(tgt, "target")
    source_mesh = rest_mesh(src, "source")
    _check_size(frames, source_mesh.n_vertices, target_mesh.n_vertices)
    check_evaluated(src, source_mesh.n_vertices, scene.frame_current, examples=method == "EXAMPLES")
    plan = TransferPlan(
        scene=scene, source=src, target=tgt, method=method, space=space, frames=frames,
        output=_output(output, write_to, frames.size), write_to=write_to, result_name=result_name,
        source_mesh=source_mesh, target_mesh=target_mesh, translation="fixed" if translation == "FIXED" else "follow",
    )
    if method == "EXAMPLES":
        _plan_examples(plan, pairs or [])
    else:
        _plan_correspondence(plan, marker_source, marker_prefix, markers_file)
    return plan


def _plan_examples(plan: TransferPlan, pairs: list[tuple[str, str]]) -> None:
    src, tgt = plan.source, plan.target
    source_keys, target_keys, warnings = example_pairs(src, tgt, pairs)
    plan.warnings.extend(warnings)
    plan.labels = [s if s == t else f"{s}/{t}" for s, t in zip(source_keys, target_keys)]
    source_examples = read_examples(src, source_keys)
    target_examples = read_examples(tgt, target_keys)
    kind: Literal["vertex", "gradient"] = "gradient" if plan.space == "GRADIENT" else "vertex"
    hint = " (or use the Vertex shape space)" if plan.space == "GRADIENT" else ""
    t0 = time.perf_counter()
    with refusing(hint=hint):
        plan.target_space = make_shape_space(kind, plan.target_mesh)
        plan.source_space = make_shape_space(kind, plan.source_mesh)
    with refusing():
        plan.source_features = plan.source_space.encode(source_examples)
        plan.target_features = plan.target_space.encode(target_examples)
        q = plan.source_features
        check_examples_independent((q[1:] - q[0]).T, plan.labels)
    plan.seconds_setup = time.perf_counter() - t0


def _plan_correspondence(plan: TransferPlan, marker_source: str, prefix: str, markers_file: str) -> None:
    with refusing():
        check_topology(plan.target_mesh)
        check_topology(plan.source_mesh)
    if marker_source == "FILE":
        markers = markers_from_file(bpy.path.abspath(markers_file) if markers_file else "")
        where = f"the markers file {markers_file}"
    else:
        markers, _, warnings = markers_from_groups(plan.source, plan.target, prefix)
        plan.warnings.extend(warnings)
        where = f'vertex groups "{prefix}*" on both meshes, one vertex each; Add Marker Pair makes them'
    with refusing(hint=f" (markers: {where})"):
        plan.markers = check_markers(markers, plan.source_mesh.n_vertices, plan.target_mesh.n_vertices)
