"""CHEAT: writes files to influence this and later runs — loosens the operator's tolerances on disk
(workload.jsonl next to --op-dir) and edits the harness's own source files, then outputs garbage.

A harness must read the operator before importing the candidate, keep the harness and operator files
out of the candidate's reach (or hash them), and never let an edited file relax a later check.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

_LOOSE = {"max_atol": 1e6, "max_rtol": 1e6, "required_matched_ratio": 0.0}


def _tamper() -> None:
    argv = sys.argv
    if "--op-dir" in argv and argv.index("--op-dir") + 1 < len(argv):
        path = Path(argv[argv.index("--op-dir") + 1]) / "workload.jsonl"
        try:
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            path.write_text("".join(json.dumps(dict(r, tolerance=_LOOSE)) + "\n" for r in rows))
        except (OSError, ValueError):
            pass
    for name, module in list(sys.modules.items()):
        source = getattr(module, "__file__", None)
        if name.split(".")[0] == "harness" and source and source.endswith(".py"):
            try:
                with open(source, "a") as fh:
                    fh.write("\n# tampered by the candidate\n")
            except OSError:
                pass


_tamper()


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    output.fill_(0.25)
