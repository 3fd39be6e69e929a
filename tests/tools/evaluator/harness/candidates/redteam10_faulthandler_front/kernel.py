"""CHEAT (red team, round 10 a): redteam9b's guard pages + SIGSEGV handler, hidden behind faulthandler.

The kernel's handler (a ctypes callback) is installed first, then faulthandler.enable(): the handler the
kernel's sigaction() reports is faulthandler's, in libpython (an allowed runtime library), and ours is only
faulthandler's saved `previous`. On a fault faulthandler dumps a traceback (to /dev/null), restores the
previous handler (ours) and raise()s: ours returns at once for the raised signal (si_code <= 0), the
faulting access re-executes and faults into ours directly, which does 9b's work, then disables and enables
faulthandler again, so that faulthandler's handler is in front again before the harness's next check.
"""

from __future__ import annotations

import ctypes
import faulthandler
import os

import torch

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_PAGE = 4096
_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_NULL = open(os.devnull, "w")  # noqa: SIM115 - faulthandler's output, for the process's life


class _Sigaction(ctypes.Structure):
    _fields_ = [
        ("sa_sigaction", _HANDLER),
        ("sa_mask", ctypes.c_ulong * 16),
        ("sa_flags", ctypes.c_int),
        ("sa_restorer", ctypes.c_void_p),
    ]


S = {"ranges": {}, "pre": {}, "seen": {}, "known": []}


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
        S["known"].append((lo, hi))


def _front() -> None:
    faulthandler.disable()  # (enable() alone is a no-op while it is still "enabled")
    faulthandler.enable(file=_NULL, all_threads=False)


def _on_segv(sig, info, ctx):
    if ctypes.c_int.from_address(info + 8).value <= 0:  # raise() from faulthandler: the access faults again
        return
    addr = ctypes.c_void_p.from_address(info + 16).value or 0
    for lo, (hi, role, key) in list(S["ranges"].items()):
        if lo <= addr < hi:
            _LIBC.mprotect(lo, hi - lo, 3)  # PROT_READ | PROT_WRITE
            S["ranges"].pop(lo, None)
            x, w, y = S["seen"][key]
            if role == "x":
                _protect(y, "y", key)
            else:
                with torch.no_grad():
                    S["pre"][key] = (_rmsnorm(x, w), x._version, w._version)
                _protect(x, "x", key)
            _front()
            return
    if any(lo <= addr < hi for lo, hi in S["known"]):  # another thread already released it: retry
        _front()
        return
    _LIBC.signal(11, 0)  # a real crash


_CB = _HANDLER(_on_segv)
_ACT = _Sigaction()
_ACT.sa_sigaction = _CB
_ACT.sa_flags = 4  # SA_SIGINFO
_LIBC.sigaction(11, ctypes.byref(_ACT), None)
_front()  # faulthandler's handler in front of ours


@torch.no_grad()
def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    key = y.data_ptr()
    pre = S["pre"].pop(key, None)
    if pre is not None and pre[1] == x._version and pre[2] == weight._version:
        ctypes.memmove(y.data_ptr(), pre[0].data_ptr(), y.numel() * y.element_size())  # computed untimed
    else:
        y.copy_(_rmsnorm(x, weight))
    seen = S["seen"].get(key)
    if (
        seen is not None
        and seen[2] is y
        and seen[0] is x
        and not any(k == key for _, _, k in S["ranges"].values())
    ):
        _protect(x, "x", key)
    S["seen"][key] = (x, weight, y)
