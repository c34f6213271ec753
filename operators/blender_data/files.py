"""Files that belong to the open .blend: a folder beside it, or the extension's own cache folder.

A tool that keeps large derived data outside the .blend (the motion database's k-NN index) stores it
beside the saved .blend (``<folder>/<blend name><suffix>/``, found again when the file is opened) or,
for an unsaved file or one in a folder Blender cannot write to (a linked library's, a read-only
share), in the extension's user folder (``bpy.utils.extension_path_user``), the same for every file.
"""

from __future__ import annotations

import os
import tempfile

import bpy

__all__ = ["blend_path", "cache_folder", "sidecar_folder", "writable_folder"]

_EXTENSION = __package__.rsplit(".operators", 1)[0] if __package__ else "anim_signals"


def blend_path() -> str:
    """The open .blend's absolute path ('' when it was never saved)."""
    return bpy.path.abspath(bpy.data.filepath) if bpy.data.filepath else ""


def sidecar_folder(suffix: str, blend: str | None = None) -> str:
    """``<folder of blend>/<blend name without .blend><suffix>`` for ``blend`` (default: the open
    file); '' for an unsaved file."""
    path = blend_path() if blend is None else os.path.abspath(blend)
    if not path:
        return ""
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.join(os.path.dirname(path), f"{stem}{suffix}")


def cache_folder(name: str) -> str:
    """The extension's user folder ``name`` (created): the same for every .blend. Blender's
    ``extension_path_user`` when the extension is installed as one; a folder in the system's
    temporary directory otherwise (an add-on install, or a failure to create it)."""
    try:
        path = bpy.utils.extension_path_user(_EXTENSION, path=name, create=True)
    except (ValueError, AttributeError, OSError):  # not an extension (legacy add-on), or Blender < 4.2
        path = ""
    if not path or not os.path.isdir(path):
        path = os.path.join(tempfile.gettempdir(), "anim_signals", name)
        os.makedirs(path, exist_ok=True)
    return path


def writable_folder(folder: str) -> bool:
    """``folder`` exists and can take new files, or can be created (its nearest existing parent
    can take new files)."""
    probe = folder
    while probe and not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            return False
        probe = parent
    return bool(probe) and os.path.isdir(probe) and os.access(probe, os.W_OK | os.X_OK)
