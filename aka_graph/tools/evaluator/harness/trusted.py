"""The trusted side's reference: inputs regenerated from the same seeds, reference outputs computed in
this process (which never imports the candidate), and the reference's own latency measured the same way."""

from __future__ import annotations

from typing import Any

import torch

from .bench import Bench
from .inputs import InputFactory, output_shapes
from .modules import load_input_module, load_reference
from .opmodel import Operator
from .runner import KernelRunner, digest
from .speed_of_light import FlopCounter

# Eager references launch several kernels per call from Python: thousands of rotated copies (as the
# candidate gets, F12) would cost seconds of capture and replay per operator. Fewer copies can leave a
# small reference partly L2-resident, i.e. its latency (a display/speed-up denominator, never a verdict)
# reads low, which understates a candidate's speed-up rather than flattering it.
REFERENCE_MAX_COPIES = 512


class Reference:
    def __init__(self, op: Operator, device: torch.device, init_seed: int) -> None:
        self.op, self.device, self.init_seed = op, device, init_seed
        self.module = load_reference(op)
        self.factory = InputFactory(op, device, self.module, load_input_module(op))
        self.models: dict[int, Any] = {}
        self.benches: dict[int, Bench] = {}

    def runner(self, idx: int) -> KernelRunner:
        if self.op.kind != "native":
            return KernelRunner(
                self.module.run, False, output_shapes(self.op, self.op.workloads[idx]), self.device
            )
        if idx not in self.models:
            torch.manual_seed(self.init_seed)
            self.models[idx] = self.module.Model(**self.op.workloads[idx].init_kwargs).to(self.device).eval()
        return KernelRunner(self.models[idx], False, [], self.device)

    def inputs(self, idx: int, seed: int, scale: float, mix: int | None = None) -> list[Any]:
        return self.factory.make(self.op.workloads[idx], seed, scale, mix)

    def outputs(self, idx: int, inputs: list[Any], count_flops: bool = False) -> tuple[list[Any], int | None]:
        runner = self.runner(idx)
        if not count_flops:
            return runner.invoke(inputs), None
        try:
            with FlopCounter() as counter:
                result = runner.invoke(inputs)
            return result, counter.total
        except Exception:  # the counter cannot trace every reference: count nothing rather than fail
            return runner.invoke(inputs), None

    def contract(self, idx: int) -> dict[str, Any]:
        """The reference's in-place contract, probed once on workload `idx` (see in_place_contract)."""
        inputs = self.inputs(idx, self.init_seed, 1.0)
        before = digest(inputs)
        result = self.runner(idx).invoke(inputs)
        return in_place_contract(inputs, before, result)

    def time(self, idx: int, bench_seed: int, l2_bytes: int) -> Any:
        if idx not in self.benches:
            self.benches[idx] = Bench(
                self.runner(idx),
                self.inputs(idx, bench_seed, 1.0),
                self.device,
                l2_bytes,
                REFERENCE_MAX_COPIES,
            )
        return self.benches[idx].measure()


def shares_memory(a: Any, b: Any) -> bool:
    """Whether two tensors' storages overlap (an output that is an input, or a view of one)."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or not a.numel() or not b.numel():
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    return sa.data_ptr() < sb.data_ptr() + sb.nbytes() and sb.data_ptr() < sa.data_ptr() + sa.nbytes()


def in_place_contract(inputs: list[Any], before: list[float], result: list[Any]) -> dict[str, Any]:
    """What the reference itself does to its inputs, which is then the operator's contract (a KV-cache
    write `cache[:, pos] = k; return ..., cache`): `mutated` input indices (their digest changed),
    `returned` {output index: input index} for outputs that are inputs, and `compared` the mutated inputs
    not returned, which are compared like extra outputs."""
    after = digest(inputs)
    mutated = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    returned = {
        j: i for j, out in enumerate(result) for i, inp in enumerate(inputs) if shares_memory(out, inp)
    }
    compared = [i for i in mutated if i not in returned.values()]
    return {"mutated": mutated, "returned": returned, "compared": compared}
