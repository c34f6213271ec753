"""The real-window scenarios, one module per tool, run in this order by tests/ui/driver.py.

Each module has ``run() -> Iterator[Wait]``: it builds its own data, acts through real X events,
records checks with ``uikit.check`` and leaves the big area a 3D Viewport with the Signals tab open.
"""

SCENARIOS = (
    "fit_spline",
    "pose_space_mesh",
    "pose_space_armature",
    "pose_space_bounds",
    "spatial_keyframes",  # before motion_db and transfer: it finds its header below closed panels
    "spatial_keyframes_canvas",  # on spatial_keyframes' biped, before the panels above its own open
    "loop_blend_compare",
    "motion_db",
    "transfer",
    "layout",  # last: it changes the UI scale and scrolls the sidebar (and puts both back)
)
