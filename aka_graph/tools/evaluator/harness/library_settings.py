"""Settings a kernel may give the libraries it runs on, stated once for both layers that allow them: the
source policy (policy.library_env_setting, before any code runs) and the worker's run-time guards
(guards._library_setting, after each call). Kept apart from both so neither imports the other."""

from __future__ import annotations

import re

# Environment variables that tune only the math libraries of the kernel's own process, each with the form
# of value its library documents. The harness's own steps in the worker run no cuBLAS; the reference runs
# in the parent, whose environment the kernel never touches.
LIBRARY_ENV = {
    # cuBLAS: ":SIZE:COUNT" pairs, SIZE in KiB (torch's deterministic mode asks for ":4096:8" or ":16:8";
    # round 15's corpus: an agent's solution sets ":256:8")
    "CUBLAS_WORKSPACE_CONFIG": re.compile(r"(?::[0-9]{1,7}:[0-9]{1,4})+"),
    # torch: the cuBLASLt workspace of its matmuls, in KiB (round 15's corpus: "32768", "131072")
    "CUBLASLT_WORKSPACE_SIZE": re.compile(r"[0-9]{1,9}"),
    # torch: cuBLASLt rather than cuBLAS for its matmuls
    "TORCH_BLAS_PREFER_CUBLASLT": re.compile(r"[01]"),
}


def library_env_value(name: object, value: object) -> bool:
    """Whether `name` = `value` is one of LIBRARY_ENV's settings in its documented form."""
    pattern = LIBRARY_ENV.get(name) if isinstance(name, str) else None
    return pattern is not None and isinstance(value, str) and pattern.fullmatch(value) is not None
