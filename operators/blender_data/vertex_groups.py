"""Vertex groups and vertex selection: which vertices a group holds, which are selected, adding groups.

Owns reading the members of vertex groups (:func:`vertex_group_members`, :func:`group_names`),
the selected vertices of a mesh object (:func:`selected_vertices`, also in Edit Mode) and adding a
vertex group holding given vertices (:func:`add_vertex_group`, in Object or Edit Mode). Blender
has no bulk access to vertex weights: membership is read in one pass over the vertices; the
selection goes through ``foreach_get``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import bmesh
import bpy
import numpy as np

__all__ = ["add_vertex_group", "group_names", "remove_vertex_group", "selected_vertices", "sync_edit_mode",
           "vertex_group_members"]


def sync_edit_mode(ob: bpy.types.Object) -> None:
    """Copy the edit mesh of ``ob`` into its mesh data when it is in Edit Mode (so reads see the edits)."""
    if ob.mode == "EDIT":
        ob.update_from_editmode()


def group_names(ob: bpy.types.Object) -> list[str]:
    """The names of the object's vertex groups, in order."""
    return [vg.name for vg in ob.vertex_groups]


def vertex_group_members(ob: bpy.types.Object, names: Iterable[str]) -> dict[str, np.ndarray]:
    """The vertices (sorted indices, int64) with a weight above zero in each named vertex group.

    Names the object has no group for map to an empty array. One pass over the mesh's vertices
    (Edit Mode changes are synced first).
    """
    wanted = list(names)
    index_of = {vg.index: vg.name for vg in ob.vertex_groups if vg.name in set(wanted)}
    members: dict[str, list[int]] = {name: [] for name in wanted}
    if index_of:
        sync_edit_mode(ob)
        mesh: Any = ob.data
        for v in mesh.vertices:
            for g in v.groups:
                name = index_of.get(g.group)
                if name is not None and g.weight > 0.0:
                    members[name].append(v.index)
    return {name: np.array(sorted(idx), dtype=np.int64) for name, idx in members.items()}


def selected_vertices(ob: bpy.types.Object) -> np.ndarray:
    """Indices (int64) of the selected vertices of a mesh object (Edit Mode changes synced first)."""
    sync_edit_mode(ob)
    mesh: Any = ob.data
    sel = np.zeros(len(mesh.vertices), dtype=bool)
    mesh.vertices.foreach_get("select", sel)
    return np.flatnonzero(sel).astype(np.int64)


def add_vertex_group(ob: bpy.types.Object, name: str, vertices: Sequence[int], weight: float = 1.0) -> bpy.types.VertexGroup:
    """A new vertex group ``name`` on ``ob`` holding ``vertices`` with ``weight``.

    In Edit Mode the weights go into the edit mesh (``VertexGroup.add`` refuses Edit Mode), so
    leaving Edit Mode keeps them. Blender makes the name unique if it is taken.
    """
    vg = ob.vertex_groups.new(name=name)
    indices = [int(i) for i in vertices]
    if ob.mode == "EDIT":
        mesh: Any = ob.data
        bm = bmesh.from_edit_mesh(mesh)
        layer = bm.verts.layers.deform.verify()
        bm.verts.ensure_lookup_table()
        for i in indices:
            bm.verts[i][layer][vg.index] = float(weight)
        bmesh.update_edit_mesh(mesh)
    else:
        vg.add(indices, float(weight), "REPLACE")
    return vg


def remove_vertex_group(ob: bpy.types.Object, name: str) -> None:
    """Remove the vertex group ``name`` of ``ob`` (nothing when it has none); in Edit Mode too."""
    vg = ob.vertex_groups.get(name)
    if vg is not None:
        ob.vertex_groups.remove(vg)
