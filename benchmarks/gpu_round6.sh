#!/usr/bin/env bash
# Round 6's H200 calls (issue 9's speed), each one device call of < 10 minutes. Carry `.gpu`
# (scripts/build_gpu_kit.sh).
#   bash benchmarks/gpu_round6.sh flush   the timing without thousands of rotated copies (an untimed L2 flush
#                                         before each replay of small calls, a copy per call): cold and warm
#                                         evaluation time, the timing gate (+-3 %, CV, a small call read from
#                                         memory), every class/format fixture, every cheat through one warm
#                                         service, the honest controls
#   bash benchmarks/gpu_round6.sh prepared  the same after the warm service prepares the next references
#   bash benchmarks/gpu_round6.sh final     captures with the collector off, large benches kept while modest
# Output: $OUT/round6_<call>.tgz (every log, junit XML and raw JSON) and the combined log on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUND=round6
CALL=${1:?flush}
source benchmarks/gpu_steps.sh

case $CALL in
flush)
  run timing 90 "${PYT[@]}" -s tests/gpu/test_timing_gpu.py tests/gpu/test_eval_speed_gpu.py \
      --junitxml "$WORK/timing.xml"
  run speed 200 python3 benchmarks/bench_eval_speed.py --device cuda --cold 2 --warm --out "$WORK/speed"
  run classes 120 "${PYT[@]}" -n 4 tests/gpu/test_real_benchmark_classes_gpu.py -k "not largest_moe" --junitxml "$WORK/classes.xml"
  run warm_service 170 "${PYT[@]}" -s tests/gpu/test_warm_service_gpu.py --junitxml "$WORK/warm_service.xml"
  honest_alone $((585 - (SECONDS - T0)))
  ;;
prepared)
  # after flush: the warm service prepares the next seeds' references while idle; the 60 us +-3 % test
  # again (flush read it 3.1 % low of eager launches on a slow host, on a path the flush does not touch)
  run timing 90 "${PYT[@]}" -s tests/gpu/test_timing_gpu.py tests/gpu/test_eval_speed_gpu.py \
      --junitxml "$WORK/timing.xml"
  run speed 200 python3 benchmarks/bench_eval_speed.py --device cuda --cold 1 --skip-cli --warm \
      --out "$WORK/speed"
  run warm_service 170 "${PYT[@]}" -s tests/gpu/test_warm_service_gpu.py --junitxml "$WORK/warm_service.xml"
  honest_alone $((585 - (SECONDS - T0)))
  ;;
final)
  # after prepared: captures with the collector off, large benches kept while modest; the MoE peak alone
  run timing 90 "${PYT[@]}" -s tests/gpu/test_timing_gpu.py tests/gpu/test_eval_speed_gpu.py \
      --junitxml "$WORK/timing.xml"
  run speed 200 python3 benchmarks/bench_eval_speed.py --device cuda --cold 1 --skip-cli --warm \
      --out "$WORK/speed"
  run classes 120 "${PYT[@]}" -n 4 tests/gpu/test_real_benchmark_classes_gpu.py -k "not largest_moe" \
      --junitxml "$WORK/classes.xml"
  run moe 60 "${PYT[@]}" -s tests/gpu/test_real_benchmark_classes_gpu.py -k largest_moe --junitxml "$WORK/moe.xml"
  run warm_service $((585 - (SECONDS - T0))) "${PYT[@]}" -s tests/gpu/test_warm_service_gpu.py \
      --junitxml "$WORK/warm_service.xml"
  ;;
*) echo "unknown call $CALL (flush, prepared or final)"; exit 2 ;;
esac
say "done"
for f in "$WORK"/*.log; do echo "---- $(basename "$f"): $(grep -cE 'PASSED|passed' "$f") pass lines"; done
