"""Make Cyclic, Blend and Compare from the Dope Sheet's Signals tab, by real clicks on their buttons.

Two bipeds of the demo's generator: a 50-frame walk (not a whole number of strides, so its ends do
not meet) and a slower, calmer copy of it stretched to 80 frames. Make Cyclic loops the walk, Blend
makes the half-way blend of the two, Compare (modal) is cancelled by Esc once, then run on the four
actions. Every result is read back through Blender (``FCurve.evaluate``) and checked against what
the tool promises: the loop's ends meet and the original is kept; the blend has the interpolated
length and lies between its sources; the distances are symmetric, zero on the diagonal and put the
blend between its sources; the list names every action in full.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import blf
import bpy
import numpy as np
from uikit import (
    REPO,
    Wait,
    button_of,
    check,
    click_button,
    click_then_escape,
    ext,
    make_active,
    modal_running,
    open_signals_sidebar,
    override,
    region_of,
    region_pixels,
    scan_buttons,
    screenshot,
    ui_scale,
)

from ._panels import PanelDraws, RegionDraws, open_panel, scroll_to_bottom

LOOP, BLEND, COMPARE = "anim_signals.make_cyclic", "anim_signals.blend_actions", "anim_signals.compare_actions"
FAST, SLOW, JUMP = "LBC_Walk_Fast_Action", "LBC_Walk_Slow_Action", "LBC_Jump_Action"
N_FAST, N_SLOW = 50, 80  # frames; a stride is 30 frames, so the fast walk's ends do not meet
CALM = 0.4  # the slow walk's rotations swing this much of the fast walk's around their mean
BETWEEN_TOL = 0.03  # rad / m: how far outside its sources' values a blended value may lie (as in the bpy tests)


def _demo():
    sys.path.insert(0, str(REPO / "scripts"))
    import demo  # noqa: PLC0415  the demo's generator, unchanged

    return demo


def _biped(name: str, action_name: str, motion: dict):
    demo = _demo()
    ob = demo.build_armature()
    ob.name = name
    demo.animate(ob, motion)
    ob.animation_data.action.name = action_name
    return ob


def _slow_calm(motion: dict, n: int) -> dict:
    """The same walk stretched to ``n`` frames, its rotations swinging CALM as much around their mean."""
    out = {}
    for key, arr in motion.items():
        t = np.linspace(0.0, arr.shape[0] - 1.0, n)
        arr = np.column_stack([np.interp(t, np.arange(arr.shape[0]), arr[:, i]) for i in range(3)])
        if key[1] == "rotation_euler":
            arr = arr.mean(axis=0) + CALM * (arr - arr.mean(axis=0))
        out[key] = arr
    return out


def _curves(action) -> dict:
    return {(fc.data_path, fc.array_index): fc for fc in action.fcurves}


def _values(fc, frames) -> np.ndarray:
    return np.array([fc.evaluate(float(f)) for f in frames])


def _keys(action) -> dict:
    out = {}
    for key, fc in _curves(action).items():
        co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        out[key] = co
    return out


def _same_keys(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _scan(sidebar, stop_at: str) -> Iterator[Wait]:
    found: dict = {}
    yield from scan_buttons(sidebar, found, stop_at=stop_at)
    return found


def run(area) -> Iterator[Wait]:
    demo = _demo()
    fast_motion = demo.generate_motion(N_FAST)
    fast = _biped("LBC_Fast", FAST, fast_motion)
    slow = _biped("LBC_Slow", SLOW, _slow_calm(fast_motion, N_SLOW))
    # the demo's jump (crouch, flight, landing: frames ~105-140 of its clip), a motion of another kind
    _biped("LBC_Jump", JUMP, {k: v[95:150] for k, v in demo.generate_motion(150).items()})
    bpy.context.scene.frame_end = N_SLOW
    make_active(fast)
    # The Dope Sheet's sidebar holds the three panels; the big area is a Dope Sheet until the end.
    # (A Dope Sheet sidebar with only the Signals tab, no animated object active, crashes Blender
    # 4.3 when Python reads its active tab: the fast biped is active before the switch.)
    area.type = "DOPESHEET_EDITOR"
    area.ui_type = "DOPESHEET"
    yield Wait("the big area is a Dope Sheet", lambda: area.type == "DOPESHEET_EDITOR", 20.0)
    yield from open_signals_sidebar(area)
    sidebar = region_of(area, "UI")
    if not check("Dope Sheet sidebar shows the Signals tab", sidebar.active_panel_category == "Signals"):
        return
    redraws = RegionDraws(bpy.types.SpaceDopeSheetEditor)
    try:
        # each step returns the y of its button (the next panel's header is below it), None on failure
        y = yield from _loop(area, sidebar, fast, redraws)
        if y is not None:
            y = yield from _blend(area, sidebar, fast, slow, redraws, y)
        if y is not None:
            yield from _compare(area, sidebar, fast, redraws, y)
    finally:
        redraws.close()


def _loop(area, sidebar, fast, redraws) -> Iterator[Wait]:
    found = yield from _scan(sidebar, LOOP)
    button = button_of(found, LOOP)
    if not check("Make Cyclic button found in the Dope Sheet sidebar", button is not None, f"{len(found)} buttons"):
        return
    original = fast.animation_data.action
    keys_before = _keys(original)
    last = bpy.context.scene.anim_signals.last_loop
    click_button(sidebar, button)
    yield Wait("Make Cyclic finished", lambda: last.valid and last.object_name == fast.name, 60.0)
    looped = fast.animation_data.action
    check("Make Cyclic assigns a looped copy", looped is not None and looped.name == f"{FAST}.loop",
          f"action {looped.name if looped else None}")
    kept = bpy.data.actions.get(FAST)
    check("Make Cyclic keeps the original untouched (Keep Original)", kept is not None and kept.use_fake_user
          and _same_keys(_keys(kept), keys_before), f"fake user {kept.use_fake_user if kept else None}")
    lo, hi = 1, N_FAST
    check("the loop covers the action's range", (last.frame_start, last.frame_end) == (lo, hi),
          f"frames {last.frame_start}-{last.frame_end}")
    # Blender's own evaluation at both ends: every channel but the root's travel meets itself
    gaps, steps = {}, {}
    for key, fc in _curves(looped).items():
        v = _values(fc, [lo, lo + 1, hi - 1, hi])
        gaps[key] = abs(v[3] - v[0])
        steps[key] = abs((v[3] - v[2]) - (v[1] - v[0]))
    open_keys = [k for k, g in gaps.items() if g > 1e-4]
    travel_only = all(k[0] == 'pose.bones["hips"].location' for k in open_keys)
    check("the looped ends meet: first and last poses equal but for the root's travel",
          travel_only and len(open_keys) == last.travel_channels,
          f"open at the seam: {open_keys}; the tool says {last.travel_channels} travel channel(s); "
          f"largest other gap {max((g for k, g in gaps.items() if k not in open_keys), default=0):.2g}")
    check("the looped velocity is continuous across the seam", max(steps.values()) < 0.01,
          f"largest step change {max(steps.values()):.3g}")
    before = {k: abs(np.diff(_values(fc, [lo, hi]))[0]) for k, fc in _curves(kept).items() if "rotation" in k[0]}
    check("the original's ends did not meet (so the check above can fail)", max(before.values()) > np.radians(2.0),
          f"largest original rotation gap {np.degrees(max(before.values())):.2f} deg; "
          f"tool: {last.pose_before_deg:.3g} -> {last.pose_after_deg:.3g} deg")
    yield redraws.after(area, "sidebar shows the loop")
    screenshot("lbc_loop_done")
    return button[1]


def _between(made, a, b) -> tuple[tuple[float, str], list]:
    """The largest excess of the blend's values over its sources' (phase by phase: each clip's
    normalised time) with where it is, and the rotation channels' swings (a, blend, b) of the three widest."""
    frames_m = np.arange(1, N_FAST // 2 + N_SLOW // 2 + 1, dtype=float)
    u = (frames_m - 1.0) / (frames_m[-1] - 1.0)
    curves_a, curves_b = _curves(a), _curves(b)
    worst, swings = (0.0, ""), []
    for key, fc in _curves(made).items():
        vm = _values(fc, frames_m)
        va = _values(curves_a[key], 1.0 + u * (N_FAST - 1))
        vb = _values(curves_b[key], 1.0 + u * (N_SLOW - 1))
        lo, hi = np.minimum(va, vb), np.maximum(va, vb)
        excess = np.maximum(lo - vm, vm - hi)
        if float(excess.max()) > worst[0]:
            j = int(np.argmax(excess))
            worst = (float(excess[j]), f"{key[0]}[{key[1]}] frame {frames_m[j]:.0f}: {va[j]:.3g} / {vm[j]:.3g} / {vb[j]:.3g}")
        if "rotation" in key[0]:
            swings.append((float(np.ptp(va)), float(np.ptp(vm)), float(np.ptp(vb)), key))
    return worst, sorted(swings, reverse=True)[:3]


def _blend(area, sidebar, fast, slow, redraws, loop_y: float) -> Iterator[Wait]:
    settings = bpy.context.scene.anim_signals.blend
    settings.action_a, settings.action_b, settings.cyclic = FAST, SLOW, "OPEN"
    opened: list = []
    yield from open_panel(area, sidebar, "ANIM_SIGNALS_PT_blend", loop_y - 1.2 * 20 * ui_scale(), redraws, opened)
    if not check("Blend panel opened by a click on its header", opened[0]):
        return
    found = yield from _scan(sidebar, BLEND)
    button = button_of(found, BLEND)
    if not check("Blend button found", button is not None, f"{len(found)} buttons"):
        return
    a, b = bpy.data.actions[FAST], bpy.data.actions[SLOW]
    keys_a, keys_b = _keys(a), _keys(b)
    last = bpy.context.scene.anim_signals.last_blend
    click_button(sidebar, button)
    name = f"{FAST}+{SLOW} 0.50"
    yield Wait("Blend finished", lambda: last.valid and last.action_names == name, 60.0)
    made = bpy.data.actions.get(name)
    if not check("Blend makes the half-way action", made is not None, f"last blend: {last.action_names}"):
        return
    n_expected = round(0.5 * N_FAST + 0.5 * N_SLOW)
    lengths = {len(fc.keyframe_points) for fc in made.fcurves}
    check("the blend is as long as its sources on average", lengths == {n_expected}
          and tuple(made.frame_range) == (1.0, float(n_expected)),
          f"keys per curve {sorted(lengths)}, range {tuple(made.frame_range)}, expected {n_expected} frames")
    worst, swings = _between(made, a, b)
    check("the blend's poses lie between its sources' (the root's travel too)", worst[0] < BETWEEN_TOL,
          f"largest excess {worst[0]:.3g} at {worst[1]} (fast / blend / slow)")
    check("the blend swings less than the fast walk and more than the slow one",
          all(sa > sm > sb for sa, sm, sb, _ in swings),
          "; ".join(f"{k[0]}[{k[1]}] {np.degrees(sa):.1f} > {np.degrees(sm):.1f} > {np.degrees(sb):.1f} deg"
                    for sa, sm, sb, k in swings))
    check("the blend's sources are untouched", _same_keys(_keys(a), keys_a) and _same_keys(_keys(b), keys_b))
    check("the blend is assigned to the active object", fast.animation_data.action == made
          and last.assigned_to == fast.name, f"assigned to {last.assigned_to!r}")
    yield redraws.after(area, "sidebar shows the blend")
    screenshot("lbc_blend_done")
    return button[1]


def _text_width(text: str) -> float:
    """Pixels the UI font (11 pt at the UI scale) takes for ``text``, by Blender's own font code."""
    blf.size(0, 11.0 * ui_scale())
    return blf.dimensions(0, text)[0]


def _check_list_text(sidebar, root, path) -> None:
    """Issue 16 item 4 in the picture: each Compare list row's name and numbers are drawn whole.

    The rows are found from the selected (first) row's highlight colour and the row pitch; in each,
    the white text splits at its widest gap into the name and the right-aligned numbers, whose
    widths must be those of the whole texts (Blender's font code), not of texts cut with "...".
    Rows whose name cannot fit the sidebar's default width (the blend's 46 characters) are left out.
    """
    numbers_text = ext("panels.loop_blend_compare").numbers_text  # the row's numbers, as the panel writes them
    px = region_pixels(path, sidebar)
    selected = np.array(bpy.context.preferences.themes[0].user_interface.wcol_list_item.inner_sel[:3])
    highlight = np.all(np.abs(px - selected) < 0.02, axis=2)
    rows_y = np.where(highlight.sum(axis=1) > 0.3 * sidebar.width)[0]
    if not check("the selected row of the Compare list is found in the picture", rows_y.size > 0):
        return
    xs = np.where(highlight[rows_y[rows_y.size // 2]])[0]
    x0, x1, y_mid = int(xs.min()), int(xs.max()), 0.5 * (rows_y.min() + rows_y.max())
    pitch = 20.0 * ui_scale()
    white = px.min(axis=2) > 0.6
    room = 0.6 * (x1 - x0)  # a name wider than this cannot be drawn whole beside its numbers
    measured = []
    for k, row in enumerate(root.compare_results):
        name_w, numbers_w = _text_width(row.action_name), _text_width(numbers_text(row))
        if row.is_reference or name_w > room:
            continue
        yc = y_mid - k * pitch
        band = white[int(yc - 0.3 * pitch):int(yc + 0.3 * pitch) + 1, x0:x1 + 1]
        cols = np.where(band.any(axis=0))[0]
        if cols.size < 2:
            measured.append((row.action_name, -1, name_w, -1, numbers_w))
            continue
        split = int(np.argmax(np.diff(cols)))
        measured.append((row.action_name, cols[split] - cols[0] + 1, name_w, cols[-1] - cols[split + 1] + 1, numbers_w))
    check("the Compare list draws the names and distances whole (issue 16 item 4)",
          bool(measured) and all(abs(a - b) <= 3 and abs(c - d) <= 3 for _, a, b, c, d in measured),
          "; ".join(f"{n}: name {a} px of {b:.0f}, numbers {c} px of {d:.0f}" for n, a, b, c, d in measured))


def _compare(area, sidebar, fast, redraws, blend_y: float) -> Iterator[Wait]:
    root = bpy.context.scene.anim_signals
    names = [FAST, SLOW, f"{FAST}.loop", f"{FAST}+{SLOW} 0.50", JUMP]
    root.compare.actions = ", ".join(names)
    opened: list = []
    yield from open_panel(area, sidebar, "ANIM_SIGNALS_PT_compare", blend_y - 1.2 * 20 * ui_scale(), redraws, opened)
    if not check("Compare panel opened by a click on its header", opened[0]):
        return
    yield from scroll_to_bottom(area, sidebar, redraws)  # Compare is below the fold
    found = yield from _scan(sidebar, COMPARE)
    button = button_of(found, COMPARE)
    if not check("Compare button found", button is not None, f"{len(found)} buttons"):
        screenshot("lbc_compare_not_found")
        return

    # Esc: a long comparison (many samples) is cancelled with nothing written
    root.compare.n_samples = 1500
    yield redraws.after(area, "the button carries the long run's samples")
    actions_before = set(bpy.data.actions.keys())
    images_before = set(bpy.data.images.keys())
    yield from click_then_escape(sidebar, button, COMPARE, "the comparison")
    check("Esc cancels Compare: no result, no image, no cluster labels",
          not root.last_compare.valid and len(root.compare_results) == 0
          and set(bpy.data.images.keys()) == images_before and set(bpy.data.actions.keys()) == actions_before
          and not any("anim_signals_cluster" in bpy.data.actions[n] for n in names),
          f"valid {root.last_compare.valid}, rows {len(root.compare_results)}")

    root.compare.n_samples = 100
    yield redraws.after(area, "the button carries the default samples")
    click_button(sidebar, button)
    last = root.last_compare
    shown_valid = PanelDraws("ANIM_SIGNALS_PT_compare", lambda: root.last_compare.valid)
    try:
        yield Wait("Compare finished", lambda: last.valid and not modal_running(COMPARE), 120.0)
        # nobody tags a redraw here: the panel must redraw by itself to show the results
        drawn = len(shown_valid.seen)
        yield Wait("the Compare panel redraws with the results", lambda: any(shown_valid.seen[drawn:]), 5.0,
                   required=False)
        check("the Compare panel shows the results by itself once the run ends", any(shown_valid.seen[drawn:]),
              f"{len(shown_valid.seen) - drawn} draws since the end")
    finally:
        shown_valid.close()
    rows = list(root.compare_results)
    shown = [r.action_name for r in rows]
    check("the list shows every compared action once", sorted(shown) == sorted(names), f"rows {shown}")
    data = json.loads(last.matrix_json)
    d = np.array(data["distances"])
    n = len(names)
    check("the distances are symmetric with zeros on the diagonal", d.shape == (n, n) and np.allclose(d, d.T)
          and np.allclose(np.diag(d), 0.0) and bool(np.all(d[~np.eye(n, dtype=bool)] > 0)), f"{np.round(d, 4).tolist()}")
    index = {n: data["actions"].index(n) for n in names}
    reference = fast.animation_data.action.name  # the blend, assigned to the active biped
    ref_rows = [r for r in rows if r.is_reference]
    check("the reference is the active object's action", last.reference == reference and len(ref_rows) == 1
          and ref_rows[0].action_name == reference, f"reference {last.reference!r}")
    listed = {r.action_name: r.distance for r in rows}
    check("the list's distances are the matrix's row of the reference",
          all(abs(listed[n] - d[index[reference], index[n]]) < 1e-6 for n in names),
          f"{ {n: round(v, 4) for n, v in listed.items()} }")
    walks = [index[n] for n in names if n != JUMP]
    walk_walk = max(d[i, j] for i in walks for j in walks)
    walk_jump = min(d[i, index[JUMP]] for i in walks)
    check("the jump is further from every walk than the walks are from each other", walk_walk < walk_jump,
          f"walks apart at most {walk_walk:.3g}, the jump at least {walk_jump:.3g}")
    clusters = dict(zip(data["actions"], data["clusters"]))
    check("the jump is a cluster of its own", all(clusters[n] != clusters[JUMP] for n in names if n != JUMP),
          f"clusters {clusters}")
    yield from scroll_to_bottom(area, sidebar, redraws)
    _check_list_text(sidebar, root, screenshot("lbc_compare_done"))
    # the same comparison run headless (exec, no window) gives the same numbers
    with override(area, sidebar):
        bpy.ops.anim_signals.compare_actions("EXEC_DEFAULT", actions=root.compare.actions, n_samples=100)
    again = np.array(json.loads(root.last_compare.matrix_json)["distances"])
    check("the window's modal run and a headless run give the same distances", again.shape == d.shape
          and np.allclose(again, d, atol=1e-9), f"largest difference {np.abs(again - d).max():.3g}")
