"""The manifest of a library run: what was done to which input, so that a rerun resumes.

One JSON file per output folder. Each clip's entry records the SHA-256 of the input file's content,
the digest of the options it was processed with, its status (``done`` or ``failed``), its result (or
error) and the output files it wrote. A rerun (:meth:`Manifest.plan`) skips a clip whose content,
options and outputs are unchanged, and redoes one whose file or options changed or whose outputs
are gone. The file is only ever replaced whole (written under a temporary name, flushed to disk,
then renamed), so an interrupted save leaves the previous manifest, never half of one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DONE", "FAILED", "Manifest", "Plan", "file_digest", "options_digest", "replace_file"]

DONE = "done"
FAILED = "failed"
VERSION = 1


def file_digest(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's content, as hex.

    Parameters
    ----------
    path : str or path
    chunk : int
        Bytes read at a time (the file is never read whole).

    Returns
    -------
    str
        64 hex digits.

    Raises
    ------
    OSError
        If the file cannot be read.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile(delete=False) as fh:
    ...     _ = fh.write(b"abc")
    >>> file_digest(fh.name)[:16]
    'ba7816bf8f01cfea'
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def options_digest(options: Mapping[str, Any]) -> str:
    """SHA-256 (hex, first 16 digits) of options as canonical JSON (sorted keys): equal options, equal digest.

    Examples
    --------
    >>> options_digest({"a": 1, "b": [2, 3]}) == options_digest({"b": [2, 3], "a": 1})
    True
    """
    text = json.dumps(dict(options), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def replace_file(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) as ``path``: to a hidden temporary file beside it, flushed to disk, then
    renamed over ``path`` -- readers see the old file or the new one, never a part.

    Raises
    ------
    OSError
        If the folder cannot be written (nothing is left behind).
    """
    path = os.fspath(path)
    folder, base = os.path.split(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=f".{base}.partial-", dir=folder)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes it private; the result is an ordinary file
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.lexists(temporary):
            os.remove(temporary)
        raise


@dataclass
class Plan:
    """What a run has to do (:meth:`Manifest.plan`): clip names by reason.

    Attributes
    ----------
    todo : list of str
        Clips to process: ``new + changed + missing_outputs`` (+ ``failed`` when retried), in input order.
    skipped : list of str
        Clips whose entry is current (done, or failed and not retried).
    new, changed, missing_outputs, retried : list of str
        Why each clip of ``todo`` is there.
    """

    todo: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    missing_outputs: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)


class Manifest:
    """A library run's record, loaded from and saved to one JSON file.

    Parameters
    ----------
    path : str or path
        The manifest file (need not exist yet).
    command : str
        What the run does (``fit``, ``loop``, ...): a manifest of another command is refused.

    Raises
    ------
    ValueError
        If the file exists but is not a manifest of ``command`` (damaged, or another command's).

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> m = Manifest(os.path.join(folder, "manifest.json"), "fit")
    >>> m.plan({"a.bvh": "d1"}, {"tol": 0.5}).todo
    ['a.bvh']
    >>> m.record("a.bvh", "d1", {"tol": 0.5}, result={"keys": 10}); m.save()
    >>> Manifest(m.path, "fit").plan({"a.bvh": "d1"}, {"tol": 0.5}).skipped
    ['a.bvh']
    >>> Manifest(m.path, "fit").plan({"a.bvh": "d2"}, {"tol": 0.5}).changed
    ['a.bvh']
    """

    def __init__(self, path: str | os.PathLike, command: str) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self.command = command
        self.entries: dict[str, dict[str, Any]] = {}
        if os.path.exists(self.path):
            self._load()

    def _load(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError) as err:
            raise ValueError(f"{self.path} is not a readable manifest ({err}): move it away to start afresh") from err
        if not isinstance(data, dict) or not isinstance(data.get("clips"), dict):
            raise ValueError(f"{self.path} is not a library manifest (no 'clips'): move it away to start afresh")
        if data.get("command") != self.command:
            raise ValueError(f"{self.path} records a '{data.get('command')}' run, not '{self.command}': "
                             "use another output folder")
        self.entries = data["clips"]

    def plan(self, digests: Mapping[str, str], options: Mapping[str, Any], *,
             retry_failed: bool = False) -> Plan:
        """Sort the clips into what to do and what to skip.

        Parameters
        ----------
        digests : mapping of str to str
            Clip name -> :func:`file_digest` of its file, in input order.
        options : mapping
            The run's options (compared by :func:`options_digest`).
        retry_failed : bool
            Redo clips that failed before with the same content and options (default: keep the error).

        Returns
        -------
        Plan
        """
        wanted = options_digest(options)
        plan = Plan()
        folder = os.path.dirname(self.path)
        for name, digest in digests.items():
            entry = self.entries.get(name)
            if entry is None:
                plan.new.append(name)
            elif entry.get("digest") != digest or entry.get("options") != wanted:
                plan.changed.append(name)
            elif entry.get("status") == FAILED and retry_failed:
                plan.retried.append(name)
            elif entry.get("status") == DONE and not all(
                    os.path.isfile(os.path.join(folder, f)) for f in entry.get("outputs", [])):
                plan.missing_outputs.append(name)
            elif entry.get("status") in (DONE, FAILED):
                plan.skipped.append(name)
                continue
            else:
                plan.changed.append(name)
            plan.todo.append(name)
        return plan

    def record(self, name: str, digest: str, options: Mapping[str, Any], *, result: Any = None,
               error: str | None = None, outputs: Iterable[str] = ()) -> None:
        """Record one clip's outcome (in memory; :meth:`save` writes the file).

        Parameters
        ----------
        name, digest : str
            The clip and its content's :func:`file_digest`.
        options : mapping
        result : JSON-serialisable, optional
            What the clip's task returned.
        error : str, optional
            The clip failed with this message (``result`` is then ignored).
        outputs : iterable of str
            Files written for the clip, relative to the manifest's folder.
        """
        self.entries[name] = {
            "digest": digest, "options": options_digest(options), "status": FAILED if error else DONE,
            "result": None if error else result, "error": error, "outputs": list(outputs),
        }

    def done(self) -> dict[str, dict[str, Any]]:
        """Entries of clips that finished, by name."""
        return {n: e for n, e in self.entries.items() if e.get("status") == DONE}

    def failed(self) -> dict[str, dict[str, Any]]:
        """Entries of clips that failed, by name."""
        return {n: e for n, e in self.entries.items() if e.get("status") == FAILED}

    def save(self) -> None:
        """Replace the manifest file with the current entries (:func:`replace_file`)."""
        data = {"version": VERSION, "command": self.command, "clips": dict(sorted(self.entries.items()))}
        replace_file(self.path, json.dumps(data, indent=1, sort_keys=False) + "\n")
