#!/usr/bin/env bash
# The project's test command (README; .ci/run executes exactly this):   bash scripts/test.sh
#
# Stages, failing fast: bootstrap venvs -> ruff -> mypy -> core tests -> fdasrsf oracle tests
# (.venv-oracle, numpy 2) -> build the Linux extension zip -> Blender tests under bpy 5.0.1 (.venv)
# -> Blender tests under bpy 4.2 LTS (.venv-4.2) -> real-window UI tests in Blender 4.3 (ui-4.3).
# Env: ANIM_SIGNALS_FULL_BUILD=1 builds and validates all four platform zips instead of Linux only.
#      ANIM_SIGNALS_UI=0 leaves out the ui-4.3 stage (tests/ui/run.sh, docs/ui-testing.md), which runs by
#      default and skips with its reason where the machine cannot run it (not root, no Debian mirror).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
export PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1 MPLBACKEND=Agg
START=$SECONDS
SUMMARY=()

stage_done() {  # stage_done <name> <seconds> <status text>
    SUMMARY+=("$(printf '%-22s %-40s %4ss' "$1" "$3" "$2")")
    echo "=== [$1] $3 ($2 s)"
}

print_summary() {
    echo
    echo "=== summary (total $((SECONDS - START)) s)"
    printf '  %s\n' "${SUMMARY[@]}"
    if [[ $PYTEST_RAN -eq 1 ]]; then echo "tests: ${TOTAL_PASSED} passed, ${TOTAL_FAILED} failed, ${TOTAL_SKIPPED} skipped"; fi
}

fail() {  # fail <stage> <seconds> <message>
    stage_done "$1" "$2" "FAILED"
    print_summary
    echo "=== FAILED at stage '$1': $3" >&2
    exit 1
}

run_stage() {  # run_stage <name> <command...>
    local name="$1"; shift
    local t0=$SECONDS
    echo
    echo "=== [$name] $*"
    "$@"
    local rc=$?
    if [[ $rc -ne 0 ]]; then fail "$name" $((SECONDS - t0)) "'$*' exited with $rc"; fi
    stage_done "$name" $((SECONDS - t0)) "ok"
}

TOTAL_PASSED=0 TOTAL_FAILED=0 TOTAL_SKIPPED=0 PYTEST_RAN=0

count_results() {  # add up pytest's closing line ("== 3 passed, 1 failed, 2 skipped in 1.2s ==")
    local line n
    PYTEST_RAN=1
    line="$(grep -E '^=+ .*(passed|failed|error|skipped|no tests ran).* in [0-9.]+s' "$1" | tail -1)"
    n=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+'); TOTAL_PASSED=$((TOTAL_PASSED + ${n:-0}))
    n=$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+'); TOTAL_FAILED=$((TOTAL_FAILED + ${n:-0}))
    n=$(grep -oE '[0-9]+ errors?' <<<"$line" | grep -oE '[0-9]+'); TOTAL_FAILED=$((TOTAL_FAILED + ${n:-0}))
    n=$(grep -oE '[0-9]+ skipped' <<<"$line" | grep -oE '[0-9]+'); TOTAL_SKIPPED=$((TOTAL_SKIPPED + ${n:-0}))
}

# pytest stage: exit 5 (no tests collected) fails only when the folder has test files.
pytest_stage() {  # pytest_stage <name> <python> <folder>
    local name="$1" py="$2" dir="$3"
    local t0=$SECONDS
    echo
    echo "=== [$name] $py -m pytest $dir"
    local nfiles=0
    if [[ -d "$dir" ]]; then
        nfiles=$(find "$dir" -name 'test_*.py' -o -name '*_test.py' | wc -l)
    fi
    if [[ $nfiles -eq 0 ]]; then
        stage_done "$name" $((SECONDS - t0)) "no test files in $dir: skipped"
        return 0
    fi
    local log
    log="$(mktemp)"
    "$py" -m pytest "$dir" -p no:cacheprovider --hypothesis-seed=0 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    count_results "$log"
    rm -f "$log"
    if [[ $rc -eq 5 ]]; then
        fail "$name" $((SECONDS - t0)) "pytest collected no tests from $nfiles test file(s) in $dir"
    elif [[ $rc -ne 0 ]]; then
        fail "$name" $((SECONDS - t0)) "pytest $dir exited with $rc (see failures above)"
    fi
    stage_done "$name" $((SECONDS - t0)) "ok"
}

# The fdasrsf oracle tests live in tests/core/test_elastic.py and skip without fdasrsf (in .venv);
# here they must run: fdasrsf has to import, and pytest must report them passed, none skipped.
oracle_stage() {
    local t0=$SECONDS py=.venv-oracle/bin/python
    echo
    echo "=== [fdasrsf-oracle] $py -m pytest tests/core/test_elastic.py -k fdasrsf"
    "$py" -c "import fdasrsf.curve_functions" || fail fdasrsf-oracle $((SECONDS - t0)) "fdasrsf does not import in .venv-oracle"
    local log
    log="$(mktemp)"
    "$py" -m pytest tests/core/test_elastic.py -k fdasrsf -p no:cacheprovider 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    count_results "$log"
    if [[ $rc -ne 0 ]] || grep -qE '[0-9]+ skipped' "$log"; then
        rm -f "$log"
        fail fdasrsf-oracle $((SECONDS - t0)) "oracle tests failed or skipped (see above)"
    fi
    rm -f "$log"
    stage_done fdasrsf-oracle $((SECONDS - t0)) "ok"
}

# Real-window UI tests (tests/ui/run.sh): exit 77 means this machine cannot run them (not root, no
# apt or mirror): a skip with the reason, not a failure.
ui_stage() {
    local name=ui-4.3 t0=$SECONDS
    echo
    if [[ "${ANIM_SIGNALS_UI:-1}" == "0" ]]; then
        echo "skipped: ANIM_SIGNALS_UI=0 leaves out the real-window UI tests (docs/ui-testing.md)"
        stage_done "$name" 0 "skipped: ANIM_SIGNALS_UI=0"
        return 0
    fi
    echo "=== [$name] bash tests/ui/run.sh"
    local log
    log="$(mktemp)"
    bash tests/ui/run.sh 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    local reason
    reason="$(grep -E '^skipped: ' "$log" | tail -1)"
    rm -f "$log"
    if [[ $rc -eq 77 ]]; then
        stage_done "$name" $((SECONDS - t0)) "${reason:-skipped: this machine cannot run the UI tests}"
        return 0
    fi
    if [[ $rc -ne 0 ]]; then fail "$name" $((SECONDS - t0)) "tests/ui/run.sh exited with $rc (out/ui/blender.log, out/ui/*.png)"; fi
    stage_done "$name" $((SECONDS - t0)) "ok (screenshots in out/ui/)"
}

BUILD_ARGS=(--platform linux-x64)
if [[ "${ANIM_SIGNALS_FULL_BUILD:-0}" == "1" ]]; then BUILD_ARGS=(); fi

run_stage bootstrap bash scripts/bootstrap.sh
run_stage ruff .venv/bin/ruff check .
run_stage mypy .venv/bin/mypy
pytest_stage core-tests .venv/bin/python tests/core
oracle_stage
run_stage build-extension .venv/bin/python scripts/build_extension.py "${BUILD_ARGS[@]}"
pytest_stage blender-5.0 .venv/bin/python tests/blender
pytest_stage blender-4.2 .venv-4.2/bin/python tests/blender
ui_stage

print_summary
echo "=== all stages passed"
