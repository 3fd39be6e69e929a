"""Data pinned in the GPU's L2 cache: a kernel that sets aside part of the L2 for persisting accesses and
marks its weights or outputs persisting (an access-policy window) keeps them cached across the flush
the harness runs between timed calls, so its timing reads warm-cache calls where every other candidate's
reads cold ones. Coding agents do this (round 15's corpus: 4 solutions SOL-ExecBench's grader accepted,
"eliminate cold-L2 stall", through ctypes and libcudart's cudaStreamSetAttribute/cudaDeviceSetLimit).

The source policy refuses the API's names, in Python (cuda-python's enums and structures are attributes)
and in C/C++ text, and names the technique in its finding. A limit set through a number
(`cudaDeviceSetLimit((cudaLimit)6, n)`) is refused too: only the limits named here as harmless may be
set. What this cannot see: a name assembled where no scan reads it (the native guards' business)."""

from __future__ import annotations

import re

# cuda-python / the runtime and driver APIs: the set-aside limit, the persisting property, the window
# (a stream's, a launch's, a graph kernel node's), and the calls that reset what a window left behind
PINNING_NAMES = frozenset(
    {
        "accessPolicyWindow",
        "cudaLimitPersistingL2CacheSize",
        "cudaAccessPropertyPersisting",
        "cudaStreamAttributeAccessPolicyWindow",
        "cudaLaunchAttributeAccessPolicyWindow",
        "cudaKernelNodeAttributeAccessPolicyWindow",
        "CU_LIMIT_PERSISTING_L2_CACHE_SIZE",
        "CU_ACCESS_PROPERTY_PERSISTING",
        "CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW",
        "CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW",
        "CU_KERNEL_NODE_ATTRIBUTE_ACCESS_POLICY_WINDOW",
        "CUaccessPolicyWindow",
        "cudaAccessPolicyWindow",
    }
)
_NATIVE_NAMES = re.compile(r"\b(?:" + "|".join(sorted(PINNING_NAMES)) + r")\b")
# a device limit set other than by one of the harmless limits' names
_LIMIT_SET = re.compile(
    r"\b(?:cudaDeviceSetLimit|cuCtxSetLimit)\s*\((?!\s*(?:cudaLimit(?:StackSize|PrintfFifoSize|MallocHeapSize|"
    r"DevRuntimeSyncDepth|DevRuntimePendingLaunchCount|MaxL2FetchGranularity)|CU_LIMIT_(?:STACK_SIZE|"
    r"PRINTF_FIFO_SIZE|MALLOC_HEAP_SIZE|DEV_RUNTIME_SYNC_DEPTH|DEV_RUNTIME_PENDING_LAUNCH_COUNT|"
    r"MAX_L2_FETCH_GRANULARITY))\s*[,)])"
)
# the fields of an access-policy window, as a ctypes structure's assignments name them
_WINDOW_FIELDS = ("hitRatio", "hitProp", "missProp")

TECHNIQUE = (
    "pins data in the GPU's L2 cache (a persisting access-policy window or L2 set-aside): it outlives the "
    "L2 flush between timed calls, so its timing would read warm-cache calls; kernels must not change the "
    "device's cache policy"
)


def native_l2_problems(code: str, strings: list[tuple[int, int]]) -> list[str]:
    """The L2-pinning API named in C/C++ code (native_code's reading) outside its string literals
    (`strings`, the [start, end) spans of those: prose), or a device limit set by number."""
    named = (m for m in _NATIVE_NAMES.finditer(code) if not any(a <= m.start() < b for a, b in strings))
    names = sorted({m.group() for m in named})
    found = [f"{TECHNIQUE}: {', '.join(names[:4])}"] if names else []
    if _LIMIT_SET.search(code):
        found.append(
            "native source sets a device limit other than by a harmless limit's name (the L2 set-aside for "
            "persisting accesses is one): name it (cudaLimitStackSize, cudaLimitMallocHeapSize, ...)"
        )
    return found


def named_technique(problems: list[str]) -> str | None:
    """The finding that says what the refused source does, when its problems show L2 pinning (the API's
    names, or a structure with a window's fields beside ctypes), else None."""
    text = "\n".join(problems)
    if TECHNIQUE in text:
        return None  # the native finding says it already
    if any(name in text for name in PINNING_NAMES) or sum(f"'{f}'" in text for f in _WINDOW_FIELDS) >= 2:
        return TECHNIQUE
    return None
