#!/usr/bin/env bash
# Round 8 on the H200, one call (run from the repo root through the device tool, carry [".gpu"]):
#   bash benchmarks/gpu_round8.sh verify  round 8's changes (timed calls checked on every output, the
#   contract probed off empty workloads, discrete outputs, numpy scalars, the policy's relaxations):
#   honest controls and side streams, every cheat through one warm service, every class fixture with its
#   own reference (round 8's added), and round 8's candidates, honest and cheating, on CUDA.
# Output: $OUT/round8_<call>.tgz (every log, junit XML and raw JSON) and the combined log on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUND=round8
CALL=${1:?verify}
source benchmarks/gpu_steps.sh

C=tests/tools/evaluator/harness/candidates
F=tests/fixtures
case $CALL in
verify)
  controls_and_every_cheat 150
  run classes 150 "${PYT[@]}" -n 4 tests/gpu/test_real_benchmark_classes_gpu.py -k "not largest_moe" \
      --junitxml "$WORK/classes.xml"
  export -f eval_on_cuda && export WORK C F
  run candidates8 150 bash -c '
      eval_on_cuda $F/native_two_outputs $C/honest8_two_outputs
      eval_on_cuda $F/native_two_outputs $C/redteam8_drop_second_output
      eval_on_cuda $F/sol/r8_kv_cache_empty_step $C/honest8_kv_cache_index_copy
      eval_on_cuda $F/sol/r8_kv_cache_empty_step $C/redteam8_skip_cache_write
      eval_on_cuda $F/sol/r8_dropout_empty_batch $C/honest8_dropout_reference
      eval_on_cuda $F/sol/r8_argmax_ties $C/honest8_streaming_argmax
      eval_on_cuda $F/sol/r8_threshold_mask $C/honest8_mask_fused_epilogue
      eval_on_cuda $F/sol/scalar_output $C/honest8_numpy_scalar_output'
  ;;
*) echo "unknown call $CALL (verify)"; exit 2 ;;
esac
say "done"
for f in "$WORK"/*.log; do echo "==== $(basename "$f")"; tail -40 "$f"; done
