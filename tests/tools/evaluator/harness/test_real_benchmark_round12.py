"""Round twelve's false-alarm hunt (a helper who had not written the evaluator, SOL-ExecBench's format
documentation and its driver's source in hand): 34 operators in the style of real L1/L2 problems
(convolutions with groups/dilation/channels_last, transposed and 3-d convolutions, GQA causal SDPA under
sdpa_kernel, a boolean key-padding mask, autocast, einsum with an ellipsis and scans, stable sorts with
ties, bucketize/searchsorted, a torch.return_types structseq return, affine layer/group norms, dataclass and
enum helpers, torch.jit.script and torch.library.custom_op in the reference, a reference that seeds its own
RNG, .tolist() over ragged lengths, odd descriptions and unknown workload keys, +-inf in fp16 and bf16
outputs, 0-d tensor inputs with int8/int16/bool outputs, inputs named self/out/device/dtype, deterministic-
algorithm switches, warnings and a deprecated context manager, expression axes using every operator the
format allows, random int32/int16 bit manipulation, Cholesky solves, a Triton reference under
@triton.autotune, a dict return with an undeclared entry, a custom generator returning undeclared helper
tensors, references that execute far more FLOPs than the operator needs: the diagonal of a full matmul, a
one-hot embedding matmul), each with its own reference as the candidate, and 21 honest candidates written
differently (Triton, autotuned Triton, Triton found by importlib.util.find_spec, torch.compile, lru_cache'd
masks, module-level workspaces, TF32 switches, contiguous where the reference is channels_last, destination-
passing where the reference returns a structseq, a side CUDA stream, CUDA-graph replay, row dot products and
an index_select where the reference multiplies matrices, version and platform checks,
torch.compile(mode="reduce-overhead") with and without a clone of its result), and a SOL solution.json whose
entry point sits in a sub-folder beside a module it imports relatively.

What it found refused before this round, PASSing now:
- r12_triton_autotune_reference and honest12_triton_autotuned_bias_gelu: @triton.autotune under Triton's
  CPU interpreter asks the active GPU driver for a benchmarker, and a host without a GPU has none:
  "RuntimeError: 0 active drivers" (INFRA_ERROR for the reference, RUNTIME_ERROR for the candidate).
  runner.interpreted_autotune now makes a stand-in driver active there, whose benchmarker reports every
  configuration equal (the first is kept); it is called after the reference is loaded (trusted.py) and
  after the candidate is imported (candidate.import_candidate), on CPU only.

Said more plainly this round: a custom_inputs_entrypoint that raises (SOL's driver calls it whatever the
workload marks) was INFRA_ERROR "harness failure: AssertionError ..." with the harness's traceback; it is
now said as the operator's generator (inputs.GeneratorFailed, turned into trusted.ReferenceFailed):
"the operator's custom_inputs_entrypoint NAME raised on cpu (workload W): ...".

Fixed by the lead after the hunt:
- r12_python_helpers_dataclass_enum was INFRA_ERROR "harness failure: AttributeError: 'NoneType' object has
  no attribute '__dict__'" while loading the reference: modules.load_reference compiled the source
  inheriting its own `from __future__ import annotations` (every annotation a string), and @dataclass then
  looked the class's module up in sys.modules (dataclasses._is_type), where "sol_reference" was not. Now
  compiled with dont_inherit=True and registered in sys.modules while it runs; it PASSes.
- honest12_sys_platform_check: sys.platform is in policy.SAFE_SYS now (a read-only string, as
  sys.version_info is).
- honest12_rowwise_dot_bmm, honest12_embedding_index_select (GPU only): the hard speed-of-light bound is
  the outputs' bytes alone now (speed_of_light.bound); the reference's FLOPs give a note, not a verdict.
- honest12_compile_reduce_overhead_noclone (GPU only): INCORRECT now, with the rule and the fix named
  (guards.earlier_spans), not RUNTIME_ERROR with the harness's traceback; still not a PASS.
- r12_deterministic_switches_reference (its own reference as the candidate): REWARD_HACK "changes
  os.environ (setdefault)" for `os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")`, which
  torch.use_deterministic_algorithms(True) needs before a cuBLAS matmul: that key with one of cuBLAS's two
  documented values is allowed now (policy.library_env_setting; at run time guards._library_setting).
- honest12_optional_triton_find_spec, honest12_importlib_metadata_version: REWARD_HACK "imports
  'importlib.util'" / "'importlib.metadata'" for `importlib.util.find_spec("triton") is not None` and
  `importlib.metadata.version("torch")`: each is allowed now when called at once with one string literal
  naming no banned module (policy.probes_only); import_module, spec loading and entry points stay refused.

Refused on the GPU alone: see tests/gpu/test_real_benchmark_round12_gpu.py (REFUSED_ON_CUDA).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from aka_graph.tools.evaluator.harness.loading import load_operator
from aka_graph.tools.evaluator.harness.modules import load_reference
from tests.conftest import REPO_ROOT
from tests.tools.evaluator.harness.test_adversarial import CANDIDATES
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate, reference_candidate

ROUND12 = sorted(p.name for p in FIXTURES.glob("r12_*"))


def fixture(name: str) -> Path:
    return FIXTURES / name


# the fixtures whose own reference, given as the candidate, is still refused
STILL_REFUSED: dict[str, str] = {}

HONEST = [
    ("r12_jit_script_helper", "honest12_triton_bias_gelu"),
    ("r12_jit_script_helper", "honest12_triton_autotuned_bias_gelu"),
    ("r12_autocast_linear_gelu", "honest12_triton_bf16_gemm_gelu"),
    ("r12_autocast_linear_gelu", "honest12_side_stream_weight_prep"),
    ("r12_odd_description_extra_keys", "honest12_compiled_silu_fp16"),
    ("r12_sdpa_gqa_causal_math_backend", "honest12_gqa_cached_causal_mask"),
    ("r12_segment_mean_tolist", "honest12_segment_mean_workspace"),
    ("r12_conv2d_groups_channels_last", "honest12_conv2d_tf32_contiguous"),
    ("r12_stable_sort_ties", "honest12_stable_argsort_gather"),
    ("r12_einsum_scans", "honest12_scans_by_hand"),
    ("r12_bucketize_searchsorted", "honest12_bucketize_by_counting"),
    ("r12_max_structseq_return", "honest12_rowmax_dps"),
    ("r12_layer_group_norm_affine", "honest12_norms_by_hand"),
    ("r12_layer_group_norm_affine", "honest12_cuda_graph_replay"),
    ("r12_jit_script_helper", "honest12_optional_triton_find_spec"),
    ("r12_diagonal_of_full_matmul", "honest12_rowwise_dot_bmm"),
    ("r12_one_hot_embedding_matmul", "honest12_embedding_index_select"),
    ("r12_odd_description_extra_keys", "honest12_sys_platform_check"),
    ("r12_odd_description_extra_keys", "honest12_importlib_metadata_version"),
    ("r12_odd_description_extra_keys", "honest12_compile_reduce_overhead"),
    ("r12_odd_description_extra_keys", "honest12_compile_reduce_overhead_noclone"),
]
# the honest candidates still refused
STILL_REFUSED_CANDIDATES: dict[str, str] = {}


def own_reference_cases() -> list[object]:
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=STILL_REFUSED[name]))
        if name in STILL_REFUSED
        else name
        for name in ROUND12
    ]


def honest_cases(also_refused: dict[str, str] | None = None) -> list[object]:
    """HONEST as parameters, those still refused (and `also_refused`: the device's own) marked xfail."""
    refused = {**STILL_REFUSED_CANDIDATES, **(also_refused or {})}

    def marks(cand: str) -> list[pytest.MarkDecorator]:
        reason = refused.get(cand)
        return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []

    return [pytest.param(name, cand, id=cand, marks=marks(cand)) for name, cand in HONEST]


def test_the_round_twelve_fixtures_and_candidates_are_all_here() -> None:
    assert len(ROUND12) == 34, ROUND12
    honest12 = sorted(p.name for p in CANDIDATES.glob("honest12_*") if (p / "kernel.py").is_file())
    assert honest12 == sorted(c for _, c in HONEST)
    assert set(STILL_REFUSED) <= set(ROUND12) and set(STILL_REFUSED_CANDIDATES) <= set(honest12)


@pytest.mark.parametrize("name", ROUND12)
def test_each_fixture_is_in_sol_s_own_format(name: str) -> None:
    """What SOL's pydantic models check (definition.py, workload.py): run()'s parameters are the inputs
    in order, a workload's inputs are all custom or none, tolerances sit in the workload rows."""
    definition = json.loads((fixture(name) / "definition.json").read_text())
    assert "tolerance" not in definition
    source = definition["reference"]
    run = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "run")
    assert [a.arg for a in run.args.args] == list(definition["inputs"])
    for line in (fixture(name) / "workload.jsonl").read_text().splitlines():
        kinds = {spec["type"] for spec in json.loads(line)["inputs"].values()}
        assert "custom" not in kinds or kinds == {"custom"}, line


@pytest.mark.slow
@pytest.mark.parametrize("name", own_reference_cases())
def test_each_passes_with_its_own_reference(tmp_path: Path, name: str) -> None:
    code, res = evaluate(tmp_path, fixture(name), reference_candidate(fixture(name)))
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert res["workloads"] and all(w["status"] == "PASS" for w in res["workloads"])


@pytest.mark.slow
@pytest.mark.parametrize(("name", "candidate"), honest_cases())
def test_an_honest_candidate_written_differently_passes(tmp_path: Path, name: str, candidate: str) -> None:
    code, res = evaluate(tmp_path, FIXTURES / name, (CANDIDATES / candidate / "kernel.py").read_text())
    assert code == 0 and res["status"] == "PASS", res["message"]


def test_a_reference_defining_a_dataclass_loads() -> None:
    module = load_reference(load_operator(fixture("r12_python_helpers_dataclass_enum")))
    assert module.CFG.gain == pytest.approx(0.5 * 2**0.5)


def test_the_dataclass_reference_loads_as_sol_s_driver_loads_it(tmp_path: Path) -> None:
    """The control for the test above: imported from a file, as SOL's eval_driver does, it loads."""
    source = json.loads((fixture("r12_python_helpers_dataclass_enum") / "definition.json").read_text())
    path = tmp_path / "_reference.py"
    path.write_text(source["reference"])
    spec = importlib.util.spec_from_file_location("_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.CFG.gain == pytest.approx(0.5 * 2**0.5)


@pytest.mark.slow
def test_the_deterministic_reference_without_its_environment_write_passes(tmp_path: Path) -> None:
    """Only the os.environ write is refused: use_deterministic_algorithms and the cudnn flags are not."""
    name = "r12_deterministic_switches_reference"
    line = 'os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
    code, res = evaluate(tmp_path, FIXTURES / name, reference_candidate(FIXTURES / name, (line, "")))
    assert code == 0 and res["status"] == "PASS", res["message"]


def evaluate_solution_dir(op_dir: Path, solution_dir: Path, device: str = "cpu") -> tuple[int, dict]:
    """`python -m aka_graph evaluate OP SOLUTION_DIR --json`: a SOL solution.json directory as given."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "aka_graph",
            "evaluate",
            str(op_dir),
            str(solution_dir),
            "--device",
            device,
            "--json",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    start = proc.stdout.find("{")
    assert start >= 0, f"exit {proc.returncode}, no JSON: {proc.stderr[-2000:]}"
    return proc.returncode, json.loads(proc.stdout[start:])


SOLUTION_DIR = CANDIDATES / "honest12_solution_json_subfolder"


@pytest.mark.slow
def test_a_sol_solution_with_its_entry_point_in_a_subfolder_passes() -> None:
    """solution.json as SOL's docs write one: languages ["triton"], target_hardware, dependency
    specifiers, entry point src/gelu_kernels.py::bias_gelu_forward (destination-passing), and a sibling
    module it imports relatively (no __init__.py)."""
    spec = json.loads((SOLUTION_DIR / "solution.json").read_text())["spec"]
    assert spec["entry_point"].startswith("src/") and spec["destination_passing_style"] is True
    code, res = evaluate_solution_dir(FIXTURES / "r12_jit_script_helper", SOLUTION_DIR)
    assert code == 0 and res["status"] == "PASS", res["message"]


@pytest.mark.slow
def test_a_custom_generator_that_raises_is_said_to_be_the_operator_s(tmp_path: Path) -> None:
    op = tmp_path / "op"
    shutil.copytree(FIXTURES / "r12_null_descriptions_chained_exprs", op)
    definition = json.loads((op / "definition.json").read_text())
    broken = '    raise ValueError("generator broken on purpose")\n'
    definition["reference"] = definition["reference"].replace("    return {}\n", broken, 1)
    assert broken in definition["reference"]
    (op / "definition.json").write_text(json.dumps(definition))
    code, res = evaluate(tmp_path, op, reference_candidate(FIXTURES / "r12_null_descriptions_chained_exprs"))
    assert code == 1 and res["status"] == "INFRA_ERROR", res["message"]
    assert res["message"].startswith(
        "the operator's custom_inputs_entrypoint unused_generator raised on cpu (workload nd-t"
    ), res["message"]
    assert "generator broken on purpose" in res["message"] and "harness failure" not in res["message"]


AUTOTUNED = """
import torch, triton, triton.language as tl
from aka_graph.tools.evaluator.harness.runner import interpreted_autotune

@triton.autotune(configs=[triton.Config({"B": 8}), triton.Config({"B": 32})], key=["n"])
@triton.jit
def double(x_ptr, y_ptr, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y_ptr + i, 2 * tl.load(x_ptr + i, mask=i < n), mask=i < n)

if HELPED:
    interpreted_autotune()
x = torch.arange(20, dtype=torch.float32)
y = torch.empty_like(x)
double[lambda meta: (triton.cdiv(20, meta["B"]),)](x, y, 20)
assert torch.equal(y, 2 * x)
print("ran", double.best_config.all_kwargs()["B"])
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="a host with a GPU driver needs no stand-in")
@pytest.mark.parametrize("helped", [False, True])
def test_an_autotuned_triton_kernel_runs_interpreted_only_with_the_stand_in_driver(helped: bool) -> None:
    pytest.importorskip("triton")
    proc = subprocess.run(
        [sys.executable, "-c", f"HELPED = {helped}\n" + AUTOTUNED],
        cwd=REPO_ROOT,
        env={**os.environ, "TRITON_INTERPRET": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    if helped:
        assert proc.returncode == 0 and proc.stdout.strip() == "ran 8", proc.stderr[-2000:]
    else:
        assert proc.returncode != 0 and "active drivers" in proc.stderr, proc.stderr[-2000:]
