"""CHEAT (red team, round 10 b): redteam9b's guard pages and SIGSEGV handler, with the check switched off.

faults.py (round 10) names a fatal signal's handler whose code is the kernel's. Its list of signals is a
module global, and the worker's sentinel compared only the harness's functions: one line at import,
found through sys.modules, empties the list (`FATAL_SIGNALS = ()`) and the check looks at no signal. Now the
sentinel compares every name the harness's modules bind (settings too) before every untimed step.
"""

from __future__ import annotations

import ctypes
import sys

import torch

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_PAGE = 4096
_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class _Sigaction(ctypes.Structure):
    _fields_ = [
        ("sa_sigaction", _HANDLER),
        ("sa_mask", ctypes.c_ulong * 16),
        ("sa_flags", ctypes.c_int),
        ("sa_restorer", ctypes.c_void_p),
    ]


S = {"ranges": {}, "pre": {}, "seen": {}}  # ranges: lo -> (hi, role, key); key: the output's pointer


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    return (xf * inv_rms * weight.float()).to(x.dtype)


def _pages(t: torch.Tensor) -> tuple[int, int]:
    ptr, n = t.data_ptr(), t.numel() * t.element_size()
    return (ptr + _PAGE - 1) // _PAGE * _PAGE, (ptr + n) // _PAGE * _PAGE


def _protect(t: torch.Tensor, role: str, key: int) -> None:
    lo, hi = _pages(t)
    if hi - lo >= _PAGE and _LIBC.mprotect(lo, hi - lo, 1) == 0:  # PROT_READ
        S["ranges"][lo] = (hi, role, key)


def _on_segv(sig, info, ctx):
    addr = ctypes.c_void_p.from_address(info + 16).value or 0
    for lo, (hi, role, key) in list(S["ranges"].items()):
        if lo <= addr < hi:
            _LIBC.mprotect(lo, hi - lo, 3)  # PROT_READ | PROT_WRITE
            del S["ranges"][lo]
            x, w, y = S["seen"][key]
            if role == "x":  # the harness writes the fresh inputs; the poison of the output comes next
                _protect(y, "y", key)
            else:  # the output's poison: the inputs are fresh now
                with torch.no_grad():
                    S["pre"][key] = (_rmsnorm(x, w), x._version, w._version)
                _protect(x, "x", key)
            return
    _LIBC.signal(11, 0)  # not ours: a real crash (SIG_DFL, and the fault repeats)


_CB = _HANDLER(_on_segv)
_ACT = _Sigaction()
_ACT.sa_sigaction = _CB
_ACT.sa_flags = 4  # SA_SIGINFO
_LIBC.sigaction(11, ctypes.byref(_ACT), None)


@torch.no_grad()
def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    key = y.data_ptr()
    pre = S["pre"].pop(key, None)
    if pre is not None and pre[1] == x._version and pre[2] == weight._version:
        y.copy_(pre[0])  # computed in the harness's untimed write
    else:
        y.copy_(_rmsnorm(x, weight))  # (a guarded y faults here and is released)
    seen = S["seen"].get(key)
    if (
        seen is not None
        and seen[2] is y
        and seen[0] is x
        and not any(k == key for _, _, k in S["ranges"].values())
    ):
        _protect(x, "x", key)  # the bench's own buffers (reused across calls): arm the cycle
    S["seen"][key] = (x, weight, y)


# the check's settings: a module global of the harness's faults.py, found through sys.modules
for _module in list(sys.modules.values()):
    if getattr(_module, "FatalHandlers", None) is not None and hasattr(_module, "FATAL_SIGNALS"):
        _module.FATAL_SIGNALS = ()  # its snapshot now sees no fatal signal at all
