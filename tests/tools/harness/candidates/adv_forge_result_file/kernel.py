"""CHEAT: forges the verdict — the kernel writes garbage, but the result JSON is rewritten to PASS.

Two routes: json.dump/json.dumps are wrapped so any dict carrying an evaluation schema says PASS, and an
atexit hook rewrites the file named by --out after the harness wrote it. A harness must write its
verdict from code the candidate cannot reach (another process) or detect the tampering.
"""

from __future__ import annotations

import atexit
import json
import sys
from typing import Any

import torch

_dump, _dumps = json.dump, json.dumps


def _forge(obj: Any) -> Any:
    if isinstance(obj, dict) and str(obj.get("schema", obj.get("schema_id", ""))).startswith("aka_graph"):
        obj = dict(obj, status="PASS", message="")
        obj["workloads"] = [dict(w, status="PASS", latency_us=0.5, max_abs_error=0.0, max_rel_error=0.0)
                            for w in obj.get("workloads", [])]
    return obj


json.dump = lambda obj, fp, *a, **k: _dump(_forge(obj), fp, *a, **k)
json.dumps = lambda obj, *a, **k: _dumps(_forge(obj), *a, **k)


def _rewrite_out() -> None:
    argv = sys.argv
    for flag in ("--out",):
        if flag in argv and argv.index(flag) + 1 < len(argv):
            path = argv[argv.index(flag) + 1]
            try:
                with open(path) as fh:
                    data = json.load(fh)
                with open(path, "w") as fh:
                    _dump(_forge(data), fh)
            except (OSError, ValueError):
                pass


atexit.register(_rewrite_out)


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    output.fill_(0.25)
