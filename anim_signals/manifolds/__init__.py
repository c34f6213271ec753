"""Loop / blend / compare: clips as points of a manifold of curves.

Eslitzbichler, "Modelling Character Motions on Infinite-Dimensional Manifolds": a clip is one
multichannel curve (angles unwrapped), mapped to its square-root-velocity (SRV) function;
closed curves give seamless loops, geodesics give blends, elastic distances compare clips.

Modules
-------
clips
    A clip as one multichannel curve: Euler / quaternion / location channels to motion-curve
    coordinates and back, two clips moved next to each other (``harmonise``), resampling.
srv
    The SRV map, its inverse and the projection onto closed curves.
loop
    Seamless cycles (:func:`make_loop`, :func:`find_cycle`), seam measures (``seam_jump``,
    ``nearly_closed``, ``joint_seam``) and the baselines.
elastic
    Geodesics, elastic distances, blends and Karcher means of clips.
clustering
    Hierarchical clusters of a distance matrix, silhouette, nearest clips.
skeleton
    Skeleton-independent body features, to compare clips of different rigs.
"""

from .clips import (
    EULER,
    LOCATION,
    QUATERNION,
    euler_triples,
    from_motion_curve,
    harmonise,
    quaternion_groups,
    resample,
    to_motion_curve,
)
from .clustering import Clustering, cluster, nearest, silhouette
from .elastic import (
    Alignment,
    Prepared,
    align,
    blend,
    distance_matrix,
    elastic_distance,
    geodesic_closed,
    iter_distance_matrix,
    karcher_mean,
    linear_distance,
    prepare,
    sphere_distance,
)
from .loop import (
    Cycle,
    LoopResult,
    SeamJump,
    crossfade_loop,
    find_cycle,
    joint_seam,
    make_loop,
    median_frame_change,
    nearly_closed,
    seam_jump,
    select_travel,
)
from .skeleton import (
    CANONICAL,
    REQUIRED,
    SEGMENTS,
    body_features,
    canonical_joints,
    feature_names,
    heading_frames,
    split_side,
)

# the SRV map itself stays ``manifolds.srv.srv``: a function named srv here would hide the module
from .srv import Closure, closure_gap, normalise, project_closed, srv_inverse, srv_length

__all__ = [
    "CANONICAL",
    "EULER",
    "LOCATION",
    "QUATERNION",
    "REQUIRED",
    "SEGMENTS",
    "Alignment",
    "Closure",
    "Clustering",
    "Cycle",
    "LoopResult",
    "Prepared",
    "SeamJump",
    "align",
    "blend",
    "body_features",
    "canonical_joints",
    "closure_gap",
    "cluster",
    "crossfade_loop",
    "distance_matrix",
    "elastic_distance",
    "euler_triples",
    "feature_names",
    "find_cycle",
    "from_motion_curve",
    "geodesic_closed",
    "harmonise",
    "heading_frames",
    "iter_distance_matrix",
    "joint_seam",
    "karcher_mean",
    "linear_distance",
    "make_loop",
    "median_frame_change",
    "nearest",
    "nearly_closed",
    "normalise",
    "prepare",
    "project_closed",
    "quaternion_groups",
    "resample",
    "seam_jump",
    "select_travel",
    "silhouette",
    "sphere_distance",
    "split_side",
    "srv_inverse",
    "srv_length",
    "to_motion_curve",
]
