#!/usr/bin/env bash
# Round 20 on the H200, one device call (from the repo root through the device tool, carry [".corpus"]):
# the GPU tests of what rounds 19-20 changed (CUDA IPC of large outputs, the event sampling's early stop,
# the rmsnorm fixture's evaluation speed with its transfer report), then corpus references as candidates
# (gpu_round19.sh: memory logged beside them), resumed from .corpus/results/refs.jsonl, in name order.
#   LIMIT=400 bash benchmarks/gpu_round20.sh [bench_public_corpus ARGS...]   e.g. --skip 025_moe 026_moe
# Output under $OUT: pytest.txt, refs.jsonl, memory.log; the tests' tail and the table on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/round20_out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# the shared fixtures the GPU tests read (../shared beside the checkout), from the kit (carry .gpu/shared)
[ -d ../shared/fixtures ] || { mkdir -p ../shared && cp -r .gpu/shared/fixtures ../shared/; }
timeout -k 5 "${TESTS_LIMIT:-150}" python3 -m pytest -p no:cacheprovider -o addopts= -q -rA -s \
    ${TESTS:-tests/gpu/test_device_share_gpu.py tests/gpu/test_eval_speed_gpu.py tests/gpu/test_park_gpu.py} \
    "tests/gpu/test_timing_gpu.py::test_event_sampling_of_a_steady_long_call_stops_at_ten_and_an_unsteady_one_takes_every_sample" \
    >"$OUT/pytest.txt" 2>&1
echo "== tests rc=$?"
grep -E "^(PASSED|FAILED|ERROR)|passed|failed|wall |transfer |steady" "$OUT/pytest.txt" | tail -30
OUT="$OUT" bash benchmarks/gpu_round19.sh "$@"
