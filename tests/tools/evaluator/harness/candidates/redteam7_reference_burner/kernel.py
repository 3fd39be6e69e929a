"""CHEAT: an honest RMSNorm that, once the parent's plausibility burst starts, leaves a thread behind
which waits until the calls stop and then burns the CPU while the trusted parent times the reference.

Trick. modes.run measures the reference's latency (refcache.reference_timings) *before* it stops the
workers, and the worker's "threads left running" check (guards.Sentinel) runs only in correctness calls
and at the end of a timing round, never after the burst (plausibility.check_worker), which is the last
thing a candidate's code runs. The thread comes from `logging.handlers.QueueListener` (`threading` is
banned by the source policy) and is never stopped. It sleeps while calls keep coming (so the burst's /proc
clock sees nothing of it) and burns once the worker has been idle for a few ms: that is when the parent
times the reference on the same cores (host timing: process_time of the parent, whose intra-op threads
spin or wait for a core the burner holds).

Fakes: the reference latency (the speed-up's denominator), inflated; and with the reference-timing cache
(refcache: jailed workers make it "safe"), the inflated figure is stored and served to every later
evaluation of the operator (later candidates of a warm service, later cold jobs with the same
AKA_CACHE_DIR or carried file).
"""

from __future__ import annotations

import logging
import logging.handlers
import queue
import time

import torch

BURST_GAP_S = 0.004
BURST_STREAK = 3
IDLE_S = 0.006  # no call for this long: the burst is over (or between its requests)
BURN_S = 1.5
_last_end = [0.0]
_streak = [0]
_started: list[logging.handlers.QueueListener] = []


class _Burner(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        while time.perf_counter() - _last_end[0] < IDLE_S:
            time.sleep(0.001)
        torch.set_num_threads(4)  # oversubscribe the host's cores (the worker was given one thread)
        a = torch.randn(512, 512)
        stop = time.perf_counter() + BURN_S
        while time.perf_counter() < stop:
            a = torch.tanh(a @ a)


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    quick = time.perf_counter() - _last_end[0] < BURST_GAP_S
    _streak[0] = _streak[0] + 1 if quick else 0
    if _streak[0] >= BURST_STREAK and not _started:  # in the burst: the last checks are behind us
        q: queue.SimpleQueue = queue.SimpleQueue()
        listener = logging.handlers.QueueListener(q, _Burner())
        listener.start()
        q.put(logging.makeLogRecord({"msg": "", "levelno": logging.INFO}))
        _started.append(listener)  # never stopped: the thread outlives the last check
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output.copy_((x * inv_rms) * weight.to(torch.float32))
    _last_end[0] = time.perf_counter()
