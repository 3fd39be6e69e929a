#!/usr/bin/env bash
# Round 15 on the H200 (from the repo root through the device tool, carry [".corpus"]; build it first with
# `python3 benchmarks/build_public_corpus.py`): the real SOL-ExecBench corpus through the harness.
#   bash benchmarks/gpu_round15.sh refs [GPUS] [ARGS...]   every problem's own reference as the candidate
#   bash benchmarks/gpu_round15.sh sols [GPUS] [ARGS...]   the solutions the grader called correct
# One evaluation per GPU at a time (as a campaign's GPU lock runs them): on the 1-GPU kind that is one at a
# time; the nvidia-h200-x8 kind runs 8. Round 16 ran 8 on one GPU: crowding (memory, the burst's clock).
# A results file carried in .corpus/results/<call>.jsonl is resumed (what it holds is skipped).
# Output: $OUT/<call>.jsonl (all results so far) and the table on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
CALL=${1:?refs or sols}
GPUS=${2:-$(nvidia-smi -L | wc -l)}
shift $(( $# < 2 ? $# : 2 ))
OUT=${OUT:-/tmp/round15_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
case $CALL in
refs) KIND=references ;;
sols) KIND=solutions ;;
*) echo "unknown call $CALL (refs, sols)"; exit 2 ;;
esac
[ -f ".corpus/results/$CALL.jsonl" ] && cp ".corpus/results/$CALL.jsonl" "$OUT/$CALL.jsonl"
nvidia-smi --query-gpu=name,memory.used,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
timeout -k 5 "${LIMIT:-560}" python3 benchmarks/bench_public_corpus.py --kind "$KIND" --device cuda \
    --gpus "$GPUS" --timeout "${EVAL_TIMEOUT:-240}" --out "$OUT/$CALL.jsonl" --resume "$@"
echo "== rc=$? all results so far:"
python3 benchmarks/bench_public_corpus.py --table "$OUT/$CALL.jsonl" | head -5
