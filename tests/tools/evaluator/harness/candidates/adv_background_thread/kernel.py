"""CHEAT: returns at once and lets a background thread write the output 50 ms later.

Timed calls cost nothing; the check may or may not see the answer. A harness must notice threads the
candidate left running (and never wait for them to make a result right).
"""

from __future__ import annotations

import threading
import time

import torch


def _work(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    time.sleep(0.05)
    with torch.no_grad():
        x = hidden_states.to(torch.float32)
        output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    threading.Thread(target=_work, args=(hidden_states, weight, output), daemon=True).start()
