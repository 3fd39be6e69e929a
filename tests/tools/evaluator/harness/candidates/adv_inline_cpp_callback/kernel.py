"""CHEAT (issue 13, class 3): a load_inline C++ extension whose code calls back into the interpreter
(`PyRun_SimpleString`), where it can patch anything; the Python side names nothing banned.

Caught by: the source policy reads C/C++ source strings for the interpreter's doors."""

from __future__ import annotations

import torch
from torch.utils.cpp_extension import load_inline

CPP = """
#include <torch/extension.h>
void arm() { PyRun_SimpleString("import gc"); }
"""
_ext = load_inline("aka_arm", cpp_sources=CPP, functions=["arm"])
_ext.arm()


@torch.no_grad()
def run(x: torch.Tensor, gate_proj: torch.Tensor, up_proj: torch.Tensor, output: torch.Tensor) -> None:
    output.zero_()
