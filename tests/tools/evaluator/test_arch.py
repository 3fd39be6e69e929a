"""Architecture resolution: real hardware first, then the configured platform, one shared table."""

from __future__ import annotations

import pytest

from aka_graph.tools.evaluator.arch import UnknownPlatformError, frameworks_for, resolve_arch
from aka_graph.tools.evaluator.harness.gpu_specs import GPU_SPECS


def test_detected_hardware_wins_over_the_configured_platform() -> None:
    arch = resolve_arch("A100", "NVIDIA H200")
    assert (arch.name, arch.arch, arch.vendor) == ("H200", "sm_90", "nvidia")
    assert arch.peak_bandwidth_tb_s == pytest.approx(4.8) and arch.measured_bandwidth_tb_s == pytest.approx(
        4.3
    )


def test_without_a_gpu_the_platform_decides_through_the_harness_table() -> None:
    for name, spec in GPU_SPECS.items():
        assert resolve_arch(name, None).arch == spec.arch
    assert resolve_arch("h100-pcie", None).name == "H100-PCIe"
    assert resolve_arch("cpu", None).is_cpu


def test_unknown_platforms_and_gpus_are_errors_naming_the_known_ones() -> None:
    with pytest.raises(UnknownPlatformError, match="H200") as err:
        resolve_arch("TPU9", None)
    assert "--platform" in str(err.value)
    with pytest.raises(UnknownPlatformError, match="peak table"):
        resolve_arch("H200", "NVIDIA GeForce GT 710")
    with pytest.raises(UnknownPlatformError, match="no GPU detected"):
        resolve_arch(None, None)


def test_frameworks_follow_the_architecture() -> None:
    assert frameworks_for(resolve_arch("H200", None)) == ["triton", "gluon", "cute_dsl", "cuda"]
    assert frameworks_for(resolve_arch("cpu", None)) == ["triton"]
    assert "gluon" not in frameworks_for(resolve_arch("A100", None))
