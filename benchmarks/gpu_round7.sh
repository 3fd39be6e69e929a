#!/usr/bin/env bash
# Round 7's H200 calls (issue 9), each one device call of < 10 minutes. Carry `.gpu`
# (scripts/build_gpu_kit.sh).
#   bash benchmarks/gpu_round7.sh probe   the timing gate with round 6's new +-3 % reference and small-call
#                                         test, the warm evaluation time under the 256-copy rule, and what
#                                         unjoined side-stream work looks like to each clock (probe_side_stream.py,
#                                         then adv_side_stream evaluated on every rmsnorm workload)
#   bash benchmarks/gpu_round7.sh side    adv_side_stream alone on each workload it passed, beside the honest kernel
#   bash benchmarks/gpu_round7.sh final   the fallback's idle start, side streams, honest controls, every cheat
#                                         through one warm service, round 7's honest candidates
#   bash benchmarks/gpu_round7.sh verify  after the round-7b policy fixes: controls, cheats, fixtures, honest7
# Output: $OUT/round7_<call>.tgz (every log, junit XML and raw JSON) and the combined log on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUND=round7
CALL=${1:?probe}
source benchmarks/gpu_steps.sh

SMALL=(33bf737d-3b37-4e38-be80-ea39b4b46ae6 864d596c-a930-4fc4-b241-02e6a06e92cb
       d9e317ac-cf73-4d56-94e0-11edfb536ff3 818219cc-f770-4957-84cd-cafdfb53e64b 9d403d2b-7859-4dab-aaf4-12e53c555001)
# KERNEL [SHAPE_ID...]: one evaluation on the rmsnorm fixture, its verdict and each workload's timing
eval_rmsnorm() {
  local kernel=$1; shift
  local ids=(); for s in "$@"; do ids+=(--shape-id "$s"); done
  python3 -m aka_graph evaluate ../shared/fixtures/sol-execbench/rmsnorm "$kernel" --device cuda --json \
      "${ids[@]}" > "$WORK/$(basename "$kernel")_$1.json"
  python3 - "$WORK/$(basename "$kernel")_$1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(r.get("status"), str(r.get("message", ""))[:300])
for w in r.get("workloads", []):
    print(" ", w["id"][:13], w["status"], w.get("timing_method"), "lat", w.get("latency_us"),
          "ref", w.get("reference_latency_us"), w.get("message", "")[:200])
PY
}
case $CALL in
probe)
  run timing 100 "${PYT[@]}" -s tests/gpu/test_timing_gpu.py --junitxml "$WORK/timing.xml"
  run speed 200 python3 benchmarks/bench_eval_speed.py --device cuda --cold 1 --skip-cli --warm \
      --out "$WORK/speed"
  run probe 60 python3 benchmarks/probe_side_stream.py
  export -f eval_rmsnorm && export WORK && run side 120 bash -c \
      'eval_rmsnorm tests/tools/evaluator/harness/candidates/adv_side_stream'
  ;;
side)
  # the workloads adv_side_stream passed in `probe` (its work done before the host looks): what it reports
  # there against the honest kernel, and the probe's clocks with the fallback's flush
  export -f eval_rmsnorm && export WORK SMALL_IDS="${SMALL[*]}"
  run probe 90 python3 benchmarks/probe_side_stream.py
  # one shape per evaluation: a race caught on one workload stops the others' timing
  run side_small 150 bash -c 'for s in $SMALL_IDS; do
      eval_rmsnorm tests/tools/evaluator/harness/candidates/adv_side_stream $s; done'
  run honest_small 120 bash -c 'eval_rmsnorm tests/tools/evaluator/harness/candidates/rmsnorm_torch $SMALL_IDS'
  ;;
final)
  # after side: the event fallback's start on an idle device, adv_side_stream's "caught or gains nothing",
  # the honest controls (the long uncapturable kernel on that fallback), every cheat through one warm
  # service, and round 7's honest candidates (the policy's false alarms) on the GPU
  run timing 100 "${PYT[@]}" -s tests/gpu/test_timing_gpu.py --junitxml "$WORK/timing.xml"
  controls_and_every_cheat 200
  export -f eval_rmsnorm && export WORK
  run honest7 100 bash -c 'for k in tests/tools/evaluator/harness/candidates/honest7_*; do
      [ -f "$k/kernel.py" ] && grep -q hidden_states "$k/kernel.py" && eval_rmsnorm "$k" \
      33bf737d-3b37-4e38-be80-ea39b4b46ae6 f0f508c3-e880-4ec8-b8be-1062db313d36; done'
  ;;
verify)
  # after final: the source policy's round-7b changes, spotcheck's hold on fresh sets and the host
  # reference clock: honest controls and side streams, every cheat through one warm service, every class
  # and format fixture with its own reference, round 7's honest candidates
  controls_and_every_cheat 150
  run classes 130 "${PYT[@]}" -n 4 tests/gpu/test_real_benchmark_classes_gpu.py -k "not largest_moe" \
      --junitxml "$WORK/classes.xml"
  export -f eval_rmsnorm && export WORK
  run honest7 100 bash -c 'for k in tests/tools/evaluator/harness/candidates/honest7_*; do
      [ -f "$k/kernel.py" ] && grep -q hidden_states "$k/kernel.py" && eval_rmsnorm "$k" \
      33bf737d-3b37-4e38-be80-ea39b4b46ae6 f0f508c3-e880-4ec8-b8be-1062db313d36; done'
  ;;
*) echo "unknown call $CALL (probe, side, final or verify)"; exit 2 ;;
esac
say "done"
for f in "$WORK"/*.log; do echo "==== $(basename "$f")"; tail -40 "$f"; done
