"""Settings a kernel may give the libraries it runs on, stated once for both layers that allow them: the
source policy (policy.cublas_setting, before any code runs) and the worker's run-time guards
(guards._library_setting, after each call). Kept apart from both so neither imports the other."""

from __future__ import annotations

# torch's deterministic mode asks for CUBLAS_WORKSPACE_CONFIG before a cuBLAS matmul; cuBLAS documents
# these two values
CUBLAS_WORKSPACE = ("CUBLAS_WORKSPACE_CONFIG", frozenset({":4096:8", ":16:8"}))
