"""Build paths for every kernel language a solution may declare (SOL-ExecBench's set, plus Gluon).

- `solution.py`: what `solution.json` declares (languages, entry point, flags, inlined sources);
- `toolchain.py`: finding compilers, CUTLASS/cuDNN and Python kernel frameworks, or naming what to
  install (`MissingToolchain` -> INFRA_ERROR);
- `torch_ext.py` + `ext_main.py`: C++/CUDA solutions built into a torch extension in a fresh directory,
  in a subprocess of their own, under a build-time limit;
- `diagnostics.py`: compiler output trimmed to the first errors with file and line.

Standard library at import time; torch only where a build runs.
"""
