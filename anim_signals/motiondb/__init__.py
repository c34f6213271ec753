"""Motion database: rebuild full poses from partial or noisy input with a library of clips.

Richert, "Animation Database for real-time motion reconstruction": k-nearest neighbours of each
query frame, an online lazy neighbourhood graph (OLNG) that keeps temporally coherent paths, and
a pose synthesised from the best paths.

Modules
-------
graph
    :class:`MotionDatabase`, :class:`OLNGParams`, the streaming :class:`Reconstructor` and
    batch :func:`reconstruct`.
livelink
    Live Link Face CSV recordings (ARKit face tracking) as arrays, and a generated ARKit face
    for tests and demos.
"""

from .graph import Batch, MotionDatabase, OLNGParams, Reconstructor, Step, reconstruct, synthesize
from .livelink import LiveLinkError, LiveLinkRecording, read_csv, write_csv

__all__ = [
    "Batch",
    "LiveLinkError",
    "LiveLinkRecording",
    "MotionDatabase",
    "OLNGParams",
    "Reconstructor",
    "Step",
    "read_csv",
    "reconstruct",
    "synthesize",
    "write_csv",
]
