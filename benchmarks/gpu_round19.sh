#!/usr/bin/env bash
# Round 19 on the H200 (from the repo root through the device tool, carry [".corpus"]): corpus references
# as candidates (gpu_round15.sh refs) with every process's device memory logged beside them, so that an
# out-of-memory failure can be read against who held what (the rows' wall times and spans place it).
#   bash benchmarks/gpu_round19.sh [ONLY...]     problem names containing any of these (default: all)
#   bash benchmarks/gpu_round19.sh --skip A B     bench_public_corpus options, passed as they are
# Output: $OUT/refs.jsonl (all results so far, resumed from .corpus/results/refs.jsonl), $OUT/memory.log
# (epoch seconds, then pid:MiB of each compute process, every half second) and the table on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/round19_out}
mkdir -p "$OUT"
(
    while true; do
        apps=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | tr -d ' ' | tr ',\n' ': ')
        echo "$(date +%s.%N | cut -c1-14) $apps"
        sleep 0.5
    done
) >"$OUT/memory.log" 2>&1 &
POLLER=$!
trap 'kill $POLLER 2>/dev/null' EXIT
ONLY=()  # names, or bench_public_corpus options as they are (`--skip 025_moe`)
if [ $# -gt 0 ]; then
    case $1 in --*) ONLY=("$@") ;; *) ONLY=(--only "$@") ;; esac
fi
OUT="$OUT" bash benchmarks/gpu_round15.sh refs 1 "${ONLY[@]}"
python3 - "$OUT/memory.log" <<'PY'
import sys
peaks = {}
for line in open(sys.argv[1]):
    for item in line.split()[1:]:
        pid, _, mib = item.partition(":")
        if mib.isdigit():
            peaks[pid] = max(peaks.get(pid, 0), int(mib))
top = sorted(peaks.items(), key=lambda kv: -kv[1])[:12]
print("== peak device memory by process (MiB):", ", ".join(f"{p} {m}" for p, m in top))
PY
