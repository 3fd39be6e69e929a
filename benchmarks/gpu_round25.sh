#!/usr/bin/env bash
# Round 25 on the H200, one device call (from the repo root, carry [".gpu", ".corpus"]; build the kit with
# `bash scripts/build_gpu_kit.sh`, the corpus with `python3 benchmarks/build_public_corpus.py`): the GPU
# tests of what rounds 23-25 changed on the trusted side (seed-shaped and random operators, a CUDA graph
# meeting a set of other shapes), the class and format fixtures, the adversarial set, and (round 26) the
# parent's large expected outputs kept in host memory, and the parent's own device memory step by step
# (parent_memory, on MEMORY_OP), and one problem on some of its workloads (subset: SUBSET_OP, SUBSET_SHAPES,
# the ids); then, where ONLY or RETIME names problems, corpus
# references as candidates as gpu_round23.sh runs them.
#   STEPS="seed_shaped classes adversarial host_kept" ONLY="047_moe" RETIME="025_moe" EVAL_TIMEOUT=420 \
#       bash benchmarks/gpu_round25.sh
# (each step's limit: SEED_LIMIT, CLASSES_LIMIT, ADV_LIMIT, KEPT_LIMIT seconds; the corpus passes': LIMIT1,
# LIMIT2)
# Output under $OUT: one <step>.txt per test step (pytest -rA), kit.log, and gpu_round23.sh's files.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/round25_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
T0=$SECONDS
OUT="$OUT" bash benchmarks/gpu_session.sh kit >"$OUT/kit.log" 2>&1 || { tail -20 "$OUT/kit.log"; exit 1; }
export PYTHONPATH=/tmp/aka-site:$PWD
PYT=(python3 -m pytest -m gpu -p no:cacheprovider -o addopts= -q -rA)
python3 -c "import pytest_timeout" 2>/dev/null && PYT+=(--timeout 400)
XDIST=0
python3 -c "import xdist" 2>/dev/null && XDIST=1
par() { [ "$XDIST" = 1 ] && echo "-n $1"; }  # parallel evaluations on the one GPU where xdist is there

step() {  # step NAME SECONDS PYTEST-ARGS...: one pytest run with its own limit and log
    local name=$1 limit=$2
    shift 2
    echo "== [$((SECONDS - T0)) s] start $name (limit $limit s)"
    timeout -k 5 "$limit" "${PYT[@]}" "$@" >"$OUT/$name.txt" 2>&1
    echo "== [$((SECONDS - T0)) s] end $name rc=$?"
    grep -E "^(FAILED|ERROR)|passed|failed|: (PASS|INCORRECT|REWARD_HACK|RUNTIME_ERROR|INFRA_ERROR) in " \
        "$OUT/$name.txt" | tail -25
}

for s in ${STEPS-seed_shaped classes adversarial}; do  # (STEPS="" runs none)
    case $s in
    seed_shaped) step seed_shaped "${SEED_LIMIT:-200}" -s tests/gpu/test_seed_shaped_gpu.py ;;
    # shellcheck disable=SC2046
    classes) step classes "${CLASSES_LIMIT:-260}" $(par 3) -s tests/gpu/test_real_benchmark_classes_gpu.py -k "not largest_moe" ;;
    # shellcheck disable=SC2046
    adversarial) step adversarial "${ADV_LIMIT:-260}" $(par 2) tests/gpu/test_adversarial_gpu.py ;;
    host_kept) step host_kept "${KEPT_LIMIT:-240}" -s tests/gpu/test_host_kept_gpu.py ;;
    parent_memory)  # the parent's live device memory step by step (round 26: 8 GiB unexplained on 025)
        timeout -k 5 "${MEMORY_LIMIT:-240}" python3 benchmarks/gpu_parent_memory.py \
            "${MEMORY_OP:-.corpus/problems/025_moe_expert_parallel_execution_backward}" 2>&1 | tee "$OUT/parent_memory.txt" ;;
    subset)  # SUBSET_OP's own reference on the workloads SUBSET_SHAPES names (a problem too long for one call)
        # shellcheck disable=SC2046
        timeout -k 5 "${SUBSET_LIMIT:-400}" python3 benchmarks/bench_public_corpus.py --only "$SUBSET_OP" \
            $(for s in $SUBSET_SHAPES; do echo --shape-id "$s"; done) --parallel 1 \
            --timeout "${EVAL_TIMEOUT:-900}" --out "$OUT/subset.jsonl" 2>&1 | tee "$OUT/subset.txt" ;;
    own_sets)  # round 28: the padded-batch operator's honest kernels, bench seed long and usual (h01 on a GPU)
        timeout -k 5 "${OWN_LIMIT:-200}" python3 benchmarks/probe_own_sets_gpu.py 2>&1 | tee "$OUT/own_sets.txt" ;;
    speed)  # the rmsnorm evaluation's wall, cold (the user's command) and warm (the campaign's service)
        timeout -k 5 "${SPEED_LIMIT:-240}" python3 benchmarks/bench_eval_speed.py --device cuda --cold 2 --warm \
            --out "$OUT/eval_speed" 2>&1 | tee "$OUT/speed.txt" ;;
    *) echo "unknown step $s (seed_shaped classes adversarial host_kept parent_memory subset own_sets speed)" ;;
    esac
done
if [ -n "${ONLY:-}${RETIME:-}" ]; then
    OUT="$OUT" ONLY="${ONLY:-}" RETIME="${RETIME:-}" bash benchmarks/gpu_round23.sh
fi
echo "== [$((SECONDS - T0)) s] done"
