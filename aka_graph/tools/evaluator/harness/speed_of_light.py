"""Speed of light per workload: bytes moved (inputs + outputs) and FLOPs (torch's flop counter on the
reference) against the GPU's peaks. Utilization uses measured ceilings and every byte of the inputs and
outputs (the usual SOL estimate). The hard bound, below which a time is a bug or a cheat, must be a true
lower bound of the work of *any* correct kernel: only the bytes that must be *written*, at the datasheet
bandwidth. An honest kernel need not read every input byte (an MoE layer reads the routed experts only, a
paged-attention kernel the used pages, an expanded input is one row): counting them flagged honest work on
the H200 (an MoE problem with 12.9 GB of expert weights, 0.4 GB of them routed). Nor need it execute the
reference's FLOPs: a reference may compute more than the operator needs (the diagonal of a full matmul, an
embedding as a one-hot matmul), and kernels that skip that work beat a FLOP bound on the H200 by 2x and
60x, honestly (round 12). The executed FLOPs at the fastest datasheet math are kept as
`reference_flops_us`: a figure for the message, never a verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from .gpu_specs import GpuSpec
from .layout import value_bytes


@dataclass
class SolBound:
    bytes_moved: int
    flops: int
    bound_us: float  # against measured ceilings (what utilization is relative to)
    hard_bound_us: float  # the outputs' bytes at the datasheet bandwidth: nothing legitimate is faster
    reference_flops_us: float = 0.0  # the reference's executed FLOPs at the fastest datasheet math (a note)


def shares_memory(a: Any, b: Any) -> bool:
    """Whether two tensors' storages overlap (an output that is an input, or a view of one)."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or not a.numel() or not b.numel():
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    return sa.data_ptr() < sb.data_ptr() + sb.nbytes() and sb.data_ptr() < sa.data_ptr() + sa.nbytes()


def call_bytes(inputs: list[Any], outputs: list[Any], updated: list[int]) -> tuple[int, int]:
    """(bytes moved, bytes that must be written) by one call of the reference, for `bound`. An input the
    call updates in place (`updated`: a KV cache that gets a few new positions) and an output that is an
    input (the same cache, returned) count in neither: a correct kernel touches only the slots it updates,
    which the buffer's size says nothing of. Counted whole, a 1 GiB cache given one new token bounded its
    update at 224 us, and the reference's own 63 us was REWARD_HACK on the H200 (round 18)."""
    written = value_bytes([o for o in outputs if not any(shares_memory(o, v) for v in inputs)])
    read = value_bytes([v for i, v in enumerate(inputs) if i not in updated])
    return read + written, written


def dtype_class(values: list[Any]) -> str:
    floats = [v.dtype for v in values if isinstance(v, torch.Tensor) and v.dtype.is_floating_point]
    if not floats:
        return "int8"
    widest = max(floats, key=lambda d: torch.finfo(d).bits)
    narrow = min(floats, key=lambda d: torch.finfo(d).bits)
    if torch.finfo(narrow).bits == 8:
        return "fp8"
    return {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(widest, "fp32")


def bound(
    spec: GpuSpec, bytes_moved: int, flops: int, dclass: str, bytes_written: int | None = None
) -> SolBound:
    """`bytes_moved`: inputs + outputs and `flops` (utilization); `bytes_written`: the outputs alone (the
    hard bound; None: the same as bytes_moved, for callers that know every byte must move)."""

    def at(nbytes: int, bw: float, tflops: float) -> float:
        return max(nbytes / bw, flops / (tflops * 1e12)) * 1e6

    measured = at(bytes_moved, spec.bandwidth(True), spec.tflops(dclass, True))
    fastest_math = max(spec.datasheet_tflops.values())
    written = bytes_moved if bytes_written is None else bytes_written
    hard = written / spec.datasheet_bw * 1e6
    return SolBound(bytes_moved, flops, measured, hard, flops / (fastest_math * 1e12) * 1e6)


def utilization(bound_us: float, latency_us: float) -> float:
    return bound_us / latency_us * 100.0 if latency_us > 0 else 0.0


def below_bound(latency_us: float, hard_bound_us: float, margin: float = 0.97) -> bool:
    return hard_bound_us > 0 and latency_us < hard_bound_us * margin


class FlopCounter:
    """Counts the FLOPs of one reference call with torch's flop registry (matmul/conv/attention;
    elementwise ops count 0). A plain dispatch mode: FlopCounterMode itself pulls in torch._dynamo (~2 s)
    and so would any TorchDispatchMode subclass's first dispatch (see below)."""

    def __init__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.flop_counter import flop_registry

        counter = self

        def dispatch(self: Any, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            count = flop_registry.get(func._overloadpacket)
            if count is not None:
                counter.total += int(count(*args, **kwargs, out_val=out))
            return out

        class _Mode(TorchDispatchMode):
            __torch_dispatch__ = dispatch

        # TorchDispatchMode wraps a subclass's __torch_dispatch__ in torch._disable_dynamo, whose first
        # call imports torch._dynamo: 1 s on an idle host, 4 s of an H200 host's start-up, on the critical
        # path of every evaluation. The trusted parent never compiles anything inside this mode, so the
        # plain function is set back after the class is made (any torch version).
        _Mode.__torch_dispatch__ = dispatch  # type: ignore[method-assign]
        self.total = 0
        self.mode = _Mode()

    def __enter__(self) -> FlopCounter:
        self.mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.mode.__exit__(*exc)


def warm_up() -> None:
    """Pay the dispatch mode's first-use cost once, while the workers start (without torch._dynamo,
    which the mode no longer pulls in, a few tens of ms)."""
    with FlopCounter():
        torch.ones(2, 2) @ torch.ones(2, 2)
