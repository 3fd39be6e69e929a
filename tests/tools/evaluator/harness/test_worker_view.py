"""What the untrusted worker can read of the operator (issue 13, class 6): the definition and only the
workloads this job evaluates, with only their blobs; the operator's own directory is covered in the jail.

A snooping candidate looks for the ids of the workloads the job does *not* evaluate everywhere it can
reach: its own `--op-dir`, the operator's directory by absolute and by relative path, the blob root, and
the command line and environment of every process it can see in /proc. It answers honestly when it
finds none and wrongly when it finds one, so the verdict itself says whether anything leaked.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness.loading import load_operator
from aka_graph.tools.evaluator.harness.opview import hidden_paths, write_view
from tests.conftest import REPO_ROOT, SOL_FIXTURES
from tests.tools.evaluator.harness.test_adversarial import CHEAT_SHAPES, describe, run_harness

NATIVE_OP = REPO_ROOT / "benchmarks" / "operators" / "native_rms_norm"

SNOOP = '''
"""Reads everything it can reach for workloads the job does not evaluate; wrong answers if it finds any."""
import os
from pathlib import Path

import torch

PRIVATE = {private!r}
PLACES = {places!r}
found = []


def _look(path):
    try:
        text = Path(path).read_bytes().decode(errors="replace")
    except OSError:
        return
    if any(p in text for p in PRIVATE):
        found.append(str(path))


def _walk(root):
    try:
        for path in Path(root).rglob("*"):
            _look(path)
    except OSError:
        pass


args = Path("/proc/self/cmdline").read_bytes().split(b"\\0")
_walk(args[args.index(b"--op-dir") + 1].decode())  # the view it is pointed at
for place in PLACES:  # the operator's directory and the blob root, absolute and relative to here
    _walk(place)
    _walk(os.path.relpath(place, os.getcwd()))
here = Path.cwd()
for up in [here, *here.parents]:
    _walk(up / "op")
for pid in [p for p in os.listdir("/proc") if p.isdigit()] + ["self", str(os.getppid())]:
    for name in ("cmdline", "environ"):
        _look(f"/proc/{{pid}}/{{name}}")
_look("/proc/self/mountinfo")


@torch.no_grad()
def run(hidden_states, weight, output):
    if found:
        output.fill_(123.0)
        return
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output.copy_((x * inv_rms) * weight.to(torch.float32))
'''


def _snoop(tmp_path: Path, private: list[str]) -> Path:
    kernel = tmp_path / "snoop"
    kernel.mkdir()
    places = [str(tmp_path / "job" / "op")]  # where the job's operator is (copies elsewhere are not ours)
    (kernel / "kernel.py").write_text(SNOOP.format(private=private, places=places))
    return kernel


def test_the_view_of_a_sol_operator_holds_only_the_chosen_workloads(tmp_path: Path) -> None:
    op = load_operator(SOL_FIXTURES / "rmsnorm")
    order = write_view(op, [5, 2], tmp_path / "view")
    assert order == [2, 5]
    view = load_operator(tmp_path / "view")
    assert [w.id for w in view.workloads] == [op.workloads[2].id, op.workloads[5].id]
    assert sorted(p.name for p in (tmp_path / "view").iterdir()) == ["definition.json", "workload.jsonl"]


def test_the_view_of_a_native_operator_holds_only_the_chosen_shapes(tmp_path: Path) -> None:
    op = load_operator(NATIVE_OP)
    write_view(op, [3], tmp_path / "view")
    view = load_operator(tmp_path / "view")
    assert [w.id for w in view.workloads] == [op.workloads[3].id]
    assert view.workloads[0].input_kwargs == op.workloads[3].input_kwargs
    assert not any(p.name in ("metadata.json", "roofline.json") for p in (tmp_path / "view").iterdir())


def test_only_the_chosen_workloads_blobs_enter_the_view(tmp_path: Path) -> None:
    """Each chosen workload's safetensors file is copied in under a neutral name and its descriptor
    points there; an unchosen workload's blob never is."""
    op_dir = tmp_path / "op"
    shutil.copytree(SOL_FIXTURES / "rmsnorm", op_dir)
    lines = (op_dir / "workload.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    for i, row in enumerate(rows[:2]):
        (op_dir / f"secret_{i}.safetensors").write_bytes(f"blob {i}".encode())
        path = f"secret_{i}.safetensors"
        row["inputs"]["weight"] = {"type": "safetensors", "path": path, "tensor_key": "x"}
    (op_dir / "workload.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    write_view(load_operator(op_dir), [1], tmp_path / "view")
    blobs = sorted((tmp_path / "view").rglob("*.safetensors"))
    assert [b.read_bytes() for b in blobs] == [b"blob 1"]
    row = json.loads((tmp_path / "view" / "workload.jsonl").read_text())
    assert (tmp_path / "view" / row["inputs"]["weight"]["path"]).read_bytes() == b"blob 1"


def test_a_directory_holding_the_harness_or_the_kernel_is_never_covered(tmp_path: Path) -> None:
    (tmp_path / "op").mkdir()
    (tmp_path / "blobs").mkdir()
    keep = [tmp_path / "kernel"]
    assert hidden_paths(tmp_path / "op", tmp_path / "blobs", keep) == [
        (tmp_path / "op").resolve(), (tmp_path / "blobs").resolve()]
    assert hidden_paths(tmp_path, None, keep) == []  # the kernel lies inside it


@pytest.mark.slow
def test_a_snooping_candidate_finds_no_unselected_workload_anywhere(tmp_path: Path) -> None:
    op = load_operator(SOL_FIXTURES / "rmsnorm")
    private = [w.id for w in op.workloads if w.id not in CHEAT_SHAPES]
    kernel = _snoop(tmp_path, private)
    result = run_harness(tmp_path, SOL_FIXTURES / "rmsnorm", kernel, CHEAT_SHAPES, seeds=2,
                         extra_args=("--no-source-policy", "--private-shapes"))
    assert result.get("isolation", {}).get("worker") == "namespace", result.get("isolation")
    assert result["status"] == "PASS", f"the candidate read an unselected workload:\n{describe(result)}"


@pytest.mark.slow
def test_the_snooping_candidate_does_find_them_when_the_worker_is_not_jailed(tmp_path: Path) -> None:
    """The control that shows the probe can see a leak: without the jail the operator's directory is
    readable (which is why production mode refuses to run unjailed)."""
    op = load_operator(SOL_FIXTURES / "rmsnorm")
    private = [w.id for w in op.workloads if w.id not in CHEAT_SHAPES]
    kernel = _snoop(tmp_path, private)
    result = run_harness(tmp_path, SOL_FIXTURES / "rmsnorm", kernel, CHEAT_SHAPES, seeds=2,
                         extra_args=("--no-source-policy",), env={"AKA_WORKER_JAIL": "0"})
    assert result.get("isolation", {}).get("worker") == "none", result.get("isolation")
    assert result["status"] == "INCORRECT", describe(result)
