"""Input generation from a seed, identical in the trusted parent and the untrusted worker.

SOL rules (design §4): floats randn, fp8 randn clamped to ±2, bool 0/1, int8 full range, wider ints
uniform in [-1024, 1024), random scalars drawn then `.item()`, and the name-based overrides. Seeds with
`scale != 1` multiply the plain random floats and switch norm weights/biases to randn too, because a
correct kernel is correct on any valid input (an all-ones weight hides a kernel that ignores it).
"""

from __future__ import annotations

import math
import re
from typing import Any

import torch

from .opmodel import Operator, OperatorError, TensorSpec, Workload
from .safetensors_io import load_tensor

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float": torch.float32,
    "fp32": torch.float32,
    "float16": torch.float16,
    "half": torch.float16,
    "fp16": torch.float16,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float64": torch.float64,
    "fp64": torch.float64,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "fp8_e4m3": torch.float8_e4m3fn,
    "fp8_e5m2": torch.float8_e5m2,
    "bool": torch.bool,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
}
FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def dtype_of(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise OperatorError(f"unknown dtype {name!r}; use one of {sorted(DTYPES)}") from None


def shape_of(spec: TensorSpec, axes: dict[str, int]) -> tuple[int, ...]:
    dims = []
    for dim in spec.shape or ():
        if isinstance(dim, int):
            dims.append(dim)
        elif dim in axes:
            dims.append(axes[dim])
        else:
            raise OperatorError(f"{spec.name}: shape uses axis {dim!r} that the definition does not declare")
    return tuple(dims)


def _tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[_.\-]", name.lower()) if t]


def name_rule(name: str, ndim: int, op_is_norm: bool) -> str:
    """Which SOL generation rule an input name selects ('randn' when none)."""
    low, toks = name.lower(), _tokens(name)
    if "mask" in toks or low.endswith("mask"):
        return "causal_mask"
    if "cos" in toks or "sin" in toks:
        return "cos" if "cos" in toks else "sin"
    if any(t in ("rstd", "std", "var", "variance", "invstd", "inv_std") for t in toks):
        return "positive"
    if "softmax" in toks or any(t.startswith("prob") for t in toks):
        return "softmax"
    normish = any("norm" in t or t in ("ln", "rms") for t in toks) or op_is_norm
    if normish and ndim <= 1 and (toks[-1:] == ["weight"] or toks[-1:] == ["gamma"] or low == "weight"):
        return "ones"
    if normish and ndim <= 1 and (toks[-1:] == ["bias"] or toks[-1:] == ["beta"]):
        return "zeros"
    if ndim >= 2 and (low == "weight" or low.endswith("_weight") or low.endswith("_proj")):
        return "fan_in"
    return "randn"


def _random_tensor(
    name: str,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    gen: torch.Generator,
    device: torch.device,
    scale: float,
    op_is_norm: bool,
) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen, device=device).bool()
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, generator=gen, device=device, dtype=torch.int8)
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, generator=gen, device=device, dtype=torch.uint8)
    if not dtype.is_floating_point:
        return torch.randint(-1024, 1024, shape, generator=gen, device=device, dtype=dtype)
    rule = name_rule(name, len(shape), op_is_norm)
    if scale != 1.0 and rule in ("ones", "zeros"):
        rule = "randn"  # the extra-scale seed: a kernel that ignores a norm weight must fail
    x = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
    if rule == "ones":
        x = torch.ones_like(x)
    elif rule == "zeros":
        x = torch.zeros_like(x)
    elif rule == "fan_in":
        x = x * scale / math.sqrt(max(shape[-1], 1))
    elif rule in ("cos", "sin"):
        x = torch.cos(x.clamp(-math.pi, math.pi)) if rule == "cos" else torch.sin(x.clamp(-math.pi, math.pi))
    elif rule == "positive":
        x = x.abs() * scale + 0.1
    elif rule == "softmax":
        x = torch.softmax(x, dim=-1) if x.ndim else torch.ones_like(x)
    elif rule == "causal_mask" and len(shape) >= 2 and shape[-1] == shape[-2]:
        keep = torch.ones(shape[-2:], dtype=torch.bool, device=device).tril().expand(shape)
        x = torch.zeros_like(x).masked_fill(~keep, float("-inf"))
    else:
        x = x * scale
    if dtype in FP8:
        return x.clamp(-2.0, 2.0).to(dtype)
    return x.to(dtype)


def _scalar_value(spec: TensorSpec, value: Any, device: torch.device) -> Any:
    if spec.shape is None:
        return value
    return torch.tensor(value, dtype=dtype_of(spec.dtype), device=device)


class InputFactory:
    """Regenerates one workload's inputs from (seed, scale); the same on both sides of the process split."""

    def __init__(
        self, op: Operator, device: torch.device, reference_module: Any = None, input_module: Any = None
    ) -> None:
        self.op, self.device = op, device
        self.reference_module, self.input_module = reference_module, input_module
        self.op_is_norm = "norm" in (op.name + " " + op.op_type).lower()

    def make(self, wl: Workload, seed: int, scale: float, mix_seed: int | None = None) -> list[Any]:
        """Inputs for (seed, scale). With `mix_seed`, the interior rows (dim 0, all but the first and
        last) of every random input come from `mix_seed`: an input that equals an earlier one at its
        edges but not inside, which a cache keyed on a few (edge) values answers wrongly."""
        values = self._make(wl, seed, scale)
        if mix_seed is None or self.op.kind == "native":
            return values
        other = self._make(wl, mix_seed, scale)
        for i, spec in enumerate(self.op.inputs):
            v = values[i]
            kind = wl.descriptors.get(spec.name, {}).get("type", "random")
            if kind == "random" and isinstance(v, torch.Tensor) and v.ndim >= 2 and v.shape[0] >= 3:
                v[1:-1] = other[i][1:-1]
        return values

    def _make(self, wl: Workload, seed: int, scale: float) -> list[Any]:
        if self.op.kind == "native":
            return self._native(wl, seed)
        gen = torch.Generator(device=self.device)
        gen.manual_seed(seed)
        custom: dict[str, Any] | None = None
        values: list[Any] = []
        for spec in self.op.inputs:
            desc = wl.descriptors.get(spec.name, {"type": "random"})
            kind = desc.get("type", "random")
            if kind == "scalar":
                values.append(_scalar_value(spec, desc.get("value"), self.device))
            elif kind == "custom":
                if custom is None:
                    custom = self._custom(wl, seed)
                if spec.name not in custom:
                    raise OperatorError(
                        f"{self.op.directory}/definition.json: custom_inputs_entrypoint "
                        f"returned no {spec.name!r} (got {sorted(custom)})"
                    )
                values.append(custom[spec.name])
            elif kind == "safetensors":
                values.append(load_tensor(self.op.directory, desc, spec.name).to(self.device))
            else:
                dtype = dtype_of(spec.dtype)
                shape = () if spec.shape is None else shape_of(spec, wl.axes)
                t = _random_tensor(spec.name, shape, dtype, gen, self.device, scale, self.op_is_norm)
                values.append(t.item() if spec.shape is None else t)
        return values

    def _custom(self, wl: Workload, seed: int) -> dict[str, Any]:
        fn = getattr(self.reference_module, self.op.custom_inputs_entrypoint or "", None)
        if fn is None:
            raise OperatorError(
                f"{self.op.directory}/definition.json: reference defines no "
                f"{self.op.custom_inputs_entrypoint!r} (custom_inputs_entrypoint)"
            )
        scalars = {
            s.name: d.get("value")
            for s in self.op.inputs
            if (d := wl.descriptors.get(s.name, {})).get("type") == "scalar"
        }
        torch.manual_seed(seed)
        out = fn({**wl.axes, **scalars}, self.device)
        if not isinstance(out, dict):
            raise OperatorError(
                f"{self.op.directory}/definition.json: {self.op.custom_inputs_entrypoint} "
                "must return a dict of input name -> tensor"
            )
        return out

    def _native(self, wl: Workload, seed: int) -> list[Any]:
        make = getattr(self.input_module, "_make_inputs", None)
        if make is None:
            raise OperatorError(f"{self.op.directory}/input.py: defines no _make_inputs(**kwargs)")
        torch.manual_seed(seed)
        kwargs = dict(wl.input_kwargs)
        import inspect

        if "device" in inspect.signature(make).parameters:
            kwargs["device"] = self.device
        out = make(**kwargs)
        if isinstance(out, dict):
            out = list(out.values())
        elif isinstance(out, torch.Tensor):
            out = [out]
        return [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in out]


def output_shapes(op: Operator, wl: Workload) -> list[tuple[tuple[int, ...], torch.dtype]]:
    return [(shape_of(s, wl.axes), dtype_of(s.dtype)) for s in op.outputs]


def random_poison_(t: torch.Tensor) -> torch.Tensor:
    """Finite, unguessable garbage (os.urandom seed): a kernel that only works when its output 'looks
    poisoned' (NaN) or differs from its last answer cannot tell this from a real call."""
    import os

    gen = torch.Generator(device=t.device)
    gen.manual_seed(int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1))
    if t.dtype.is_floating_point:
        noise = torch.randn(t.shape, generator=gen, device=t.device) * 3.0 + 1.0
        return t.copy_(noise.clamp(-2, 2) if t.dtype in FP8 else noise)
    if t.dtype == torch.bool:
        return t.copy_(torch.randint(0, 2, t.shape, generator=gen, device=t.device).bool())
    return t.copy_(torch.randint(-100, 100, t.shape, generator=gen, device=t.device))


def poison_(t: torch.Tensor) -> torch.Tensor:
    """Fill an output with a value no correct kernel leaves behind: NaN, or the max int."""
    if t.dtype.is_floating_point:
        return t.fill_(float("nan"))
    if t.dtype == torch.bool:
        return t.fill_(True)
    return t.fill_(torch.iinfo(t.dtype).max)
