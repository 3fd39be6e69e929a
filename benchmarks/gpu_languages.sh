#!/usr/bin/env bash
# Issue 10 on the H200, one device call per section, each within ~8 minutes on a 16-core host:
#   bash benchmarks/gpu_languages.sh tests   the GPU tests of issue 10 (every language PASSes, the broken
#                                            kernel's COMPILE_ERROR, the stale-binary trap, `profile` vs the
#                                            evaluator, the --framework cuda campaign) under pytest-xdist
#   bash benchmarks/gpu_languages.sh bench   benchmarks/bench_languages_gpu.py: each language side by side
#                                            with the SOL-ExecBench CLI (BENCH_JOBS solutions at a time)
#   bash benchmarks/gpu_languages.sh tests_only TEST...   only the named tests (XDIST, default 1)
#   bash benchmarks/gpu_languages.sh dsl     the CuTe DSL solution alone, with the DSL from .gpu_dsl/
#                                            (KIT_CUTE_DSL=1 bash scripts/build_gpu_kit.sh; carry .gpu_dsl)
# Why parallel: every C++ solution builds as a torch extension with torch's headers, 60-90 s each on the
# H200 (SOL-ExecBench's CLI builds the same way), and a build uses one core per source file; the tests run
# 8 at a time (XDIST, default 8) and take a lock file so that the profile-vs-evaluator comparison has the
# GPU alone. Needs the kit (.gpu, from scripts/build_gpu_kit.sh) for tests and bench; `dsl` needs only
# .gpu_dsl, or also .gpu when a warm machine still has it from an earlier call.
# Output: one log, $OUT/languages.log (plus the junit XML of the tests and bench_languages.json).
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
OUT=${OUT:-/tmp/gpu_languages_out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/languages.log") 2>&1
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
SITE=/tmp/aka-site
PYPATH=$REPO
FAILED=()

echo "== host $(date -u +%FT%TZ) $(nproc) cores"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, torch.version.cuda)'
python3 -m pip show nvidia-cuda-cupti cuda-bindings 2>/dev/null | grep -E '^(Name|Version)' | paste - - || true

install_kit() {
  [ -d .gpu/whl ] || { echo "no .gpu kit here (carry .gpu)"; return 1; }
  if [ ! -f "$SITE/.complete" ]; then  # the same site as gpu_session.sh's, marked when complete
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" \
      .gpu/whl/*.whl .gpu/coord/whl/*.whl >/dev/null || { echo "kit install failed"; return 1; }
    touch "$SITE/.complete"
  fi
  [ -d ../shared/fixtures ] || { mkdir -p ../shared && cp -r .gpu/shared/fixtures ../shared/; }
  PYPATH="$SITE:$PYPATH"
}

install_dsl() {  # the CuTe DSL's files (an xz tar of its wheel): the harness adds its package dir itself
  ls .gpu_dsl/cute_dsl_site.tar.xz >/dev/null 2>&1 || { echo "no .gpu_dsl here (carry .gpu_dsl)"; return 1; }
  if [ ! -f /tmp/dsl-site/.complete ]; then
    mkdir -p /tmp/dsl-site && tar -C /tmp/dsl-site -xJf .gpu_dsl/cute_dsl_site.tar.xz \
      || { echo "CuTe DSL unpack failed"; return 1; }
    touch /tmp/dsl-site/.complete
  fi
  PYPATH="/tmp/dsl-site:$PYPATH"
}

pytest_gpu() {
  # -rA: the tests' printed figures (latencies, the COMPILE_ERROR, the profile summary) come back from
  # the xdist workers in the summary; no -s (it would drop them under xdist)
  PYTHONPATH="$PYPATH" python3 -m pytest -m gpu -p no:cacheprovider -rA --timeout 540 "$@"
}

section_tests() {
  install_kit || return 1
  [ -d .gpu_dsl ] && install_dsl
  # the campaign first: it is the longest (several builds in a row), so it starts at once
  pytest_gpu -n "${XDIST:-8}" --junitxml "$OUT/languages_tests.xml" \
    tests/gpu/test_cuda_campaign_gpu.py tests/gpu/test_languages_gpu.py
}

section_tests_only() {  # named tests only (the arguments after the section), for a re-run
  install_kit || return 1
  pytest_gpu -n "${XDIST:-1}" --junitxml "$OUT/languages_tests.xml" "${ARGS[@]}"
}

section_bench() {
  install_kit || return 1
  [ -d .gpu_dsl ] && install_dsl
  [ -d /tmp/sol-site ] || python3 -m pip install -q --no-index --no-deps --target /tmp/sol-site \
    .gpu/sol/whl/*.whl >/dev/null 2>&1 || true
  PYTHONPATH="$PYPATH" python3 benchmarks/bench_languages_gpu.py --sol-cli .gpu/sol/src/src \
    --jobs "${BENCH_JOBS:-4}" --out "$OUT"
}

section_dsl() {  # the CuTe DSL solution: its test, then side by side with the SOL-ExecBench CLI
  install_dsl || return 1
  [ -d .gpu/whl ] && install_kit
  pytest_gpu tests/gpu/test_languages_gpu.py -k cute_dsl || return 1
  [ -d .gpu_dsl/sol ] || { echo "no .gpu_dsl/sol: the side-by-side is skipped"; return 0; }
  python3 -m pip install -q --no-index --no-deps --target /tmp/sol-site .gpu_dsl/sol/whl/*.whl \
    .gpu_dsl/whl/*.whl >/dev/null 2>&1 || true
  # the CLI's evaluation driver runs the solution in a subprocess of its own environment: the DSL must
  # be on the interpreter's own path there (a .pth in the user site; this machine is thrown away)
  mkdir -p "$(python3 -m site --user-site)" && echo /tmp/dsl-site > "$(python3 -m site --user-site)/aka_dsl.pth"
  PYTHONPATH="$PYPATH" python3 benchmarks/bench_languages_gpu.py --sol-cli .gpu_dsl/sol/src/src \
    --only cute_dsl_add --out "$OUT"
}

SECTIONS=("$@")
[ ${#SECTIONS[@]} -eq 0 ] && SECTIONS=(tests)
if [ "${SECTIONS[0]}" = tests_only ]; then ARGS=("${SECTIONS[@]:1}"); SECTIONS=(tests_only); fi
for s in "${SECTIONS[@]}"; do
  echo "== section $s  $(date -u +%T)"
  start=$SECONDS
  if "section_$s"; then
    echo "== section $s passed in $((SECONDS - start)) s"
  else
    echo "== section $s FAILED in $((SECONDS - start)) s"
    FAILED+=("$s")
  fi
done
echo "== done $(date -u +%T); failed sections: ${FAILED[*]:-none}"
[ ${#FAILED[@]} -eq 0 ]
