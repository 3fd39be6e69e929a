"""torch's global random generators, handled explicitly around operator code that draws from them.

Custom input generators (`custom_inputs_entrypoint`, native `_make_inputs`) call `torch.randn(...,
device=device)` on the *default* generators. A CUDA-graph capture that fails part-way (an uncapturable
reference or candidate, before the CUDA-event fallback) leaves the default CUDA generator in capture mode,
and every later draw raises "Offset increment outside graph capture encountered unexpectedly". So such
code runs on a private generator state swapped in for the call (seeded, never in capture mode) and the
previous state is put back afterwards; and a failed capture replaces the default state with a fresh one.
"""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Iterator
from typing import Any

import torch


def _cuda_default(device: torch.device) -> Any:
    index = device.index if device.index is not None else torch.cuda.current_device()
    return torch.cuda.default_generators[index]


def _swap(gen: Any, seed: int, device: torch.device) -> Any:
    """Point `gen` at a fresh state seeded with `seed`; the state it had (to restore), or None."""
    private = torch.Generator(device=device)
    private.manual_seed(seed)
    try:
        saved = gen.graphsafe_get_state()
        gen.graphsafe_set_state(private)
        return saved
    except (AttributeError, RuntimeError):  # an older torch: seed in place
        gen.manual_seed(seed)
        return None


@contextlib.contextmanager
def seeded(seed: int, device: torch.device) -> Iterator[None]:
    """torch's default CPU generator (and the device's CUDA one) seeded with `seed` for the duration,
    restored afterwards, so operator code that draws from them is deterministic and harmless."""
    on_cuda = device.type == "cuda"
    if on_cuda and torch.cuda.is_current_stream_capturing():
        raise RuntimeError("input generation must not run while a CUDA graph is being captured")
    cpu_state = torch.random.get_rng_state()
    torch.random.default_generator.manual_seed(seed)
    gen = _cuda_default(device) if on_cuda else None
    saved = _swap(gen, seed, device) if gen is not None else None
    try:
        yield
    finally:
        torch.random.set_rng_state(cpu_state)
        if gen is not None and saved is not None:
            gen.graphsafe_set_state(saved)


@contextlib.contextmanager
def all_seeded(seed: int, device: torch.device) -> Iterator[None]:
    """torch's generators (`seeded`) and Python's `random` (and numpy's, when loaded) seeded for the
    duration and restored afterwards: SOL's driver seeds all three, and operator code (a reference, a
    custom input generator) may draw from any of them."""
    state = random.getstate()
    numpy = sys.modules.get("numpy")
    np_state = numpy.random.get_state() if numpy is not None else None
    random.seed(seed)
    if numpy is not None:
        numpy.random.seed(seed % (1 << 32))
    try:
        with seeded(seed, device):
            yield
    finally:
        random.setstate(state)
        if numpy is not None:
            numpy.random.set_state(np_state)


def seed_host_generators(seed: int) -> None:
    """Python's, numpy's (when loaded) and torch's CPU generator seeded as `all_seeded` seeds them, left so
    for the next call: a host-timed call of a random operator draws what the reference draws on the same
    seed, so the parent can check it after the fact (spotcheck.py). The untimed step before the call."""
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % (1 << 32))
    torch.random.default_generator.manual_seed(seed)


def heal_after_failed_capture(device: torch.device) -> None:
    """A capture that raised may leave the default CUDA generator in capture mode: give it a fresh
    state (same seed) so later random draws outside any capture work."""
    if device.type != "cuda":
        return
    with contextlib.suppress(Exception):
        gen = _cuda_default(device)
        _swap(gen, gen.initial_seed(), device)
