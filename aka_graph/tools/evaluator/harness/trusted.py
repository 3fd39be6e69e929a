"""The trusted side's reference: inputs regenerated from the same seeds, reference outputs computed in
this process (which never imports the candidate), and the reference's own latency measured the same way."""

from __future__ import annotations

from typing import Any

import torch

from .bench import Bench
from .inputs import InputFactory, output_shapes
from .modules import load_input_module, load_reference
from .opmodel import Operator
from .runner import KernelRunner
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
