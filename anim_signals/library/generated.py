"""Generated humanoid BVH clips and small libraries of them (deterministic, no files needed).

:func:`humanoid_bvh` writes a 16-joint humanoid (CMU-style bone names, so
:func:`anim_signals.manifolds.skeleton.canonical_joints` finds every canonical joint) swinging its legs
and arms as in a walk; :func:`write_library` writes a folder of such clips in a few motion families
(walks, arm waves, marches) with varied lengths, speeds and phases, for the library runner's tests.
"""

from __future__ import annotations

import math
import os

__all__ = ["HUMANOID", "humanoid_bvh", "library_specs", "write_library"]

HUMANOID = [  # name, parent, offset (BVH: Y up, cm-ish units)
    ("Hips", None, (0, 0, 0)), ("Spine", "Hips", (0, 10, 0)), ("Neck", "Spine", (0, 40, 0)),
    ("Head", "Neck", (0, 10, 0)),
    ("LeftArm", "Spine", (15, 35, 0)), ("LeftForeArm", "LeftArm", (0, -28, 0)), ("LeftHand", "LeftForeArm", (0, -25, 0)),
    ("RightArm", "Spine", (-15, 35, 0)), ("RightForeArm", "RightArm", (0, -28, 0)),
    ("RightHand", "RightForeArm", (0, -25, 0)),
    ("LeftUpLeg", "Hips", (9, -5, 0)), ("LeftLeg", "LeftUpLeg", (0, -42, 0)), ("LeftFoot", "LeftLeg", (0, -40, 0)),
    ("RightUpLeg", "Hips", (-9, -5, 0)), ("RightLeg", "RightUpLeg", (0, -42, 0)),
    ("RightFoot", "RightLeg", (0, -40, 0)),
]


def humanoid_bvh(frames: int = 48, *, swing: float = 30.0, arms: float = 0.0, cycles: float = 1.0,
                 speed: float = 1.0, phase: float = 0.0) -> str:
    """A tiny humanoid BVH as text: a walk-like swing of legs and arms, ``cycles`` strides over the clip.

    Parameters
    ----------
    frames : int
        Frames of motion (at 30 fps), at least 2.
    swing : float
        Leg swing amplitude in degrees (arms swing 0.7 x against the legs).
    arms : float
        Arms raised sideways by this many degrees.
    cycles : float
        Strides over the clip.
    speed : float
        Forward travel scale (60 units per clip at 1).
    phase : float
        Start phase of the stride, radians.

    Returns
    -------
    str
        The BVH file's text (ZXY rotation channels, the root with positions too).

    Examples
    --------
    >>> text = humanoid_bvh(frames=4)
    >>> text.splitlines()[0], "Frames: 4" in text, len(text.splitlines()[-1].split())
    ('HIERARCHY', True, 51)
    """
    children: dict[str | None, list[str]] = {}
    for name, parent, _ in HUMANOID:
        children.setdefault(parent, []).append(name)
    offsets = {n: o for n, _, o in HUMANOID}
    lines = ["HIERARCHY"]

    def emit(name: str, depth: int) -> None:
        ind = "  " * depth
        lines.append(f"{ind}{'ROOT' if depth == 0 else 'JOINT'} {name}")
        lines.append(f"{ind}{{")
        lines.append(f"{ind}  OFFSET {' '.join(str(v) for v in offsets[name])}")
        if depth == 0:
            lines.append(f"{ind}  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation")
        else:
            lines.append(f"{ind}  CHANNELS 3 Zrotation Xrotation Yrotation")
        kids = children.get(name, [])
        for k in kids:
            emit(k, depth + 1)
        if not kids:
            lines.extend([f"{ind}  End Site", f"{ind}  {{", f"{ind}    OFFSET 0 -5 0", f"{ind}  }}"])
        lines.append(f"{ind}}}")

    emit("Hips", 0)
    lines += ["MOTION", f"Frames: {frames}", "Frame Time: 0.0333333"]
    order = [n for n, _, _ in HUMANOID]
    for i in range(frames):
        t = 2 * math.pi * cycles * i / (frames - 1) + phase
        s = math.sin(t)
        rot = {n: [0.0, 0.0, 0.0] for n in order}  # Z X Y
        rot["LeftUpLeg"][1] = swing * s
        rot["RightUpLeg"][1] = -swing * s
        rot["LeftLeg"][1] = 25 * max(0.0, -math.cos(t))
        rot["RightLeg"][1] = 25 * max(0.0, math.cos(t))
        rot["LeftArm"][1] = -0.7 * swing * s
        rot["RightArm"][1] = 0.7 * swing * s
        rot["LeftArm"][0] = arms
        rot["RightArm"][0] = -arms
        rot["Spine"][2] = 5 * s
        vals = [0.0, 92 + 2 * math.cos(2 * t), speed * 60.0 * i / frames]
        for n in order:
            vals += rot[n]
        lines.append(" ".join(f"{v:.4f}" for v in vals))
    return "\n".join(lines) + "\n"


# motion families: (folder, keyword arguments of humanoid_bvh before the per-clip variation)
FAMILIES = (
    ("walks", dict(swing=30.0, arms=0.0, cycles=1.0)),
    ("waves", dict(swing=5.0, arms=70.0, cycles=2.0)),
    ("marches", dict(swing=55.0, arms=10.0, cycles=1.5)),
)


def library_specs(n_clips: int) -> list[tuple[str, dict]]:
    """The (relative file name, :func:`humanoid_bvh` arguments) of :func:`write_library`'s clips.

    Families take turns; each clip varies its family's amplitudes by a few percent, its length
    (36-56 frames), speed and phase, deterministically from its index.

    Examples
    --------
    >>> [name for name, _ in library_specs(4)]
    ['walks/walks_000.bvh', 'waves/waves_001.bvh', 'marches/marches_002.bvh', 'walks/walks_003.bvh']
    """
    specs = []
    for i in range(n_clips):
        family, base = FAMILIES[i % len(FAMILIES)]
        wobble = math.sin(1.7 * i + 0.3)
        kwargs = dict(base, frames=36 + (7 * i) % 21, phase=(0.37 * i) % (2 * math.pi), speed=1.0 + 0.1 * wobble)
        kwargs["swing"] = base["swing"] * (1.0 + 0.08 * wobble)
        kwargs["arms"] = base["arms"] * (1.0 + 0.05 * math.cos(2.3 * i))
        specs.append((f"{family}/{family}_{i:03d}.bvh", kwargs))
    return specs


def write_library(folder: str | os.PathLike, n_clips: int) -> list[str]:
    """Write ``n_clips`` generated humanoid BVH clips into ``folder`` (one sub-folder per family).

    Returns
    -------
    list of str
        The files written, in :func:`library_specs` order.
    """
    out = []
    for name, kwargs in library_specs(n_clips):
        path = os.path.join(os.fspath(folder), *name.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(humanoid_bvh(**kwargs))
        out.append(path)
    return out
