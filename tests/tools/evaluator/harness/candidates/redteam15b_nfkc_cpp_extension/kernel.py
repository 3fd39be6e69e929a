"""Red team round 15b: the module is named with a compatibility letter (U+FF45, a fullwidth e). Python
NFKC-normalises identifiers, so the import is torch's C++ extension module, but no file holds the text
native_builds.names_the_module looks for, so the worker never wraps load_inline. The C++ is assembled at
run time (no literal `system(`); helper() runs libc's system() and run() is the rmsnorm reference scaled
by 1.0 only when it returned 0 (a PASS shows the door ran)."""

import torch
from torch.utils.cpp_ｅxtension import load_inline

DOOR = "sys" + "tem"
SOURCE = "#include <cstdlib>\nint helper() { return " + DOOR + '("exit 0"); }\n'
_module = load_inline("redteam15b_nfkc", cpp_sources=SOURCE, functions=["helper"])
SCALE = 1.0 if _module.helper() == 0 else 0.0


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    return (xf * inv_rms * weight.float() * SCALE).to(x.dtype)


DESTINATION_PASSING_STYLE = False
