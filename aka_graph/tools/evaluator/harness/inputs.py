"""Input generation from a seed, identical in the trusted parent and the untrusted worker.

SOL rules (design §4): floats randn, fp8 randn clamped to ±2, bool 0/1, int8 full range, wider ints
uniform in [-1024, 1024), random scalars drawn then `.item()`, and the name-based overrides. Seeds with
`scale != 1` multiply the plain random floats and switch norm weights/biases to randn too, because a
correct kernel is correct on any valid input (an all-ones weight hides a kernel that ignores it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from .opmodel import Operator, OperatorError, TensorSpec, Workload
from .rng import all_seeded
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
FP4X2 = getattr(torch, "float4_e2m1fn_x2", None)  # packed fp4 pairs (torch >= 2.8)
if FP4X2 is not None:
    DTYPES["float4_e2m1fn_x2"] = FP4X2
    DTYPES["float4_e2m1"] = FP4X2  # SOL maps the unpacked name to the packed dtype too
FP4_LEVELS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
# Random floats are drawn in float32 and cast; past this many elements they are drawn in row chunks so
# the float32 temporaries stay small (a 14 GiB bf16 expert weight must not need a 28 GiB temporary; at
# 1 << 26 the draw, its transform and the cast of a 128 MiB bf16 bank still took 640 MiB at once).
CHUNK_ELEMENTS = 1 << 22
# SOL's name-selected ranges (its io.py): SSM decays drawn uniform in [low, high) (A_cumsum: then summed
# along the last dimension), and mask names whose values are 0/1.
SSM_DECAY = {"A": (-1.0, -0.001), "A_log": (-5.0, -1.0), "A_cumsum": (-0.1, 0.0), "g": (-5.0, 0.0)}
BINARY_MASKS = ("x_mask", "text_mask", "aspect_ratio_mask", "drop_mask", "attention_mask")
BINARY_WORDS = ("binary", "{0, 1}", "0 or 1", "1.0 for valid", "0.0 for masked")


def dtype_of(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise OperatorError(
            f"dtype {name!r} is not supported by this torch ({torch.__version__}); "
            f"supported: {sorted(DTYPES)}"
        ) from None


def shape_of(spec: TensorSpec, axes: dict[str, int]) -> tuple[int, ...]:
    """Concrete sizes: an entry is an int literal (or a string of digits) or an axis name."""
    dims = []
    for dim in spec.shape or ():
        if isinstance(dim, int):
            dims.append(dim)
        elif dim in axes:
            dims.append(axes[dim])
        elif isinstance(dim, str) and dim.strip().isdigit():
            dims.append(int(dim))
        else:
            raise OperatorError(
                f"{spec.name}: shape uses axis {dim!r} that the definition does not declare; declare it "
                "in 'axes' or write an integer size"
            )
    return tuple(dims)


def stored_shape(spec: TensorSpec, axes: dict[str, int]) -> tuple[int, ...]:
    """The shape of the tensor itself: the declared one, but packed fp4 (two values a byte) halves the
    last dimension, as SOL's generator packs randn of the declared shape."""
    shape = shape_of(spec, axes)
    if shape and spec.dtype in ("float4_e2m1fn_x2", "float4_e2m1"):
        return (*shape[:-1], shape[-1] // 2)
    return shape


def _tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[_.\-]", name.lower()) if t]


def _described_binary(description: str) -> bool:
    """A (lower-cased) description that calls the mask binary, as SOL's io.py reads it."""
    return any(k in description for k in BINARY_WORDS)


def name_rule(name: str, ndim: int, op_is_norm: bool, description: str = "") -> str:
    """Which SOL generation rule an input name (and its description, as SOL's io.py reads it) selects
    ('randn' when none)."""
    low, toks, desc = name.lower(), _tokens(name), description.lower()
    if "attention mask" in desc and "causal" in desc:
        return "sol_causal_mask"
    if low.endswith("_mask") and _described_binary(desc):
        return "binary_mask"
    if "softmax" in desc and "output" in desc:
        return "softmax"
    if name in SSM_DECAY:  # SOL's exact names (an SSM's decays are negative: their logs, cumsums)
        return name
    if low in ("attention_mask", "causal_mask"):
        return "sol_causal_mask"  # SOL's: finfo.min above the diagonal when square, else 0/1 values
    if low in BINARY_MASKS:
        return "binary_mask"
    if low in ("attn_weights", "attention_weights", "routing_weights"):
        return "softmax"
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


def _transform(x: torch.Tensor, rule: str, scale: float, fan_in: int) -> torch.Tensor:
    """The name rule applied to float32 randn values (elementwise, or row-wise for softmax and cumsum)."""
    if rule in SSM_DECAY:  # uniform in SOL's range, from the same normal draw (its CDF)
        low, high = SSM_DECAY[rule]
        u = low + (high - low) * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
        return u.cumsum(-1) if rule == "A_cumsum" and x.ndim else u
    if rule == "binary_mask":
        return (x > 0).to(x.dtype)
    if rule == "ones":
        return torch.ones_like(x)
    if rule == "zeros":
        return torch.zeros_like(x)
    if rule == "fan_in":
        return x * scale / math.sqrt(max(fan_in, 1))
    if rule in ("cos", "sin"):
        return (
            torch.cos(x.clamp(-math.pi, math.pi)) if rule == "cos" else torch.sin(x.clamp(-math.pi, math.pi))
        )
    if rule == "positive":
        return x.abs() * scale + 0.1
    if rule == "softmax":
        return torch.softmax(x, dim=-1) if x.ndim else torch.ones_like(x)
    return x * scale


def _to_fp4x2(x: torch.Tensor) -> torch.Tensor:
    """float32 values -> packed fp4 e2m1 pairs (SOL: randn quantised to the nearest fp4 value, two
    nibbles a byte, the even column in the low nibble), so the last dimension halves as SOL's does."""
    levels = torch.tensor(FP4_LEVELS, device=x.device)
    code = (x.abs().unsqueeze(-1) - levels).abs().argmin(-1).to(torch.uint8)
    code = code | ((x < 0).to(torch.uint8) << 3)
    packed = code[..., ::2] | (code[..., 1::2] << 4)
    return packed.view(FP4X2)


def fp4x2_values(t: torch.Tensor) -> torch.Tensor:
    """Packed fp4 pairs -> their float32 values (last dimension doubled), so they compare like floats."""
    raw = t.view(torch.uint8)
    codes = torch.stack((raw & 15, raw >> 4), dim=-1).reshape(*raw.shape[:-1], -1).long()
    levels = torch.tensor(FP4_LEVELS, device=t.device)
    return levels[codes & 7] * torch.where(codes >= 8, -1.0, 1.0)


def host_out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is running out of host memory: Python's MemoryError, or the CPU allocator's, which
    torch raises as a plain RuntimeError ("DefaultCPUAllocator: can't allocate memory")."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc)[:2000].lower()
    return isinstance(exc, RuntimeError) and (
        "can't allocate memory" in text or "cannot allocate memory" in text
    )


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is running out of the GPU's or the host's memory: the environment's, never the
    operator's code (its generator, its reference)."""
    return isinstance(exc, torch.OutOfMemoryError) or host_out_of_memory(exc)


class GeneratorFailed(RuntimeError):
    """The operator's custom_inputs_entrypoint raised: the operator's code, not the harness's nor the
    candidate's (SOL's driver reports it as gen_inputs failing). Running out of memory stays the
    environment's and is not wrapped."""


@dataclass(frozen=True)
class Mixed:
    """A mixed seed's input that was written into the earlier seed's tensor as it was drawn."""

    changed: bool


def _random_tensor(
    name: str,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    gen: torch.Generator,
    device: torch.device,
    scale: float,
    op_is_norm: bool,
    description: str = "",
    interior_of: torch.Tensor | None = None,
) -> Any:
    """One random input. `interior_of` (the mixed seed, issue 9 class 2): a contiguous tensor of this
    shape and dtype whose interior (rows 1..-2 of dim 0) takes this draw's values as they are drawn,
    chunk by chunk, so the draw never exists whole; returns `Mixed` then, when the draw is chunked (a
    large float tensor) and there is such an interior, else the tensor as without it."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen, device=device).bool()
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, generator=gen, device=device, dtype=torch.int8)
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, generator=gen, device=device, dtype=torch.uint8)
    if FP4X2 is not None and dtype == FP4X2:  # as SOL: randn of the declared shape, packed in pairs
        return _to_fp4x2(torch.randn(shape or (2,), generator=gen, device=device) * scale)
    if not dtype.is_floating_point:
        return torch.randint(-1024, 1024, shape, generator=gen, device=device, dtype=dtype)
    rule = name_rule(name, len(shape), op_is_norm, description)
    if scale != 1.0 and rule in ("ones", "zeros"):
        rule = "randn"  # the extra-scale seed: a kernel that ignores a norm weight must fail
    square = len(shape) >= 2 and shape[-1] == shape[-2]
    if rule == "sol_causal_mask" and square:
        keep = torch.ones(shape[-2:], dtype=torch.bool, device=device).tril().expand(shape)
        return torch.zeros(shape, dtype=dtype, device=device).masked_fill(~keep, torch.finfo(dtype).min)
    if rule == "sol_causal_mask":  # not square: SOL's binary rule where it applies, else plain randn
        low = name.lower()
        binary = low in BINARY_MASKS or (low.endswith("_mask") and _described_binary(description.lower()))
        rule = "binary_mask" if binary else "randn"
    fan_in = shape[-1] if shape else 1
    numel = math.prod(shape)
    row = shape[-1] if shape and shape[-1] else 1
    rows_per_chunk = max(1, CHUNK_ELEMENTS // row)
    total_rows = numel // row if numel else 0
    mixing = (
        interior_of is not None
        and numel > CHUNK_ELEMENTS
        and len(shape) >= 2
        and shape[0] >= 3
        and interior_of.is_contiguous()
        and tuple(interior_of.shape) == tuple(shape)
        and interior_of.dtype == dtype
    )
    out = interior_of if mixing else torch.empty(shape, dtype=dtype, device=device)
    assert out is not None
    flat = out.view(-1, row) if numel else out
    edge = numel // shape[0] if mixing else 0  # the interior: [edge, numel - edge), in whole rows
    changed = False
    if numel <= CHUNK_ELEMENTS:
        x = _transform(
            torch.randn(shape, generator=gen, device=device, dtype=torch.float32), rule, scale, fan_in
        )
        return x.clamp(-2.0, 2.0).to(dtype) if dtype in FP8 else x.to(dtype)
    for start in range(0, total_rows, rows_per_chunk):
        n = min(rows_per_chunk, total_rows - start)
        x = _transform(torch.randn((n, row), generator=gen, device=device), rule, scale, fan_in)
        x = x.clamp(-2.0, 2.0).to(dtype) if dtype in FP8 else x.to(dtype)
        if not mixing:
            flat[start : start + n] = x
            continue
        first, last = max(start, edge // row), min(start + n, (numel - edge) // row)  # its rows inside
        if first < last:
            changed = changed or not torch.equal(flat[first:last], x[first - start : last - start])
            flat[first:last] = x[first - start : last - start]
    if mixing:
        return Mixed(changed)
    return out


def _scalar_value(spec: TensorSpec, value: Any, device: torch.device) -> Any:
    """A 'scalar' descriptor's value, passed as the Python value it is whatever the declared shape (SOL's
    gen_inputs does: a kernel written against it, e.g. a Triton kernel taking `eps`, gets a number)."""
    return value


def _mix_interior_(value: torch.Tensor, other: torch.Tensor) -> bool:
    """Overwrite the interior of `value` with `other`'s, keeping its edges: rows 1..-2 when there are at
    least three rows, else elements 1..-2 of each last-dim row, else of the whole tensor. True when that
    changed a value (False too when the tensor is too small to have an interior)."""
    if value.ndim >= 2 and value.shape[0] >= 3:
        dst, src = value[1:-1], other[1:-1]
    elif value.ndim >= 1 and value.shape[-1] >= 3:
        dst, src = value[..., 1:-1], other[..., 1:-1]
    elif value.numel() >= 3 and value.is_contiguous():
        dst, src = value.view(-1)[1:-1], other.reshape(-1)[1:-1]
    else:
        return False
    if packed(dst):
        dst, src = dst.view(torch.uint8), src.view(torch.uint8)
    changed = not torch.equal(dst, src)
    dst.copy_(src)
    return changed


class InputFactory:
    """Regenerates one workload's inputs from (seed, scale); the same on both sides of the process split."""

    def __init__(
        self, op: Operator, device: torch.device, reference_module: Any = None, input_module: Any = None
    ) -> None:
        self.op, self.device = op, device
        self.reference_module, self.input_module = reference_module, input_module
        self.op_is_norm = "norm" in (op.name + " " + op.op_type).lower()

    def make(self, wl: Workload, seed: int, scale: float, mix_seed: int | None = None) -> list[Any]:
        """Inputs for (seed, scale). With `mix_seed`, the interior (rows 1..-2 of dim 0, or of the last
        dim when there are fewer than three rows) of every random input comes from `mix_seed`: an input
        that equals an earlier one at its edges but not inside, which a cache keyed on a few (edge) values
        answers wrongly. Where no random input has an interior (or nothing changed), the mixed seed's
        inputs are wholly `mix_seed`'s: every seed differs from every other. `mix_seed`'s inputs are drawn
        one at a time and dropped once mixed: the peak is one seed's inputs plus its largest tensor, not
        two seeds' inputs (issue 9, class 2: a 13 GB expert bank); a large one is even written into the
        interior chunk by chunk as it is drawn (`_random_tensor`), so the peak is one seed's inputs."""
        if mix_seed is not None and self.op.kind != "native" and not self.mixable(wl):
            return self._make(wl, mix_seed, scale)  # nothing to mix: the draw a mix would fall back to
        values = self._make(wl, seed, scale)
        if mix_seed is None or self.op.kind == "native":
            return values
        changed = False
        drawn = self._drawn(wl, mix_seed, scale, mix_into=values)
        for i, (spec, other) in enumerate(zip(self.op.inputs, drawn, strict=True)):
            v = values[i]
            kind = wl.descriptors.get(spec.name, {}).get("type", "random")
            if isinstance(other, Mixed):  # mixed in place while drawn
                changed = other.changed or changed
            elif kind == "random" and isinstance(v, torch.Tensor) and v.numel():
                changed = _mix_interior_(v, other) or changed
            del other  # before the next one is drawn
        if changed:
            return values
        del values
        return self._make(wl, mix_seed, scale)

    def mixable(self, wl: Workload) -> bool:
        """Whether a mixed seed can mix anything: only inputs of type "random" are mixed. Where the
        operator's generator gives every input (all "custom", 034 vision-language cross attention), a mix
        drew seed, then mix_seed, then mix_seed once more (its fallback): three calls of a generator that
        takes seconds a draw for the one set it ends with (round 21 on the H200: 5 of every 3 seeds'
        draws, 224 s of a 273 s evaluation)."""
        return any(
            spec.shape is not None and wl.descriptors.get(spec.name, {}).get("type", "random") == "random"
            for spec in self.op.inputs
        )

    def _make(self, wl: Workload, seed: int, scale: float) -> list[Any]:
        if self.op.kind == "native":
            return self._native(wl, seed)
        return list(self._drawn(wl, seed, scale))

    def _drawn(
        self, wl: Workload, seed: int, scale: float, mix_into: list[Any] | None = None
    ) -> Iterator[Any]:
        """The SOL inputs of (seed, scale), one at a time in declaration order (one generator stream).
        `mix_into`: an earlier seed's inputs, whose large random tensors take this seed's values in their
        interior while they are drawn (`Mixed` is yielded for those)."""
        gen = torch.Generator(device=self.device)
        gen.manual_seed(seed)
        custom: dict[str, Any] | None = None
        for i, spec in enumerate(self.op.inputs):
            desc = wl.descriptors.get(spec.name, {"type": "random"})
            kind = desc.get("type", "random")
            into = mix_into[i] if mix_into is not None and kind == "random" else None
            if kind == "scalar":
                yield _scalar_value(spec, desc.get("value"), self.device)
            elif self.op.custom_inputs_entrypoint and kind in ("custom", "random"):
                # SOL: with an entry point, every input comes from it (a 'random' one only if it lacks it)
                if custom is None:
                    custom = self._custom(wl, seed)
                if spec.name in custom:
                    yield custom[spec.name]
                elif kind == "random":
                    yield self._random(spec, wl, gen, scale, into)
                else:
                    raise OperatorError(
                        f"{self.op.directory}/definition.json: {self.op.custom_inputs_entrypoint} "
                        f"returned no {spec.name!r} (got {sorted(custom)}); it must return every input"
                    )
            elif kind == "safetensors":
                yield self._blob(spec, wl, desc)
            else:
                yield self._random(spec, wl, gen, scale, into)

    def _random(
        self, spec: TensorSpec, wl: Workload, gen: torch.Generator, scale: float, interior_of: Any = None
    ) -> Any:
        dtype = dtype_of(spec.dtype)
        shape = () if spec.shape is None else shape_of(spec, wl.axes)
        norm, about = self.op_is_norm, spec.description
        into = interior_of if isinstance(interior_of, torch.Tensor) and spec.shape is not None else None
        t = _random_tensor(spec.name, shape, dtype, gen, self.device, scale, norm, about, into)
        return t.item() if spec.shape is None else t

    def _blob(self, spec: TensorSpec, wl: Workload, desc: dict[str, Any]) -> torch.Tensor:
        t = load_tensor(self.op, desc, spec.name)
        want = None if spec.shape is None else stored_shape(spec, wl.axes)
        if want is not None and tuple(t.shape) != want:
            raise OperatorError(
                f"safetensors input {spec.name!r} ({desc.get('path')}) has shape {tuple(t.shape)}, "
                f"workload {wl.id} expects {want}"
            )
        return t.to(device=self.device, dtype=dtype_of(spec.dtype))

    def _custom(self, wl: Workload, seed: int) -> dict[str, Any]:
        name = self.op.custom_inputs_entrypoint or ""
        where = f"{self.op.directory}/definition.json: {name}"
        fn = getattr(self.reference_module, name, None)
        if fn is None:
            raise OperatorError(f"{where}: the reference defines no such function (custom_inputs_entrypoint)")
        scalars = {
            s.name: d.get("value")
            for s in self.op.inputs
            if (d := wl.descriptors.get(s.name, {})).get("type") == "scalar"
        }
        # torch's, Python's and numpy's generators: a generator may draw from any (SOL seeds all three)
        with all_seeded(seed, self.device):  # a private generator state: never a capture's (see rng.py)
            try:
                out = fn({**wl.axes, **scalars}, self.device)
            except Exception as exc:
                if isinstance(exc, OperatorError) or out_of_memory(exc):
                    raise
                raise GeneratorFailed(
                    f"the operator's custom_inputs_entrypoint {name} raised on {self.device.type} (workload "
                    f"{wl.id}): {type(exc).__name__}: {str(exc)[:500]}"
                ) from exc
        if not isinstance(out, dict):
            raise OperatorError(
                f"{where} must return a dict of input name -> tensor, not {type(out).__name__}"
            )
        # as SOL's gen_inputs: tensors moved to the device (a generator may build them on the CPU), any
        # shape accepted (the reference defines what it takes; outputs are compared with its own)
        return {k: v.to(self.device) if isinstance(v, torch.Tensor) else v for k, v in out.items()}

    def _native(self, wl: Workload, seed: int) -> list[Any]:
        make = getattr(self.input_module, "_make_inputs", None)
        if make is None:
            raise OperatorError(f"{self.op.directory}/input.py: defines no _make_inputs(**kwargs)")
        kwargs = dict(wl.input_kwargs)
        import inspect

        if "device" in inspect.signature(make).parameters:
            kwargs["device"] = self.device
        with all_seeded(seed, self.device):
            out = make(**kwargs)
        if isinstance(out, dict):
            out = list(out.values())
        elif isinstance(out, torch.Tensor):
            out = [out]
        return [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in out]


def output_shapes(op: Operator, wl: Workload) -> list[tuple[tuple[int, ...], torch.dtype]]:
    return [(stored_shape(s, wl.axes), dtype_of(s.dtype)) for s in op.outputs]


def declared_bytes(op: Operator, wl: Workload) -> int:
    """Bytes of one call's inputs and outputs as the definition declares them (a custom generator's or a
    native operator's may differ: 0 where nothing is declared)."""
    total = 0
    for spec in [*op.inputs, *op.outputs]:
        if spec.shape is None:
            continue
        size = torch.empty(0, dtype=dtype_of(spec.dtype)).element_size()
        total += math.prod(stored_shape(spec, wl.axes)) * size
    return total


def packed(t: torch.Tensor) -> bool:
    """Packed fp4 pairs: most torch ops (copy_, fill_, equal, arithmetic) are not implemented for them,
    so the harness handles them through their bytes."""
    return FP4X2 is not None and t.dtype == FP4X2


def random_poison_(t: torch.Tensor) -> torch.Tensor:
    """Finite, unguessable garbage (os.urandom seed): a kernel that only works when its output 'looks
    poisoned' (NaN) or differs from its last answer cannot tell this from a real call."""
    import os

    gen = torch.Generator(device=t.device)
    if packed(t):  # any byte is two finite fp4 values
        t.view(torch.uint8).copy_(torch.randint(0, 256, t.shape, generator=gen, device=t.device))
        return t
    gen.manual_seed(int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1))
    if t.dtype.is_floating_point:
        noise = torch.randn(t.shape, generator=gen, device=t.device) * 3.0 + 1.0
        return t.copy_(noise.clamp(-2, 2) if t.dtype in FP8 else noise)
    if t.dtype == torch.bool:
        return t.copy_(torch.randint(0, 2, t.shape, generator=gen, device=t.device).bool())
    return t.copy_(torch.randint(-100, 100, t.shape, generator=gen, device=t.device))


def poison_(t: torch.Tensor) -> torch.Tensor:
    """Fill an output with a value no correct kernel leaves behind: NaN, or the max int."""
    if packed(t):  # fp4 has no NaN: -6, -6 in every byte
        t.view(torch.uint8).fill_(0xFF)
        return t
    if t.dtype.is_floating_point:
        return t.fill_(float("nan"))
    if t.dtype == torch.bool:
        return t.fill_(True)
    return t.fill_(torch.iinfo(t.dtype).max)
