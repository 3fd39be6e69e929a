"""The classes of real SOL-ExecBench problems the evaluator failed on (issue 9), each reproduced by a small
fixture of our own under tests/fixtures/sol: integer-literal shapes, custom inputs drawing on torch's RNG,
an in-place KV-cache reference, an expanded (stride-0) input, a safetensors input whose blob is not
shipped, malformed operators; plus memory-bounded copies, the CPU subset, seeds that always differ and
the GPU lock on a GPU-less host. Each problem's own reference, given as the candidate, must PASS."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness import inputs as inputs_mod
from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.blobs import missing_blobs
from aka_graph.tools.evaluator.harness.gpu_specs import GPU_SPECS
from aka_graph.tools.evaluator.harness.guards import output_violations
from aka_graph.tools.evaluator.harness.inputs import InputFactory, output_shapes
from aka_graph.tools.evaluator.harness.layout import clone_values
from aka_graph.tools.evaluator.harness.loading import load_operator
from aka_graph.tools.evaluator.harness.memory import affordable_copies, spare_bytes
from aka_graph.tools.evaluator.harness.modules import load_reference
from aka_graph.tools.evaluator.harness.opmodel import OperatorError
from aka_graph.tools.evaluator.harness.rng import seeded
from aka_graph.tools.evaluator.harness.runner import KernelRunner, digest
from aka_graph.tools.evaluator.harness.safetensors_io import save_tensors
from aka_graph.tools.evaluator.harness.session import Session, Settings
from aka_graph.tools.evaluator.harness.subset import CPU_WORK_CAP_ELEMENTS, representative, workload_elements
from aka_graph.tools.evaluator.harness.trusted import in_place_contract
from aka_graph.tools.evaluator.sandbox.gpu import needs_gpu_lock
from tests.conftest import REPO_ROOT, SOL_FIXTURES

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "sol"
HARNESS_DIR = REPO_ROOT / "aka_graph" / "tools" / "evaluator" / "harness"
CPU = torch.device("cpu")
BLOB_REL = "blob/scale_by_recorded_weight/w.safetensors"


def make_blob_root(root: Path) -> Path:
    """The blob the safetensors fixture reads, written under a dataset-like root."""
    path = root / BLOB_REL
    path.parent.mkdir(parents=True, exist_ok=True)
    save_tensors(path, {"w": torch.linspace(-2.0, 2.0, 16)})
    return root


# --- 1. integer literals in shapes -------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir() if p.name != "malformed"))
def test_every_class_fixture_loads_with_concrete_shapes(name: str) -> None:
    op = load_operator(FIXTURES / name)
    assert op.workloads and callable(load_reference(op).run)
    for wl in op.workloads:
        for shape, _dtype in output_shapes(op, wl):
            assert all(isinstance(d, int) for d in shape)


def test_integer_literal_shape_entries_are_sizes_not_axes() -> None:
    op = load_operator(FIXTURES / "int_literal_rope")
    specs = {s.name: s.shape for s in op.inputs}
    assert specs["cos_sin"] == ("batch_size", "seq_len", "half_dim", 2)  # "2" -> 2
    assert specs["gate"] == (1, 1, "num_heads", 1)  # 1 and "1"
    wl = op.workloads[1]
    values = InputFactory(op, CPU, load_reference(op)).make(wl, 3, 1.0)
    assert [tuple(v.shape) for v in values] == [(2, 5, 2, 8), (2, 5, 4, 2), (1, 1, 2, 1)]
    assert output_shapes(op, wl) == [((2, 5, 2, 8), torch.float32)]


# --- malformed operators: user errors naming the file and the fix -----------------------------------


@pytest.mark.parametrize(
    ("name", "file", "words"),
    [
        ("bad_json", "definition.json", "not valid JSON"),
        ("missing_workload", "workload.jsonl", "missing; a SOL operator needs workload.jsonl"),
        ("undeclared_axis", "definition.json", "axis 'hidden' that 'axes' does not declare; declare it"),
    ],
)
def test_malformed_operators_are_user_errors_with_the_file_and_the_fix(
    name: str, file: str, words: str
) -> None:
    with pytest.raises(OperatorError) as err:
        load_operator(FIXTURES / "malformed" / name)
    assert str(FIXTURES / "malformed" / name / file) in str(err.value) and words in str(err.value)


def test_the_evaluate_command_exits_2_on_a_malformed_operator_before_any_job(tmp_path: Path) -> None:
    kernel = tmp_path / "kernel.py"
    kernel.write_text("def run(x):\n    return x * 2\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "aka_graph",
            "evaluate",
            str(FIXTURES / "malformed" / "undeclared_axis"),
            str(kernel),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-1000:]
    assert "definition.json" in proc.stderr and "declare it in 'axes'" in proc.stderr
    assert "INFRA_ERROR" not in proc.stderr and "Traceback" not in proc.stderr


# --- 3. custom inputs on torch's RNG ----------------------------------------------------------------


def test_custom_generators_run_on_a_private_seeded_state_and_leave_the_global_one_alone() -> None:
    op = load_operator(FIXTURES / "custom_rng_routing")
    factory = InputFactory(op, CPU, load_reference(op))
    torch.manual_seed(1234)
    expected_next = torch.rand(3)
    torch.manual_seed(1234)
    a = factory.make(op.workloads[1], 77, 1.0)
    assert torch.equal(torch.rand(3), expected_next)  # the global generator was restored
    b = factory.make(op.workloads[1], 77, 1.0)
    c = factory.make(op.workloads[1], 78, 1.0)
    assert digest(a) == digest(b) and digest(a) != digest(c)
    with seeded(5, CPU):
        first = torch.randn(4)
    with seeded(5, CPU):
        assert torch.equal(torch.randn(4), first)


# --- 5. in-place semantics ----------------------------------------------------------------------------


def test_the_reference_in_place_contract_is_probed_from_what_it_does() -> None:
    op = load_operator(FIXTURES / "kv_cache_inplace")
    ref = load_reference(op)
    values = InputFactory(op, CPU, ref).make(op.workloads[1], 9, 1.0)
    before = digest(values)
    result = KernelRunner(ref.run, False, output_shapes(op, op.workloads[1]), CPU).invoke(values)
    contract = in_place_contract(values, before, result)
    names = [s.name for s in op.inputs]
    assert [names[i] for i in contract["mutated"]] == ["key_cache", "value_cache", "seq_lens"]
    assert contract["returned"] == {1: names.index("key_cache"), 2: names.index("value_cache")}
    assert [names[i] for i in contract["compared"]] == ["seq_lens"]  # mutated, not returned


def test_an_output_may_alias_only_the_input_the_reference_returns_there() -> None:
    cache, other = torch.zeros(4, 4), torch.zeros(4)
    outs = [torch.ones(2), cache]
    assert output_violations(outs, [other, cache], [], CPU, returned={1: 1}) == []
    assert output_violations(outs, [other, cache], [], CPU)  # without the contract: flagged
    found = output_violations([torch.ones(2), other], [other, cache], [], CPU, returned={1: 1})
    assert found and "shares memory with an input" in found[0]  # the wrong input: still flagged


def test_the_speed_of_light_bound_leaves_out_the_caches_the_reference_updates_in_place() -> None:
    """Round 18 on the H200: a 1 GiB KV cache given one token bounded the update at 224 us (every returned
    cache byte counted as written), and the reference's own 63 us was REWARD_HACK. What the bound counts is
    the outputs that are new tensors: here the attention scores alone."""
    session = Session(Settings(op_dir=FIXTURES / "kv_cache_inplace", device="cpu"))
    session.spec = GPU_SPECS["H200"]  # as on the H200: the bound is computed with the reference outputs
    idx = session.indices[-1]
    outs, _ = session.reference_outputs(idx)
    names = [s.name for s in session.op.outputs]
    new = [o for name, o in zip(names, outs[0], strict=False) if not name.endswith("cache_out")]
    assert len(new) == 1 and session.sol[idx].hard_bound_us > 0
    assert session.sol[idx].hard_bound_us == pytest.approx(new[0].nbytes / session.spec.datasheet_bw * 1e6)


# --- 6. expanded inputs ------------------------------------------------------------------------------


def _expanded_inputs() -> list[Any]:
    op = load_operator(FIXTURES / "expanded_bias")
    return InputFactory(op, CPU, load_reference(op)).make(op.workloads[1], 4, 1.0)


def test_expanded_inputs_keep_their_layout_in_copies_and_timing_never_writes_through_them() -> None:
    x, bias = _expanded_inputs()
    assert bias.stride(0) == 0
    copy = clone_values([x, bias])[1]
    assert copy.stride(0) == 0 and torch.equal(copy, bias) and copy.data_ptr() != bias.data_ptr()

    def run(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return x + bias

    bench = Bench(KernelRunner(run, False, [((40, 32), torch.float32)], CPU), [x, bias], CPU, 0)
    bench.burst(3)  # perturbs the inputs before each call, as host timing does
    assert bench.copies[0][1].stride(0) == 0
    assert torch.equal(bench.copies[0][1][0], bench.copies[0][1][-1])  # still one row, expanded
    fresh = _expanded_inputs()
    bench.write_inputs(0, fresh)  # re-validation's write
    assert torch.equal(bench.copies[0][1], fresh[1]) and torch.equal(bench.copies[0][0], fresh[0])
    assert bench.measure().latency_us > 0


# --- 7. safetensors blobs ----------------------------------------------------------------------------


def test_a_missing_blob_names_the_file_and_the_flag_and_a_blob_root_resolves_it(tmp_path: Path) -> None:
    op = load_operator(FIXTURES / "safetensors_blob")
    message = missing_blobs(op, op.workloads)
    assert message is not None and BLOB_REL in message and "--blob-root DIR" in message
    op.blob_root = make_blob_root(tmp_path)
    assert missing_blobs(op, op.workloads) is None
    x, w = InputFactory(op, CPU).make(op.workloads[0], 1, 1.0)
    assert torch.equal(w, torch.linspace(-2.0, 2.0, 16)) and x.shape == (3, 16)


# --- 2. memory -----------------------------------------------------------------------------------------


def test_copies_are_bounded_by_spare_memory() -> None:
    assert affordable_copies(1 << 30, 2048, spare=(3 << 30) + 5) == 4  # the existing one + 3 more
    assert affordable_copies(1 << 30, 2048, spare=0) == 1  # never fewer than the one that exists
    assert affordable_copies(1 << 20, 8, spare=1 << 40) == 8  # never more than wanted
    assert spare_bytes(CPU) >= 0


def test_random_inputs_past_the_chunk_size_are_drawn_in_row_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = torch.Generator().manual_seed(3)
    monkeypatch.setattr(inputs_mod, "CHUNK_ELEMENTS", 64)
    big = inputs_mod._random_tensor("x", (50, 16), torch.bfloat16, gen, CPU, 1.0, False)
    again = inputs_mod._random_tensor(
        "x", (50, 16), torch.bfloat16, torch.Generator().manual_seed(3), CPU, 1.0, False
    )
    assert big.dtype == torch.bfloat16 and torch.equal(big, again)
    assert 0.8 < float(big.float().std()) < 1.2 and len(torch.unique(big[:, 0])) > 40


# --- seeds that differ (issue 13 item 9) -------------------------------------------------------------


@pytest.mark.parametrize("rows,cols", [(1, 131), (2, 293), (1, 2)])
def test_the_edge_interior_seed_differs_from_seed_0_on_the_smallest_workloads(
    tmp_path: Path, rows: int, cols: int
) -> None:
    definition = {
        "name": "tiny_norm",
        "axes": {"B": {"type": "var"}, "H": {"type": "const", "value": cols}},
        "inputs": {
            "x": {"shape": ["B", "H"], "dtype": "bfloat16"},
            "weight": {"shape": ["H"], "dtype": "bfloat16"},
        },
        "outputs": {"y": {"shape": ["B", "H"], "dtype": "bfloat16"}},
        "reference": "def run(x, weight):\n    return x * weight\n",
    }
    (tmp_path / "definition.json").write_text(json.dumps(definition))
    (tmp_path / "workload.jsonl").write_text(json.dumps({"uuid": "w", "axes": {"B": rows}}) + "\n")
    op = load_operator(tmp_path)
    factory = InputFactory(op, CPU)
    seed0 = factory.make(op.workloads[0], 11, 1.0)
    mixed = factory.make(op.workloads[0], 11, 1.0, mix_seed=12)
    assert not torch.equal(mixed[0], seed0[0])
    if cols >= 3:  # edges kept where there is an interior
        assert torch.equal(mixed[0][..., 0], seed0[0][..., 0]) and torch.equal(
            mixed[0][..., -1], seed0[0][..., -1]
        )


# --- the CPU subset ----------------------------------------------------------------------------------


def test_cpu_runs_a_stated_representative_subset_the_same_every_time() -> None:
    op = load_operator(SOL_FIXTURES / "rmsnorm")
    every = list(range(len(op.workloads)))
    first, second = representative(op, every), representative(op, every)
    assert first == second and 1 < len(first.indices) <= 3
    sizes = [workload_elements(op, op.workloads[i]) for i in first.indices]
    assert max(sizes) <= CPU_WORK_CAP_ELEMENTS
    assert min(sizes) == min(workload_elements(op, w) for w in op.workloads)  # the smallest is in
    assert "--all-workloads" in first.note and all(op.workloads[i].id in first.note for i in first.indices)
    assert representative(op, every[:1]).note == ""


def test_auto_device_takes_no_gpu_lock_on_a_local_host_without_a_gpu() -> None:
    assert not needs_gpu_lock("auto", local=True, has_gpu=lambda: False)
    assert needs_gpu_lock("auto", local=True, has_gpu=lambda: True)
    assert needs_gpu_lock("auto", local=False, has_gpu=lambda: False)  # a remote host's GPU is unknown here
    assert needs_gpu_lock("cuda", local=True, has_gpu=lambda: False) and not needs_gpu_lock("cpu", True)


# --- end to end: each fixture's own reference as the candidate --------------------------------------


@pytest.mark.slow
def test_stride0_outputs_of_gigabytes_travel_and_compare_as_their_bases(tmp_path: Path) -> None:
    """Round 18 on the H200: an fp8 Mamba2 discretisation returns 17 GB stride-0 views of a few megabytes
    (its own reference ran the GPU out of memory: made contiguous to be sent, cloned for the late-write
    check, compared whole). Here 0.5 GiB views per output; only their bases cross to the parent."""
    op_dir = FIXTURES / "r18_expanded_outputs_huge"
    code, res = evaluate(tmp_path, op_dir, reference_candidate(op_dir))
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert res["output_transfer"]["shared_region_bytes"] < 16 << 20  # it was 940 MB


def reference_candidate(op_dir: Path, patch: tuple[str, str] | None = None) -> str:
    source = json.loads((op_dir / "definition.json").read_text())["reference"]
    if patch:
        assert patch[0] in source
        source = source.replace(*patch)
    return source + "\n\nDESTINATION_PASSING_STYLE = False\n"


def evaluate(
    tmp_path: Path, op_dir: Path, source: str, *extra: str, device: str = "cpu", timeout_s: float = 300
) -> tuple[int, dict[str, Any]]:
    """`python -m harness evaluate` (on CPU unless told) in a fresh job directory (absolute paths)."""
    job = tmp_path / "job"
    shutil.copytree(HARNESS_DIR, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    (job / "kernel").mkdir()
    (job / "kernel" / "kernel.py").write_text(source)
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "evaluate", "--op-dir", str(op_dir), "--kernel-dir",
         str(job / "kernel"), "--out", str(job / "result.json"), "--device", device, "--seeds", "3", *extra],
        cwd=job,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )  # fmt: skip
    result = job / "result.json"
    assert result.is_file(), f"exit {proc.returncode}, no result.json: {proc.stderr[-3000:]}"
    return proc.returncode, json.loads(result.read_text())


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "int_literal_rope",
        "custom_rng_routing",
        "kv_cache_inplace",
        "expanded_bias",
        "safetensors_blob",
        "scalar_output",
    ],
)
def test_each_fixture_passes_with_its_own_reference_as_the_candidate(tmp_path: Path, name: str) -> None:
    extra = ["--blob-root", str(make_blob_root(tmp_path / "blobs"))] if name == "safetensors_blob" else []
    code, res = evaluate(tmp_path, FIXTURES / name, reference_candidate(FIXTURES / name), *extra)
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert res["workloads"] and all(
        w["status"] == "PASS" and w["max_abs_error"] == 0.0 for w in res["workloads"]
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("patch", "status", "words"),
    [
        (
            ("    seq_lens.fill_(pos + 1)\n", "    seq_lens.fill_(pos + 1)\n    k.mul_(0.5)\n"),
            "REWARD_HACK",
            "was modified",
        ),
        (("    seq_lens.fill_(pos + 1)\n", ""), "INCORRECT", "seq_lens (updated in place)"),
        (("    value_cache[:, :, pos] = v\n", ""), "INCORRECT", "value_cache_out"),
    ],
)
def test_in_place_contract_is_enforced_both_ways(
    tmp_path: Path, patch: tuple[str, str], status: str, words: str
) -> None:
    op_dir = FIXTURES / "kv_cache_inplace"
    code, res = evaluate(tmp_path, op_dir, reference_candidate(op_dir, patch), "--shape-id", "kv-b3")
    assert code == 1 and res["status"] == status and words in res["message"], res["message"]


@pytest.mark.slow
def test_a_missing_blob_is_exit_2_naming_the_flag(tmp_path: Path) -> None:
    op_dir = FIXTURES / "safetensors_blob"
    code, res = evaluate(tmp_path, op_dir, reference_candidate(op_dir))
    assert code == 2 and "--blob-root DIR" in res["message"] and BLOB_REL in res["message"]


@pytest.mark.slow
def test_a_wrong_python_scalar_output_is_incorrect(tmp_path: Path) -> None:
    op_dir = FIXTURES / "scalar_output"
    wrong = reference_candidate(op_dir, (".sum().item())", ".sum().item() * 1.5)"))
    code, res = evaluate(tmp_path, op_dir, wrong)
    assert code == 1 and res["status"] == "INCORRECT" and "total" in res["message"], res["message"]


@pytest.mark.skipif(inputs_mod.FP4X2 is None, reason="this torch has no float4_e2m1fn_x2")
def test_packed_fp4_inputs_are_randn_of_the_declared_shape_two_values_a_byte() -> None:
    gen = torch.Generator().manual_seed(1)
    t = inputs_mod._random_tensor("a", (4, 8), inputs_mod.FP4X2, gen, CPU, 1.0, False)
    assert t.dtype == inputs_mod.FP4X2 and tuple(t.shape) == (4, 4)  # the last dimension halves, as SOL's
    nibbles = torch.stack((t.view(torch.uint8) & 15, t.view(torch.uint8) >> 4), -1)
    assert len(torch.unique(nibbles)) > 4  # several magnitudes and both signs


def test_digests_sum_in_chunks_without_an_int64_copy_of_the_whole_tensor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aka_graph.tools.evaluator.harness import runner

    values = [
        torch.randn(300, 70).to(torch.bfloat16),
        torch.randn(16).expand(8, 16),
        torch.tensor([True, False]),
    ]
    whole = digest(values)
    monkeypatch.setattr(runner, "DIGEST_CHUNK", 13)
    assert digest(values) == whole  # the same exact fingerprint, chunk by chunk
