"""Writing a finished transfer: the target's frames as a PC2 cache played by a Mesh Cache modifier,
or as one shape key per frame, on a new object ``"<target>.transfer"`` (or the target itself).

:func:`write_transfer` is the only step of a transfer that writes; it runs after every frame has
been computed. The PC2 file is written first (to a temporary name, then renamed), so a failed
write leaves the .blend unchanged; an earlier cache it replaces is kept until the operator has
succeeded and put back if a later step fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..blender_data.meshes import mesh_result_object, point_cache_path, set_mesh_cache, write_point_cache
from ..blender_data.shape_keys import write_frame_shape_keys
from ..common.transaction import current_transaction
from .planning import TransferPlan

__all__ = ["CACHE_MODIFIER", "KEY_PREFIX", "PROP", "TransferSummary", "write_transfer"]

PROP = "anim_signals_transfer"  # on result objects: what they were transferred from
CACHE_MODIFIER = "Transfer"  # the Mesh Cache modifier playing the PC2 file
KEY_PREFIX = "transfer"  # shape-key output: "transfer.0001", ...


@dataclass
class TransferSummary:
    """A finished transfer's numbers (the fields of ``properties.AnimSignalsTransferResult``)."""

    object_name: str = ""
    source_object: str = ""
    target_object: str = ""
    method: str = ""
    space: str = ""
    output: str = ""
    cache_path: str = ""
    frame_start: int = 0
    frame_end: int = 0
    frames: int = 0
    source_vertices: int = 0
    target_vertices: int = 0
    examples: int = 0
    markers: int = 0
    fit_error_mean: float = 0.0
    fit_error_max: float = 0.0
    fit_error_relative: float = 0.0
    setup_seconds: float = 0.0
    read_ms_per_frame: float = 0.0
    solve_ms_per_frame: float = 0.0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def message(self) -> str:
        how = (f"examples, {self.space.lower()} space, {self.examples} pair(s)" if self.method == "EXAMPLES"
               else f"correspondence, {self.markers} markers")
        out = "a PC2 cache" if self.output == "PC2" else "shape keys"
        text = (f'Transferred "{self.source_object}" to "{self.object_name}" (frames {self.frame_start}-{self.frame_end}, '
                f"{how}, {out})")
        if self.method == "EXAMPLES":
            text += (f"; fit error of the source in the examples' basis: RMS {self.fit_error_mean:.3g} mean, "
                     f"{self.fit_error_max:.3g} max ({100.0 * self.fit_error_relative:.2g} % of its size)")
        return (text + f"; {self.solve_ms_per_frame:.1f} ms per frame after {self.setup_seconds:.2f} s setup, "
                f"{self.read_ms_per_frame:.1f} ms per frame reading; {self.seconds:.2f} s")


def _summary(plan: TransferPlan, ob: Any, cache_path: str) -> TransferSummary:
    n = int(plan.frames.size)
    s = TransferSummary(
        object_name=ob.name, source_object=plan.source.name, target_object=plan.target.name, method=plan.method,
        space=plan.space if plan.method == "EXAMPLES" else "", output=plan.output, cache_path=cache_path,
        frame_start=int(plan.frames[0]), frame_end=int(plan.frames[-1]), frames=n,
        source_vertices=plan.source_mesh.n_vertices, target_vertices=plan.target_mesh.n_vertices,
        examples=plan.n_examples, markers=plan.n_markers, setup_seconds=plan.seconds_setup,
        read_ms_per_frame=1000.0 * plan.seconds_read / n, solve_ms_per_frame=1000.0 * plan.seconds_solve / n,
        warnings=list(plan.warnings),
    )
    if plan.fit_error is not None:
        s.fit_error_mean = float(np.mean(plan.fit_error))
        s.fit_error_max = float(np.max(plan.fit_error))
        s.fit_error_relative = s.fit_error_max / max(plan.source_mesh.bbox_diagonal(), 1e-30)
    return s


def write_transfer(plan: TransferPlan) -> tuple[Any, TransferSummary]:
    """Write the computed frames (``plan.result``): returns the object playing them and the summary.

    PC2 output: the file beside the .blend (the temp folder when unsaved; a warning is added to the
    summary), then a Mesh Cache modifier ``"Transfer"`` first in the object's stack. Shape keys: a
    Basis (the target's rest pose) and one keyed shape key per frame. Raises OSError when the cache
    cannot be written (nothing written then).
    """
    frames = plan.result
    assert frames is not None
    _ = plan.source.name, plan.target.name  # ReferenceError now, before any file is written, if one was removed
    name = plan.result_name if plan.write_to == "NEW_OBJECT" else plan.target.name
    stored = ""
    warnings = []
    if plan.output == "PC2":
        path, stored, beside_blend = point_cache_path(name)
        previous = write_point_cache(path, frames, float(plan.frames[0]), keep_previous=True)
        current_transaction().keep_file(path, previous)
        if not beside_blend:
            warnings.append(f"The .blend is not saved: the cache is in the temp folder ({path}); save the .blend and "
                            "transfer again to keep it beside the .blend")
    if plan.write_to == "NEW_OBJECT":
        info = {"source": plan.source.name, "target": plan.target.name, "method": plan.method,
                "space": plan.space, "frame_start": int(plan.frames[0]), "frame_end": int(plan.frames[-1])}
        ob = mesh_result_object(plan.target, name, plan.scene, PROP, info)
    else:
        ob = plan.target
    if plan.output == "PC2":
        set_mesh_cache(ob, stored, float(plan.frames[0]), name=CACHE_MODIFIER)
    else:
        write_frame_shape_keys(ob, plan.target_mesh.vertices, frames, [int(f) for f in plan.frames],
                               prefix=KEY_PREFIX, action_name=f"{ob.name}.frames")
    summary = _summary(plan, ob, stored)
    summary.warnings.extend(warnings)
    return ob, summary
