"""What a transfer reads: the source and target objects, their rest meshes, and the example poses.

- :func:`transfer_objects`: the source and target by name, or from the selection (the selected
  object that is not active is the source, the active one the target).
- :func:`rest_mesh`: an object's rest pose and triangles as the core's :class:`TriangleMesh`.
- :func:`example_pairs` / :func:`read_examples`: the shape keys paired as example poses.
- :func:`refusing`: the core's ``ValueError`` messages turned into :class:`TransferInputError`.

Everything here only reads, through :mod:`operators.blender_data`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import bpy
import numpy as np

from ...anim_signals.transfer import TriangleMesh
from ..blender_data.meshes import evaluated_counts, mesh_triangles, rest_vertices
from ..blender_data.shape_keys import key_block_names, reference_key_name, shape_key_coords
from ..common import InputError
from ..common.text import short_list

__all__ = [
    "TransferInputError",
    "check_evaluated",
    "example_pairs",
    "read_examples",
    "refusing",
    "rest_mesh",
    "transfer_objects",
]


class TransferInputError(InputError):
    """Bad input for Deformation Transfer: reported to the user, nothing changed."""


@contextmanager
def refusing(prefix: str = "", hint: str = "") -> Iterator[None]:
    """Turn the core's ``ValueError`` (a message for the user) into :class:`TransferInputError`,
    with ``prefix`` before it and ``hint`` after it."""
    try:
        yield
    except ValueError as err:
        text = str(err)
        raise TransferInputError(f"{prefix}{text[:1].upper()}{text[1:]}{hint}") from err


def _named(name: str, role: str) -> Any:
    ob = bpy.data.objects.get(name)
    if ob is None:
        raise TransferInputError(f'There is no object "{name}" (the {role})')
    return ob


def transfer_objects(context: Any, source: str = "", target: str = "") -> tuple[Any, Any]:
    """The source and target objects: by name, else from the selection (source: the one selected
    object that is not active; target: the active object). Both must be meshes.

    Raises
    ------
    TransferInputError
        A name without an object, no active object, no (or more than one) other selected object,
        or an object that is not a mesh.
    """
    active = getattr(context, "active_object", None)
    tgt = _named(target, "target") if target else active
    if tgt is None:
        raise TransferInputError("No active object: select the source (animated) mesh, then the target mesh "
                                 "(active), or name them in the settings")
    if source:
        src = _named(source, "source")
    else:
        others = [ob for ob in getattr(context, "selected_objects", []) if ob != tgt]
        if not others:
            raise TransferInputError(f'No source: select the animated mesh as well as the target "{tgt.name}" '
                                     "(the target active), or name the source in the settings")
        if len(others) > 1:
            raise TransferInputError(f"{len(others)} objects selected besides the target: select only the source "
                                     f"({short_list([ob.name for ob in others])}), or name it in the settings")
        src = others[0]
    for ob, role in ((src, "source"), (tgt, "target")):
        if ob.type != "MESH":
            raise TransferInputError(f'The {role} "{ob.name}" is a {ob.type.lower()} object: deformation transfer '
                                     "works on meshes")
    return src, tgt


def rest_mesh(ob: Any, role: str) -> TriangleMesh:
    """The object's rest pose (its Basis shape key, else its mesh, before modifiers) and its faces
    as triangles. Raises :class:`TransferInputError` (no faces, NaN coordinates)."""
    with refusing():
        return TriangleMesh(rest_vertices(ob), mesh_triangles(ob.data), name=f'{role} "{ob.name}"')


def check_evaluated(ob: Any, n_vertices: int, frame: int, *, examples: bool = False) -> None:
    """Refuse a source whose modifiers change its vertex count: its frames must have the vertices
    of its mesh (and of its shape keys, the examples)."""
    count, _ = evaluated_counts(ob)
    if count != n_vertices:
        what = "its shape keys (the example poses)" if examples else "its mesh"
        raise TransferInputError(
            f'The source "{ob.name}" has {count} vertices after its modifiers (frame {frame}), {what} {n_vertices}: '
            "a modifier changes its topology; apply or disable it"
        )


def example_pairs(source: Any, target: Any, pairs: Sequence[tuple[str, str]]) -> tuple[list[str], list[str], list[str]]:
    """The shape keys paired as examples: ``pairs`` of (source key, target key), or when empty every
    key named alike on both meshes; the reference keys ("Basis") are the rest poses, not examples.

    Returns
    -------
    source_keys, target_keys : list of str
        The rest pose's key first, then the examples in order.
    warnings : list of str

    Raises
    ------
    TransferInputError
        A mesh without shape keys, no key named alike, a pair naming a missing key or a rest pose.
    """
    refs = []
    for ob in (source, target):
        ref = reference_key_name(ob)
        if ref is None or len(key_block_names(ob)) < 2:
            raise TransferInputError(
                f'The examples method needs shape keys on both meshes: "{ob.name}" has '
                f"{'none' if ref is None else 'only its Basis'} (the Basis is the rest pose, every other key an "
                "example pose paired with the key of the same name on the other mesh)"
            )
        refs.append(ref)
    names = [key_block_names(source), key_block_names(target)]
    warnings: list[str] = []
    if not pairs:
        on_target = set(names[1]) - {refs[1]}
        chosen = [(n, n) for n in names[0] if n != refs[0] and n in on_target]
        if not chosen:
            raise TransferInputError(
                f'No shape keys named alike on "{source.name}" and "{target.name}" besides their Basis: name the '
                "target's example keys as the source's, or pair them in the Example Pairs list"
            )
        alone = [n for n in names[0] if n != refs[0] and n not in on_target]
        if alone:
            warnings.append(f'Shape keys of "{source.name}" without a match on "{target.name}", not used: '
                            f"{short_list(alone)}")
        pairs = chosen
    for k, pair in enumerate(pairs):
        for ob, name, ref, have in ((source, pair[0], refs[0], names[0]), (target, pair[1], refs[1], names[1])):
            if name not in have:
                raise TransferInputError(f'Example pair {k + 1}: "{ob.name}" has no shape key "{name}"')
            if name == ref:
                raise TransferInputError(f'Example pair {k + 1}: "{name}" is the Basis of "{ob.name}", its rest pose, '
                                         "not an example")
    return [refs[0], *(p[0] for p in pairs)], [refs[1], *(p[1] for p in pairs)], warnings


def read_examples(ob: Any, keys: Sequence[str]) -> np.ndarray:
    """The coordinates (m + 1, V, 3) of the named shape keys (rest pose first); refuses NaN."""
    coords = shape_key_coords(ob, keys)
    bad = ~np.isfinite(coords).all(axis=2)
    if bad.any():
        j = int(np.flatnonzero(bad.any(axis=1))[0])
        raise TransferInputError(f'The shape key "{keys[j]}" of "{ob.name}" has NaN or infinite coordinates at '
                                 f"vertices {short_list([str(v) for v in np.flatnonzero(bad[j])])}")
    return coords
