"""Which files make a candidate, per framework: one fact in frameworks.py that the workspace, freezing,
the policy diff, promotion and the prompts all read."""

from __future__ import annotations

from pathlib import Path

from aka_graph.frameworks import candidate_files, editable_files, entry_file, files_line
from aka_graph.nodes._common import freeze_kernel, kernel_overrides
from aka_graph.nodes._policy import kernel_patch


def test_python_frameworks_are_kernel_py_and_cuda_is_kernel_cu_with_its_solution() -> None:
    for name in ("pytorch", "triton", "gluon", "cute_dsl"):
        assert entry_file(name) == "kernel.py" and candidate_files(name) == ("kernel.py", "solution.json")
        assert editable_files(name) == ["kernel.py"]
    assert candidate_files("cuda") == ("kernel.cu", "solution.json") and entry_file("cuda") == "kernel.cu"
    assert editable_files("cuda") == ["kernel.cu", "solution.json", "kernel.py"]
    assert files_line("cuda") == "kernel.cu and solution.json" and files_line("triton") == "kernel.py"


def test_freezing_a_cuda_worktree_keeps_only_the_candidate_and_drops_stale_files(tmp_path: Path) -> None:
    worktree, frozen = tmp_path / "wt", tmp_path / "frozen"
    worktree.mkdir()
    for name, text in (("kernel.py", "reference"), ("kernel.cu", "__global__ void k() {}"),
                       ("solution.json", "{}"), ("notes.md", "x")):
        (worktree / name).write_text(text)
    freeze_kernel(worktree, frozen, "cuda")
    assert sorted(p.name for p in frozen.iterdir()) == ["kernel.cu", "solution.json"]
    (worktree / "solution.json").unlink()
    freeze_kernel(worktree, frozen, "cuda")  # a re-frozen trial without solution.json loses the old one
    assert sorted(p.name for p in frozen.iterdir()) == ["kernel.cu"]
    assert sorted(kernel_overrides(editable_files("triton"), frozen, "triton")) == ["kernel.py"]
    assert sorted(kernel_overrides(editable_files("cuda"), frozen, "cuda")) == ["kernel.cu", "solution.json"]


def test_the_policy_diff_shows_a_python_reference_replaced_by_kernel_cu(tmp_path: Path) -> None:
    v0, v1 = tmp_path / "v0", tmp_path / "v1"
    v0.mkdir()
    v1.mkdir()
    (v0 / "kernel.py").write_text("def run(x):\n    return x * 2\n")
    (v1 / "kernel.cu").write_text("__global__ void twice(float* x) {}\n")
    patch = kernel_patch(v0, v1, "cuda")
    assert "--- incumbent/kernel.py" in patch and "-    return x * 2" in patch
    assert "+++ candidate/kernel.cu" in patch and "+__global__ void twice" in patch
    assert kernel_patch(v0, v0, "triton") == ""
