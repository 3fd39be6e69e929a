#!/usr/bin/env bash
# The demo campaign on the H200 for real (issue 5): `python -m aka_graph run` with no operator (replay
# agent, local sandbox), coordinator and harness on the GPU host, with every missing dependency carried.
#
# The GPU image has python3 3.12 with torch, triton, numpy, matplotlib, rich, typer... but no langgraph,
# pydantic, asyncssh, gitpython, sqlite-utils, and maybe no git. Carried, from the development machine
# (all under the git-ignored .gpu/, name it in the device call's `carry`):
#   .gpu/whl/*.whl         pydantic, pydantic-core (cp312), annotated-types, typing-inspection
#   .gpu/coord/whl/*.whl   the rest of pyproject's dependency closure for cp312 manylinux x86_64,
#                          plus the image's own pure deps (click, rich, typer...) in case its are too old
#   .gpu/coord/debs/*.deb  git (Debian 12) + zlib1g; libpcre2-8-0 is taken from .gpu/debs
#   .gpu/debs/*.deb        bubblewrap and its libraries (optional: isolates the jobs as on a dev host)
# pip decides which carried wheels are needed (missing, or older than a requirement) against the image's
# environment, and only those go into /tmp/coord-site, which PYTHONPATH puts first.
#
# Run from anywhere:  bash benchmarks/gpu_demo.sh      (artifacts -> $OUT, or /tmp/gpu_demo_out)
# Exits non-zero, naming the step, when anything fails (the demo gets AKA_DEMO_TIMEOUT s, default 400).
# AKA_DEMO_BWRAP=0 runs jobs without bubblewrap;
# for testing the kit elsewhere: PYTHON=..., AKA_DEMO_CARRIED_GIT=1 (the carried git even where one is
# installed), AKA_DEMO_DRY=1 (stop after the imports and the CLI's --help and graph, before the demo).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
OUT=${OUT:-/tmp/gpu_demo_out}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_demo.log") 2>&1
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
SITE=/tmp/coord-site
STEP=start
trap 'rc=$?; if [ $rc -ne 0 ]; then echo "GPU DEMO FAILED at step \"$STEP\" (exit $rc)"; fi; sleep 1' EXIT

# Unpack a .deb into a directory (never into /): dpkg -x, or by hand where the image has no dpkg.
unpack_deb() {
  if command -v dpkg >/dev/null; then dpkg -x "$1" "$2"; return; fi
  "$PY" - "$1" "$2" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
pos = 8  # "!<arch>\n", then 60-byte member headers
while pos < len(data):
    name, size = data[pos:pos + 16].decode().strip().rstrip("/"), int(data[pos + 48:pos + 58])
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(data[pos + 60:pos + 60 + size])).extractall(sys.argv[2])
    pos += 60 + size + (size % 2)
PY
}

STEP=host
echo "== host  $(date -u +%FT%TZ)  $(uname -srm)"
nvidia-smi -L || echo "(nvidia-smi failed)"
"$PY" -c 'import sys
print("python", sys.version.split()[0], sys.executable)
import torch, triton
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")
print("triton", triton.__version__)' || echo "(torch/triton not importable: the demo will fail)"

STEP=wheels
echo "== coordinator dependencies"
ls .gpu/whl/*.whl .gpu/coord/whl/*.whl >/dev/null  # fails loudly when the kit was not carried
# torch and triton are the image's (checked above), never carried: they are left out of the plan.
"$PY" -c 'import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
print("\n".join(d for d in deps if re.split("[<>=!~ ;\\[]", d)[0].lower() not in ("torch", "triton")))' \
  > /tmp/coord-reqs.txt
PIP=("$PY" -m pip --isolated --disable-pip-version-check)
FIND=(--no-index --find-links .gpu/whl --find-links .gpu/coord/whl)
rm -rf "$SITE" /tmp/coord-plan.json && mkdir -p "$SITE"
if "${PIP[@]}" install --dry-run -q "${FIND[@]}" --report /tmp/coord-plan.json -r /tmp/coord-reqs.txt; then
  mapfile -t WHEELS < <("$PY" -c 'import json, urllib.parse, urllib.request
for item in json.load(open("/tmp/coord-plan.json"))["install"]:
    print(urllib.request.url2pathname(urllib.parse.urlparse(item["download_info"]["url"]).path))')
else
  echo "pip could not plan against the image's packages; installing every carried wheel"
  WHEELS=(.gpu/whl/*.whl .gpu/coord/whl/*.whl)
fi
echo "installing ${#WHEELS[@]} carried wheels into $SITE (the image has the rest)"
if [ ${#WHEELS[@]} -gt 0 ]; then
  printf '  %s\n' "${WHEELS[@]##*/}"
  "${PIP[@]}" install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "${WHEELS[@]}"
fi
export PYTHONPATH="$SITE:$REPO"

STEP=git
if command -v git >/dev/null && [ "${AKA_DEMO_CARRIED_GIT:-0}" != 1 ]; then
  echo "== git from the image: $(git --version)"
else
  GITROOT=/tmp/aka-git
  rm -rf "$GITROOT" && mkdir -p "$GITROOT/bin"
  for deb in .gpu/coord/debs/*.deb .gpu/debs/libpcre2-8-0_*.deb; do  # libpcre2: also the image's, likely
    if [ -e "$deb" ]; then unpack_deb "$deb" "$GITROOT"; fi
  done
  # The libraries go to git alone (a wrapper), not to the coordinator's environment: the sandbox hands
  # the host's LD_LIBRARY_PATH to GPU jobs.
  GITLIBS="$GITROOT/usr/lib/x86_64-linux-gnu:$GITROOT/lib/x86_64-linux-gnu"
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
    "$GITLIBS" "$GITROOT/usr/bin/git" > "$GITROOT/bin/git"
  chmod +x "$GITROOT/bin/git"
  export PATH="$GITROOT/bin:$PATH" GIT_PYTHON_GIT_EXECUTABLE="$GITROOT/bin/git" GIT_EXEC_PATH="$GITROOT/usr/lib/git-core"
  export GIT_TEMPLATE_DIR="$GITROOT/usr/share/git-core/templates"
  echo "== git carried (Debian package): $(git --version), exec path $(git --exec-path)"
fi
# The campaign workspace sets user.name/email in its own repository; this check passes its own.
G=$(mktemp -d /tmp/aka-gitcheck.XXXXXX)
(
  export GIT_AUTHOR_NAME=check GIT_AUTHOR_EMAIL=check@localhost \
    GIT_COMMITTER_NAME=check GIT_COMMITTER_EMAIL=check@localhost
  cd "$G" && git init -q -b main . && echo a > f && git add f && git commit -q -m base \
    && git worktree add -q -b ep wt main && echo b > wt/f && git -C wt commit -q -am change \
    && git merge -q --squash ep && git commit -q -m squashed && [ "$(cat f)" = b ]
) || { echo "git self-check (init, commit, worktree add, merge --squash) failed"; exit 1; }
echo "git self-check: init, commit, worktree add, merge --squash ok"

STEP=bubblewrap
if [ "${AKA_DEMO_BWRAP:-1}" != 0 ] && ! command -v bwrap >/dev/null && ls .gpu/debs/bubblewrap_*.deb >/dev/null 2>&1; then
  BW=/tmp/aka-bwrap
  rm -rf "$BW" && mkdir -p "$BW/bin"
  for deb in .gpu/debs/*.deb; do unpack_deb "$deb" "$BW"; done
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' \
    "$BW/usr/lib/x86_64-linux-gnu:$BW/lib/x86_64-linux-gnu" "$BW/usr/bin/bwrap" > "$BW/bin/bwrap"
  chmod +x "$BW/bin/bwrap"
  export PATH="$BW/bin:$PATH"
fi
echo "== bubblewrap: $(command -v bwrap >/dev/null && bwrap --version || echo 'none: jobs run without isolation')"

STEP=imports
"$PY" - <<'PY'
import importlib.metadata as md

import aka_graph.cli  # noqa: F401 - every subcommand module imports
import asyncssh, git, langchain_core, langgraph, pydantic, sqlite_utils  # noqa: F401,E401

for name in ("langgraph", "langchain-core", "langgraph-checkpoint-sqlite", "pydantic", "asyncssh",
             "gitpython", "sqlite-utils", "typer", "rich", "matplotlib", "numpy", "torch", "triton"):
    try:
        dist = md.distribution(name)
        print(f"  {name:28} {dist.version:14} {dist.locate_file('')}")
    except md.PackageNotFoundError:
        print(f"  {name:28} MISSING")
PY

"$PY" -m aka_graph --help >/dev/null
"$PY" -m aka_graph graph > /tmp/coord-graph.txt && head -n 5 /tmp/coord-graph.txt
if [ "${AKA_DEMO_DRY:-0}" = 1 ]; then echo "GPU DEMO DRY RUN OK (demo not run)"; exit 0; fi

STEP=demo
WORK=$(mktemp -d /tmp/aka-demo.XXXXXX)
echo "== demo: python -m aka_graph run   (in $WORK, TRITON_INTERPRET=${TRITON_INTERPRET:-unset})"
cd "$WORK"
set +e
timeout "${AKA_DEMO_TIMEOUT:-400}" "$PY" -m aka_graph run
DEMO_RC=$?
set -e
echo "== demo exit code: $DEMO_RC"

STEP=artifacts
CAMPAIGN=$(find "$WORK" -maxdepth 1 -type d -name 'kernel_opt_*' | head -n 1 || true)
if [ -z "$CAMPAIGN" ]; then echo "no campaign directory under $WORK"; exit 1; fi
echo "campaign: $CAMPAIGN"
git -C "$CAMPAIGN" log --oneline --graph --all | head -n 30 || true
cp "$CAMPAIGN/report/report.md" "$OUT/report.md" || echo "no report/report.md"
cp "$CAMPAIGN/report/objective.png" "$OUT/objective.png" || echo "no report/objective.png"
(cd "$CAMPAIGN" && tar czf "$OUT/campaign_records.tar.gz" memory/*.json records/ledger.sqlite \
  $(ls submission.json results/*/verify/verdict.json 2>/dev/null)) || echo "records tar incomplete"
"$PY" - "$CAMPAIGN/records/ledger.sqlite" > "$OUT/ledger_summary.txt" <<'PY' || true
import sqlite3, sys

db = sqlite3.connect(sys.argv[1])
skip = {"kernel_path", "result_path", "key", "session_id"}
for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"):
    cur = db.execute(f"SELECT * FROM [{table}]")
    cols = [d[0] for d in cur.description]
    keep = [i for i, c in enumerate(cols) if c not in skip]
    rows = cur.fetchall()
    print(f"## {table} ({len(rows)} rows)")
    print(" | ".join(cols[i] for i in keep))
    for row in rows:
        print(" | ".join(str(row[i])[:12 if cols[i].endswith("sha256") else 160] for i in keep))
    print()
PY
[ -s "$OUT/ledger_summary.txt" ] || echo "no ledger summary"
echo "== ledger summary"
cat "$OUT/ledger_summary.txt"
ls -l "$OUT"
if [ "$DEMO_RC" -ne 0 ]; then STEP=demo; exit "$DEMO_RC"; fi
[ -s "$OUT/report.md" ] || { STEP=report; exit 1; }

# The demo must show a real promotion on the GPU too: the promoted version, its per-shape latency next to
# V0's, and the verdict's worst shape (fast.py's GPU plan splits the codebook across programs so that the
# 128/150/256-token shapes all fill the SMs; its first plan lost 38 % on a small shape and was rejected).
STEP=promotion
"$PY" - "$CAMPAIGN" <<'PY' | tee "$OUT/promotion.txt"
import json, pathlib, sys

root = pathlib.Path(sys.argv[1])
records = sorted((json.loads(p.read_text()) for p in (root / "memory").glob("v*.json")), key=lambda r: r["version"])
v0 = next(r for r in records if r["kind"] == "v0")
base = {p["id"]: p["latency_us"] for p in v0.get("performance", [])}
for r in records:
    print(f"v{r['version']} {r['decision']:<10} objective={r.get('objective')} timing={r.get('timing_method')} "
          f"reason={r.get('reason', '')[:160]}")
promoted = [r for r in records if r["decision"] == "promoted"]
if not promoted:
    print("NO PROMOTION on this GPU")
    sys.exit(1)
best = promoted[-1]
print(f"promoted v{best['version']}: worst shape {best.get('verdict', {}).get('worst_shape')} "
      f"regression {best.get('verdict', {}).get('worst_shape_regression_pct')} %")
print("shape | V0 us | promoted us | speedup")
for p in best.get("performance", []):
    b = base.get(p["id"])
    print(f"{p['id'][:13]} | {b} | {p['latency_us']} | {b / p['latency_us']:.2f}x" if b else p["id"])
PY
echo "GPU DEMO OK (with a promotion)"
