#!/usr/bin/env bash
# Round 11 on the H200 (run from the repo root through the device tool, carry [".gpu"]):
#   bash benchmarks/gpu_round11.sh verify   the aten ops a CUDA worker runs outside the kernel's calls (round
#   10's recording found aten::all and view_as; now also every comparison branch), complex outputs (cuFFT
#   under capture), round 11's fixtures and honest candidates, and the honest controls with the GPU to
#   themselves (the fatal signals reclaimed before each step and torch's members compared between steps,
#   with Triton's LLVM handlers and torch.compile in the worker).
#   bash benchmarks/gpu_round11.sh crowded  the evaluation speed (cold, and warm as a campaign evaluates),
#   then every cheat, class fixture and red-team candidate at once on one GPU.
# Output: $OUT/round11_<call>.tgz (every log, junit XML and raw JSON) and the combined log on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUND=round11
CALL=${1:?verify, verify2 or crowded}
source benchmarks/gpu_steps.sh

case $CALL in
verify)
  run watched_ops 120 "${PYT[@]}" -n 2 tests/gpu/test_watched_ops_gpu.py --junitxml "$WORK/watched_ops.xml"
  run round11 200 "${PYT[@]}" -n 4 --tb=short tests/gpu/test_complex_outputs_gpu.py \
      tests/gpu/test_real_benchmark_round11_gpu.py --junitxml "$WORK/round11.xml"
  honest_alone 200
  ;;
crowded)
  run speed 170 python3 benchmarks/bench_eval_speed.py --device cuda --cold 2 --skip-cli --warm \
      --out "$WORK/speed"
  verdicts_in_parallel "not largest_moe"
  ;;
verify2)  # round 11's fixtures again (the first verify's step was cut at 110 s), then every verdict at once
  run round11 200 "${PYT[@]}" -n 4 --tb=short tests/gpu/test_complex_outputs_gpu.py \
      tests/gpu/test_real_benchmark_round11_gpu.py --junitxml "$WORK/round11.xml"
  verdicts_in_parallel "not largest_moe"
  ;;
*) echo "unknown call $CALL (verify, verify2, crowded)"; exit 2 ;;
esac
say "done"
for f in "$WORK"/*.log; do echo "==== $(basename "$f")"; tail -40 "$f"; done
