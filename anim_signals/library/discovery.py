"""The clips of a library folder: every ``.bvh`` and ``.blend`` file under it, found recursively.

A clip is named by its path relative to the folder (``/``-separated), so names are unique, stable
across machines and readable in a summary table. Hidden files and folders (a leading ``.``: the
temporary ``.name.partial-*`` files of an interrupted write among them) are never clips.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CLIP_EXTENSIONS", "Clip", "find_clips"]

CLIP_EXTENSIONS = (".bvh", ".blend")


@dataclass(frozen=True)
class Clip:
    """One clip file of a library.

    Attributes
    ----------
    name : str
        Path relative to the library folder, ``/``-separated (``walks/w01.bvh``).
    path : str
        Absolute path.
    """

    name: str
    path: str

    @property
    def kind(self) -> str:
        """The extension without the dot, lower case: ``"bvh"`` or ``"blend"``."""
        return os.path.splitext(self.path)[1].lower().lstrip(".")


def find_clips(folder: str | os.PathLike, extensions: Sequence[str] = CLIP_EXTENSIONS) -> list[Clip]:
    """Every clip file under ``folder`` (recursive), sorted by name.

    Parameters
    ----------
    folder : str or path
        The library's root folder.
    extensions : sequence of str
        File extensions taken as clips (with the dot, any case).

    Returns
    -------
    list of Clip
        Possibly empty; sorted by :attr:`Clip.name`.

    Raises
    ------
    FileNotFoundError
        If ``folder`` does not exist.
    NotADirectoryError
        If ``folder`` is a file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "walks").mkdir()
    >>> for name in ("walks/b.bvh", "a.BVH", "notes.txt", ".a.partial-1234.bvh"):
    ...     _ = (root / name).write_text("")
    >>> [c.name for c in find_clips(root)]
    ['a.BVH', 'walks/b.bvh']
    """
    root = os.path.abspath(os.fspath(folder))
    if not os.path.exists(root):
        raise FileNotFoundError(f"the library folder {root} does not exist")
    if not os.path.isdir(root):
        raise NotADirectoryError(f"{root} is a file, expected a library folder")
    wanted = tuple(e.lower() for e in extensions)
    clips = []
    for here, folders, files in os.walk(root):
        folders[:] = [f for f in folders if not f.startswith(".")]
        for f in files:
            if f.startswith(".") or not f.lower().endswith(wanted):
                continue
            path = os.path.join(here, f)
            clips.append(Clip(os.path.relpath(path, root).replace(os.sep, "/"), path))
    return sorted(clips, key=lambda c: c.name)
