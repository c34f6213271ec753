"""Blend Actions in Blender: two actions read on their common channels, blended on the motion
manifold, written as new actions.

:func:`plan_blend` finds, checks and samples both actions (raises :class:`MotionInputError` with a
message for the user); :func:`run_blend` computes the geodesic blends with the core
(``anim_signals.manifolds.elastic``); :func:`write_blend` writes one new action per blend and assigns the
first to the active object when it can play it. The inputs are never changed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...anim_signals.channels import moving_channels
from ...anim_signals.manifolds import elastic, from_motion_curve, harmonise, nearly_closed, select_travel
from ..blender_data.actions import (
    action_slot_identifier,
    assign_action,
    copy_with_channels,
    fcurves_of_action,
    id_playing_paths,
    object_playing,
    set_action_frame_range,
    tweak_mode_reason,
)
from ..blender_data.armatures import travel_channels
from ..blender_data.channels import channel_specs, continuous_values
from ..blender_data.fcurves import add_cycles_modifier, clear_modifiers, has_cycles, write_dense
from ..common.text import short_list
from ..common.transaction import current_transaction
from .clips import (
    MotionInputError,
    find_action,
    sample_action,
    spec_kinds,
    spec_owners,
)

__all__ = ["BlendPlan", "BlendSummary", "Clip", "blend_name", "plan_blend", "run_blend", "write_blend"]


@dataclass
class Clip:
    """One action sampled on its whole frames (no assignment needed)."""

    action: Any
    fcurves: list  # matched curves, in the plan's channel order
    frames: np.ndarray
    values: np.ndarray
    curve: np.ndarray
    cycles: bool  # every matched curve has a Cycles modifier
    user: Any = None  # an object animated by this action (for travel axes), or None


@dataclass
class BlendPlan:
    """Both clips on their common channels, and what to make of them."""

    a: Clip
    b: Clip
    keys: list[tuple[str, int]]  # (data_path, array_index) of the common channels
    specs: list
    kinds: list[str]
    owners: list[str]
    slot_identifier: str | None  # the slot of A the curves were read from (4.4+)
    closed: bool
    travel: list[int]
    weights: list[float]
    target: Any = None  # the ID the first result is assigned to (None: not assigned)
    missing_in_a: list[str] = field(default_factory=list)
    missing_in_b: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _common_curves(a_act, b_act, user_a, user_b, warnings: list[str]):
    """The channels both actions animate: (keys, curves of A, curves of B, only in B, only in A)."""
    fcs_a = fcurves_of_action(a_act, user_a)
    fcs_b = fcurves_of_action(b_act, user_b)
    for act, fcs in ((a_act, fcs_a), (b_act, fcs_b)):
        if not fcs:
            raise MotionInputError(f'Action "{act.name}" has no F-curves')
    by_a = {(fc.data_path, fc.array_index): fc for fc in fcs_a}
    by_b = {(fc.data_path, fc.array_index): fc for fc in fcs_b}
    keys = [k for k in by_a if k in by_b]
    missing_in_b = [f"{p}[{i}]" for (p, i) in by_a if (p, i) not in by_b]
    missing_in_a = [f"{p}[{i}]" for (p, i) in by_b if (p, i) not in by_a]
    if not keys:
        raise MotionInputError(
            f'Actions "{a_act.name}" and "{b_act.name}" have no channels in common '
            f"(no F-curve with the same data path and index): nothing to blend"
        )
    if missing_in_b:
        warnings.append(f'{len(missing_in_b)} channel(s) of "{a_act.name}" missing from "{b_act.name}" (left out): '
                        + short_list(missing_in_b))
    if missing_in_a:
        warnings.append(f'{len(missing_in_a)} channel(s) of "{b_act.name}" missing from "{a_act.name}" (left out): '
                        + short_list(missing_in_a))
    return keys, [by_a[k] for k in keys], [by_b[k] for k in keys], missing_in_a, missing_in_b


def _closed(cyclic: str, a: Clip, b: Clip, travel: Sequence[int]) -> bool:
    """Blend as cycles: asked for, or (AUTO) both clips are cycles or end where they start."""
    if cyclic == "CLOSED":
        return True
    if cyclic == "OPEN":
        return False
    return (a.cycles or nearly_closed(a.curve, travel)) and (b.cycles or nearly_closed(b.curve, travel))


def plan_blend(
    ob,
    action_a: str,
    action_b: str,
    *,
    weight: float = 0.5,
    count: int = 0,
    cyclic: str = "AUTO",
    assign: bool = True,
) -> BlendPlan:
    """Check and sample both actions on their common channels. Raises MotionInputError."""
    a_act, b_act = find_action(action_a), find_action(action_b)
    if a_act is None or b_act is None:
        raise MotionInputError("Pick two actions to blend (Action A and Action B)")
    if not (0.0 <= weight <= 1.0) or not math.isfinite(weight):
        raise MotionInputError(f"The weight must be between 0 and 1 (got {weight})")
    user_a, user_b = object_playing(a_act, ob), object_playing(b_act, ob)
    warnings: list[str] = []
    keys, curves_a, curves_b, missing_in_a, missing_in_b = _common_curves(a_act, b_act, user_a, user_b, warnings)

    specs = channel_specs(user_a, curves_a)
    kinds, owners = spec_kinds(specs), spec_owners(specs)
    frames_a, values_a = sample_action(a_act, curves_a, "Action")
    frames_b, values_b = sample_action(b_act, curves_b, "Action")
    specs_b = channel_specs(user_b, curves_b)
    curve_a = continuous_values(values_a, specs, owners)
    curve_b = harmonise(continuous_values(values_b, specs_b, owners), curve_a, kinds, owners)
    for act, c in ((a_act, curve_a), (b_act, curve_b)):
        if not moving_channels(c).any():
            raise MotionInputError(f'Nothing moves in "{act.name}" (its {len(keys)} common channel(s) are constant): nothing to blend')

    # The root's travel needs a rig to tell which location axes are horizontal: A's player, else
    # B's (an action kept by a fake user only, as Make Cyclic's Keep Original leaves it, has none),
    # else the active object when it can play the channels. Without it the travel is blended as
    # shape and the blend walks further than both sources.
    rig = user_a or user_b or id_playing_paths(ob, [k[0] for k in keys])
    travel = travel_channels(rig, specs) if rig is not None else []
    travel = sorted(set(select_travel(curve_a, travel)) | set(select_travel(curve_b, travel)))
    a = Clip(a_act, curves_a, frames_a, values_a, curve_a, all(has_cycles(fc) for fc in curves_a), user_a)
    b = Clip(b_act, curves_b, frames_b, values_b, curve_b, all(has_cycles(fc) for fc in curves_b), user_b)
    weights = [i / (count + 1) for i in range(1, count + 1)] if count > 0 else [float(weight)]
    target = id_playing_paths(ob, [k[0] for k in keys]) if assign else None
    if assign and ob is not None and target is None:
        warnings.append(f'"{ob.name}" cannot play the blended channels: the result is not assigned')
    elif target is not None and tweak_mode_reason(target):
        warnings.append(f"{tweak_mode_reason(target)} to assign the blend; the result is not assigned")
        target = None
    return BlendPlan(
        a=a,
        b=b,
        keys=keys,
        specs=specs,
        kinds=kinds,
        owners=owners,
        slot_identifier=action_slot_identifier(a_act, user_a),
        closed=_closed(cyclic, a, b, travel),
        travel=travel,
        weights=weights,
        target=target,
        missing_in_a=missing_in_a,
        missing_in_b=missing_in_b,
        warnings=warnings,
    )


def run_blend(plan: BlendPlan, *, align: bool = True) -> list[np.ndarray]:
    """Geodesic blends on the motion manifold (arrays only; nothing written)."""
    try:
        curves = elastic.blend(plan.a.curve, plan.b.curve, plan.weights, closed=plan.closed, align=align,
                               travel=plan.travel)
    except ValueError as err:
        raise MotionInputError(f"Cannot blend: {err}") from err
    return [from_motion_curve(c, plan.kinds, plan.owners) for c in curves]


def blend_name(a: str, b: str, s: float) -> str:
    """The name of the blend of actions ``a`` and ``b`` at weight ``s``."""
    return f"{a}+{b} {s:.2f}"


@dataclass
class BlendSummary:
    """What a finished blend made (stored by ``AnimSignalsBlendResult.store``)."""

    action_names: list[str] = field(default_factory=list)
    channels: int = 0
    closed: bool = False
    aligned: bool = True
    assigned_to: str = ""
    missing_in_a: int = 0
    missing_in_b: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)  # for the report, e.g. an assignment Blender refused

    def message(self) -> str:
        kind = "closed (cyclic)" if self.closed else "open"
        msg = f"Blended {self.channels} common channels ({kind}{', aligned' if self.aligned else ''}): " + ", ".join(
            f'"{n}"' for n in self.action_names
        )
        if self.assigned_to:
            msg += f'; assigned "{self.action_names[0]}" to "{self.assigned_to}"'
        return msg + f"; {self.seconds:.2f} s"


def write_blend(plan: BlendPlan, results: Sequence[np.ndarray], *, align: bool = True) -> BlendSummary:
    """One new action per blend (a copy of A holding only the common channels, dense keys).

    The new actions are new datablocks and the assignment is recorded with the running transaction:
    a failure part-way (a value that is not finite raises
    :class:`~..blender_data.fcurves.KeyframeError`) leaves nothing behind."""
    s = BlendSummary(channels=len(plan.keys), closed=plan.closed, aligned=align)
    s.missing_in_a, s.missing_in_b = len(plan.missing_in_a), len(plan.missing_in_b)
    a = plan.a.action
    new_actions = []
    for w, values in zip(plan.weights, results, strict=True):
        act, curves = copy_with_channels(a, blend_name(a.name, plan.b.action.name, w), plan.slot_identifier, plan.keys)
        act.use_fake_user = True  # kept when saved, assigned or not
        start = int(round((1.0 - w) * plan.a.frames[0] + w * plan.b.frames[0]))
        frames = start + np.arange(values.shape[0], dtype=np.float64)
        for j, target in enumerate(curves):
            clear_modifiers(target)
            write_dense(target, frames, values[:, j])
            if plan.closed:
                add_cycles_modifier(target, "REPEAT_OFFSET")
        set_action_frame_range(act, frames[0], frames[-1], cyclic=plan.closed)
        new_actions.append(act)
        s.action_names.append(act.name)
    if plan.target is not None and new_actions:
        current_transaction().keep_action(plan.target)
        try:
            assign_action(plan.target, new_actions[0], plan.slot_identifier, keep_previous=True)
        except (RuntimeError, TypeError, ValueError) as err:
            s.warnings.append(f'"{new_actions[0].name}" could not be assigned to "{plan.target.name}": {err}')
        else:
            s.assigned_to = plan.target.name
    return s
