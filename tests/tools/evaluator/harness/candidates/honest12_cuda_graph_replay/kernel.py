"""HONEST: tests/fixtures/sol/r12_layer_group_norm_affine replayed from a CUDA graph captured once per
(shape, eps) after a warm-up on a side stream: the call's inputs are copied into the graph's static
inputs, the graph replayed, and a clone of its static output returned (a fresh tensor every call, as
torch.cuda.graphs' documentation advises when the caller keeps results). On CPU it runs eagerly."""

import torch
import torch.nn.functional as F

DESTINATION_PASSING_STYLE = False

_GRAPHS: dict[tuple, tuple] = {}


def _eager(x, ln_w, ln_b, gn_w, gn_b, eps):
    h = F.layer_norm(x, (x.shape[-1],), ln_w, ln_b, eps)
    return F.group_norm(h.transpose(1, 2).float(), 4, gn_w, gn_b, eps).to(x.dtype)


@torch.no_grad()
def run(x, ln_w, ln_b, gn_w, gn_b, eps):
    if not x.is_cuda:
        return _eager(x, ln_w, ln_b, gn_w, gn_b, eps)
    args = (x, ln_w, ln_b, gn_w, gn_b)
    key = (tuple(tuple(a.shape) for a in args), float(eps), x.device)
    if key not in _GRAPHS:
        static = [a.clone() for a in args]
        side = torch.cuda.Stream(device=x.device)
        side.wait_stream(torch.cuda.current_stream(x.device))
        with torch.cuda.stream(side):
            for _ in range(2):
                _eager(*static, eps)
        torch.cuda.current_stream(x.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = _eager(*static, eps)
        _GRAPHS[key] = (graph, static, out)
    graph, static, out = _GRAPHS[key]
    for dst, src in zip(static, args, strict=True):
        dst.copy_(src)
    graph.replay()
    return out.clone()
