#!/usr/bin/env bash
# Anim Signals main job: bootstrap the venv, then fit a generated mocap-like biped (or --bvh FILE)
# to a few exact keys, loop its best stride (make_cyclic),
# and write out/demo.blend, out/demo_report.md and out/demo_fit.png.
#
#   bash scripts/demo.sh                 # no user files needed
#   bash scripts/demo.sh --bvh clip.bvh  # your own clip
#   bash scripts/demo.sh --help          # all options (mode, tolerances, output folder)
#
# Env: ANIM_SIGNALS_PYTHON=/path/to/python (a python with bpy 5.0.1, numpy<2, scipy, cma, matplotlib)
#      overrides .venv; SKIP_BOOTSTRAP=1 skips the bootstrap.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ -z "${ANIM_SIGNALS_PYTHON:-}" && -z "${SKIP_BOOTSTRAP:-}" && -f scripts/bootstrap.sh ]]; then
    if ! bash scripts/bootstrap.sh --only 5.0; then
        echo "[demo] bootstrap failed; trying an existing .venv" >&2
    fi
fi

PY="${ANIM_SIGNALS_PYTHON:-$ROOT/.venv/bin/python}"
if [[ ! -x "$PY" ]]; then
    echo "[demo] ERROR: no python at $PY: run 'bash scripts/bootstrap.sh' or set ANIM_SIGNALS_PYTHON" >&2
    exit 1
fi
exec "$PY" scripts/demo.py "$@"
