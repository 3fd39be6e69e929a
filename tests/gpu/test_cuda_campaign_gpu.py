"""Issue 10 on the H200: a replay-backend campaign with `--framework cuda` goes V0 (the PyTorch reference)
-> V1 (a CUDA C++ baseline, kernel.cu built as a torch extension by nvcc) -> one promoted episode (a
faster kernel.cu), and writes its report and a submission with kernel.cu inlined. Prints the versions.

Every evaluation builds kernel.cu afresh (V1, the trial, both sides of the verification), 60-90 s each on
the H200: the campaign takes minutes, so it runs beside the language tests under pytest-xdist.

Run: python3 -m pytest -m gpu tests/gpu/test_cuda_campaign_gpu.py -v -s
     (with the language tests: python3 -m pytest -m gpu tests/gpu/test_languages_gpu.py
      tests/gpu/test_cuda_campaign_gpu.py -v -rs -s -n 8 --timeout 540)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "aka_graph" / "examples" / "rmsnorm_cuda"
CAMPAIGN_TIMEOUT_S = 510


def test_cuda_campaign_pins_a_cuda_v1_and_promotes_one_episode(tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc on PATH (the CUDA candidate is built as a torch extension)")
    argv = [
        sys.executable, "-m", "aka_graph", "run",
        "--op-dir", str(EXAMPLE), "--framework", "cuda", "--v1", "always",
        "--agent-cli", "replay", "--replay-script", str(EXAMPLE / "replay_cuda.json"),
        "--platform", "H200", "--max-iters", "1", "--fast-episodes", "1", "--fast-trials", "1",
        "--seeds", "1", "--workspace", str(tmp_path / "ws"),
    ]
    # every evaluation builds kernel.cu afresh: minutes; stop before pytest-timeout's 540 s to see the log
    try:
        proc = subprocess.run(argv, cwd=REPO, env=dict(os.environ), capture_output=True, text=True,
                              timeout=CAMPAIGN_TIMEOUT_S)
        returncode, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        returncode, out, err = None, str(exc.stdout or ""), str(exc.stderr or "")
    print(out[-4000:], err[-4000:], sep="\n")
    roots = sorted((tmp_path / "ws").glob("kernel_opt_rmsnorm_h2048_bf16_cuda_*"))
    assert roots, f"no campaign workspace (exit {returncode})"
    root = roots[0]
    records = [json.loads(p.read_text()) for p in sorted((root / "memory").glob("v*.json"))]
    print("\nversion | kind | decision | framework | objective | reason")
    for r in records:
        cells = (r["kind"], r["decision"], r.get("framework"), r.get("objective"), str(r.get("reason"))[:160])
        print(f"v{r['version']} | " + " | ".join(str(c) for c in cells))
    assert returncode == 0, f"exit {returncode} (None: timed out after {CAMPAIGN_TIMEOUT_S} s)\n{err[-2000:]}"
    decisions = [(r["version"], r["kind"], r["decision"]) for r in records]
    assert decisions == [(0, "v0", "baseline"), (1, "v1", "pinned"), (2, "episode", "promoted")], decisions
    assert records[1]["framework"] == "cuda" and records[2]["framework"] == "cuda"
    assert records[2]["objective"] < records[1]["objective"]
    assert (root / "report" / "report.md").is_file()
    submission = json.loads((root / "submission.json").read_text())
    assert submission["spec"]["languages"] == ["cuda_cpp"]
    assert submission["spec"]["entry_point"] == "kernel.cu::run"
    assert "rmsnorm_row_vec" in submission["sources"][0]["content"]  # the promoted one-pass kernel
