"""Spatial keyframes from motion capture (core of the pose-space canvas for armatures).

Costa and Esperança, "Enhancing Spatial Keyframe Animations with Motion Capture", on top of
Igarashi, Moscovich and Hughes, "Spatial keyframing for performance-driven animation": key poses
of a clip become markers on a plane, an RBF from the plane to poses (exact at the markers) poses
the rig from any point, and a clip can be stored as key poses plus a 2D trajectory.

Modules
-------
rotations
    Quaternion / matrix conversions, log and exp maps, batched slerp, forward kinematics.
distance
    The seed's pose distance, eq. (1), its joint weights, distance matrices, pose vectors, and the
    rig-independent variants through :mod:`anim_signals.manifolds.skeleton`.
projection
    PCA, classical MDS, Isomap, LLE, t-SNE (scikit-learn), Force Scheme and RBFP (here).
selection
    Keyframe selection: uniform, SCS, PB, ROLS.
backprojection
    The RBF from the plane to poses and the seed's projection optimisation (Algorithm 1).
temporal
    Temporal baselines: linear and Hermite on Euler angles, slerp, 1D RBF.
compaction
    Sizes (eqs. 2-4), error per frame per joint, compact / reconstruct, scheme comparison.
canvas
    A model presented to the pose-space canvas (markers, trajectory), and performances recorded
    there (a timed cursor path or a drawn stroke turned into frames).
generated
    Generated clips (a chain, a biped) for tests and examples.
bvh
    A small BVH reader (joint rotations, hierarchy, offsets), so the core runs on mocap files
    without Blender.

Nothing here imports bpy; scikit-learn is imported only inside the projections that use it.
"""

from .backprojection import BLENDS, RotationRBF, fit_rotation_rbf, optimise_projection
from .bvh import BvhClip, parse_bvh, read_bvh
from .canvas import (
    MAX_RECORDED_FRAMES,
    SpatialKeyframeCanvas,
    TrajectoryCurve,
    canvas_model,
    even_stroke_frames,
    timed_stroke_frames,
)
from .compaction import (
    MARKER_SPACING,
    SpatialKeyframeClip,
    compact_clip,
    compare_schemes,
    error_per_frame_per_joint,
    spatial_size,
    temporal_size,
    uncompressed_size,
)
from .distance import (
    SEGMENT_WEIGHTS,
    canonical_rotations,
    distance_matrix,
    distances_to,
    feature_distance_matrix,
    joint_weights,
    pose_distance,
    pose_vectors,
)
from .generated import GeneratedClip, articulated_chain, generated_biped
from .projection import (
    PROJECTIONS,
    classical_mds,
    force_scheme,
    isomap_projection,
    lle_projection,
    pca_projection,
    project,
    rbf_projection,
    rbfp,
    separate_coincident,
    tsne_projection,
)
from .rotations import (
    as_matrices,
    as_quaternions,
    exp_map,
    forward_kinematics,
    hemisphere_align,
    log_map,
    project_to_rotation,
    slerp_quaternions,
)
from .selection import (
    SELECTIONS,
    keyframe_count,
    pb_keys,
    rols_keys,
    scs_keys,
    select_keyframes,
    uniform_keys,
)
from .temporal import TEMPORAL_SCHEMES, interpolate_temporal

__all__ = [
    "BLENDS", "MARKER_SPACING", "MAX_RECORDED_FRAMES", "PROJECTIONS", "SEGMENT_WEIGHTS", "SELECTIONS",
    "TEMPORAL_SCHEMES",
    "BvhClip", "GeneratedClip", "RotationRBF", "SpatialKeyframeCanvas", "SpatialKeyframeClip", "TrajectoryCurve",
    "articulated_chain", "as_matrices", "as_quaternions", "canonical_rotations", "canvas_model", "classical_mds",
    "compact_clip", "compare_schemes", "distance_matrix", "distances_to", "error_per_frame_per_joint",
    "even_stroke_frames",
    "exp_map", "feature_distance_matrix", "fit_rotation_rbf", "force_scheme", "forward_kinematics",
    "generated_biped", "hemisphere_align", "interpolate_temporal", "isomap_projection", "joint_weights",
    "keyframe_count", "lle_projection", "log_map", "optimise_projection", "parse_bvh", "pb_keys", "pca_projection",
    "pose_distance", "pose_vectors", "project", "project_to_rotation", "rbf_projection", "rbfp", "read_bvh",
    "rols_keys", "scs_keys", "select_keyframes", "separate_coincident", "slerp_quaternions",
    "spatial_size", "temporal_size", "timed_stroke_frames", "tsne_projection", "uncompressed_size", "uniform_keys",
]
