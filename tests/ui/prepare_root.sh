#!/usr/bin/env bash
# Prepares, once, a Debian trixie root with Debian's Blender 4.3.2, Xvfb, xdotool and the screenshot
# tools, for the real-window UI tests (tests/ui/run.sh). The bpy module never draws or receives events,
# so these tests need a real Blender; the root keeps trixie out of the host's own apt sources.
#
# Cached under ${ANIM_SIGNALS_UI_ROOT:-$HOME/.cache/anim_signals/ui-root}; a stamp file inside the
# root records what was installed, and a root with a matching stamp is reused as is.
# Exit 0: the root is ready (its path is printed last). Exit 77: this machine cannot build it
# (one-line reason on stdout). Any other exit: the build failed.
set -euo pipefail

UI_ROOT="${ANIM_SIGNALS_UI_ROOT:-$HOME/.cache/anim_signals/ui-root}"
SUITE=trixie
# python3-sklearn: the spatial-keyframe projections (scikit-learn is bundled as a wheel in the zip;
# Debian's 1.4 has every estimator they use)
PACKAGES=blender,xvfb,xauth,xdotool,x11-apps,imagemagick,libgl1-mesa-dri,python3-scipy,python3-numpy,python3-pip,python3-sklearn,python3-packaging
# faiss-cpu, the motion database's approximate index (bundled as a wheel in the zip), for the root's
# Python (trixie: 3.13); packaging, its one pure-Python dependency, is Debian's (python3-packaging).
FAISS_VERSION=1.10.0
# numba and llvmlite, Fewest Keys' compiled segment test (bundled as wheels in the zip); 0.61.2 runs on
# trixie's Python 3.13 and numpy 2.2.
NUMBA_VERSION=0.61.2
LLVMLITE_VERSION=0.44.0
ROOT_PY_VERSION=3.13
# Bumping this string rebuilds every cached root.
STAMP_TEXT="suite=$SUITE packages=$PACKAGES cma=wheel faiss=$FAISS_VERSION numba=$NUMBA_VERSION v3"
STAMP="$UI_ROOT/.anim_signals_ui_root"

cannot() { echo "skipped: $*"; exit 77; }

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$STAMP_TEXT" ]]; then
    echo "$UI_ROOT"
    exit 0
fi

[[ "$(id -u)" -eq 0 ]] || cannot "building the UI root needs root (mmdebstrap, chroot and bind mounts)"
command -v apt-cache >/dev/null && command -v apt-get >/dev/null \
    || cannot "no apt on this machine (the UI root is built with Debian's mmdebstrap)"
if ! command -v mmdebstrap >/dev/null; then
    # A fresh machine may have empty package lists: update them once if the first install fails.
    apt-get install -y -q mmdebstrap >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q mmdebstrap >/dev/null 2>&1; } \
        || cannot "mmdebstrap is not installed and apt-get could not install it"
fi

# The machine's own Debian mirror: the one its apt already uses (and can reach).
MIRROR="${ANIM_SIGNALS_UI_MIRROR:-$(apt-cache policy | awk '/ 500 http/ && !/security/ {print $2; exit}')}"
[[ -n "$MIRROR" ]] || cannot "no Debian mirror in apt's sources (set ANIM_SIGNALS_UI_MIRROR)"
curl -fs --max-time 20 -o /dev/null "$MIRROR/dists/$SUITE/Release" \
    || cannot "Debian mirror $MIRROR has no reachable $SUITE release"

# Built beside the cache and moved into place, so an interrupted build never looks ready.
PARTIAL="$UI_ROOT.partial"
if grep -q " $PARTIAL/" /proc/mounts || grep -q " $UI_ROOT/" /proc/mounts; then
    echo "refusing to rebuild: something is still mounted under $UI_ROOT (see /proc/mounts)" >&2
    exit 1
fi
rm -rf "$PARTIAL"
mkdir -p "$(dirname "$UI_ROOT")"

# pip inside the root does not see this machine's package index settings: fetch cma here.
WHEELS="$(mktemp -d)"
trap 'rm -rf "$WHEELS"' EXIT
PY="$(command -v python3)"
"$PY" -m pip download -q --no-deps --only-binary=:all: -d "$WHEELS" cma \
    || cannot "could not download the cma wheel with the host's pip"
"$PY" -m pip download -q --no-deps --only-binary=:all: -d "$WHEELS" --python-version "$ROOT_PY_VERSION" \
    --implementation cp --platform "manylinux_2_28_$(uname -m)" "faiss-cpu==$FAISS_VERSION" \
    || cannot "could not download the faiss-cpu wheel for Python $ROOT_PY_VERSION with the host's pip"
"$PY" -m pip download -q --no-deps --only-binary=:all: -d "$WHEELS" --python-version "$ROOT_PY_VERSION" \
    --implementation cp --platform "manylinux_2_28_$(uname -m)" --platform "manylinux_2_17_$(uname -m)" \
    --platform "manylinux2014_$(uname -m)" "numba==$NUMBA_VERSION" "llvmlite==$LLVMLITE_VERSION" \
    || cannot "could not download the numba and llvmlite wheels for Python $ROOT_PY_VERSION with the host's pip"

echo "building the $SUITE UI root in $PARTIAL from $MIRROR (a few minutes, once)"
# One retry: a download cut off half-way should not fail the test run.
mmdebstrap --variant=apt --include="$PACKAGES" "$SUITE" "$PARTIAL" "$MIRROR" \
    || { echo "mmdebstrap failed; retrying once" >&2; rm -rf "$PARTIAL";
         mmdebstrap --variant=apt --include="$PACKAGES" "$SUITE" "$PARTIAL" "$MIRROR"; }

mkdir -p "$PARTIAL/tmp/wheels"
cp "$WHEELS"/*.whl "$PARTIAL/tmp/wheels/"
WHEEL_PATHS=()
for wheel in "$WHEELS"/*.whl; do WHEEL_PATHS+=("/tmp/wheels/$(basename "$wheel")"); done
chroot "$PARTIAL" env -i PATH=/usr/bin:/bin HOME=/root \
    python3 -m pip install -q --break-system-packages --no-index --no-deps "${WHEEL_PATHS[@]}"
rm -rf "$PARTIAL/tmp/wheels"
chroot "$PARTIAL" env -i PATH=/usr/bin:/bin HOME=/root python3 -c "import cma, scipy, numpy, faiss, numba"

echo "$STAMP_TEXT" > "$PARTIAL/.anim_signals_ui_root"
rm -rf "$UI_ROOT"
mv "$PARTIAL" "$UI_ROOT"
echo "$UI_ROOT"
