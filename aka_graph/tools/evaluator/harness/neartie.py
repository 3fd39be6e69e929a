"""Inputs nudged by a few units in the last place, to find where an operator has no right answer.

An operator whose float output is selected by an argmin/argmax/top-k (a VQ codebook lookup, MoE routing,
nearest neighbours) is ill-conditioned where two candidates nearly tie: an honest kernel that rounds its
distances differently, or breaks an exact tie the other way, returns another whole row. The comparison
(numerics.nearest_reference) then also accepts the reference's answer to slightly different inputs, but
only where that answer moved by more than twice the tolerance: the reference is unstable there, and
stable elements keep their one right answer (a kernel dropping its last row stays wrong).

The nudges are antithetic: one random direction d, applied as +d and as -d. For a tie between A and B,
one sign favours A and the other B whenever d is not orthogonal to the tie, so a tie is found
deterministically, not by chance, where the nudge's sizes vary continuously (fp32, fp64). In bf16 and
fp16 a nudge is -1, 0 or +1 unit, so two equal inputs move alike in a third of the directions, and a
three-way tie needs the kernel's choice to move first. The caller therefore draws directions until the
output passes or STALL_CYCLES cycles of directions in a row explain no element more, at most
MAX_DIRECTIONS, within BUDGET_S per evaluation. A direction nudges every input, or one alone in turn
(part_of). Measured on a router's top-2 over uniform bf16 logits (~6 % of 2048 tokens tie, some three
ways), 20 draws: 5-17 directions explained every tie, with at most 6 fruitless directions in a row. A
wrong kernel on a stable operator with m inputs to nudge costs 2 * STALL_CYCLES * (m + 1) reference
calls, and only once it has failed. The parent draws the directions with its own fresh seed after the
kernel has answered: a kernel cannot know them.

Each float element moves by n..2n relative, n = nudge_size(rtol): NUDGE, or an eighth of the workload's
relative tolerance where that is smaller, so a stable output stays within its tolerance (a 1e-4 nudge
under rtol 1e-5 would move every element, and a TF32 kernel could then match a nudged reference where
the tolerance exists to refuse it); or by -1, 0 or +1 unit in the last place where a unit is larger than
n (bf16, fp16: a nudge must survive rounding). A tensor of whole numbers alone stays as it is: a float
mask's 0 and 1, float ids, positions or lengths mean something (`mask == 0`, `.long()`), and a nudged
mask made the reference attend every key, which a kernel ignoring its mask then matched (red team round
13). In other tensors zeros stay (padding, a ReLU's zeros) and whole numbers move: bf16 logits drawn
near 2 round to 2.0 often, and three of them tied at the top of a router's row. Integers, booleans,
complex and non-finite values, and dtypes coarser than COARSEST_EPS (fp8: one unit is 6-12 %), stay as
they are."""

from __future__ import annotations

from typing import Any

import torch

# ~1.5e-5 relative at most: 128 fp32 units, far above the rounding of a reduction computed in another
# order (an honest kernel's near-tie), far below what a selection in lower precision gets wrong (fp16
# keys: 5e-4, TF32: 1e-3). At 1.2e-4 a sort on fp16 keys had most of its misordered pairs explained
# (red team round 13); a kernel whose fp32 selection runs in TF32 is not forgiven its flipped choices.
NUDGE = 2.0**-16
MAX_DIRECTIONS = 64  # random directions at most, each applied with both signs (two reference calls)
BUDGET_S = 120.0  # of the search's own reference calls per evaluation: a kernel passing through ties pays
# the search at every check (seeds, re-validation, timed calls); with a reference of seconds a call, bounded
# cycles of directions (all parts, then each alone: part_of) in a row that explain no element more end the
# search: the rest are not ties. A bf16 router (3 parts) at twice the scale, 12 draws: at most 9 fruitless
# directions in a row, and once 39 directions in all
STALL_CYCLES = 5
# cycles after which a search that moved no line of the output at all ends: the operator is stable on these
# inputs and the kernel simply wrong (rmsnorm: 6 directions, not 15). A bf16 tie unflipped by both signs of
# a direction has odds 1/3 a direction; two cycles of a router's directions leave one in ~80 unseen
STABLE_CYCLES = 2
MATCHED_BEFORE_TIES = 0.5  # an output judged again already matches this share: ties are never most of it
COARSEST_EPS = 2.0**-7  # bf16's unit at 1.0; coarser dtypes (fp8) are left alone


def nudge_size(rtol: float) -> float:
    """The relative nudge for a workload whose tolerance is `rtol` (see the module's docstring)."""
    return min(NUDGE, rtol / 8) if rtol > 0 else 0.0


def line_width(output: torch.Tensor, inputs: list[Any]) -> int | None:
    """The length of the output's lines, each judged against one nudged reference whole
    (numerics.nearest_reference), or None for its last dim. A 1-D output of one element per row of a
    2-D-or-more input (a greedy arg-max over [tokens, vocab], a score per token) has a line per element:
    as one line, every tie in it had to flip in one nudged reference at once (red team round 14, H1: never
    found). A 1-D output of a 1-D input (a sort, a cumulative sum) stays one line: its elements depend on
    each other, and mixed element by element they would assemble an order no input has."""
    if output.dim() != 1 or output.dtype.is_complex:
        return None
    rows = output.shape[0]
    if any(isinstance(x, torch.Tensor) and x.dim() >= 2 and x.shape[0] == rows for x in inputs):
        return 1
    return None


def parts(inputs: list[Any]) -> int:
    """How many of `inputs` a nudge moves (float tensors that are not whole numbers alone)."""
    return sum(1 for value in inputs if _nudgeable(value))


def part_of(direction: int, count: int) -> int | None:
    """The part direction number `direction` nudges: every nudgeable input, then each alone in turn. One
    input alone gives a clean alternate: a bf16 router's tie flipped by its logits alone, its hidden states
    and expert weights as they were (nudged too, each by a unit, they moved the row past its tolerance)."""
    turn = direction % (count + 1)
    return None if turn == 0 else turn - 1


def nudged(
    inputs: list[Any], seed: int, sign: int, size: float = NUDGE, part: int | None = None
) -> list[Any]:
    """`inputs` with each float tensor moved along the random direction of `seed`, times `sign` (+1/-1),
    each element by `size`..2 * `size` relative (at least one unit in the last place); `part`: only the
    part-th of the tensors a nudge moves (None: all of them)."""
    out, seen = [], 0
    for k, value in enumerate(inputs):
        if _nudgeable(value):
            moves = part is None or seen == part
            seen += 1
            out.append(_nudge(value, (seed * 1_000_003 + k) % (1 << 62), sign, size) if moves else value)
        else:
            out.append(value)
    return out


def _nudgeable(value: Any) -> bool:
    if not (
        isinstance(value, torch.Tensor)
        and value.dtype.is_floating_point
        and value.numel() > 0
        and torch.finfo(value.dtype).eps <= COARSEST_EPS
    ):
        return False
    x = value.detach()
    return not bool(((x == x.round()) | ~torch.isfinite(x)).all())  # a mask, ids: whole numbers alone


def _nudge(x: torch.Tensor, seed: int, sign: int, size: float) -> torch.Tensor:
    """x + sign * d, d drawn from `seed` (the same for both signs): each element's sign at random, its
    size as the module says. An expanded input (stride 0) is nudged once per stored element and
    expanded again: its aliases stay equal."""
    expanded = [i for i, (n, st) in enumerate(zip(x.shape, x.stride(), strict=True)) if st == 0 and n > 1]
    if expanded:
        one = tuple(slice(0, 1) if i in expanded else slice(None) for i in range(x.dim()))
        return _nudge(x[one], seed, sign, size).expand(x.shape)
    gen = torch.Generator(device=x.device).manual_seed(seed)
    draw = torch.rand(x.shape, generator=gen, device=x.device)
    up = (draw < 0.5) if sign > 0 else (draw >= 0.5)
    xd = x.detach()
    finite = torch.isfinite(xd) & (xd != 0)  # moved: zeros, inf and nan stay
    step = torch.nextafter(xd, torch.where(up, torch.inf, -torch.inf).to(x.dtype))  # one unit, either way
    if torch.finfo(x.dtype).eps > size:  # bf16, fp16: one unit is already the nudge or more
        # -1, 0 or +1 unit, a third each: two equal inputs then move alike in 1/3 of the directions (1/2
        # with +-1 alone), and the one an honest kernel chose of a three-way tie comes first more often
        still = (draw - 0.5).abs() < 1.0 / 6.0
        y = torch.where(still, xd, step)
        finite = finite & ~still
    else:
        scaled = (torch.rand(x.shape, generator=gen, device=x.device) + 1.0) * size
        xf = xd if x.dtype == torch.float64 else xd.float()
        y = (xf + torch.where(up, scaled, -scaled).to(xf.dtype) * xf.abs()).to(x.dtype)
    y = torch.where(finite, torch.where(y == xd, step, y), xd)
    if x.is_contiguous():
        return y.contiguous()
    out = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)  # x's layout
    try:
        return out.copy_(y)
    except RuntimeError:  # a layout whose elements overlap otherwise: the values in a dense tensor
        return y.contiguous()
