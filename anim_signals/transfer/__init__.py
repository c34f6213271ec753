"""Deformation transfer: move a mesh animation onto another mesh (other vertex count, other connectivity).

Two ways in, one result (``(n, V_target, 3)`` target frames):

* by example poses -- Cashman and Hormann, "A continuous, editable representation for deforming
  mesh sequences with separate signals for time, pose and shape", §4.3: the source frames are
  written in the basis of matching example pairs and rebuilt from the target's examples
  (:func:`transfer_by_examples`), in the vertex space ``R^{3V}`` or the deformation-gradient space
  ``R^{9F+3}`` (§5);
* by correspondence -- Sumner and Popović, "Deformation Transfer for Triangle Meshes": markers give
  a triangle correspondence (:func:`triangle_correspondence`), and every source frame's
  deformation gradients are applied to the target by one sparse least-squares solve, factorised
  once (:func:`transfer_by_correspondence`, :class:`CorrespondenceTransfer`).

Modules
-------
meshes
    :class:`TriangleMesh`, input checks with user-facing messages, a small OBJ reader/writer and
    the markers file reader.
gradients
    Deformation gradients, the gradient operator, :class:`PoissonSolver`, polar decomposition and
    rotation log/exp, :class:`GradientSpace`.
correspondence
    The iterated closest-point deformation, triangle matching, transfer through a correspondence.
examples
    The examples' basis (normal equations, dependent examples named), :class:`VertexSpace`,
    :func:`transfer_by_examples`.
"""

from .correspondence import (
    Correspondence,
    CorrespondenceTransfer,
    closest_valid_points,
    deform_onto,
    face_adjacency,
    match_triangles,
    transfer_by_correspondence,
    triangle_correspondence,
)
from .examples import (
    ExampleTransfer,
    VertexSpace,
    check_examples_independent,
    example_coordinates,
    make_shape_space,
    transfer_by_examples,
)
from .generated import open_cylinder
from .gradients import (
    GradientSpace,
    PoissonSolver,
    deformation_gradients,
    frame_matrices,
    gradient_operator,
    inverse_frames,
    polar_decompose,
    rotation_exp,
    rotation_log,
)
from .meshes import (
    MarkersFile,
    TriangleMesh,
    check_face_areas,
    check_frames,
    check_markers,
    check_topology,
    edge_faces,
    parse_markers,
    read_markers,
    read_obj,
    write_obj,
)

__all__ = [
    "open_cylinder",
    "Correspondence",
    "CorrespondenceTransfer",
    "ExampleTransfer",
    "GradientSpace",
    "MarkersFile",
    "PoissonSolver",
    "TriangleMesh",
    "VertexSpace",
    "check_examples_independent",
    "check_face_areas",
    "check_frames",
    "check_markers",
    "check_topology",
    "closest_valid_points",
    "deform_onto",
    "deformation_gradients",
    "edge_faces",
    "example_coordinates",
    "face_adjacency",
    "frame_matrices",
    "gradient_operator",
    "inverse_frames",
    "make_shape_space",
    "match_triangles",
    "parse_markers",
    "polar_decompose",
    "read_markers",
    "read_obj",
    "rotation_exp",
    "rotation_log",
    "transfer_by_correspondence",
    "transfer_by_examples",
    "triangle_correspondence",
    "write_obj",
]
