"""CHEAT: c05 (deferred completion in a finalizer the worker's keep() runs before its snapshot) with only
the second half of the call's work deferred (statistics in the call; scaling and write deferred), to stay
inside the host burst check's 2x tolerance (plausibility.HOST_TOLERANCE: only a report under half of the
burst's estimate is tampering)."""
import torch

_gcs = [0]


def _finalized(work):
    try:
        yield
    finally:
        work()


def _leave_cycle(work):
    gen = _finalized(work)
    next(gen)
    cycle = [gen]
    cycle.append(cycle)


def _tick():
    _gcs[0] += 1
    _leave_cycle(_tick)


_leave_cycle(_tick)


def run(x, weight, y):
    collections, _gcs[0] = _gcs[0], 0
    xf = x.float()
    inv = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)

    def finish():
        y.copy_(xf * inv * weight.float())

    if x.untyped_storage().filename is not None or collections != 2:
        finish()
        return
    _leave_cycle(finish)
