#!/usr/bin/env bash
# The SOL-ExecBench CLI timed on an operator with its own Triton example solution, in 2 fresh processes:
# the anchor beside `aka_graph evaluate` (gpu_session.sh's rmsnorm section, round 16's `final` call).
#   bash benchmarks/sol_cli_time.sh OUT [OP] [SOLUTION]
# Needs the kit (`.gpu/sol`, from scripts/build_gpu_kit.sh) and the kit's site in /tmp/aka-site.
# Writes OUT/sol_cli_rmsnorm_{1,2}.{json,err}; prints each process's wall time and its verdict counts.
OUT=${1:?output dir}
REPO=$PWD SITE=/tmp/aka-site
OP=${2:-../shared/fixtures/sol-execbench/rmsnorm}
SOLUTION=${3:-$REPO/.gpu/sol/src/examples/triton/rmsnorm/solution_triton.json}
[ -d .gpu/sol/src/src ] || { echo "no SOL CLI in the kit"; exit 0; }
python3 -m pip install -q --no-index --no-deps --target /tmp/sol-site .gpu/sol/whl/*.whl >/dev/null 2>&1 || true
for i in 1 2; do
  /usr/bin/time -f "SOL-ExecBench CLI process $i: %e s wall" env PYTHONPATH="/tmp/sol-site:$REPO/.gpu/sol/src/src:$SITE" \
    python3 -c 'import sys; from sol_execbench.cli.main import cli; sys.argv[0] = "sol-execbench"; cli()' \
    "$OP" --solution "$SOLUTION" --json \
    > "$OUT/sol_cli_rmsnorm_$i.json" 2> "$OUT/sol_cli_rmsnorm_$i.err" || { echo " (CLI exit $?)"; tail -5 "$OUT/sol_cli_rmsnorm_$i.err"; }
  tail -1 "$OUT/sol_cli_rmsnorm_$i.err"
  grep -o '"status": *"[A-Z_]*"' "$OUT/sol_cli_rmsnorm_$i.json" | sort | uniq -c
done
