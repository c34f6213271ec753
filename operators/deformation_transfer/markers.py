"""Marker pairs of the correspondence method: read from vertex groups named alike on both meshes or
from a markers file, and added from the vertex selected on each mesh.

A marker pair is one source vertex and the target vertex at the same place on the character
(``(source vertex, target vertex)``, zero-based). As vertex groups: a group on each mesh with the
same name starting with the marker prefix (``"marker.001"``, ...), holding exactly one vertex.
As a file: Sumner's markers format, read by the core (:func:`anim_signals.transfer.read_markers`).
"""

from __future__ import annotations

import functools

import numpy as np

from ...anim_signals.transfer import read_markers
from ..blender_data.actions import id_read_only_reason
from ..blender_data.vertex_groups import (
    add_vertex_group,
    group_names,
    remove_vertex_group,
    selected_vertices,
    vertex_group_members,
)
from ..common.text import short_list
from ..common.transaction import current_transaction
from .sources import TransferInputError

__all__ = ["add_marker_pair", "marker_group_names", "markers_from_file", "markers_from_groups", "next_marker_name"]

def marker_group_names(ob, prefix: str) -> list[str]:
    """The object's vertex groups whose names start with ``prefix``, in order."""
    return [name for name in group_names(ob) if name.startswith(prefix)]


def markers_from_groups(source, target, prefix: str) -> tuple[np.ndarray, list[str], list[str]]:
    """Marker pairs from the vertex groups named alike on both meshes (names starting with ``prefix``).

    Returns
    -------
    markers : ndarray of int64, shape (K, 2)
        ``(source vertex, target vertex)`` per shared group, in the source's group order.
    names : list of str
        The groups used.
    warnings : list of str
        Marker groups found on one mesh only (left out).

    Raises
    ------
    TransferInputError
        An empty prefix, or a shared group that does not hold exactly one vertex (named).
    """
    if not prefix:
        raise TransferInputError("The marker prefix is empty: marker vertex groups are found by it")
    on_source = marker_group_names(source, prefix)
    on_target = set(marker_group_names(target, prefix))
    names = [n for n in on_source if n in on_target]
    warnings = []
    lonely = [n for n in on_source if n not in on_target] + sorted(on_target - set(on_source))
    if lonely:
        warnings.append(f"Marker groups on one mesh only, left out: {short_list(lonely)}")
    members = {ob.name: vertex_group_members(ob, names) for ob in (source, target)}
    pairs = []
    for name in names:
        ends = []
        for ob in (source, target):
            vertices = members[ob.name][name]
            if vertices.size != 1:
                raise TransferInputError(
                    f'The marker vertex group "{name}" of "{ob.name}" holds {vertices.size} vertices: a marker '
                    "group holds exactly one (Add Marker Pair makes them)"
                )
            ends.append(int(vertices[0]))
        pairs.append(ends)
    return np.array(pairs, dtype=np.int64).reshape(-1, 2), names, warnings


def markers_from_file(path: str) -> np.ndarray:
    """The ``(source vertex, target vertex)`` pairs of a markers file (absolute path).

    Raises
    ------
    TransferInputError
        No file given, or the file is missing or malformed (the core's message, with the line).
    """
    if not path:
        raise TransferInputError("No markers file given (Markers: File)")
    try:
        return read_markers(path).markers
    except OSError as err:
        raise TransferInputError(f"Cannot read the markers file {path}: {err.strerror or err}") from err
    except ValueError as err:
        raise TransferInputError(f"Bad markers file: {err}") from err


def next_marker_name(prefix: str, *objects) -> str:
    """The first ``"<prefix>.NNN"`` (from 001) that none of ``objects`` has a vertex group of."""
    taken = {name for ob in objects for name in group_names(ob)}
    k = 1
    while f"{prefix}.{k:03d}" in taken:
        k += 1
    return f"{prefix}.{k:03d}"


def add_marker_pair(source, target, prefix: str) -> tuple[str, int, int]:
    """A new marker pair from the one vertex selected on each mesh: a vertex group
    ``"<prefix>.NNN"`` on both (works in Object and Edit Mode).

    Returns the group name and the source and target vertex. Raises :class:`TransferInputError`
    (the same object twice, linked data, not exactly one vertex selected on a mesh, no prefix);
    nothing is changed then. Each group added is recorded with the running transaction.
    """
    if not prefix:
        raise TransferInputError("The marker prefix is empty: marker vertex groups are named by it")
    if source == target:
        raise TransferInputError(f'Source and target are both "{source.name}": select the source, then the target')
    for ob in (source, target):
        reason = id_read_only_reason(ob, ob.data)
        if reason:
            raise TransferInputError(f"{reason}: the marker's vertex group cannot be added")
    chosen = []
    for ob in (source, target):
        sel = selected_vertices(ob)
        if sel.size != 1:
            raise TransferInputError(
                f'Select exactly one vertex on "{ob.name}" ({sel.size} selected): a marker pair joins one vertex of '
                "each mesh"
            )
        chosen.append(int(sel[0]))
    name = next_marker_name(prefix, source, target)
    tx = current_transaction()
    for ob, vertex in ((source, chosen[0]), (target, chosen[1])):
        group = add_vertex_group(ob, name, [vertex])
        tx.on_rollback(functools.partial(remove_vertex_group, ob, group.name))
    return name, chosen[0], chosen[1]
