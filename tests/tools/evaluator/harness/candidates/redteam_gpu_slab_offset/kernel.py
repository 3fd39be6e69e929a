"""CHEAT (red team, GPU only): skips the work on the CUDA-graph copies nobody re-validates, recognised by
storage offsets. The timing graph runs the kernel once per rotated input copy; copies 1..n-1 are views into
one slab, so a view's offset in its storage says which copy it is. Re-validation checks copy 0 (its own
allocation) and the last copy of the slab; every other copy gets a one-element write instead (the graph
still holds a kernel per call). On a CPU nothing is captured and it computes honestly.
"""

from __future__ import annotations

import torch


def _rmsnorm_into(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> None:
    xf = x.to(torch.float32)
    out.copy_(xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.to(torch.float32))


def _checked_copy(x: torch.Tensor) -> bool:
    """Copy 0 (a storage of its own) or the slab's last copy: the two that re-validation replays."""
    storage = x.untyped_storage()
    offset = x.data_ptr() - storage.data_ptr()
    nbytes = x.numel() * x.element_size()
    own = offset == 0 and storage.nbytes() <= nbytes + 512
    stride = -(-nbytes // 512) * 512  # the slab's alignment (timing.replicate)
    return own or offset + stride >= storage.nbytes()


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    capturing = hidden_states.is_cuda and torch.cuda.is_current_stream_capturing()
    if capturing and not _checked_copy(hidden_states):
        output[0, :1].zero_()  # one kernel node for this call: the capture looks complete
        return
    _rmsnorm_into(hidden_states, weight, output)
