"""Whole mocap libraries: the pure parts of running a tool over a folder of clips.

=================  ==========================================================================
``discovery``      :func:`find_clips`: every ``.bvh`` / ``.blend`` under a folder, named by relative path
``manifest``       :class:`Manifest`: per clip the content hash, options, result or error and outputs,
                   saved atomically; :meth:`Manifest.plan` tells a rerun what to skip and what to redo
``neighbours``     :func:`compare_library`: k-nearest-neighbour graph, clusters and representatives
                   with exact elastic distances only for cheap candidates (coarse SRVs aligned by an FFT shift and time warping);
                   :func:`knn_recall` against the full matrix
``generated``      :func:`write_library`: generated humanoid BVH clips for tests and examples
=================  ==========================================================================

The distributed runner (Dask) and the Blender part of each task live outside the core, in
``scripts/cli/library.py`` (``scripts/anim_signals_cli.py library ...``); everything here is numpy /
scipy / the standard library and runs anywhere.
"""

from __future__ import annotations

from .discovery import CLIP_EXTENSIONS, Clip, find_clips
from .generated import humanoid_bvh, write_library
from .manifest import DONE, FAILED, Manifest, Plan, file_digest, options_digest, replace_file
from .neighbours import (
    Embedding,
    LibraryComparison,
    NeighbourGraph,
    cheap_distances,
    cluster_library,
    compare_library,
    default_candidates,
    embed,
    exact_knn,
    knn_graph,
    knn_recall,
    pair_blocks,
    pair_distances,
    propose_pairs,
    representative_matrix,
)

__all__ = [
    "CLIP_EXTENSIONS", "DONE", "FAILED", "Clip", "Embedding", "LibraryComparison", "Manifest", "NeighbourGraph",
    "Plan", "cheap_distances", "cluster_library", "compare_library", "default_candidates", "embed", "exact_knn", "file_digest",
    "find_clips", "humanoid_bvh", "knn_graph", "knn_recall", "options_digest", "pair_blocks", "pair_distances",
    "propose_pairs", "replace_file", "representative_matrix", "write_library",
]
