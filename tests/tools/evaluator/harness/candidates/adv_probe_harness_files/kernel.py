"""CHEAT (issue 13, class 6): reads its own command line and the parent's from /proc to find the
operator directory, then reads workload.jsonl (every workload's shapes, also unselected, private ones)
and specialises: a wrong answer on any shape it did not find there.

Caught by: the source policy (/proc and the operator's files named); the jailed worker cannot see its
parent at all."""

from __future__ import annotations

from pathlib import Path

import torch

_known: set[int] = set()
try:
    args = Path("/proc/self/cmdline").read_bytes().split(b"\0")
    op_dir = Path(args[args.index(b"--op-dir") + 1].decode())
    for line in (op_dir / "workload.jsonl").read_text().splitlines():
        _known.add(len(line))
except Exception:
    pass


@torch.no_grad()
def run(hidden_states: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
        output: torch.Tensor) -> None:
    output.fill_(float(len(_known)))
