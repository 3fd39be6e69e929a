"""One workload's timing setup, shared by the worker (candidate) and the parent (reference): rotated
input/output copies, then CUDA-graph capture (fallback: per-call CUDA events) or host timing on CPU."""

from __future__ import annotations

import time
from typing import Any

import torch

from .inputs import random_poison_
from .runner import KernelRunner, clone_values
from .timing import (
    MAX_COPIES,
    GraphTimer,
    Timing,
    capture_plan,
    estimate_us,
    judge_capture,
    replicate,
    rotation_copies,
    time_events,
    time_host,
)

FALLBACK_COPIES = 32  # the CUDA-event fallback times 30 calls, each after an L2 flush


class Bench:
    def __init__(
        self,
        runner: KernelRunner,
        first: list[Any],
        device: torch.device,
        l2_bytes: int,
        max_copies: int = MAX_COPIES,
    ) -> None:
        self.runner, self.device, self.l2_bytes = runner, device, l2_bytes
        nbytes = sum(v.numel() * v.element_size() for v in first if isinstance(v, torch.Tensor))
        nbytes += sum(
            torch.Size(s).numel() * torch.empty(0, dtype=d).element_size() for s, d in runner.out_specs
        )
        on_gpu = device.type == "cuda"
        self.copies = [first]
        self.outs = [runner.alloc_outputs() if runner.dps else None]
        self.produced: dict[int, Any] = {}
        self.violations: list[str] = []
        self.notes: list[str] = []
        self.graph: GraphTimer | None = None
        self.pristine: list[list[Any]] = []
        self.calls_per_sample = 1  # calls in one timed sample (one graph replay, or one call)
        if not on_gpu:
            self.pristine = [clone_values(c) for c in self.copies]
            t0 = time.perf_counter()
            self.call(0)
            self.first_s = time.perf_counter() - t0
            return
        est = estimate_us(self.call, 1)
        n = rotation_copies(nbytes, l2_bytes, est, max_copies)
        self.copies = replicate(first, n)
        # fresh poisoned outputs: copy 0's hold the estimate's answers
        self.outs = replicate(runner.alloc_outputs(), n) if runner.dps else [None] * n
        calls, self.replays = capture_plan(est, n)
        graph = GraphTimer(self.call, n, calls)
        try:
            graph.capture()
        except Exception as exc:  # not capturable: the tagged CUDA-event fallback
            torch.cuda.synchronize()
            self.notes.append(f"not capturable, CUDA-event fallback: {type(exc).__name__}: {exc}"[:500])
            keep = min(n, FALLBACK_COPIES)  # per-call L2 flush there: a few copies suffice
            self.copies, self.outs = self.copies[:keep], self.outs[:keep]
            self.pristine = [clone_values(c) for c in self.copies]
            return
        self.graph = graph
        self.calls_per_sample = calls
        problem = judge_capture(graph.kernel_nodes, calls)
        if problem:
            self.violations.append(problem)

    def call(self, k: int) -> Any:
        self.produced[k] = self.runner.invoke(self.copies[k], self.outs[k])
        return self.produced[k]

    def perturb(self, i: int) -> None:
        """Untimed, before each eagerly timed call: new input values, so a cache keyed on input values
        (or on pointers) cannot skip the work while it is being timed. Graph replays need no such thing:
        Python-level caches do not run during a replay, and re-validation catches device-level ones."""
        k = i % len(self.copies)
        factor = 1.0 + (i + 1) * 2.0**-6
        for t, p in zip(self.copies[k], self.pristine[k], strict=True):
            if isinstance(t, torch.Tensor) and t.dtype.is_floating_point and t.numel():
                shift = ((i + 1) * 7919) % t.numel()  # every position sees another value, at another scale
                t.copy_(p.reshape(-1).roll(shift).reshape(p.shape)).mul_(factor)
        for t in self.outs[k] or []:  # and outputs that are neither NaN nor the last answer
            random_poison_(t)

    def measure(self) -> Timing:
        n = len(self.copies)
        if self.device.type != "cuda":
            timing = time_host(self.call, n, self.first_s, prepare=self.perturb)
        elif self.graph is None:
            timing = time_events(self.call, n, self.l2_bytes, prepare=self.perturb)
        else:
            timing = self.graph.measure(self.replays)
        timing.notes = self.notes + timing.notes
        return timing

    def burst(self, reps: int, part: str = "all") -> None:
        """`reps` more samples' worth of the timed invocation, back to back, as they were timed: graph
        replays, or (host / CUDA-event fallback) the untimed perturbation then the call; part="prepare"
        does only the perturbations, which the parent subtracts (it times requests; see plausibility)."""
        if self.graph is not None:
            for _ in range(reps):
                self.graph.graph.replay()
        else:
            for i in range(reps):
                if self.pristine:
                    self.perturb(i)
                if part == "all":
                    self.call(i % len(self.copies))
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    @property
    def last(self) -> int:
        """A copy the timed invocation really uses (a graph of fewer calls than copies skips some)."""
        if self.graph is not None:
            return (self.graph.calls - 1) % len(self.copies)
        return len(self.copies) - 1

    def poison_outputs(self, k: int) -> None:
        """Random finite garbage (not NaN) into copy k's outputs before the re-validation replay."""
        targets = self.outs[k] if self.runner.dps else (self.graph.outputs.get(k) if self.graph else None)
        for t in targets or []:
            if type(t) is torch.Tensor:
                random_poison_(t)

    def replay(self, k: int) -> list[Any]:
        """Run the timed invocation once more (the graph itself when captured); copy k's outputs."""
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        if self.graph is not None:
            self.graph.replay_once()
        else:
            self.call(k)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        return list(self.outs[k]) if self.runner.dps else list(self.produced[k])
