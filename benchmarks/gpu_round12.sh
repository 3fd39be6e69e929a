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
#   GPU, then round 12's false-alarm fixtures and honest candidates on CUDA.
#   bash benchmarks/gpu_round12.sh alone    the speed table again (the /proc walk), the slow-loop fixture
#   (one-call bursts for calls of a second), the honest controls with the GPU to themselves.
# Output: $OUT/round12_<call>.tgz (every log, junit XML and raw JSON) and the combined log on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUND=round12
CALL=${1:?check, heavy, crowded or alone}
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
crowded)  # every verdict at once on one GPU, then this round's false-alarm fixtures and red team on CUDA
  verdicts_in_parallel "not largest_moe"
  run round12 200 "${PYT[@]}" -n 4 --tb=short tests/gpu/test_real_benchmark_round12_gpu.py \
      --junitxml "$WORK/round12.xml"
  ;;
alone)  # the speed table after the /proc walk, the slow-loop fixture, the honest controls alone
  run speed 200 python3 benchmarks/bench_eval_speed.py --device cuda --cold 2 --skip-cli --warm \
      --out "$WORK/speed"
  run slow_loop 150 "${PYT[@]}" -s --tb=short tests/gpu/test_real_benchmark_round11_gpu.py -k slow_loop \
      --junitxml "$WORK/slow_loop.xml"
  honest_alone 180
  ;;
*) echo "unknown call $CALL (check, heavy, crowded, alone)"; exit 2 ;;
esac
say "done"
for f in "$WORK"/*.log; do echo "==== $(basename "$f")"; tail -40 "$f"; done
