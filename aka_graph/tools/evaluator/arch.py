"""GPU architecture resolution for a campaign: the real hardware first, then the configured platform,
through the same peak table the harness uses (`harness/gpu_specs.py`). An unknown platform is an error
naming the known ones, never a silent default."""

from __future__ import annotations

from pydantic import BaseModel

from aka_graph.tools.evaluator.harness.gpu_specs import GPU_SPECS, GpuSpec, UnknownGpuError, lookup

CPU_PLATFORMS = ("cpu", "interpreter", "triton_interpreter")


class UnknownPlatformError(ValueError):
    """Neither the detected GPU nor the configured platform is in the peak table."""


class GpuArch(BaseModel):
    name: str
    arch: str
    vendor: str
    peak_bandwidth_tb_s: float | None = None
    peak_tflops: dict[str, float] = {}
    measured_bandwidth_tb_s: float | None = None
    l2_mb: float | None = None
    frameworks: list[str] = []

    @property
    def is_cpu(self) -> bool:
        return self.arch == "cpu"


def _from_spec(spec: GpuSpec) -> GpuArch:
    return GpuArch(
        name=spec.name,
        arch=spec.arch,
        vendor=spec.vendor,
        peak_bandwidth_tb_s=spec.datasheet_bw / 1e12,
        peak_tflops=dict(spec.datasheet_tflops),
        measured_bandwidth_tb_s=spec.measured_bw / 1e12 if spec.measured_bw else None,
        l2_mb=spec.l2_bytes / (1 << 20),
        frameworks=list(spec.frameworks),
    )


CPU_ARCH = GpuArch(name="CPU", arch="cpu", vendor="cpu", frameworks=["triton"])


def known_platforms() -> list[str]:
    return [*sorted(GPU_SPECS), "cpu"]


def resolve_arch(platform: str | None, detected_gpu_name: str | None) -> GpuArch:
    """Real hardware wins; without a GPU the configured platform decides; unknown -> error."""
    if detected_gpu_name:
        try:
            return _from_spec(lookup(detected_gpu_name))
        except UnknownGpuError:
            raise UnknownPlatformError(
                f"detected GPU {detected_gpu_name!r} is not in the peak table (known: "
                f"{', '.join(known_platforms())}); add it to aka_graph/tools/evaluator/harness/gpu_specs.py"
            ) from None
    if not platform:
        raise UnknownPlatformError(
            f"no GPU detected and no --platform given; pass one of {known_platforms()}"
        )
    if platform.strip().lower() in CPU_PLATFORMS:
        return CPU_ARCH
    try:
        return _from_spec(lookup(platform))
    except UnknownGpuError:
        raise UnknownPlatformError(
            f"unknown --platform {platform!r}; known: {', '.join(known_platforms())}"
        ) from None


def frameworks_for(arch: GpuArch) -> list[str]:
    """Kernel frameworks a campaign may target on `arch` (CPU/interpreter: Triton only)."""
    return ["triton"] if arch.is_cpu else list(arch.frameworks)
