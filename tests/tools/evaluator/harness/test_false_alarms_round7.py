"""False alarms, round 7: honest kernels and valid SOL operators the evaluator must PASS.

Part 1: honest candidates (`candidates/honest7_*`) for the shared fixtures, written with idioms real
kernel engineers use. Part 2: small operators of our own (`tests/fixtures/sol/r7_*`) exercising legal
corners of the SOL format; each is evaluated with its own reference as the candidate.

The second group of each list was refused when found (round 7): the static source policy flagged a
parameter named `input`, a read-only `open`, `t.__class__.__name__`, "definition.json" inside a message,
a dataclass field named `operator`, `getattr(F, ACTIVATION)` and `torch.backends.cudnn.benchmark = True`;
the module loader refused a relative import below a nested entry point and a helper imported lazily.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SOL_FIXTURES
from tests.tools.evaluator.harness.test_adversarial import CANDIDATES, RMSNORM_SHAPES, describe, run_harness
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate, reference_candidate

RMSNORM_7 = RMSNORM_SHAPES[:1]  # batch 7
MATMUL_SMALL = ["matmul-003"]  # 64 x 128 x 64

HONEST = [
    # -- passed when found: keep them passing ----------------------------------------------------------
    pytest.param("honest7_helper_module", "rmsnorm", RMSNORM_7, id="helper_module"),
    pytest.param("honest7_runtime_idioms", "rmsnorm", RMSNORM_7, id="runtime_idioms"),
    pytest.param("honest7_numpy_path", "rmsnorm", RMSNORM_7, id="numpy_path"),
    pytest.param("honest7_transposed_view", "rmsnorm", RMSNORM_7, id="transposed_view"),
    pytest.param("honest7_padded_view", "rmsnorm", RMSNORM_7, id="padded_view"),
    pytest.param("honest7_autocast_off", "rmsnorm", RMSNORM_7, id="autocast_off"),
    pytest.param("honest7_custom_op", "rmsnorm", RMSNORM_7, id="custom_op"),
    pytest.param("honest7_matmul_precision", "rmsnorm", RMSNORM_7, id="matmul_precision"),
    pytest.param("honest7_dps_returns_output", "rmsnorm", RMSNORM_7, id="dps_returns_output"),
    pytest.param("honest7_workspace_cache", "custom_inputs_matmul", MATMUL_SMALL, id="workspace_cache"),
    # -- false alarms when found (round 7), fixed -----------------------------------------------------
    pytest.param(
        "honest7_input_param",
        "rmsnorm",
        RMSNORM_7,
        id="input_param",
    ),
    pytest.param(
        "honest7_config_json",
        "rmsnorm",
        RMSNORM_7,
        id="config_json",
    ),
    pytest.param(
        "honest7_class_name_error",
        "rmsnorm",
        RMSNORM_7,
        id="class_name_error",
    ),
    pytest.param(
        "honest7_assert_mentions_definition",
        "rmsnorm",
        RMSNORM_7,
        id="assert_mentions_definition",
    ),
    pytest.param(
        "honest7_epilogue_operator",
        "rmsnorm",
        RMSNORM_7,
        id="epilogue_operator",
    ),
    pytest.param(
        "honest7_getattr_activation",
        "rmsnorm",
        RMSNORM_7,
        id="getattr_activation",
    ),
    pytest.param(
        "honest7_cudnn_benchmark_flag",
        "rmsnorm",
        RMSNORM_7,
        id="cudnn_benchmark_flag",
    ),
    pytest.param(
        "honest7_nested_package",
        "rmsnorm",
        RMSNORM_7,
        id="nested_package",
    ),
    pytest.param(
        "honest7_lazy_helper_import",
        "rmsnorm",
        RMSNORM_7,
        id="lazy_helper_import",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("candidate", "fixture", "shape_ids"), HONEST)
def test_honest_candidate_passes(candidate: str, fixture: str, shape_ids: list[str], tmp_path: Path) -> None:
    result = run_harness(tmp_path, SOL_FIXTURES / fixture, CANDIDATES / candidate, shape_ids, timeout_s=240)
    assert result["status"] == "PASS", describe(result)
    assert all(w["status"] == "PASS" for w in result["workloads"]), describe(result)


OWN_FIXTURES = [
    pytest.param("r7_const_axes_float64", id="const_axes_float64"),
    pytest.param("r7_scalar_infinity", id="scalar_infinity"),
    pytest.param("r7_nan_outputs", id="nan_outputs"),
    pytest.param("r7_unused_input", id="unused_input"),
    pytest.param("r7_expanded_output", id="expanded_output"),
    pytest.param(
        "r7_input_named_input",
        id="input_named_input",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("name", OWN_FIXTURES)
def test_own_fixture_passes_with_its_reference(name: str, tmp_path: Path) -> None:
    code, res = evaluate(tmp_path, FIXTURES / name, reference_candidate(FIXTURES / name), "--all-workloads")
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert all(w["status"] == "PASS" for w in res["workloads"]), res["workloads"]
