"""The correctness rule for one output (pure, fp32): shape/dtype exact, no NaN/Inf (bar allowed -inf),
not all zeros where the reference is not, `|a-b| <= atol + rtol*|b|` on the matched ratio, error cap."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .opmodel import Tolerance


@dataclass
class Verdict:
    ok: bool
    max_abs: float | None
    max_rel: float | None
    message: str = ""


def check_output(name: str, got: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> Verdict:
    if tuple(got.shape) != tuple(ref.shape):
        return Verdict(False, None, None, f"{name}: shape {tuple(got.shape)} != expected {tuple(ref.shape)}")
    if got.dtype != ref.dtype:
        return Verdict(False, None, None, f"{name}: dtype {got.dtype} != expected {ref.dtype}")
    if got.numel() == 0:
        return Verdict(True, 0.0, 0.0)
    a = got.to(device=ref.device, dtype=torch.float32)
    b = ref.to(torch.float32)
    a_fin, b_fin = torch.isfinite(a), torch.isfinite(b)
    if not bool(a_fin.all()):
        bad = ~a_fin
        neg_inf_ok = tol.allow_negative_inf & (a == float("-inf")) & (b == float("-inf"))
        both_same = (~b_fin) & ((a == b) | (torch.isnan(a) & torch.isnan(b)))
        unexplained = bad & ~neg_inf_ok & ~both_same
        if bool(unexplained.any()):
            nans = int(torch.isnan(a[unexplained]).sum())
            return Verdict(
                False,
                None,
                None,
                f"{name}: {int(unexplained.sum())} non-finite values "
                f"({nans} NaN) where the reference is finite (or -inf not allowed)",
            )
    mask = a_fin & b_fin
    if not bool((b_fin | (a == b) | (torch.isnan(a) & torch.isnan(b))).all()):
        return Verdict(False, None, None, f"{name}: the reference has non-finite values the output lacks")
    if bool((a[mask] == 0).all()) and not bool((b[mask] == 0).all()):
        return Verdict(False, None, None, f"{name}: all zeros where the reference is not")
    diff = (a - b).abs()
    diff = torch.where(mask, diff, torch.zeros_like(diff))
    bound = tol.atol + tol.rtol * b.abs()
    ok = diff <= torch.where(mask, bound, torch.full_like(bound, float("inf")))
    ratio = float(ok.float().mean())
    max_abs = float(diff.max())
    rel = diff / b.abs().clamp_min(1e-12)
    max_rel = float(torch.where(mask, rel, torch.zeros_like(rel)).max())
    if ratio < tol.matched_ratio:
        return Verdict(
            False,
            max_abs,
            max_rel,
            f"{name}: {ratio * 100:.3f}% of elements within atol="
            f"{tol.atol:g} rtol={tol.rtol:g}, need {tol.matched_ratio * 100:g}% "
            f"(max abs error {max_abs:.4g})",
        )
    if tol.error_cap is not None and max_abs > tol.error_cap:
        return Verdict(
            False, max_abs, max_rel, f"{name}: max abs error {max_abs:.4g} exceeds the cap {tol.error_cap:g}"
        )
    return Verdict(True, max_abs, max_rel)
