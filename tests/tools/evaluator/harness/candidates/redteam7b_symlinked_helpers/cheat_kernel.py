"""CHEAT (round 7b): the code that runs lives in a symlinked directory the source policy never enters.

Trick. policy.scan_kernel_dir walks `Path.rglob("*")`, which (Python <= 3.12) does not descend into a
symlink to a directory; worker_proc.read_only_copy copies the kernel directory with
`copytree(symlinks=False)`, which follows the link and copies the target's files into the worker's copy.
`helpers` is a symlink to a directory beside the kernel (the test builds it: `helpers -> ../outside`,
`outside/fast.py` being redteam7_sourceless_pyc's fastpath: frames, a shadowed Bench.perturb, burst calls
skipped). session's kernel hash walks the same rglob, so it does not cover these files either.
"""

from __future__ import annotations

from helpers.fast import run  # noqa: F401  (helpers/ is a symlink: never scanned, copied for the worker)
