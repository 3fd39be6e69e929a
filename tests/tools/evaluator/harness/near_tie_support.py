"""What the near-tie red-team tests (rounds 13, 13b, 14) share: a candidate's or a reference's source run
in this process, a fixture's inputs drawn as its generator draws them, and the session's near-tie search
(neartie.py) folded in process, so a rule's verdict on one output can be read without an evaluation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from aka_graph.tools.evaluator.harness.neartie import nudged
from aka_graph.tools.evaluator.harness.numerics import check_output
from aka_graph.tools.evaluator.harness.opmodel import Tolerance
from tests.tools.evaluator.harness.test_adversarial import CANDIDATES


def candidate_source(name: str) -> str:
    """A test candidate's kernel.py (tests/.../candidates/NAME)."""
    return (CANDIDATES / name / "kernel.py").read_text()


def run_source(source: str) -> dict[str, Any]:
    """The names a kernel's or reference's source defines, run in this process."""
    scope: dict[str, Any] = {}
    exec(compile(source, "<candidate>", "exec"), scope)  # our own fixtures and candidates
    return scope


def reference_module(op_dir: Path) -> dict[str, Any]:
    """A SOL fixture's reference (its `run`, its `make_inputs`), run in this process."""
    return run_source(json.loads((op_dir / "definition.json").read_text())["reference"])


def custom_inputs(op_dir: Path) -> list[torch.Tensor]:
    definition = json.loads((op_dir / "definition.json").read_text())
    axes = {k: v["value"] for k, v in definition["axes"].items() if v["type"] == "const"}
    axes.update(json.loads((op_dir / "workload.jsonl").read_text().splitlines()[0])["axes"])
    torch.manual_seed(0)
    made = reference_module(op_dir)["make_inputs"](axes, torch.device("cpu"))
    return [made[name] for name in definition["inputs"]]


def moe_inputs(seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(2048, 32, generator=g).bfloat16()
    logits = torch.randn(2048, 64, generator=g).bfloat16()
    return [hidden, logits, (torch.randn(64, 32, 32, generator=g) / 6).bfloat16()]


def near_tie_search(
    ref: Any,
    got: torch.Tensor,
    inputs: list[torch.Tensor],
    directions: int = 48,
    tol: Tolerance | None = None,
    width: int | None = None,
) -> Any:
    """The session's near-tie search in process (all inputs, then each alone, both signs), folded;
    `tol` the workload's (default: the SOL default), `width` the lines' (numerics.check_output)."""
    want, tol, verdict = ref(*inputs), tol or Tolerance(), None
    count = 1 + sum(1 for x in inputs if x.dtype.is_floating_point and not bool((x == x.round()).all()))
    for k in range(directions):
        part = None if k % count == 0 else k % count - 1
        both = [ref(*nudged(inputs, 1000 + k, sign, 2.0**-16, part)) for sign in (1, -1)]
        verdict = check_output("out", got, want, tol, [(both[0], both[1])], width, prior=verdict)
        if verdict.ok:
            break
    return verdict
