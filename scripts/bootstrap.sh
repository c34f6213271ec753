#!/usr/bin/env bash
# Create (or refresh) the project's virtual environments. Idempotent: a venv is reinstalled only
# when its requirements file (or the Python used) changed since the last successful bootstrap.
#
#   .venv/      bpy 5.0.1 + numpy 1.26.4, scipy, scikit-learn, cma, pytest, hypothesis, ruff, mypy,
#               fake-bpy-module, matplotlib, dask + distributed + bokeh (library runner only)
#                                                     (scripts/requirements-5.0.txt)
#   .venv-4.2/  bpy 4.2 LTS (latest 4.2.x) + numpy 1.26.4, scipy, scikit-learn, cma, pytest, hypothesis
#                                                     (scripts/requirements-4.2.txt)
#   .venv-oracle/ fdasrsf 2.7.3 + numpy 2.2.6, the test oracle for SRV distances (no bpy)
#                                                     (scripts/requirements-oracle.txt)
#
# Usage: bash scripts/bootstrap.sh [--only 5.0|4.2|oracle]
# Env:   PYTHON (default python3.11)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3.11}"
ONLY=""
if [[ "${1:-}" == "--only" ]]; then ONLY="${2:-}"; fi

log() { echo "[bootstrap] $*"; }
die() { echo "[bootstrap] ERROR: $*" >&2; exit 1; }

command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (Blender 4.2-5.0 embed Python 3.11; set PYTHON=...)"
PYVER="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[[ "$PYVER" == "3.11" ]] || die "$PYTHON is Python $PYVER; the bpy wheels need Python 3.11"

hash_of() {  # hash of the requirements file + the python interpreter version
    { cat "$1"; "$PYTHON" -VV; } | sha256sum | cut -d' ' -f1
}

make_venv() {  # make_venv <dir> <requirements> [numpy version, default Blender's 1.26.4]
    local venv="$1" req="$2" want_np="${3:-1.26.4}" stamp want have
    stamp="$venv/.bootstrap-stamp"
    want="$(hash_of "$req")"
    have="$(cat "$stamp" 2>/dev/null || true)"
    if [[ -x "$venv/bin/python" && "$want" == "$have" ]]; then
        log "$venv is up to date ($req unchanged), skipping"
        return 0
    fi
    if [[ ! -x "$venv/bin/python" ]]; then
        log "creating $venv with $PYTHON"
        rm -rf "$venv"
        "$PYTHON" -m venv "$venv"
    else
        log "$req changed: updating $venv"
    fi
    rm -f "$stamp"
    log "installing $req into $venv (first time: a few minutes, bpy is large;" \
        "$(df -Pm "$ROOT" | awk 'NR==2 {printf "%.1f", $4 / 1024}') GB free, the three venvs take about 4 GB)"
    # One resolve of the full pinned lock: numpy==1.26.4 is in it, so bpy cannot pull numpy 2.
    # --no-cache-dir: each bpy wheel would otherwise sit twice on disk (pip's cache beside the
    # unpacked venv), and a CI machine with little free disk ran out installing the second bpy.
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir -r "$req" 2>&1 \
        | grep -v "is ignored: it is neither a file nor a directory" || true
    # pip's status is lost in the pipe above: verify the result explicitly.
    "$venv/bin/python" -m pip check >/dev/null 2>&1 || {
        "$venv/bin/python" -m pip check || true
        die "pip reports broken requirements in $venv"
    }
    local np
    np="$("$venv/bin/python" -c 'import numpy; print(numpy.__version__)' 2>/dev/null)" \
        || die "numpy does not import in $venv (installation failed, see above)"
    [[ "$np" == "$want_np" ]] || die "$venv has numpy $np, expected $want_np"
    "$venv/bin/python" - "$req" <<'EOF' || die "$venv does not match $req (installation failed, see above)"
import sys
from importlib.metadata import version, PackageNotFoundError
bad = []
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, _, ver = line.partition("==")
    try:
        got = version(name)
    except PackageNotFoundError:
        got = None
    if got != ver:
        bad.append(f"{name}: want {ver}, have {got}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
EOF
    echo "$want" > "$stamp"
    log "$venv ready: $("$venv/bin/python" -W ignore -c 'import numpy, scipy, cma; print(f"numpy {numpy.__version__}, scipy {scipy.__version__}, cma {cma.__version__}")')"
}

if [[ -z "$ONLY" || "$ONLY" == "5.0" ]]; then make_venv .venv scripts/requirements-5.0.txt; fi
if [[ -z "$ONLY" || "$ONLY" == "4.2" ]]; then make_venv .venv-4.2 scripts/requirements-4.2.txt; fi
if [[ -z "$ONLY" || "$ONLY" == "oracle" ]]; then make_venv .venv-oracle scripts/requirements-oracle.txt 2.2.6; fi
