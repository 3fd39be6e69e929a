#!/usr/bin/env bash
# Round 7's H200 calls (issue 9), each one device call of < 10 minutes. Carry `.gpu`
# (scripts/build_gpu_kit.sh).
#   bash benchmarks/gpu_round7.sh probe   the timing gate with round 6's new +-3 % reference and small-call
#                                         test, the warm evaluation time under the 256-copy rule, and what
#                                         unjoined side-stream work looks like to each clock (probe_side_stream.py,
#                                         then adv_side_stream evaluated on every rmsnorm workload)
# Output: $OUT/round7_<call>.tgz (every log, junit XML and raw JSON) and the combined log on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUND=round7
CALL=${1:?probe}
source benchmarks/gpu_steps.sh

side_stream_eval() {  # adv_side_stream on every rmsnorm workload, its verdict and per-workload notes
  python3 -m aka_graph evaluate ../shared/fixtures/sol-execbench/rmsnorm \
      tests/tools/evaluator/harness/candidates/adv_side_stream --device cuda --json > "$WORK/side.json"
  python3 - "$WORK/side.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(r.get("status"), str(r.get("message", ""))[:300])
for w in r.get("workloads", []):
    print({k: w.get(k) for k in ("axes", "status", "latency_us", "method", "message", "notes") if k in w})
PY
}

case $CALL in
probe)
  run timing 100 "${PYT[@]}" -s tests/gpu/test_timing_gpu.py --junitxml "$WORK/timing.xml"
  run speed 200 python3 benchmarks/bench_eval_speed.py --device cuda --cold 1 --skip-cli --warm \
      --out "$WORK/speed"
  run probe 60 python3 benchmarks/probe_side_stream.py
  export -f side_stream_eval && export WORK && run side 120 bash -c side_stream_eval
  ;;
*) echo "unknown call $CALL (probe)"; exit 2 ;;
esac
say "done"
for f in "$WORK"/*.log; do echo "==== $(basename "$f")"; tail -40 "$f"; done
