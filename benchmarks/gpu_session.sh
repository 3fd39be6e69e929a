#!/usr/bin/env bash
# One device call on the H200 that builds, checks and times what a session changed, section by section:
#   bash benchmarks/gpu_session.sh [SECTION ...]      (default: tests rmsnorm)
# Sections:
#   kit        only install the carried kit (for calls that run their own commands)
#   tests      the GPU gate: `pytest -m gpu tests/gpu` (GPU_TESTS=... narrows it; fails loudly; output kept)
#   rmsnorm    `python -m aka_graph evaluate` on the rmsnorm fixture, 3 cold processes, and the SOL-ExecBench
#              CLI on the same solution in the same lease (when the kit carries it)
#   bench      benchmarks/bench_evaluator_gpu.py (latency agreement, CV, adversarial table)
#   languages  benchmarks/bench_languages_gpu.py (every solution language, side by side with the CLI)
#   demo       benchmarks/gpu_demo.sh (the demo campaign on the GPU)
# Needs the kit from `bash scripts/build_gpu_kit.sh` (name `.gpu` in the device call's carry). Everything
# it writes goes to $OUT (or /tmp/gpu_session_out); the exit status is non-zero if any section failed.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
OUT=${OUT:-/tmp/gpu_session_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
SECTIONS=("$@")
[ ${#SECTIONS[@]} -eq 0 ] && SECTIONS=(tests rmsnorm)
FAILED=()

echo "== host $(date -u +%FT%TZ) $(uname -srm)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv || true
python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__,
"triton", triton.__version__, torch.cuda.get_device_name(0))'

# The kit: carried wheels first on the path (the image has torch/triton/numpy), the fixtures where
# tests/conftest.py looks for them (../shared beside the checkout).
SITE=/tmp/aka-site
if [ ! -d "$SITE" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" \
    .gpu/whl/*.whl .gpu/coord/whl/*.whl >/dev/null || { echo "kit install failed"; exit 1; }
fi
export PYTHONPATH="$SITE:$REPO"
[ -d ../shared/fixtures ] || { mkdir -p ../shared && cp -r .gpu/shared/fixtures ../shared/; }
python3 -c 'import pydantic, langgraph, aka_graph; print("kit ok: pydantic", pydantic.VERSION)' || exit 1

run_section() {
  local name=$1; shift
  echo "== section $name  $(date -u +%T)"
  local start=$SECONDS
  if "$@" 2>&1 | tee "$OUT/$name.log"; then
    echo "== section $name passed in $((SECONDS - start)) s"
  else
    echo "== section $name FAILED in $((SECONDS - start)) s"
    FAILED+=("$name")
  fi
}

section_kit() { :; }  # the kit alone (installed above), for calls that run their own commands

section_tests() {  # GPU_TESTS narrows it (pytest arguments); default: the whole GPU gate
  # shellcheck disable=SC2086
  python3 -m pytest -m gpu ${GPU_TESTS:-tests/gpu} -q -p no:cacheprovider -rs -s --timeout 540 \
    --junitxml "$OUT/gpu_tests.xml"
}

section_rmsnorm() {
  local op=../shared/fixtures/sol-execbench/rmsnorm kdir=/tmp/aka-rmsnorm-kernel
  rm -rf "$kdir" && mkdir -p "$kdir"
  # the SOL-ExecBench example solution for this very problem (inline source), as our kernel directory
  python3 - "$kdir" <<'PY'
import json, pathlib, sys
src = pathlib.Path(".gpu/sol/src/examples/triton/rmsnorm/solution_triton.json")
if not src.is_file():
    src = pathlib.Path("tests/tools/evaluator/harness/candidates/rmsnorm_triton/solution.json")
sol = json.loads(src.read_text())
out = pathlib.Path(sys.argv[1])
for s in sol.get("sources", []):
    (out / s["path"]).write_text(s["content"])
(out / "solution.json").write_text(json.dumps(sol))
if not (out / "kernel.py").exists():
    import shutil; shutil.copy("tests/tools/evaluator/harness/candidates/rmsnorm_triton/kernel.py", out)
PY
  local i rc=0
  for i in 1 2 3; do
    /usr/bin/time -f "aka_graph evaluate cold process $i: %e s wall, %M KB peak" \
      python3 -m aka_graph evaluate "$op" "$kdir" --json > "$OUT/rmsnorm_eval_$i.json" || rc=1
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(' status', r['status'], 'workloads', len(r['workloads']), 'phases', r.get('phases_s'))" "$OUT/rmsnorm_eval_$i.json" || rc=1
  done
  if [ -d .gpu/sol/src/src ]; then
    bash benchmarks/sol_cli_time.sh "$OUT" "$op"
    python3 - "$OUT" <<'PY' || true
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
ours = json.loads((out / "rmsnorm_eval_1.json").read_text())
lat = {w["id"]: w.get("latency_us") for w in ours["workloads"]}
theirs = {}
for line in (out / "sol_cli_rmsnorm_1.json").read_text().splitlines():
    line = line.strip()
    if not line.startswith("{"):
        continue
    t = json.loads(line)
    wid = (t.get("workload") or {}).get("uuid")
    perf = (t.get("evaluation") or {}).get("performance") or {}
    if wid:
        theirs[wid] = perf.get("latency_ms")
print(f"{'workload':38s} {'ours us':>10s} {'SOL CLI us':>10s} {'ratio':>7s}")
ratios = []
for wid, ours_us in lat.items():
    t = theirs.get(wid)
    t_us = t * 1000 if t else None
    r = ours_us / t_us if ours_us and t_us else None
    ratios.append(r) if r else None
    print(f"{wid:38s} {ours_us or float('nan'):10.2f} {t_us or float('nan'):10.2f} {r or float('nan'):7.3f}")
if ratios:
    print("median ours/theirs", round(statistics.median(ratios), 3))
PY
  fi
  return $rc
}

section_bench() { python3 benchmarks/bench_evaluator_gpu.py --out "$OUT"; }
section_languages() { python3 benchmarks/bench_languages_gpu.py --sol-cli .gpu/sol/src/src --out "$OUT"; }
section_demo() { env -u PYTHONPATH OUT="$OUT" bash benchmarks/gpu_demo.sh; }  # it plans its own site

for s in "${SECTIONS[@]}"; do
  run_section "$s" "section_$s"
done
echo "== done $(date -u +%T); failed sections: ${FAILED[*]:-none}"
[ ${#FAILED[@]} -eq 0 ]
