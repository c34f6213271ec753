#!/usr/bin/env bash
# Real-window UI tests: Blender 4.3 (Debian trixie) in a cached root, under Xvfb, driven by
# tests/ui/driver.py with real mouse and keyboard events (xdotool). See docs/ui-testing.md.
#
#   bash tests/ui/run.sh            # screenshots and result.json in out/ui/
#
# Exit 0: every check passed and Blender printed no Python traceback. Exit 77: this machine cannot
# run the stage (reason printed). Anything else: a failure (the console log is out/ui/blender.log).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="${ANIM_SIGNALS_UI_OUT:-$REPO/out/ui}"  # screenshots, result.json, the console log
ONLY="${ANIM_SIGNALS_UI_ONLY:-}"  # comma-separated scenario names (tests/ui/scenarios); empty: all
UI_TIMEOUT="${ANIM_SIGNALS_UI_TIMEOUT:-1800}"  # seconds; the whole Blender run, a hang guard only (about 10 min idle)
# X display of the private Xvfb: X's abstract sockets are shared with the host, so a display number
# already taken there must be avoided.
UI_DISPLAY="${ANIM_SIGNALS_UI_DISPLAY:-:99}"

if [[ "$(id -u)" -ne 0 ]]; then
    echo "skipped: the UI tests need root (chroot and bind mounts into the cached UI root)"; exit 77
fi
# One UI run at a time on this machine: the root, its mounts and the display are shared. The lock is
# released by the kernel when its holder dies, so a run that was killed never blocks the next one.
LOCK_FILE="${ANIM_SIGNALS_UI_ROOT:-$HOME/.cache/anim_signals/ui-root}.lock"
mkdir -p "$(dirname "$LOCK_FILE")"
exec 9>"$LOCK_FILE"
if ! flock -n 9; then
    echo "another UI run holds $LOCK_FILE: waiting for it (at most $UI_TIMEOUT s)"
    flock -w "$UI_TIMEOUT" 9 || { echo "the other UI run did not finish within $UI_TIMEOUT s" >&2; exit 1; }
fi
UI_ROOT="${ANIM_SIGNALS_UI_ROOT:-$HOME/.cache/anim_signals/ui-root}"
# Holding the lock, anything still running in the root or mounted under it was left by a run that was
# killed before its cleanup (SIGKILL, a lost session): stop it and unmount, deepest mount first.
clear_leftovers() {
    local pid root mounts m
    for pid in /proc/[0-9]*; do
        pid="${pid#/proc/}"
        root="$(readlink "/proc/$pid/root" 2>/dev/null)" || continue
        if [[ "$root" == "$UI_ROOT" ]]; then
            echo "stopping process $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-60)) left in the UI root"
            kill -9 "$pid" 2>/dev/null
        fi
    done
    mounts="$(awk -v r="$UI_ROOT" 'index($2, r "/") == 1 {print $2}' /proc/mounts | sort -r)"
    for m in $mounts; do
        echo "unmounting $m, left mounted by an earlier UI run"
        umount "$m" 2>/dev/null || umount -l "$m"
    done
}
clear_leftovers
UI_ROOT="$(bash "$HERE/prepare_root.sh" | tail -1)"
rc=${PIPESTATUS[0]}
if [[ $rc -eq 77 ]]; then echo "$UI_ROOT"; exit 77; fi
if [[ $rc -ne 0 ]]; then echo "preparing the UI root failed (exit $rc)" >&2; exit 1; fi

EXT_IN_ROOT=/opt/anim_signals_ext  # the working tree, bind-mounted read-only
OUT_IN_ROOT=/opt/anim_signals_out
MOUNTS=()
cleanup() {
    local i
    # the Xvfb and Blender of this run only: they were started inside the root by this script
    if [[ -n "${XVFB_PID:-}" ]]; then kill "$XVFB_PID" 2>/dev/null; wait "$XVFB_PID" 2>/dev/null; fi
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}"
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bind() {  # bind <host path> <path inside the root> [ro]
    mkdir -p "$UI_ROOT$2"
    mount --bind "$1" "$UI_ROOT$2" || { echo "bind mount of $1 failed" >&2; exit 1; }
    MOUNTS+=("$UI_ROOT$2")
    if [[ "${3:-}" == ro ]]; then mount -o remount,bind,ro "$UI_ROOT$2"; fi
}

rm -rf "$OUT"
mkdir -p "$OUT"
bind /proc /proc
bind /sys /sys
bind /dev /dev
bind /dev/pts /dev/pts
bind "$REPO" "$EXT_IN_ROOT" ro
bind "$OUT" "$OUT_IN_ROOT"

in_root() {
    chroot "$UI_ROOT" env -i PATH=/usr/bin:/bin HOME=/root DISPLAY="$UI_DISPLAY" LIBGL_ALWAYS_SOFTWARE=1 \
        PYTHONDONTWRITEBYTECODE=1 "$@"
}

# A fresh Blender user folder per run, with the working tree as the folder extension anim_signals.
in_root sh -c "rm -rf /root/.config/blender && mkdir -p /root/.config/blender/4.3/extensions/user_default \
    && ln -s $EXT_IN_ROOT /root/.config/blender/4.3/extensions/user_default/anim_signals"

if in_root xdotool getdisplaygeometry >/dev/null 2>&1; then
    echo "display $UI_DISPLAY is already taken (another X server): set ANIM_SIGNALS_UI_DISPLAY" >&2; exit 1
fi
rm -f "$UI_ROOT/tmp/.X${UI_DISPLAY#:}-lock" "$UI_ROOT/tmp/.X11-unix/X${UI_DISPLAY#:}"
# Started directly (not through in_root, whose subshell would get the PID): chroot and env exec, so
# $! is Xvfb itself and the trap can stop it.
chroot "$UI_ROOT" env -i PATH=/usr/bin:/bin HOME=/root \
    Xvfb "$UI_DISPLAY" -screen 0 1600x1000x24 -nolisten tcp >"$OUT/xvfb.log" 2>&1 &
XVFB_PID=$!
for _ in $(seq 1 100); do  # until the display answers (a state, polled; 10 s at most)
    in_root xdotool getdisplaygeometry >/dev/null 2>&1 && break
    if ! kill -0 "$XVFB_PID" 2>/dev/null; then
        echo "Xvfb $UI_DISPLAY did not start (out/ui/xvfb.log; display taken? set ANIM_SIGNALS_UI_DISPLAY)" >&2; exit 1
    fi
    sleep 0.1
done
in_root xdotool getdisplaygeometry >/dev/null 2>&1 || { echo "Xvfb $UI_DISPLAY does not answer" >&2; exit 1; }

t0=$SECONDS
timeout -k 10 "$UI_TIMEOUT" chroot "$UI_ROOT" env -i PATH=/usr/bin:/bin HOME=/root DISPLAY="$UI_DISPLAY" \
    LIBGL_ALWAYS_SOFTWARE=1 PYTHONDONTWRITEBYTECODE=1 \
    blender --factory-startup --python "$EXT_IN_ROOT/tests/ui/driver.py" -- --out "$OUT_IN_ROOT" --only "$ONLY" \
    >"$OUT/blender.log" 2>&1
blender_rc=$?
echo "Blender ran $((SECONDS - t0)) s (exit $blender_rc); console: $OUT/blender.log"
grep -E '^UI-(SCENARIO|CHECK|RESULT)' "$OUT/blender.log"

failed=0
if [[ $blender_rc -ne 0 ]]; then echo "FAIL: Blender exited with $blender_rc"; failed=1; fi
if grep -q 'Traceback (most recent call last)' "$OUT/blender.log"; then
    echo "FAIL: Blender's console shows a Python traceback:"
    grep -A20 'Traceback (most recent call last)' "$OUT/blender.log" | head -60
    failed=1
fi
if grep -q 'drawing the pose-space canvas failed' "$OUT/blender.log"; then
    echo "FAIL: the canvas draw callback reported an error:"; grep 'drawing the pose-space canvas failed' "$OUT/blender.log"
    failed=1
fi
if [[ ! -f "$OUT/result.json" ]]; then
    echo "FAIL: the driver wrote no out/ui/result.json (it did not finish)"; failed=1
elif ! grep -q '"passed": true' "$OUT/result.json"; then
    echo "FAIL: some checks failed (out/ui/result.json)"; failed=1
fi
echo "screenshots: $(cd "$OUT" && ls ./*.png 2>/dev/null | tr '\n' ' ')"
exit $failed
