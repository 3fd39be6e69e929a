#!/usr/bin/env bash
# Round 9 on the H200, one call (run from the repo root through the device tool, carry [".gpu"]):
#   bash benchmarks/gpu_round9.sh verify  round 9's changes (the parent's timing burst checked for
#   correctness in the CUDA-event fallback, the policy's relaxations) and round 8's unverified fix (an
#   empty serving step's capture): honest controls, uncapturable kernels (honest and burst-skipping),
#   every cheat through one warm service, every class fixture with its own reference, the burst tests,
#   round 8's candidates on CUDA, and which OS threads a GPU process gains (probe_gpu_threads.py).
#   bash benchmarks/gpu_round9.sh verify2  after round 9's red-team fixes: the honest controls and sentinel
#   false-alarm tests alone on the GPU (torch.compile, custom ops, Triton ops: new signals, interpreter
#   hooks, planted members must not fire), every cheat through one warm service, the class fixtures.
# Output: $OUT/round9_<call>.tgz (every log, junit XML and raw JSON) and the combined log on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUND=round9
CALL=${1:?verify}
source benchmarks/gpu_steps.sh

C=tests/tools/evaluator/harness/candidates
F=tests/fixtures
case $CALL in
verify)
  run threads 90 python3 benchmarks/probe_gpu_threads.py
  run adversarial 200 "${PYT[@]}" -s tests/gpu/test_adversarial_gpu.py \
      -k "side_stream or honest or uncapturable" --junitxml "$WORK/adversarial.xml"
  run burst 150 "${PYT[@]}" tests/gpu/test_burst_inputs_gpu.py --junitxml "$WORK/burst.xml"
  run classes 150 "${PYT[@]}" -n 4 tests/gpu/test_real_benchmark_classes_gpu.py -k "not largest_moe" \
      --junitxml "$WORK/classes.xml"
  export -f eval_on_cuda && export WORK C F
  run candidates 150 bash -c '
      eval_on_cuda $F/sol/r8_kv_cache_empty_step $C/honest8_kv_cache_index_copy
      eval_on_cuda $F/sol/r8_kv_cache_empty_step $C/redteam8_skip_cache_write
      eval_on_cuda $F/native_two_outputs $C/honest8_two_outputs
      eval_on_cuda $F/sol/r8_dropout_empty_batch $C/honest8_dropout_reference
      eval_on_cuda ../shared/fixtures/sol-execbench/rmsnorm tests/gpu/candidates/adv_uncapturable_burst_skip'
  run warm_service 170 "${PYT[@]}" -s tests/gpu/test_warm_service_gpu.py -k every_cheat \
      --junitxml "$WORK/warm_service.xml"
  ;;
verify2)  # after the red team's routes were closed (planted members, interpreter hooks, new signals and
  # timers, dispatch tables, the policy's native and format rules) and wrong-when-timed calls labelled
  honest_alone 200
  run classes 130 "${PYT[@]}" -n 4 tests/gpu/test_real_benchmark_classes_gpu.py -k "not largest_moe" \
      --junitxml "$WORK/classes.xml"
  export -f eval_on_cuda && export WORK C F
  run candidates 80 bash -c '
      eval_on_cuda ../shared/fixtures/sol-execbench/rmsnorm tests/gpu/candidates/adv_uncapturable_burst_skip
      eval_on_cuda ../shared/fixtures/sol-execbench/rmsnorm $C/redteam_control_torch_compile'
  run warm_service 150 "${PYT[@]}" -s tests/gpu/test_warm_service_gpu.py -k every_cheat \
      --junitxml "$WORK/warm_service.xml"
  ;;
classes)  # the class fixtures alone (verify2's memory-heavy MoE fixture: the parent's burst clock no longer
  # includes its own /proc checks after each reply)
  run classes 200 "${PYT[@]}" -n 4 tests/gpu/test_real_benchmark_classes_gpu.py -k "not largest_moe" \
      --junitxml "$WORK/classes.xml"
  ;;
*) echo "unknown call $CALL (verify, verify2, classes)"; exit 2 ;;
esac
say "done"
for f in "$WORK"/*.log; do echo "==== $(basename "$f")"; tail -40 "$f"; done
