"""Computing a transfer: the source's frames read from Blender, then the core's transfer, step by step.

:func:`iter_transfer` is the generator the operator steps (progress in [0, 1]); it writes nothing.
The source frames are the depsgraph's evaluated vertices (shape keys, Mesh Cache, armatures, any
modifier that keeps the vertices). Then, by method:

- examples (Cashman and Hormann §4.3): each frame's coordinates in the basis of the source's
  examples (:func:`anim_signals.transfer.example_coordinates`, in the vertex or gradient shape
  space), rebuilt from the target's examples; the distance between the frame and its blend of the
  source's examples is the fit error;
- correspondence (Sumner and Popović): the triangle correspondence from the markers
  (:func:`anim_signals.transfer.triangle_correspondence`), factorised once
  (:class:`anim_signals.transfer.CorrespondenceTransfer`), then every frame solved.
"""

from __future__ import annotations

import time
from collections.abc import Generator

import numpy as np

from ...anim_signals.transfer import (
    CorrespondenceTransfer,
    check_frames,
    example_coordinates,
    triangle_correspondence,
)
from ..blender_data.meshes import TopologyChangeError, mesh_sequence_rows
from .planning import TransferPlan
from .sources import TransferInputError, refusing

__all__ = ["CHUNK_FRAMES", "iter_transfer", "read_source_frames"]

CHUNK_FRAMES = 4  # frames transferred per step (Esc is checked between steps)
READ_SHARE, SETUP_SHARE = 0.4, 0.1  # progress: reading frames, then the setup, then the solve


def read_source_frames(plan: TransferPlan) -> Generator[float, None, np.ndarray]:
    """The source's evaluated vertices on every planned frame, step by step: yields progress in
    [0, READ_SHARE], returns (n, V, 3) float64. Raises :class:`TransferInputError` naming the frame
    where the topology changes or a vertex is NaN. Closing it restores the scene frame."""
    t0 = time.perf_counter()
    src, n_vertices, n = plan.source, plan.source_mesh.n_vertices, plan.frames.size
    rows = []
    gen = mesh_sequence_rows(plan.scene, src, plan.frames)
    try:
        for i, row in enumerate(gen):
            if row.size != 3 * n_vertices:
                raise TransferInputError(
                    f'The source "{src.name}" has {row.size // 3} vertices at frame {plan.frames[i]:g}, its mesh '
                    f"{n_vertices}: a modifier changes its topology"
                )
            rows.append(row.reshape(n_vertices, 3))
            yield READ_SHARE * (i + 1) / n
    except TopologyChangeError as err:
        raise TransferInputError(f'The source "{src.name}" cannot be transferred: {err}') from err
    finally:
        gen.close()
    with refusing():
        frames = check_frames(rows, n_vertices, name=f'source "{src.name}"',
                              frame_numbers=[int(f) for f in plan.frames])
    plan.seconds_read = time.perf_counter() - t0
    return frames


def _chunks(n: int) -> list[slice]:
    return [slice(lo, min(lo + CHUNK_FRAMES, n)) for lo in range(0, n, CHUNK_FRAMES)]


def _solve_examples(plan: TransferPlan, frames: np.ndarray) -> Generator[float, None, None]:
    q, r = plan.source_features, plan.target_features
    assert q is not None and r is not None
    source_space, target_space = plan.source_space, plan.target_space
    n = len(frames)
    out = np.empty((n, plan.target_mesh.n_vertices, 3))
    fit = np.empty(n)
    start = SETUP_SHARE + READ_SHARE
    t0 = time.perf_counter()
    for part in _chunks(n):
        z = source_space.encode(frames[part])
        with refusing():
            weights, residual = example_coordinates(q[0], q[1:], z, names=plan.labels)
        out[part] = target_space.decode(r[0] + weights @ (r[1:] - r[0]))
        rebuilt = source_space.decode(z - residual)
        fit[part] = np.sqrt(np.mean(np.sum((rebuilt - frames[part]) ** 2, axis=2), axis=1))
        yield start + (1.0 - start) * part.stop / n
    plan.seconds_solve = time.perf_counter() - t0
    plan.result, plan.fit_error = out, fit


def _solve_correspondence(plan: TransferPlan, frames: np.ndarray) -> Generator[float, None, None]:
    assert plan.markers is not None
    t0 = time.perf_counter()
    with refusing():
        correspondence = triangle_correspondence(plan.source_mesh, plan.target_mesh, plan.markers)
    yield READ_SHARE + 0.8 * SETUP_SHARE
    with refusing():
        transfer = CorrespondenceTransfer(plan.source_mesh, plan.target_mesh, correspondence,
                                          translation=plan.translation, check=False)
    plan.seconds_setup = time.perf_counter() - t0
    start = SETUP_SHARE + READ_SHARE
    yield start
    n = len(frames)
    out = np.empty((n, plan.target_mesh.n_vertices, 3))
    t1 = time.perf_counter()
    for part in _chunks(n):
        out[part] = transfer(frames[part])
        yield start + (1.0 - start) * part.stop / n
    plan.seconds_solve = time.perf_counter() - t1
    plan.result = out


def iter_transfer(plan: TransferPlan) -> Generator[float, None, np.ndarray]:
    """Read the source's frames and transfer them, step by step: yields progress in [0, 1]; returns
    the target's frames (n, V_target, 3), also kept in ``plan.result`` (and the examples' fit error
    in ``plan.fit_error``). Raises :class:`TransferInputError`; nothing in Blender is changed."""
    try:
        frames = yield from read_source_frames(plan)
    except ReferenceError as err:
        raise TransferInputError("The source or target was removed while transferring: nothing written") from err
    if plan.method == "EXAMPLES":
        yield from _solve_examples(plan, frames)
    else:
        yield from _solve_correspondence(plan, frames)
    assert plan.result is not None
    _check_finite_result(plan)
    return plan.result


def _check_finite_result(plan: TransferPlan) -> None:
    """Refuse a result that is not finite as the float32 Blender and PC2 store (NaN, infinite or
    beyond 3.4e38: a source far too large, or a degenerate solve), naming the first such frame;
    nothing is written then."""
    result = plan.result
    assert result is not None
    with np.errstate(over="ignore", invalid="ignore"):
        bad = ~np.isfinite(result.astype(np.float32)).reshape(result.shape[0], -1).all(axis=1)
    if bad.any():
        frame = int(plan.frames[int(np.flatnonzero(bad)[0])])
        raise TransferInputError(
            f'The transfer onto "{plan.target.name}" gives positions that are not finite at frame {frame} '
            f"({int(bad.sum())} frame(s)): the source's coordinates are too large (scale it down) or its "
            "deformation is degenerate there; nothing was written"
        )
