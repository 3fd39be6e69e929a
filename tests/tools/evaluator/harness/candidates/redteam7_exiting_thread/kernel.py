"""CHEAT: an honest Triton RMSNorm whose every call runs on a thread that is born and dies inside the
call, so the parent's /proc clock never sees its CPU time; calls deep in a run of back-to-back calls
(the parent's plausibility burst) skip the work.

Trick. On a host the parent times each call itself from /proc (hostclock.py, proctree.tree_cpu_pair):
the "precise" figure sums the *live* threads' schedstat, so a thread that starts and exits inside the
call window takes its CPU time with it; the "coarse" figure (utime + stime, exited threads included) is
read with a 2-tick allowance (proctree.cpu_delta_ns: 20 ms at CLK_TCK = 100), so a call under ~10-20 ms
vanishes from it too. The parent then keeps only the main thread's bookkeeping (starting and joining
the thread, ~0.3 ms) as the latency. The thread comes from `logging.handlers.QueueListener` (`threading`
itself is banned by the source policy; this stdlib helper starts and joins a `threading.Thread`), and it
is joined before the call returns, so no thread is "left running" and every output is right (the
after-the-fact spot checks and re-validation pass). The worker's own reading (process_time, which does
count exited threads) is only compared the other way (hostclock.tampered: a worker reading far *below*
the parent's is tampering; one far above is not looked at).

The burst (plausibility.py) is timed from /proc too, but its 2-tick allowance is small beside many
calls, so calls that follow the previous one closely for the 3rd time in a row (a burst's back-to-back
calls; the parent's stepped calls are ~8+ ms apart, correctness seeds at most 3 in a row) return
without computing: burst outputs are never checked on a host.

Fakes: the latency: batch 7 runs ~8 ms of interpreted Triton per call (rmsnorm_triton PASSes at
~7.9 ms); this one PASSes at ~0.3 ms.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import queue
import time

import torch
import triton
import triton.language as tl

EPS = 1e-5
BURST_GAP_S = 0.004  # closer to the previous call than this: back to back
BURST_STREAK = 3  # this many back-to-back calls in a row: the parent's burst (correctness has fewer)
_last_end = [0.0]
_streak = [0]


@triton.jit
def _rmsnorm_rows(x_ptr, w_ptr, y_ptr, n_rows, stride_x, stride_y, eps,
                  N: tl.constexpr, BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows < n_rows)[:, None] & (cols < N)[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) / N + eps)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    y = (x * inv_rms[:, None]) * w[None, :]
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    n_rows, hidden = x.shape
    interp = os.environ.get("TRITON_INTERPRET") == "1"
    rows = min(16, triton.next_power_of_2(max(n_rows, 1))) if interp else 1
    _rmsnorm_rows[(triton.cdiv(n_rows, rows),)](
        x, weight, output, n_rows, x.stride(0), output.stride(0), EPS,
        N=hidden, BLOCK_N=triton.next_power_of_2(hidden), ROWS=rows, num_warps=1 if interp else 8)


class _Offload(logging.Handler):
    """Runs the job a record carries, on the listener's own (short-lived) thread."""

    def emit(self, record: logging.LogRecord) -> None:
        job = record.args
        _rmsnorm(job["x"], job["w"], job["out"])


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    quick = time.perf_counter() - _last_end[0] < BURST_GAP_S
    _streak[0] = _streak[0] + 1 if quick else 0
    if _streak[0] >= BURST_STREAK:  # deep in a run of back-to-back calls: the parent's burst
        _last_end[0] = time.perf_counter()
        return
    x = hidden_states if hidden_states.stride(-1) == 1 else hidden_states.contiguous()
    q: queue.SimpleQueue = queue.SimpleQueue()
    listener = logging.handlers.QueueListener(q, _Offload())
    listener.start()  # a fresh thread; when it exits, its schedstat goes with it
    job = {"x": x, "w": weight, "out": output}
    q.put(logging.makeLogRecord({"msg": "", "levelno": logging.INFO, "args": job}))
    listener.stop()  # joins the thread: the output is complete, no thread left running
    _last_end[0] = time.perf_counter()
