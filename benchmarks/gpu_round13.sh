#!/usr/bin/env bash
# Round 13 on the H200 (run from the repo root through the device tool, carry [".gpu"]):
#   bash benchmarks/gpu_round13.sh crowded  every cheat, class fixture and red-team candidate at once on one
#   GPU (round 12's fixes: the hard bound of output bytes, the worker's collector, the policy's probes, the
#   overwritten-output verdict), then round 12's fixtures and honest candidates and the near-tie cases on
#   CUDA side by side.
#   bash benchmarks/gpu_round13.sh alone    the near-tie cases with the GPU to themselves, the memory-heavy
#   MoE (the collector now runs only between steps), the honest controls, and the speed table.
#   bash benchmarks/gpu_round13.sh final    the near-tie cases three times (the search is random), then every
#   cheat, class fixture and red-team candidate at once, with the rule as it stands at the end.
#   bash benchmarks/gpu_round13.sh ties     the near-tie cases once (a short call after a last change).
# Output: $OUT/round13_<call>.tgz (every log, junit XML and raw JSON) and the combined log on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUND=round13
CALL=${1:?crowded, alone, final or ties}
source benchmarks/gpu_steps.sh

case $CALL in
crowded)
  verdicts_in_parallel "not largest_moe"
  run round12 220 "${PYT[@]}" -n 4 --tb=short tests/gpu/test_real_benchmark_round12_gpu.py \
      --junitxml "$WORK/round12.xml" &
  run near_ties 220 "${PYT[@]}" -n 2 -s --tb=short tests/gpu/test_near_ties_gpu.py --junitxml "$WORK/near_ties.xml" &
  wait
  ;;
alone)
  run near_ties 150 "${PYT[@]}" -s --tb=short tests/gpu/test_near_ties_gpu.py --junitxml "$WORK/near_ties.xml"
  run largest_moe 120 "${PYT[@]}" -s --tb=short tests/gpu/test_real_benchmark_classes_gpu.py -k largest_moe \
      --junitxml "$WORK/largest_moe.xml"
  honest_alone 170
  run speed 120 python3 benchmarks/bench_eval_speed.py --device cuda --cold 1 --skip-cli --warm \
      --out "$WORK/speed"
  ;;
final)  # the near-tie rule as it stands at the end of the round: its cases three times, every verdict once
  for n in 1 2 3; do
    run near_ties_$n 150 "${PYT[@]}" -s --tb=short tests/gpu/test_near_ties_gpu.py --junitxml "$WORK/near_ties_$n.xml"
  done
  verdicts_in_parallel "not largest_moe"
  ;;
ties)  # the near-tie cases once (a short call at the last commit)
  run near_ties 150 "${PYT[@]}" -s --tb=short tests/gpu/test_near_ties_gpu.py --junitxml "$WORK/near_ties.xml"
  ;;
*) echo "unknown call $CALL (crowded, alone, final, ties)"; exit 2 ;;
esac
say "done"
for f in "$WORK"/*.log; do echo "==== $(basename "$f")"; tail -40 "$f"; done
