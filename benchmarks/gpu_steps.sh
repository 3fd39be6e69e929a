# The steps every round's H200 calls share (sourced by gpu_round4.sh, gpu_round5.sh): the kit, a step
# runner with its own log and time limit, and the checks more than one call repeats. Before sourcing, set
# ROUND (the log prefix) and CALL; the caller's `case` then runs its steps. Output: $OUT/${ROUND}_$CALL.tgz.
OUT=${OUT:-/tmp/gpu_${ROUND}_out}
WORK=/tmp/${ROUND}_$CALL
rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
T0=$SECONDS
pack() { tar czf "$OUT/${ROUND}_$CALL.tgz" -C "$WORK" . ; }
trap pack EXIT
say() { echo "== [$((SECONDS - T0)) s] $*"; }

# gpu_session.sh tees the section into $WORK/kit.log itself: its console goes elsewhere (two writers of one
# file left NUL bytes at its start, round 16)
OUT=$WORK bash benchmarks/gpu_session.sh kit > "$WORK/kit.console" 2>&1 || { cat "$WORK/kit.console"; exit 1; }
head -4 "$WORK/kit.log"
export PYTHONPATH=/tmp/aka-site:$PWD
touch /tmp/aka-site/.complete  # gpu_languages.sh then uses the same site as it is
PYT=(python3 -m pytest -m gpu -p no:cacheprovider -rA -q --timeout 500)

# run NAME SECONDS CMD...: a step with its own log and time limit
run() {
  local name=$1 limit=$2; shift 2
  say "start $name (limit $limit s)"
  timeout -k 5 "$limit" "$@" > "$WORK/$name.log" 2>&1
  local rc=$?
  say "end $name rc=$rc"
  grep -E "passed|failed|error|NOT PASS|^== " "$WORK/$name.log" | tail -3
  return 0
}

# the verdict-only checks, in parallel on one GPU (a crowded GPU on purpose): the cheats, the real-benchmark
# class and format fixtures (pytest -k CLASSES_K narrows them), the red-team candidates
verdicts_in_parallel() {
  local classes_k=${1:-}
  run cheats 200 "${PYT[@]}" -n 6 tests/gpu/test_adversarial_gpu.py tests/gpu/test_sentinel_false_alarms_gpu.py \
      -k "(adversarial and not honest) or (sentinel and caught)" --junitxml "$WORK/cheats.xml" &
  run classes 200 "${PYT[@]}" -n 3 tests/gpu/test_real_benchmark_classes_gpu.py ${classes_k:+-k "$classes_k"} \
      --junitxml "$WORK/classes.xml" &
  run redteam 200 python3 benchmarks/redteam_gpu.py --parallel 2 --fixtures ../shared/fixtures/sol-execbench \
      --out "$WORK" &
  wait
}

# the honest controls and sentinel false-alarm tests, with the GPU to themselves (LIMIT seconds)
honest_alone() {
  run honest "$1" "${PYT[@]}" tests/gpu/test_adversarial_gpu.py \
      tests/gpu/test_sentinel_false_alarms_gpu.py tests/gpu/test_burst_inputs_gpu.py \
      -k "(adversarial and honest) or (sentinel and not caught) or burst" --junitxml "$WORK/honest.xml"
}

# `profile` against the evaluator (and any further language tests named), LIMIT seconds
profile_test() {
  local limit=$1; shift
  run profile "$limit" env XDIST=1 OUT="$WORK/lang" bash benchmarks/gpu_languages.sh tests_only \
      "tests/gpu/test_languages_gpu.py::test_profile_bandwidth_agrees_with_the_evaluator" "$@"
}

# the honest controls, side streams and uncapturable calls (LIMIT seconds), then every cheat through one
# warm service between honest kernels
controls_and_every_cheat() {
  run adversarial "$1" "${PYT[@]}" -s tests/gpu/test_adversarial_gpu.py \
      -k "side_stream or honest or uncapturable" --junitxml "$WORK/adversarial.xml"
  run warm_service 170 "${PYT[@]}" -s tests/gpu/test_warm_service_gpu.py -k every_cheat \
      --junitxml "$WORK/warm_service.xml"
}

# eval_on_cuda OPERATOR KERNEL: one evaluation on CUDA, its verdict and each workload's timing (its JSON in
# $WORK; `export -f eval_on_cuda && export WORK` before calling it from `bash -c`)
eval_on_cuda() {
  local op=$1 kernel=$2 name
  name=$(basename "$op")_$(basename "$kernel")
  python3 -m aka_graph evaluate "$op" "$kernel" --device cuda --json > "$WORK/$name.json"
  python3 - "$WORK/$name.json" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(sys.argv[2], r.get("status"), str(r.get("message", ""))[:300])
for w in r.get("workloads", []):
    print(" ", w["id"][:16], w["status"], w.get("timing_method"), "lat", w.get("latency_us"),
          "ref", w.get("reference_latency_us"))
PY
}
