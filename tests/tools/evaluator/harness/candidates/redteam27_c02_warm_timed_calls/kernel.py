"""CHEAT (red team round 27, c02; policy off only): the worker's host cache flush (timing.flush_host_caches,
run in the untimed "prepare" step) reads and writes `timing._FLUSH[("cpu", -1)]`. The entry is replaced
with a one-byte tensor at import: the dict keeps its binding (the Sentinel compares bindings), so no
in-worker check sees it, and every timed call starts from the caches the perturbation just warmed while
the parent times the reference cold. The source policy refuses `import sys`."""

import sys

import torch

for _name, _mod in list(sys.modules.items()):
    if _name.endswith("harness.timing") and isinstance(getattr(_mod, "_FLUSH", None), dict):
        _mod._FLUSH[("cpu", -1)] = torch.zeros(1, dtype=torch.uint8)


def run(x, weight):
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    return (xf * inv_rms * weight.float()).to(x.dtype)


DESTINATION_PASSING_STYLE = False
