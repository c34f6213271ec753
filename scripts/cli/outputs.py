"""Output files: checked before any work starts, written under a temporary name and renamed at the end.

``check_output_file`` / ``check_output_dir`` refuse (exit code 2) a path in a missing folder that
cannot be made (a file stands where a folder would be), in a folder that cannot be written, a folder
given where a file is expected and a file where a folder is expected -- so an unwritable ``--out`` is
reported at once, not after minutes of work. ``written_atomically`` yields a temporary name in the same
folder and renames it to the real one only when the block succeeds: a failure never leaves a
half-written file that could be taken for a result (nor the folders it made).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from .errors import CliError
from .inputs import kinds_text


def _existing_ancestor(folder: str) -> str:
    while not os.path.lexists(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return folder


def check_folder_writable(folder: str, option: str, path: str) -> None:
    """CliError unless files can be made in ``folder`` (or in the folders that will be made for it)."""
    existing = _existing_ancestor(folder)
    if not os.path.isdir(existing):
        raise CliError(f"{option} {path}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise CliError(f"{option} {path}: cannot write in the folder {existing} (permission denied)")


def check_output_file(path: str, option: str, exts: Sequence[str] = (".blend",)) -> str:
    """The absolute path of an output file named by ``option``; CliError (exit code 2) when it has not
    one of the extensions ``exts``, is a folder, or cannot be written."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        raise CliError(f"{option} {path} is a folder, expected a {kinds_text(exts)} file name")
    if exts and os.path.splitext(path)[1].lower() not in exts:
        raise CliError(f"{option} must be a {kinds_text(exts)} file: {path}")
    if os.path.lexists(path):
        if not os.path.isfile(path):
            raise CliError(f"{option} {path} exists and is not a regular file")
        if not os.access(path, os.W_OK):
            raise CliError(f"{option} {path}: cannot overwrite it (permission denied)")
    check_folder_writable(os.path.dirname(path), option, path)
    return path


def check_output_dir(path: str, option: str) -> str:
    """The absolute path of an output folder; CliError when a file stands there or it cannot be written."""
    path = os.path.abspath(path)
    if os.path.lexists(path) and not os.path.isdir(path):
        raise CliError(f"{option} {path} is a file, expected a folder")
    check_folder_writable(path, option, path)
    return path


def _make_folders(folder: str) -> list[str]:
    """Make ``folder`` and its missing parents; returns the ones made, deepest first."""
    made = []
    probe = folder
    while not os.path.isdir(probe):
        made.append(probe)
        probe = os.path.dirname(probe)
    os.makedirs(folder, exist_ok=True)
    return made


def _remove_empty(folders: list[str]) -> None:
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            return


def partial_name(path: str) -> str:
    """A hidden temporary name beside ``path`` with its extension (``.name.partial-1a2b3c4d.ext``)."""
    folder, base = os.path.split(path)
    stem, ext = os.path.splitext(base)
    return os.path.join(folder, f".{stem}.partial-{secrets.token_hex(4)}{ext}")


@contextmanager
def written_atomically(path: str) -> Iterator[str]:
    """Yield a temporary name beside ``path`` to write to; when the block succeeds it is renamed to
    ``path`` (if it was written), else removed, together with the folders made for it."""
    made = _make_folders(os.path.dirname(path))
    temporary = partial_name(path)
    done = False
    try:
        yield temporary
        if os.path.exists(temporary):
            os.replace(temporary, path)
        done = True
    finally:
        if not done:
            if os.path.lexists(temporary):
                os.remove(temporary)
            _remove_empty(made)


def write_text(path: str, text: str) -> None:
    """``text`` as the file ``path`` (UTF-8), written atomically."""
    with written_atomically(path) as temporary, open(temporary, "w", encoding="utf-8") as fh:
        fh.write(text)
