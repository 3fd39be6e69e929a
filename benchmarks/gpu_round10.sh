#!/usr/bin/env bash
# Round 10 on the H200 (run from the repo root through the device tool, carry [".gpu"]):
#   bash benchmarks/gpu_round10.sh crowded  the parent's burst of graph replays in pieces (plausibility
#   GRAPH_PIECES): the class fixtures with 4 evaluations at once (round 9: one honest kernel per run read
#   "timing tampered"), then every cheat, class fixture and red-team candidate at once on one GPU.
#   bash benchmarks/gpu_round10.sh alone  the honest controls and timing gates with the GPU to themselves
#   (round 10's fatal-signal, rebinding and watched-overload checks must not fire on Triton/torch.compile),
#   every cheat through one warm service, and the aten ops a CUDA worker runs outside the kernel's calls.
# Output: $OUT/round10_<call>.tgz (every log, junit XML and raw JSON) and the combined log on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUND=round10
CALL=${1:?crowded or alone}
source benchmarks/gpu_steps.sh

case $CALL in
crowded)
  run classes4 150 "${PYT[@]}" -n 4 tests/gpu/test_real_benchmark_classes_gpu.py -k "not largest_moe" \
      --junitxml "$WORK/classes4.xml"
  verdicts_in_parallel "not largest_moe"
  ;;
alone)
  honest_alone 230
  run warm_service 170 "${PYT[@]}" -s tests/gpu/test_warm_service_gpu.py -k every_cheat \
      --junitxml "$WORK/warm_service.xml"
  run watched_ops 150 "${PYT[@]}" -n 2 tests/gpu/test_watched_ops_gpu.py --junitxml "$WORK/watched_ops.xml"
  ;;
*) echo "unknown call $CALL (crowded, alone)"; exit 2 ;;
esac
say "done"
for f in "$WORK"/*.log; do echo "==== $(basename "$f")"; tail -40 "$f"; done
