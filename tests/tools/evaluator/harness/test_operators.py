"""The operator model: both formats load into one model, axes resolve safely, inputs follow SOL's
generation rules and regenerate identically from a seed, and bad files get errors naming the fix."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from aka_graph.tools.evaluator.harness.axes import AxisError, resolve_axes, safe_eval
from aka_graph.tools.evaluator.harness.inputs import InputFactory, name_rule, output_shapes
from aka_graph.tools.evaluator.harness.loading import load_operator
from aka_graph.tools.evaluator.harness.modules import load_input_module, load_reference
from aka_graph.tools.evaluator.harness.opmodel import OperatorError
from tests.conftest import REPO_ROOT, SOL_FIXTURES

NATIVE_REFERENCE = """
import torch

class Model(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(n))

    def forward(self, x):
        return x * self.w
"""
FIXTURES = ["rmsnorm", "nemotron_rms_norm", "flux_rope", "gemma3_swiglu", "custom_inputs_matmul"]


def _definition(**over: object) -> dict:
    base = {
        "name": "toy_norm",
        "op_type": "rmsnorm",
        "axes": {
            "B": {"type": "var"},
            "H": {"type": "const", "value": 8},
            "H2": {"type": "expr", "expression": "H // 2"},
            "S": {"type": "var"},
        },
        "inputs": {
            "x": {"shape": ["B", "H"], "dtype": "bfloat16"},
            "weight": {"shape": ["H"], "dtype": "bfloat16"},
            "up_proj": {"shape": ["H2", "H"], "dtype": "float32"},
            "attn_mask": {"shape": ["S", "S"], "dtype": "float32"},
            "rstd": {"shape": ["B"], "dtype": "float32"},
            "freqs_cos": {"shape": ["S", "H"], "dtype": "float32"},
            "idx": {"shape": ["B"], "dtype": "int32"},
            "flags": {"shape": ["B"], "dtype": "bool"},
            "q8": {"shape": ["B", "H"], "dtype": "float8_e4m3fn"},
            "s0": {"shape": [], "dtype": "float32"},
            "eps": {"shape": None, "dtype": "float32"},
            "pyrand": {"shape": None, "dtype": "int64"},
        },
        "outputs": {"y": {"shape": ["B", "H"], "dtype": "bfloat16"}},
        "reference": "import torch\ndef run(x, *rest):\n    return x.clone()\n",
    }
    base.update(over)
    return base


def _write(tmp_path: Path, definition: dict, workloads: list[dict]) -> Path:
    (tmp_path / "definition.json").write_text(json.dumps(definition))
    (tmp_path / "workload.jsonl").write_text("\n".join(json.dumps(w) for w in workloads) + "\n")
    return tmp_path


def _toy(tmp_path: Path) -> Path:
    return _write(
        tmp_path,
        _definition(),
        [
            {
                "uuid": "w1",
                "axes": {"B": 5, "S": 4},
                "inputs": {"eps": {"type": "scalar", "value": 1e-6}, "s0": {"type": "scalar", "value": 2.5}},
                "tolerance": {
                    "max_atol": 0.5,
                    "max_rtol": 0.25,
                    "required_matched_ratio": 0.9,
                    "max_error_cap": 3.0,
                    "allow_negative_inf": True,
                },
            }
        ],
    )


@pytest.mark.parametrize("name", FIXTURES)
def test_every_shared_fixture_loads_with_resolved_axes_and_a_compiling_reference(name: str) -> None:
    op = load_operator(SOL_FIXTURES / name)
    assert op.kind == "sol" and op.workloads and op.inputs and op.outputs
    for wl in op.workloads:
        for shape, _dtype in output_shapes(op, wl):
            assert all(isinstance(d, int) and d > 0 for d in shape)
    assert callable(load_reference(op).run)


def test_expr_axes_resolve_in_dependency_order_and_reject_code() -> None:
    axes = {
        "a": {"type": "expr", "expression": "b * 2 + cdiv(c, 3)"},
        "b": {"type": "expr", "expression": "c - 1"},
        "c": {"type": "var"},
    }
    assert resolve_axes(axes, {"c": 7}, "here") == {"c": 7, "b": 6, "a": 15}
    for bad in ("__import__('os').system('true')", "c.__class__", "[c]", "open('x')"):
        with pytest.raises(AxisError, match="only"):
            safe_eval(bad, {"c": 1})
    with pytest.raises(AxisError, match="no value in the workload"):
        resolve_axes({"c": {"type": "var"}}, {}, "wl.jsonl:3")


def test_zero_d_tensors_python_scalars_and_tolerances_load(tmp_path: Path) -> None:
    op = load_operator(_toy(tmp_path))
    wl = op.workloads[0]
    assert wl.axes == {"B": 5, "H": 8, "H2": 4, "S": 4}
    tol = wl.tolerance
    assert (tol.atol, tol.rtol, tol.matched_ratio, tol.error_cap, tol.allow_negative_inf) == (
        0.5,
        0.25,
        0.9,
        3.0,
        True,
    )
    values = dict(
        zip([s.name for s in op.inputs], InputFactory(op, torch.device("cpu")).make(wl, 1, 1.0), strict=True)
    )
    assert values["s0"] == 2.5 and isinstance(values["s0"], float)  # a scalar descriptor: its value, as SOL
    assert values["eps"] == 1e-6 and isinstance(values["eps"], float)  # Python scalar
    assert isinstance(values["pyrand"], int)  # a random Python scalar is drawn, then .item()


def test_default_tolerance_and_empty_hf_id_are_accepted(tmp_path: Path) -> None:
    op = load_operator(_write(tmp_path, _definition(hf_id=""), [{"uuid": "w", "axes": {"B": 2, "S": 2}}]))
    tol = op.workloads[0].tolerance
    assert (tol.atol, tol.rtol, tol.matched_ratio, tol.error_cap) == (1e-2, 1e-2, 0.99, None)


def test_sol_name_rules_generate_the_documented_distributions(tmp_path: Path) -> None:
    op = load_operator(_toy(tmp_path))
    wl = op.workloads[0]
    names = [s.name for s in op.inputs]
    v = dict(zip(names, InputFactory(op, torch.device("cpu")).make(wl, 7, 1.0), strict=True))
    assert torch.equal(v["weight"], torch.ones(8, dtype=torch.bfloat16))  # norm weight -> ones
    assert float(v["up_proj"].std()) == pytest.approx(1 / math.sqrt(8), rel=0.6)  # randn / sqrt(fan_in)
    mask = v["attn_mask"]  # not one of SOL's mask names: plain randn, as SOL draws it
    assert bool(torch.isfinite(mask).all()) and float(mask.std()) > 0.3
    assert float(v["rstd"].min()) >= 0.1  # |randn| + 0.1
    assert float(v["freqs_cos"].abs().max()) <= 1.0
    assert v["idx"].dtype == torch.int32 and int(v["idx"].min()) >= -1024 and int(v["idx"].max()) < 1024
    assert v["flags"].dtype == torch.bool
    assert v["q8"].dtype == torch.float8_e4m3fn and float(v["q8"].float().abs().max()) <= 2.0
    assert name_rule("probs", 2, False) == "softmax" and name_rule("ln_bias", 1, False) == "zeros"
    assert name_rule("hidden", 2, True) == "randn" and name_rule("o_proj", 1, False) == "randn"


def test_inputs_regenerate_identically_from_a_seed_and_differ_across_seeds_and_scales(tmp_path: Path) -> None:
    op = load_operator(_toy(tmp_path))
    wl, f = op.workloads[0], InputFactory(op, torch.device("cpu"))
    a, b, c = f.make(wl, 11, 1.0), f.make(wl, 11, 1.0), f.make(wl, 12, 1.0)
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], c[0])
    scaled = f.make(wl, 11, 2.0)
    assert not torch.equal(
        scaled[1], torch.ones(8, dtype=torch.bfloat16)
    )  # the other-scale seed: random weights
    mixed = f.make(wl, 11, 1.0, mix_seed=12)
    assert torch.equal(mixed[0][0], a[0][0]) and torch.equal(mixed[0][-1], a[0][-1])  # same edges
    assert torch.equal(mixed[0][1:-1], c[0][1:-1])  # fresh interior


def test_a_mixed_seed_of_an_operator_whose_generator_gives_every_input_is_one_draw_of_its_own_seed() -> None:
    """Only "random" inputs are mixed; where the generator gives them all, the mixed seed is the mix
    seed's own inputs, drawn once (a generator that takes seconds a draw was called three times)."""
    op = load_operator(REPO_ROOT / "tests" / "fixtures" / "sol" / "slow_elementwise_generator")
    module = load_reference(op)
    calls: list[int] = []
    real = module.get_inputs

    def counted(axes: dict, device: torch.device) -> dict:
        calls.append(1)
        return real(axes, device)

    module.get_inputs = counted
    module.time = type("NoSleep", (), {"sleep": staticmethod(lambda s: None)})
    f = InputFactory(op, torch.device("cpu"), module)
    wl = op.workloads[0]
    assert not f.mixable(wl)
    mixed = f.make(wl, 11, 1.0, mix_seed=12)
    assert len(calls) == 1
    own = f.make(wl, 12, 1.0)
    assert all(torch.equal(m, o) for m, o in zip(mixed, own, strict=True))
    assert not torch.equal(mixed[0], f.make(wl, 11, 1.0)[0])


def test_custom_inputs_come_from_the_reference_entrypoint() -> None:
    op = load_operator(SOL_FIXTURES / "custom_inputs_matmul")
    f = InputFactory(op, torch.device("cpu"), load_reference(op))
    a, b = f.make(op.workloads[2], 5, 1.0)
    assert a.shape == (64, 128) and b.shape == (128, 64)
    assert float(a.std()) == pytest.approx(1 / math.sqrt(128), rel=0.2)


def test_safetensors_inputs_are_read_without_the_safetensors_package(tmp_path: Path) -> None:
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    header = json.dumps({"w": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]}}).encode()
    (tmp_path / "w.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + t.numpy().tobytes())
    d = _definition(
        inputs={"x": {"shape": ["B", "H"], "dtype": "float32"}, "w": {"shape": [3, 4], "dtype": "float32"}}
    )
    op = load_operator(
        _write(
            tmp_path,
            d,
            [
                {
                    "uuid": "s",
                    "axes": {"B": 2, "S": 1},
                    "inputs": {"w": {"type": "safetensors", "path": "w.safetensors", "tensor_key": "w"}},
                }
            ],
        )
    )
    assert torch.equal(InputFactory(op, torch.device("cpu")).make(op.workloads[0], 1, 1.0)[1], t)


def test_native_operators_load_without_reading_hidden_files(tmp_path: Path) -> None:
    (tmp_path / "reference.py").write_text(NATIVE_REFERENCE)
    (tmp_path / "input.py").write_text(
        "import torch\ndef _make_inputs(rows, n):\n    return [torch.randn(rows, n)]\n"
    )
    (tmp_path / "shapes.json").write_text(
        json.dumps({"s1": {"init_kwargs": {"n": 4}, "input_kwargs": {"rows": 3, "n": 4}}})
    )
    (tmp_path / "metadata.json").write_text("{not json: must never be read")
    (tmp_path / "roofline.json").write_text("{not json either")
    op = load_operator(tmp_path)
    assert op.kind == "native" and [w.id for w in op.workloads] == ["s1"]
    f = InputFactory(op, torch.device("cpu"), load_reference(op), load_input_module(op))
    assert f.make(op.workloads[0], 3, 1.0)[0].shape == (3, 4)


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda d: d.pop("reference"), "missing required field 'reference'"),
        (lambda d: d["axes"].update(B={"type": "weird"}), "use const, var or expr"),
        (lambda d: d["inputs"]["x"].pop("dtype"), "inputs.x needs 'shape'"),
    ],
)
def test_bad_definitions_name_the_file_and_the_problem(tmp_path: Path, mutate, words: str) -> None:
    d = _definition()
    mutate(d)
    _write(tmp_path, d, [{"uuid": "w", "axes": {"B": 2, "S": 2}}])
    with pytest.raises(OperatorError, match=r"definition\.json|workload\.jsonl") as err:
        load_operator(tmp_path)
    assert words in str(err.value)


def test_unknown_shape_ids_and_non_operator_directories_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(OperatorError, match="unknown --shape-id"):
        load_operator(SOL_FIXTURES / "rmsnorm").select(["nope"])
    with pytest.raises(OperatorError, match="neither a SOL-ExecBench operator"):
        load_operator(tmp_path)
    _write(tmp_path, _definition(), [{"uuid": "w", "axes": {"S": 2}}])
    with pytest.raises(OperatorError, match="var axis 'B' has no value"):
        load_operator(tmp_path)


def test_input_digests_are_exact_whatever_the_thread_count_and_see_one_changed_element() -> None:
    from aka_graph.tools.evaluator.harness.runner import digest

    values = [
        torch.randn(300, 700).to(torch.bfloat16),
        torch.randn(64, dtype=torch.complex128),
        torch.randn(8).to(torch.float8_e4m3fn),
        torch.randn(9, 4).t(),
        torch.tensor(True),
        torch.randint(-5, 5, (6,)),
        1e-5,
        torch.zeros(0),
    ]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        single = digest(values)
        torch.set_num_threads(max(2, threads))
        assert digest(values) == single  # the parent and a one-thread worker agree exactly
    finally:
        torch.set_num_threads(threads)
    changed = [v.clone() if isinstance(v, torch.Tensor) else v for v in values]
    changed[0][150, 350] += 1
    assert digest(changed)[0] != single[0] and digest(changed)[1:] == single[1:]
