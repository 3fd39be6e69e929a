#!/usr/bin/env bash
# Round 23 on the H200, one device call (from the repo root, carry [".corpus", ".gpu/shared"]): the GPU
# timing tests (the one-call replays of calls from 2 ms, round 22's eb271d1), then corpus references as
# candidates in two passes, memory logged beside them (gpu_round19.sh):
#   1. problems not yet run, resumed from .corpus/results/refs.jsonl:  ONLY="076_sam 077_ ..."
#   2. problems timed again under the current commit (their old rows set aside):  RETIME="055_audio ..."
#   TESTS=... LIMIT1=330 LIMIT2=150 EVAL_TIMEOUT=240 bash benchmarks/gpu_round23.sh
# Output under $OUT: pytest.txt, refs.jsonl (all rows: pass 2's replace the old), retimed_before.jsonl
# (the rows pass 2 set aside), memory1.log (pass 1) and memory.log (pass 2); the tests' tail and the tables on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/round23_out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ -d ../shared/fixtures ] || { mkdir -p ../shared && cp -r .gpu/shared/fixtures ../shared/; }
if [ -n "${TESTS:-}" ]; then
    timeout -k 5 "${TESTS_LIMIT:-120}" python3 -m pytest -p no:cacheprovider -o addopts= -q -rA -s $TESTS \
        >"$OUT/pytest.txt" 2>&1
    echo "== tests rc=$?"
    grep -E "^(PASSED|FAILED|ERROR)|passed|failed| call: " "$OUT/pytest.txt" | tail -30
fi
if [ -n "${ONLY:-}" ]; then
    # shellcheck disable=SC2086
    OUT="$OUT" LIMIT=${LIMIT1:-330} bash benchmarks/gpu_round19.sh $ONLY
    cp "$OUT/refs.jsonl" .corpus/results/refs.jsonl  # pass 2 resumes from what pass 1 added
fi
if [ -n "${RETIME:-}" ]; then
    python3 - "$OUT" $RETIME <<'PY'
import json, sys
from pathlib import Path
out, names = Path(sys.argv[1]), sys.argv[2:]
src = Path(".corpus/results/refs.jsonl")
rows = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
again = [r for r in rows if any(n in r["label"] for n in names)]
(out / "retimed_before.jsonl").write_text("".join(json.dumps(r) + "\n" for r in again))
src.write_text("".join(json.dumps(r) + "\n" for r in rows if r not in again))
print("== timed again:", ", ".join(f"{r['label']} (was {r['wall_s']} s)" for r in again))
PY
    mv "$OUT/memory.log" "$OUT/memory1.log" 2>/dev/null
    # shellcheck disable=SC2086
    OUT="$OUT" LIMIT=${LIMIT2:-150} bash benchmarks/gpu_round19.sh $RETIME
fi
