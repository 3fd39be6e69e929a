"""On a CUDA GPU, a native Model returning a complex tensor (torch.fft's cuFFT, under graph capture) is
judged on both parts: the honest spectrum PASSes, the one with only its real part right is INCORRECT
(test_redteam_round11.py on the CPU).

Run: python3 -m pytest -m gpu tests/gpu/test_complex_outputs_gpu.py -v -s"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_adversarial import CANDIDATES
from tests.tools.evaluator.harness.test_real_benchmark_classes import evaluate
from tests.tools.evaluator.harness.test_redteam_round11 import SPECTRUM

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    ("candidate", "status"),
    [("honest11_complex_spectrum", "PASS"), ("redteam11_complex_real_part_only", "INCORRECT")],
)
def test_complex_outputs_on_cuda(tmp_path: Path, candidate: str, status: str) -> None:
    source = (CANDIDATES / candidate / "kernel.py").read_text()
    _, result = evaluate(tmp_path, SPECTRUM, source, device="cuda")
    print(candidate, result["status"], result["message"][:300])
    for w in result["workloads"]:
        print(" ", w["id"], w["status"], w.get("timing_method"), w.get("latency_us"))
    assert result["status"] == status, result["message"]
