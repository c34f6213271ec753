"""Deformation Transfer settings (one definition for the operators and the sidebar), the example
pairs, and the last transfer's numbers.

No ``from __future__ import annotations`` here: Blender reads these classes' annotations as
property objects.
"""

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from ..common.settings import setting_names

__all__ = [
    "MARKER_SETTINGS",
    "RESULT_FIELDS",
    "SHAPE_KEY_FRAMES",
    "TRANSFER_SETTINGS",
    "AnimSignalsTransferPair",
    "AnimSignalsTransferResult",
    "AnimSignalsTransferSettings",
    "MarkerSettings",
    "TransferSettings",
]

SHAPE_KEY_FRAMES = 50  # Auto output: shape keys up to this many frames, a PC2 cache beyond

METHOD_ITEMS = [
    ("EXAMPLES", "Examples", "Matching example poses on both meshes (shape keys named alike; the Basis keys are the "
     "rest poses): each source frame is written as a blend of the source's examples and rebuilt from the target's "
     "(Cashman and Hormann). No correspondence between the meshes is needed"),
    ("CORRESPONDENCE", "Correspondence", "Marker vertices matched on both meshes: the target is fitted onto the "
     "source to match their triangles, then every source frame's per-triangle deformation is applied to the "
     "target (Sumner and Popović, \"Deformation Transfer for Triangle Meshes\")"),
]
SPACE_ITEMS = [
    ("GRADIENT", "Gradient", "Blend the examples' per-triangle rotations and stretches (deformation gradients): "
     "bends and turns keep their volume. Needs meshes of one manifold part each"),
    ("VERTEX", "Vertex", "Blend the examples' vertex positions: exact for shape-key blends, but large rotations "
     "shrink; works on any mesh"),
]
MARKER_ITEMS = [
    ("VERTEX_GROUPS", "Vertex Groups", "Vertex groups named alike on both meshes (starting with the marker prefix), "
     "one vertex each: the pair's two vertices match"),
    ("FILE", "File", "A markers file: \"source:target\" vertex index pairs (zero-based) under \"markers:\", as in "
     "Sumner's markers-cat-lion.yml"),
]
TRANSLATION_ITEMS = [
    ("FOLLOW", "Follow", "The target's centre moves as the source's does, scaled by their sizes"),
    ("FIXED", "Fixed", "The target's centre stays where it is at rest"),
]
RANGE_ITEMS = [
    ("SCENE", "Scene", "The scene's frame range"),
    ("CUSTOM", "Custom", "The frames from Start to End"),
]
OUTPUT_ITEMS = [
    ("AUTO", "Auto", f"Shape keys for up to {SHAPE_KEY_FRAMES} frames, else a PC2 cache"),
    ("PC2", "PC2 Cache", "A PC2 point cache beside the .blend (the temp folder while it is unsaved), played by a "
     "Mesh Cache modifier"),
    ("SHAPE_KEYS", "Shape Keys", "One shape key per frame, keyed on its frame: kept inside the .blend (for short "
     "ranges)"),
]
WRITE_ITEMS = [
    ("NEW_OBJECT", "New Object", "A new object \"<target>.transfer\" (a copy of the target; the target is left "
     "untouched); running again replaces it"),
    ("TARGET", "Target", "A Mesh Cache modifier on the target itself, first in its stack (PC2 output only)"),
]


class MarkerSettings:
    """Which objects a transfer reads and how marker vertex groups are named: inherited by the
    transfer and marker operators and by the scene's settings group."""

    source: StringProperty(  # type: ignore[valid-type]
        name="Source",
        description="The animated mesh whose deformation is transferred (shape keys, Mesh Cache, armature, any "
        "modifier that keeps its vertices; moving the whole object is not deformation). Empty: the selected object "
        "that is not active",
        default="",
    )
    target: StringProperty(  # type: ignore[valid-type]
        name="Target",
        description="The mesh that receives the deformation (another vertex count and connectivity are fine). "
        "Empty: the active object",
        default="",
    )
    marker_prefix: StringProperty(  # type: ignore[valid-type]
        name="Marker Prefix",
        description="Marker vertex groups are those whose names start with this, present on both meshes with one "
        'vertex each (Add Marker Pair names them "<prefix>.001", "<prefix>.002", ...)',
        default="marker",
    )


class AnimSignalsTransferPair(bpy.types.PropertyGroup):
    """One example pair: a shape key of the source and the target's version of that pose"""

    name: StringProperty(name="Source Key", description="The source's shape key (an example pose)")  # type: ignore[valid-type]
    target_key: StringProperty(name="Target Key", description="The target's shape key showing the same pose")  # type: ignore[valid-type]


class TransferSettings(MarkerSettings):
    """The Deformation Transfer settings: inherited by the operator and by the scene's settings group."""

    method: EnumProperty(  # type: ignore[valid-type]
        name="Method",
        description="How the source's deformation is matched on the target",
        items=METHOD_ITEMS,
        default="EXAMPLES",
    )
    space: EnumProperty(  # type: ignore[valid-type]
        name="Shape Space",
        description="What the examples method blends (the correspondence method always transfers per-triangle "
        "deformations)",
        items=SPACE_ITEMS,
        default="GRADIENT",
    )
    pairs: CollectionProperty(  # type: ignore[valid-type]
        type=AnimSignalsTransferPair,
        name="Example Pairs",
        description="Source shape key and the target's matching shape key, one pair per example pose. Empty: every "
        "shape key named alike on both meshes",
    )
    marker_source: EnumProperty(  # type: ignore[valid-type]
        name="Markers",
        description="Where the correspondence method's marker pairs come from (at least 3)",
        items=MARKER_ITEMS,
        default="VERTEX_GROUPS",
    )
    markers_file: StringProperty(  # type: ignore[valid-type]
        name="Markers File",
        description="A markers file (YAML): \"source:target\" vertex index pairs, zero-based, under \"markers:\"",
        default="",
        subtype="FILE_PATH",
    )
    translation: EnumProperty(  # type: ignore[valid-type]
        name="Translation",
        description="Deformations fix the target's shape but not its place: how it moves (correspondence method)",
        items=TRANSLATION_ITEMS,
        default="FOLLOW",
    )
    range_mode: EnumProperty(  # type: ignore[valid-type]
        name="Range",
        description="Which frames of the source are transferred",
        items=RANGE_ITEMS,
        default="SCENE",
    )
    frame_start: IntProperty(  # type: ignore[valid-type]
        name="Start",
        description="First frame transferred (Custom range)",
        default=1,
    )
    frame_end: IntProperty(  # type: ignore[valid-type]
        name="End",
        description="Last frame transferred (Custom range)",
        default=250,
    )
    output: EnumProperty(  # type: ignore[valid-type]
        name="Output",
        description="How the target's motion is stored",
        items=OUTPUT_ITEMS,
        default="AUTO",
    )
    write_to: EnumProperty(  # type: ignore[valid-type]
        name="Write To",
        description="Which object plays the result",
        items=WRITE_ITEMS,
        default="NEW_OBJECT",
    )


MARKER_SETTINGS = setting_names(MarkerSettings)
TRANSFER_SETTINGS = setting_names(TransferSettings)


class AnimSignalsTransferSettings(TransferSettings, bpy.types.PropertyGroup):
    """Deformation Transfer settings of the scene (the sidebar's values)"""

    pair_index: IntProperty(  # type: ignore[valid-type]
        name="Active Pair",
        description="The example pair selected in the list",
        default=0,
        min=0,
    )


class AnimSignalsTransferResult(bpy.types.PropertyGroup):
    """Numbers of the last Deformation Transfer run (read-only in the UI)."""

    valid: BoolProperty(name="Valid", description="There is a result to show", default=False)  # type: ignore[valid-type]
    object_name: StringProperty(name="Result", description="The object playing the transferred motion")  # type: ignore[valid-type]
    source_object: StringProperty(name="Source", description="The object whose deformation was read")  # type: ignore[valid-type]
    target_object: StringProperty(name="Target", description="The mesh the deformation was transferred to")  # type: ignore[valid-type]
    method: StringProperty(name="Method", description="EXAMPLES or CORRESPONDENCE")  # type: ignore[valid-type]
    space: StringProperty(name="Shape Space", description="GRADIENT or VERTEX (examples method)")  # type: ignore[valid-type]
    output: StringProperty(name="Output", description="PC2 (a Mesh Cache modifier) or SHAPE_KEYS")  # type: ignore[valid-type]
    cache_path: StringProperty(name="Cache File", description="The PC2 file written (PC2 output; // is relative to the .blend)")  # type: ignore[valid-type]
    frame_start: IntProperty(name="Start", description="First frame transferred")  # type: ignore[valid-type]
    frame_end: IntProperty(name="End", description="Last frame transferred")  # type: ignore[valid-type]
    frames: IntProperty(name="Frames", description="Number of frames transferred")  # type: ignore[valid-type]
    source_vertices: IntProperty(name="Source Vertices", description="Vertices of the source mesh")  # type: ignore[valid-type]
    target_vertices: IntProperty(name="Target Vertices", description="Vertices of the target mesh")  # type: ignore[valid-type]
    examples: IntProperty(name="Examples", description="Example pairs used, the rest poses not counted (examples method)")  # type: ignore[valid-type]
    markers: IntProperty(name="Markers", description="Marker pairs used (correspondence method)")  # type: ignore[valid-type]
    fit_error_mean: FloatProperty(  # type: ignore[valid-type]
        name="Fit Error (Mean)",
        description="Examples method: how far the source frames are from blends of the source's examples, RMS per "
        "vertex averaged over the frames (source units; 0: every frame is a blend of the examples)",
        precision=5,
    )
    fit_error_max: FloatProperty(  # type: ignore[valid-type]
        name="Fit Error (Max)",
        description="Examples method: the largest per-frame RMS distance between a source frame and its blend of the "
        "source's examples (source units)",
        precision=5,
    )
    fit_error_relative: FloatProperty(  # type: ignore[valid-type]
        name="Fit Error (Relative)",
        description="Fit Error (Max) as a fraction of the source's bounding-box diagonal",
        precision=5,
    )
    setup_seconds: FloatProperty(  # type: ignore[valid-type]
        name="Setup",
        description="Seconds spent before the first frame: the correspondence and the factorisation, or the shape "
        "spaces of the examples",
        unit="TIME_ABSOLUTE",
    )
    read_ms_per_frame: FloatProperty(name="Read per Frame", description="Milliseconds to evaluate one source frame in Blender")  # type: ignore[valid-type]
    solve_ms_per_frame: FloatProperty(name="Solve per Frame", description="Milliseconds to transfer one frame after the setup")  # type: ignore[valid-type]
    seconds: FloatProperty(name="Time", description="Seconds the whole transfer took", unit="TIME_ABSOLUTE")  # type: ignore[valid-type]

    def store(self, summary) -> None:
        """Keep a finished transfer's numbers (a ``writing.TransferSummary``) for the sidebar."""
        self.valid = True
        for name in RESULT_FIELDS:
            setattr(self, name, getattr(summary, name))


# The result fields copied from a summary by ``store`` (all but ``valid``).
RESULT_FIELDS = (
    "object_name", "source_object", "target_object", "method", "space", "output", "cache_path", "frame_start",
    "frame_end", "frames", "source_vertices", "target_vertices", "examples", "markers", "fit_error_mean",
    "fit_error_max", "fit_error_relative", "setup_seconds", "read_ms_per_frame", "solve_ms_per_frame", "seconds",
)

classes = (AnimSignalsTransferPair, AnimSignalsTransferSettings, AnimSignalsTransferResult)

# The tool's fields of ``Scene.anim_signals`` (see operators/scene_settings.py).
SCENE_PROPERTIES = {
    "transfer": PointerProperty(type=AnimSignalsTransferSettings),
    "last_transfer": PointerProperty(type=AnimSignalsTransferResult),
}
