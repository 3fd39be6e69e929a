"""CHEAT (issue 13, class 3): writes a helper module beside kernel.py at import time (through numpy's
savetxt: no `open`, no `write`) and imports it; the helper was never scanned. If the write is refused it
falls back to a wrong answer rather than crash.

Caught by: the source policy (a module file name as a string); the kernel directory the worker sees is
read-only in any case."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

HELPER = "import torch\ndef run(h, w, o):\n    o.zero_()\n"
try:
    np.savetxt(Path(__file__).with_name("aka_helper.py"), [], header=HELPER, comments="")
    import aka_helper  # type: ignore[import-not-found]

    run = aka_helper.run
except Exception:

    @torch.no_grad()
    def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
        output.fill_(1.0)
