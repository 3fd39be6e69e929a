#!/usr/bin/env bash
# Round 5's H200 calls (issues 9 and 10), each one device call of < 10 minutes. Carry `.gpu`
# (scripts/build_gpu_kit.sh); the CuTe DSL call is `bash benchmarks/gpu_languages.sh dsl`, carrying .gpu_dsl.
#   bash benchmarks/gpu_round5.sh measure   where an evaluation's time goes (bench_eval_speed.py with the
#                                           parent's steps, spans.py), the real-benchmark class and format
#                                           fixtures (round 4's new ones had only run on CPU), the profile
#                                           test with ncu's units read right
#   bash benchmarks/gpu_round5.sh warm      the warm evaluator (harness `serve`, issue 9): a cold run beside
#                                           the warm service's campaign-like sequence, the timing gate and
#                                           the honest controls
#   bash benchmarks/gpu_round5.sh final     the speed again after warm's findings, every cheat through one
#                                           warm service, the MoE fixture twice through one service
# Output: $OUT/round5_<call>.tgz (every log, junit XML and raw JSON) and the combined log on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUND=round5
CALL=${1:?measure, warm or final}
source benchmarks/gpu_steps.sh

case $CALL in
measure)
  run speed 170 python3 benchmarks/bench_eval_speed.py --device cuda --cold 2 --out "$WORK/speed"
  run classes 220 "${PYT[@]}" -n 4 tests/gpu/test_real_benchmark_classes_gpu.py -k "not largest_moe" \
      --junitxml "$WORK/classes.xml"
  profile_test $((580 - (SECONDS - T0)))
  ;;
warm)
  run speed 280 python3 benchmarks/bench_eval_speed.py --device cuda --cold 1 --warm --out "$WORK/speed"
  run timing 150 "${PYT[@]}" tests/gpu/test_timing_gpu.py tests/gpu/test_eval_speed_gpu.py \
      --junitxml "$WORK/timing.xml"
  honest_alone $((580 - (SECONDS - T0)))
  ;;
final)
  # after the warm call: the region page-locked, the flop count once per service; the warm service's
  # integrity (every cheat through one service between honest kernels) and memory (MoE twice)
  run speed 220 python3 benchmarks/bench_eval_speed.py --device cuda --cold 2 --warm --out "$WORK/speed"
  run warm_service $((585 - (SECONDS - T0))) "${PYT[@]}" -s tests/gpu/test_warm_service_gpu.py \
      --junitxml "$WORK/warm_service.xml"
  ;;
jail)
  # the worker jail's new /dev (read-only, a private /dev/shm) on the GPU, directly (cold harness runs)
  # and nested in the warm service's unshare job; every result must say the worker was jailed
  run speed 240 python3 benchmarks/bench_eval_speed.py --device cuda --cold 0 --skip-cli --warm \
      --campaign rmsnorm_torch rmsnorm_triton --out "$WORK/speed"
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
for k, r in d["runs"].items(): print(k, r.get("status"), r.get("isolation"))' "$WORK/speed/eval_speed.json"
  ;;
*) echo "unknown call $CALL (measure, warm, final or jail)"; exit 2 ;;
esac
say "done"
for f in "$WORK"/*.log; do echo "---- $(basename "$f"): $(grep -cE 'PASSED|passed' "$f") pass lines"; done
