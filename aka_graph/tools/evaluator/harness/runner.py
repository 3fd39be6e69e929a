"""Calling conventions: destination-passing `fn(*inputs, *outputs)`, value-returning `fn(*inputs)` and
`Model(*inputs)`, normalised to "a list of output tensors"."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any

import torch

from .inputs import poison_
from .layout import writable
from .rng import all_seeded


class _InterpreterDriver:
    """Stands in for Triton's GPU driver where there is none (see `interpreted_autotune`): its benchmarker
    reports every configuration as taking no time, so Triton's autotuner keeps the first one."""

    @staticmethod
    def get_benchmarker() -> Callable[..., Any]:
        def bench(fn: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
            return [0.0] * len(quantiles) if quantiles else 0.0

        return bench


def interpreted_autotune() -> None:
    """Let `@triton.autotune` run under Triton's CPU interpreter (TRITON_INTERPRET=1, which the harness
    sets on CPU). Its autotuner times each configuration with the active GPU driver's benchmarker, and on
    a host without a GPU Triton raises "0 active drivers": an honest autotuned kernel (or a Triton
    reference) failed on CPU though it runs on the GPU. Interpreted timings mean nothing, so where Triton
    was imported and finds no driver, a stand-in whose benchmarker reports every configuration as equal is
    made active: the first configuration runs, as if it were the only one. A host with a GPU driver, or
    Triton not imported, is left alone."""
    if os.environ.get("TRITON_INTERPRET") != "1" or "triton" not in sys.modules:
        return
    try:
        from triton.runtime.driver import driver
    except ImportError:
        return
    try:
        driver.active  # noqa: B018 - the property creates the driver, or raises where there is none
    except RuntimeError:
        driver.set_active(_InterpreterDriver())  # type: ignore[arg-type]


class ReturnError(RuntimeError):
    """The kernel returned something that is not the declared outputs."""


class KernelRunner:
    """`names`: the declared output names, so a dict return ({name: value}, as SOL's normalize_outputs
    accepts) is put in declared order."""

    def __init__(
        self,
        fn: Callable[..., Any],
        dps: bool,
        out_specs: list[tuple[tuple[int, ...], torch.dtype]],
        device: torch.device,
        names: list[str] | None = None,
    ) -> None:
        self.fn, self.dps, self.out_specs, self.device = fn, dps, out_specs, device
        self.names = names

    def alloc_outputs(self) -> list[torch.Tensor]:
        return [
            poison_(torch.empty(shape, dtype=dtype, device=self.device)) for shape, dtype in self.out_specs
        ]

    def invoke(
        self, inputs: list[Any], outputs: list[torch.Tensor] | None = None, rng_seed: int | None = None
    ) -> list[Any]:
        """One call. `rng_seed`: torch's global generators seeded with it for the call (and restored), so
        a reference that draws random numbers (dropout, sampling) and a candidate that draws the same way
        see the same numbers (correctness calls only: never inside a CUDA-graph capture)."""
        # SOL's driver calls run() with grad mode on: a backward reference may use torch.autograd. A
        # native Model's parameters would record graphs, so its calls stay in no_grad.
        rng = all_seeded(rng_seed, self.device) if rng_seed is not None else contextlib.nullcontext()
        grad = torch.no_grad() if isinstance(self.fn, torch.nn.Module) else contextlib.nullcontext()
        with rng, grad:
            if self.dps:
                assert outputs is not None
                self.fn(*inputs, *outputs)
                for o in outputs:  # written from a graph (a parameter that requires grad): values only
                    if isinstance(o, torch.Tensor) and o.requires_grad:
                        o.detach_()
                return list(outputs)
            result = self.fn(*inputs)
        if isinstance(result, dict) and self.names:
            missing = [n for n in self.names if n not in result]
            if missing:
                raise ReturnError(f"returned a dict without the declared outputs {missing}")
            result = [result[n] for n in self.names]
        result = list(result) if isinstance(result, tuple | list) else [result]
        if self.out_specs and len(result) != len(self.out_specs):
            raise ReturnError(f"returned {len(result)} outputs, the operator declares {len(self.out_specs)}")
        return [self._normalized(r) for r in result]

    def _normalized(self, r: Any) -> Any:
        """A returned tensor as SOL's normalize_outputs takes it: on the device (a reference may build a
        small output on the host, `torch.tensor(n)`), outside autograd. A numpy scalar (a reduction done
        in numpy: `np.float64`) becomes the Python value it holds, as SOL takes any scalar. Anything else
        is left for the guards to judge (lazy or meta tensors, subclasses)."""
        if type(r) is not torch.Tensor:
            if type(r) in _numpy_scalar_types():  # an exact type: never a subclass the kernel defined
                return r.item()
            return r
        if r.requires_grad:
            r = r.detach()
        if r.device.type == "cpu" and self.device.type != "cpu" and r.layout == torch.strided:
            r = r.to(self.device)
        return r


def _numpy_scalar_types() -> frozenset[type]:
    """numpy's scalar types, if the kernel's process has numpy loaded (the harness never imports it)."""
    numpy = sys.modules.get("numpy")
    return frozenset(numpy.sctypeDict.values()) if numpy is not None else frozenset()


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN-safe): used for mutation and late-write checks."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    return torch.equal(
        a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8)
    )


_SAME_SIZE_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


DIGEST_CHUNK = 1 << 22  # elements summed at once: the int64 copy a sum makes stays at 32 MiB


def _int_sum(flat: torch.Tensor) -> int:
    """The int64 sum of `flat` (wrapping like torch's), in chunks: `sum(dtype=int64)` of a whole 7 GB
    bf16 tensor would first make a 28 GiB int64 copy of it."""
    acc = torch.zeros((), dtype=torch.int64, device=flat.device)
    for start in range(0, flat.numel(), DIGEST_CHUNK):
        acc += flat[start : start + DIGEST_CHUNK].sum(dtype=torch.int64)
    return int(acc)


def digest(values: list[Any]) -> list[float]:
    """A cheap fingerprint of inputs, to prove both processes regenerated identical data. Exact and
    independent of summation order (the bits as integers, summed in int64), so the two processes agree
    whatever their thread counts. An expanded input is fingerprinted by its compact base."""
    out = []
    for v in values:
        if isinstance(v, torch.Tensor) and v.numel() == 0:
            out.append(0.0)
        elif isinstance(v, torch.Tensor):
            flat = writable(v).detach().reshape(-1)
            if flat.dtype == torch.bool:
                flat = flat.to(torch.int8)
            elif flat.dtype.is_complex:
                flat = torch.view_as_real(flat).reshape(-1)
            if flat.dtype.is_floating_point:
                flat = flat.view(_SAME_SIZE_INT[flat.element_size()])
            step = max(1, flat.numel() // 65536)
            sample = flat[::step].to(torch.int64)
            weights = torch.arange(sample.numel(), device=sample.device, dtype=torch.int64) % 1009
            total = _int_sum(flat) + int((sample * weights).sum())
            out.append(float(total % (1 << 52)))
        elif isinstance(v, int | float | bool):
            out.append(float(v))
        else:
            out.append(0.0)
    return out
