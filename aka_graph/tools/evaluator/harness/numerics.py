"""The correctness rule for one output (pure, fp32): shape/dtype exact, no NaN/Inf (bar allowed -inf),
not all zeros where the reference is not, `|a-b| <= atol + rtol*|b|` on the matched ratio, error cap.

Stricter than SOL's ratio rule (issue 13, class 2): the elements the ratio forgives must be *near
misses*, not anything finite, and must not form a structure. Otherwise a kernel that never computes its
last 1 % of rows or feature columns passes with errors of 100. A mismatched element may be off by at most
NEAR_MISS_FACTOR times its tolerance, the tolerance's relative term taken on the larger of |ref| and the
output's RMS (rounding in a sum of large terms can leave a small reference with an error of the output's
scale), or by the workload's `max_error_cap` where it states one; a discrete output (a mask, an index)
misses by whole units, so there only the ratio and the structure judge. No line of the output (a row or
a column of its [rows, last dim] view) and no window of consecutive elements in memory order (a tail)
may be mostly mismatched: honest rounding misses are scattered."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .opmodel import Tolerance

NEAR_MISS_FACTOR = 16.0  # a forgiven element is off by at most this many times its tolerance
MIN_LINE = 16  # a row/column of at least this many elements, mostly mismatched, is an omission
RUN_WINDOW = 128  # so is a window of this many consecutive elements, mostly mismatched (a tail, a block)
LINE_SHARE = 0.5  # "mostly": honest misses at <= 1 % almost never reach half of a line by chance


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
    if ref.dtype.is_complex:  # as (real, imaginary) pairs: a cast to float32 would drop the imaginary part
        got, ref = (torch.view_as_real(t.resolve_conj().to(torch.complex64)) for t in (got, ref))
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
    # a discrete output (a mask, an index) misses by whole units: a flipped bit or a tie broken the other
    # way is all an honest miss can be there, so only the ratio and the structure judge it
    discrete = not (ref.dtype.is_floating_point or ref.dtype.is_complex)
    gross = None if discrete else gross_miss(diff, b, ok, mask, tol)
    if gross:
        return Verdict(False, max_abs, max_rel, f"{name}: {gross}")
    structure = structural_omission(~ok & mask)
    if structure:
        return Verdict(False, max_abs, max_rel, f"{name}: {structure} (max abs error {max_abs:.4g})")
    return Verdict(True, max_abs, max_rel)


def gross_miss(
    diff: torch.Tensor, ref: torch.Tensor, ok: torch.Tensor, mask: torch.Tensor, tol: Tolerance
) -> str | None:
    """Why some forgiven element is not a near miss (None when every one is)."""
    miss = ~ok & mask
    if not bool(miss.any()):
        return None
    finite_ref = torch.where(mask, ref, torch.zeros_like(ref))
    scale = float(finite_ref.square().mean().sqrt())
    allowed = NEAR_MISS_FACTOR * (tol.atol + tol.rtol * ref.abs().clamp_min(scale))
    if tol.error_cap is not None:  # the operator's author said how far an element may be off: that far
        allowed = allowed.clamp_min(tol.error_cap)
    over = miss & (diff > allowed)
    if not bool(over.any()):
        return None
    worst = float(torch.where(over, diff, torch.zeros_like(diff)).max())
    return (
        f"{int(over.sum())} elements are off by more than {NEAR_MISS_FACTOR:g}x their tolerance (worst "
        f"{worst:.4g}): elements outside the tolerance may only be near misses, not arbitrary values"
    )


def structural_omission(miss: torch.Tensor) -> str | None:
    """Why the mismatched elements look like skipped work: most of a row or column of the [rows, last
    dim] view, or most of a window of consecutive elements in memory order (None when scattered). "Most",
    not "all": a cheap guess for the skipped part lands within tolerance here and there."""
    if not bool(miss.any()):
        return None
    if miss.dim() >= 2:
        grid = miss.reshape(-1, miss.shape[-1]).float()
        rows, cols = grid.shape
        if cols >= MIN_LINE:
            bad = int((grid.mean(dim=1) >= LINE_SHARE).sum())
            if bad:
                return f"{bad} rows are mostly wrong (work skipped on whole rows)"
        if rows >= MIN_LINE:
            bad = int((grid.mean(dim=0) >= LINE_SHARE).sum())
            if bad:
                return f"{bad} columns are mostly wrong (work skipped on whole features)"
    flat = miss.reshape(-1)
    if flat.numel() >= RUN_WINDOW:
        sums = torch.cumsum(torch.cat([flat.new_zeros(1, dtype=torch.int64), flat.to(torch.int64)]), 0)
        densest = int((sums[RUN_WINDOW:] - sums[:-RUN_WINDOW]).max())
        if densest >= LINE_SHARE * RUN_WINDOW:
            return f"{densest} of {RUN_WINDOW} consecutive elements are wrong (a skipped tail or block)"
    return None
