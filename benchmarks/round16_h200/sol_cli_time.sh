#!/usr/bin/env bash
# round 16 helper (not part of the harness): time the SOL-ExecBench CLI on the rmsnorm fixture with its own
# triton example solution, 2 fresh processes, as gpu_session.sh's rmsnorm section does. Arg: output dir.
W=${1:-/tmp}; REPO=$PWD; SITE=/tmp/aka-site; OP=../shared/fixtures/sol-execbench/rmsnorm
[ -d .gpu/sol/src/src ] || { echo "no SOL CLI in the kit"; exit 0; }
python3 -m pip install -q --no-index --no-deps --target /tmp/sol-site .gpu/sol/whl/*.whl >/dev/null 2>&1 || true
for i in 1 2; do
  /usr/bin/time -f "SOL-ExecBench CLI process $i: %e s wall" env PYTHONPATH="/tmp/sol-site:$REPO/.gpu/sol/src/src:$SITE" \
    python3 -c 'import sys; from sol_execbench.cli.main import cli; sys.argv[0] = "sol-execbench"; cli()' \
    "$OP" --solution "$REPO/.gpu/sol/src/examples/triton/rmsnorm/solution_triton.json" --json \
    > "$W/sol_cli_rmsnorm_$i.json" 2> "$W/sol_cli_rmsnorm_$i.err" || { echo " (CLI exit $?)"; tail -5 "$W/sol_cli_rmsnorm_$i.err"; }
  tail -1 "$W/sol_cli_rmsnorm_$i.err"
  grep -o '"status": *"[A-Z_]*"' "$W/sol_cli_rmsnorm_$i.json" | sort | uniq -c
done
