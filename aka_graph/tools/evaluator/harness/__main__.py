"""`python -m harness evaluate|compare|worker ...`.

The result is written (and the workers killed) before `main` returns: the process then leaves with
`os._exit`, skipping interpreter and CUDA-context teardown that only costs wall time (not under a
profiler or tracer, which write their output at interpreter exit)."""

import os
import sys

from .cli import main

if __name__ == "__main__":
    code = main()
    if "cProfile" in sys.modules or "profile" in sys.modules or sys.gettrace() is not None:
        raise SystemExit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
