"""HONEST: tests/fixtures/sol/r12_autocast_linear_gelu with the weight cast to bfloat16 on a side CUDA
stream while the activation is cast on the current one; the current stream waits for the side stream
before the GEMM and the weight copy is recorded on the current stream (torch's documented pattern).
On a CPU tensor the same arithmetic runs without streams."""

import torch
import torch.nn.functional as F

DESTINATION_PASSING_STYLE = False

_SIDE: dict[torch.device, "torch.cuda.Stream"] = {}


def _side_stream(device: torch.device) -> "torch.cuda.Stream":
    if device not in _SIDE:
        _SIDE[device] = torch.cuda.Stream(device=device)
    return _SIDE[device]


@torch.no_grad()
def run(x, w, b):
    if x.is_cuda:
        side = _side_stream(x.device)
        side.wait_stream(torch.cuda.current_stream(x.device))
        with torch.cuda.stream(side):
            wb = w.to(torch.bfloat16)
        xb = x.to(torch.bfloat16)
        torch.cuda.current_stream(x.device).wait_stream(side)
        wb.record_stream(torch.cuda.current_stream(x.device))
    else:
        wb, xb = w.to(torch.bfloat16), x.to(torch.bfloat16)
    h = torch.addmm(b.to(torch.bfloat16), xb, wb.t())
    return F.gelu(h.float(), approximate="tanh")
