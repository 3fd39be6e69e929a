#!/usr/bin/env bash
# GPU check of the sandbox (issue 3): on the H200 host, LocalSandbox runs a torch GPU job that sees its
# GPU by UUID, with bubblewrap carried as Debian packages (unpacked into a temp dir, never into /).
#
# Needs, carried from the development machine (both ignored by git):
#   .gpu/debs/*.deb  apt-get download bubblewrap libcap2 libselinux1 libpcre2-8-0
#   .gpu/whl/*.whl   pydantic, pydantic-core (cp312), annotated-types, typing-inspection
# Run from the repository root:  bash benchmarks/gpu_sandbox_check.sh   (log -> $OUT or /tmp)
set -uo pipefail
OUT=${OUT:-/tmp/gpu_sandbox_check}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_sandbox_check.log") 2>&1
export PYTHONUNBUFFERED=1
echo "== host: $(uname -a)"
nvidia-smi --query-gpu=index,uuid,pci.bus_id,name --format=csv,noheader
ls -l /dev/nvidia* 2>&1 | head

echo "== pydantic wheels"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl \
  || echo "wheel install failed"
export PYTHONPATH="/tmp/site:$PWD"

echo "== bubblewrap from .deb"
BW=/tmp/aka-bwrap
rm -rf "$BW" && mkdir -p "$BW"
for deb in .gpu/debs/*.deb; do
  if command -v dpkg >/dev/null; then dpkg -x "$deb" "$BW"; else
    python3 - "$deb" "$BW" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
pos = 8  # "!<arch>\n", then 60-byte member headers
while pos < len(data):
    name, size = data[pos:pos + 16].decode().strip().rstrip("/"), int(data[pos + 48:pos + 58])
    body = data[pos + 60:pos + 60 + size]
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
    pos += 60 + size + (size % 2)
PY
  fi
done
LIBS="$BW/usr/lib/x86_64-linux-gnu:$BW/lib/x86_64-linux-gnu"
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$LIBS" "$BW/usr/bin/bwrap" > "$BW/bwrap"
chmod +x "$BW/bwrap"
"$BW/bwrap" --version
for probe in "--ro-bind / / true" "--ro-bind / / --unshare-net true" "--ro-bind / / --unshare-pid true" \
  "--ro-bind / / --unshare-ipc --unshare-uts true" "--ro-bind / / --proc /proc --dev /dev true" \
  "--ro-bind / / --cap-drop ALL true"; do
  # shellcheck disable=SC2086
  if err=$("$BW/bwrap" $probe 2>&1); then echo "bwrap $probe: ok"; else echo "bwrap $probe: FAILED: $err"; fi
done

echo "== LocalSandbox GPU jobs"
timeout 240 python3 - "$BW/bwrap" <<'PY'
import statistics, subprocess, sys, tempfile, time
from pathlib import Path

from aka_graph.tools.evaluator.sandbox.job import SandboxJob
from aka_graph.tools.evaluator.sandbox.local import LocalSandbox

bwrap = sys.argv[1]
smi = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip()
print("nvidia-smi:", smi)
code = """
import os, time, torch
print("CUDA_VISIBLE_DEVICES=" + os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"))
print("device_count", torch.cuda.device_count())
p = torch.cuda.get_device_properties(0)
print("name", p.name, "torch uuid", getattr(p, "uuid", "?"))
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
(a @ a).sum().item(); torch.cuda.synchronize()
t = time.perf_counter(); b = a @ a; torch.cuda.synchronize(); dt = time.perf_counter() - t
print(f"matmul finite={bool(torch.isfinite(b).all())} {2 * 8192**3 / dt / 1e12:.0f} TFLOP/s")
open("proof.txt", "w").write(os.environ.get("CUDA_VISIBLE_DEVICES", ""))
"""
results = Path(tempfile.mkdtemp())
for isolation in ("bwrap", "none"):
    print(f"--- isolation={isolation}")
    try:
        sandbox = LocalSandbox(isolation=isolation, bwrap=bwrap)
    except Exception as exc:  # report what stopped it and go on with the next isolation
        print(f"LocalSandbox(isolation={isolation}) unavailable: {exc}")
        continue
    print("gpu index", sandbox.gpu_index, "uuid/nodes", sandbox._gpu(0))
    job = SandboxJob(argv=[sys.executable, "-c", code], timeout_s=180, gpu_index=0, sync_back=["proof.txt"])
    r = sandbox.run(job, results / isolation)
    print("exit", r.exit_code, "wall", round(r.wall_s, 2), "env failure", r.environment_failure)
    print(r.stdout.strip())
    print(r.stderr.strip()[-2500:])
    print("health:", sandbox.health(0))
    walls = []
    for _ in range(10):
        t = time.perf_counter()
        sandbox.run(SandboxJob(argv=["true"], timeout_s=30), results / "t")
        walls.append(time.perf_counter() - t)
    print(f"overhead per `true` job: median {statistics.median(walls):.3f}s max {max(walls):.3f}s")
    t = time.perf_counter()
    r = sandbox.run(SandboxJob(argv=["sh", "-c", "trap '' TERM; sleep 100 & sleep 100"], timeout_s=1), results / "k")
    print(f"timeout job: exit {r.exit_code} timed_out {r.timed_out} after {time.perf_counter() - t:.1f}s")
PY
echo "== done"
