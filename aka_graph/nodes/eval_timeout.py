"""How long one evaluation job may run: `--eval-timeout` when given, else a limit that grows with the
operator's workloads and seeds (a fixed 900 s parked a 60-shape operator's V1 on a slow host forever).

A verification job measures two kernels, each `--verify-repeats` times in the ABBA pattern, so it gets
the limit of one evaluation per kernel timed (plus the correctness pass the evaluation limit covers).
"""

from __future__ import annotations

import json
from pathlib import Path

from aka_graph.state import CampaignConfig

BASE_S = 300.0  # start-up: interpreter, torch, harness, reference outputs, the burst checks
PER_WORKLOAD_SEED_S = 15.0  # correctness on one seed and timing of one workload, generously


def workload_count(op_dir: Path) -> int:
    """Workloads of an operator: native `shapes.json` entries or SOL `workload.jsonl` lines (1 if unknown)."""
    op_dir = Path(op_dir)
    try:
        if (op_dir / "workload.jsonl").is_file():
            lines = (op_dir / "workload.jsonl").read_text().splitlines()
            return max(1, sum(1 for line in lines if line.strip()))
        if (op_dir / "shapes.json").is_file():
            return max(1, len(json.loads((op_dir / "shapes.json").read_text())))
    except (OSError, ValueError):
        pass
    return 1


def evaluation_timeout_s(config: CampaignConfig, op_dir: Path) -> float:
    """The limit of one full evaluation of one kernel."""
    if config.eval_timeout_s is not None:
        return float(config.eval_timeout_s)
    return BASE_S + PER_WORKLOAD_SEED_S * workload_count(op_dir) * config.seeds


def verification_timeout_s(config: CampaignConfig, op_dir: Path, kernels: int = 2) -> float:
    """The limit of one interleaved comparison job (`kernels` kernels, `verify_repeats` rounds each)."""
    return evaluation_timeout_s(config, op_dir) * kernels * max(1, config.verify_repeats)
