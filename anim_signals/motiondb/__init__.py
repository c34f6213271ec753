"""Motion database: rebuild full poses from partial or noisy input with a library of clips.

Richert, "Animation Database for real-time motion reconstruction": k-nearest neighbours of each
query frame, an online lazy neighbourhood graph (OLNG) that keeps temporally coherent paths, and
a pose synthesised from the best paths.

Modules
-------
graph
    :class:`MotionDatabase`, :class:`OLNGParams`, the streaming :class:`Reconstructor`, batch
    :func:`reconstruct` and its step-by-step :func:`iter_reconstruct`.
knn
    k-NN backends (cKDTree, flat scan, faiss HNSW / IVF), the AUTO choice by size and recall target,
    recall measured at build time: :class:`NeighbourIndex`, :func:`build_index`.
index_store
    The index on disk (header, version, content hash, checksum; atomic writes): :func:`cached_index`.
features
    The optional velocity query feature for slow motion under noise: :class:`MotionFeature`,
    :func:`reconstruct_with_feature`, :class:`FeatureReconstructor`.
channels
    Channel names as users type them and rigs spell them (:func:`match_names`, eye channels).
livelink
    Live Link Face CSV recordings (ARKit face tracking) as arrays, and the ARKit channel names.
generated
    A generated ARKit face and blendshape weights, for tests and demos.
"""

from .channels import is_eye_channel, match_names
from .features import FeatureReconstructor, MotionFeature, reconstruct_with_feature
from .generated import FaceMesh, generated_expressions, generated_face
from .graph import (
    Batch,
    MotionDatabase,
    OLNGParams,
    Reconstructor,
    Step,
    iter_reconstruct,
    reconstruct,
    synthesize,
)
from .index_store import IndexFileError, cached_index
from .knn import IndexOptions, NeighbourIndex, build_index
from .livelink import LiveLinkError, LiveLinkRecording, read_csv, write_csv

__all__ = [
    "Batch",
    "FaceMesh",
    "FeatureReconstructor",
    "IndexFileError",
    "IndexOptions",
    "LiveLinkError",
    "LiveLinkRecording",
    "MotionDatabase",
    "MotionFeature",
    "NeighbourIndex",
    "OLNGParams",
    "Reconstructor",
    "Step",
    "build_index",
    "cached_index",
    "generated_expressions",
    "generated_face",
    "is_eye_channel",
    "iter_reconstruct",
    "match_names",
    "read_csv",
    "reconstruct",
    "reconstruct_with_feature",
    "synthesize",
    "write_csv",
]
