#!/usr/bin/env bash
# Round 21 on the H200, one device call (from the repo root through the device tool, carry [".corpus"]):
# where a slow real problem's evaluation spends its time (profile_corpus.py: phases, every span of either
# process with its count, the parent's cProfile), then corpus references as candidates (gpu_round19.sh,
# memory logged beside them), resumed from .corpus/results/refs.jsonl.
#   PROFILE="004_fused_residual_rms_mlp" bash benchmarks/gpu_round21.sh [gpu_round19.sh ARGS...]
# Output under $OUT: prof_<name>.txt, refs.jsonl, memory.log; the profiles' heads and the table on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/round21_out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for name in ${PROFILE:-}; do
    timeout -k 5 "${PROFILE_LIMIT:-260}" python3 benchmarks/profile_corpus.py --device cuda \
        --timeout "${EVAL_TIMEOUT:-300}" "$name" >"$OUT/prof_$name.txt" 2>&1
    echo "== profile $name rc=$?"
    head -60 "$OUT/prof_$name.txt"
done
[ $# -gt 0 ] && OUT="$OUT" bash benchmarks/gpu_round19.sh "$@"
exit 0
