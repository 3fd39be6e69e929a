#!/usr/bin/env bash
# Round 12 on the H200 (run from the repo root through the device tool, carry [".gpu"]):
#   bash benchmarks/gpu_round12.sh check    round 11's fixtures on CUDA (the slow Python-loop reference after
#   the long-call estimate, the int8 fixture's float64 reference), the long-call estimate's own GPU test,
#   then the evaluation speed: rmsnorm cold (2 fresh processes) and warm (a campaign's list twice through
#   one service), with torch's namespaces now compared before every untimed step.
#   bash benchmarks/gpu_round12.sh heavy    the heavy problems (a whole decoder layer, long-context attention)
#   with the GPU to themselves, each held to 60 s; then the speed table again (w.between_steps and
#   request.checks now in it).
#   bash benchmarks/gpu_round12.sh crowded  every cheat, class fixture and red-team candidate at once on one
#   GPU, then the honest controls with the GPU to themselves.
# Output: $OUT/round12_<call>.tgz (every log, junit XML and raw JSON) and the combined log on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUND=round12
CALL=${1:?check, heavy or crowded}
source benchmarks/gpu_steps.sh

case $CALL in
check)
  run round11 220 "${PYT[@]}" -n 4 --tb=short tests/gpu/test_complex_outputs_gpu.py \
      tests/gpu/test_real_benchmark_round11_gpu.py --junitxml "$WORK/round11.xml" &
  run estimate 120 "${PYT[@]}" --tb=short tests/gpu/test_timing_gpu.py -k long_call --junitxml "$WORK/estimate.xml" &
  wait
  run speed 200 python3 benchmarks/bench_eval_speed.py --device cuda --cold 2 --skip-cli --warm \
      --out "$WORK/speed"
  ;;
heavy)  # the heavy problems alone (a wall-time bound), then the speed table with the new spans
  run heavy 260 "${PYT[@]}" -s --tb=short tests/gpu/test_heavy_problems_gpu.py --junitxml "$WORK/heavy.xml"
  run speed 200 python3 benchmarks/bench_eval_speed.py --device cuda --cold 1 --skip-cli --warm \
      --out "$WORK/speed"
  ;;
crowded)
  verdicts_in_parallel "not largest_moe"
  honest_alone 150
  ;;
*) echo "unknown call $CALL (check, heavy, crowded)"; exit 2 ;;
esac
say "done"
for f in "$WORK"/*.log; do echo "==== $(basename "$f")"; tail -40 "$f"; done
