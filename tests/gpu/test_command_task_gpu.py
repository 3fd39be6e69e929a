"""Command tasks on the H200: the same source-tree campaign as CI (tests/tasks/test_command_task_graph.py),
with compiled kernels — minikern's C++ extension built by its own setup.py and its Triton kernel compiled
for the GPU — timed by the tree's own benchmark (CUDA-graph replay, device-side CUDA events).

A replay campaign through the real graph (`python -m aka_graph run`) on `aka_task_h200.toml`, scored at
32768 x 1024 (memory-bound: 256 MiB per call): V0 is the unmodified tree (one program per row, walking it
in 64-float chunks); episode 1's trial 1 caps the grid (right on the small correctness cases, wrong at
the scored shape: INCORRECT), trial 2 streams a tile of whole rows per program, is verified ABBA x3 in
one job and promoted. Prints the versions and the ledger's trials; must finish in under 4 minutes.

Run on the GPU host: `python3 -m pytest -m gpu tests/gpu/test_command_task_gpu.py -v -s`
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import read_version_records

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "source_tree"
LIMIT_S = 235


def test_minikern_campaign_with_compiled_kernels_promotes_on_the_gpu(tmp_path: Path) -> None:
    argv = [
        sys.executable, "-m", "aka_graph", "run",
        "--op-dir", str(FIXTURE / "aka_task_h200.toml"), "--platform", "H200", "--framework", "triton",
        "--agent-cli", "replay", "--replay-script", str(FIXTURE / "replay_campaign.json"),
        "--max-iters", "1", "--fast-trials", "2", "--verify-repeats", "3", "--seeds", "2",
        "--workspace", str(tmp_path / "ws"),
    ]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compiled kernels only
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=LIMIT_S)
        returncode, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as exc:
        returncode, err = None, exc.stderr.decode() if isinstance(exc.stderr, bytes) else str(exc.stderr)
    wall = time.monotonic() - started
    print(err[-3000:])
    root = tmp_path / "ws" / "kernel_opt_minikern_scale_rows_large_triton_H200"
    assert root.is_dir(), f"no campaign workspace (exit {returncode}): {sorted((tmp_path / 'ws').glob('*'))}"
    records = read_version_records(root)
    print(f"\ncampaign wall time {wall:.0f} s\nversion | decision | objective_us | timing | reason")
    for r in records:
        print(f"v{r.version} | {r.decision} | {r.objective} | {r.timing_method} | {str(r.reason)[:140]}")
    ledger = Ledger(root / "records" / "ledger.sqlite")
    trials = ledger.entries(episode=1, role="trial")
    for t in trials:
        print(f"trial {t.trial}: {t.status} objective_us={t.objective}")
    assert returncode == 0, f"exit {returncode} (None: over {LIMIT_S} s)\n{err[-2000:]}"
    assert [(r.version, r.decision) for r in records] == [(0, "baseline"), (1, "promoted")]
    assert [(r.timing_method, r.authoritative) for r in records] == [("cuda_graph", True)] * 2
    assert records[1].objective < 0.8 * records[0].objective  # the tile of rows is genuinely faster
    assert [t.status for t in trials] == ["INCORRECT", "PASS"]
    promoted = (root / "tree" / "minikern" / "triton_ops.py").read_text()
    assert promoted == (FIXTURE / "variants" / "triton_ops_fast.py").read_text()
    print("verification:", json.dumps(records[1].verdict, default=str)[:1500])
    assert wall < 240, f"the GPU campaign took {wall:.0f} s (budget: 4 minutes)"
