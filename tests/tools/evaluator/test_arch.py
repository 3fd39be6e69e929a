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


# Compute capabilities from NVIDIA's CUDA GPU list and AMD's ROCm hardware table: an independent source,
# not the harness table read back (a wrong row there fails here).
KNOWN_ARCHS = {
    "H200": "sm_90",
    "H100-PCIe": "sm_90",
    "H100-SXM": "sm_90",
    "A100": "sm_80",
    "L40S": "sm_89",
    "B200": "sm_100",
    "MI300X": "gfx942",
}


@pytest.mark.parametrize(("platform", "arch"), sorted(KNOWN_ARCHS.items()))
def test_without_a_gpu_the_platform_decides_through_the_harness_table(platform: str, arch: str) -> None:
    resolved = resolve_arch(platform, None)
    assert (resolved.name, resolved.arch) == (platform, arch)
    assert resolve_arch(platform.lower(), None).arch == arch


def test_every_gpu_in_the_table_has_a_known_architecture() -> None:
    assert set(GPU_SPECS) == set(KNOWN_ARCHS)


def test_platform_names_are_case_insensitive_and_cpu_is_a_platform() -> None:
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
