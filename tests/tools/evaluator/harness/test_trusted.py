"""What the trusted parent says when the operator's own reference cannot run where it is (trusted.py)."""

from __future__ import annotations

import pytest
import torch

from aka_graph.tools.evaluator.harness import trusted
from aka_graph.tools.evaluator.harness.trusted import fp4_hint

NVFP4 = ["bfloat16", "float4_e2m1fn_x2", "float8_e4m3fn", "float32"]  # a public nvfp4 linear layer's


@pytest.mark.parametrize(
    ("dtypes", "capability", "says"),
    [
        (NVFP4, (9, 0), "fp4 matmuls need an sm_100 GPU or later, such as a B200; this one is sm_90"),
        (NVFP4, (10, 0), ""),  # a Blackwell GPU: the reference's failure is something else
        (["bfloat16", "float8_e4m3fn"], (9, 0), ""),  # fp8 runs on the H200
    ],
)
def test_an_fp4_reference_failing_before_blackwell_is_said_to_need_blackwell(
    dtypes: list[str], capability: tuple[int, int], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every nvfp4 problem of the public benchmark failed on the H200 with CUBLAS_STATUS_NOT_SUPPORTED
    (round 20): the message now says why, not only that the reference raised."""
    monkeypatch.setattr(trusted.torch.cuda, "get_device_capability", lambda device=None: capability)
    hint = fp4_hint(dtypes, torch.device("cuda", 0))
    assert (says in hint) if says else hint == ""


def test_no_hint_on_a_host() -> None:
    assert fp4_hint(NVFP4, torch.device("cpu")) == ""
