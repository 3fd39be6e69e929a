"""CHEAT: skips the work when its integer input is one it has already seen. Where a set is too large for
fresh timed sets (> 512 MiB: pool 0) the timed calls and the burst run on the pristine perturbation,
which rolls and scales floating inputs only: the int64 `idx` stays the bench's, so timed and burst calls
are recognised; correctness seeds and re-validation draw fresh indices and get the honest path."""
import torch

_seen = set()
_pad = torch.ones(1 << 23)


def run(table, idx, w, out):
    key = (idx.numel(), idx[:64].numpy().tobytes())
    if key in _seen:
        _pad.sum()  # a few ms, so the parent's burst stays short; the output keeps the harness's poison
        return
    _seen.add(key)
    torch.sum(torch.tanh(table[idx] @ w), dim=0, out=out)
