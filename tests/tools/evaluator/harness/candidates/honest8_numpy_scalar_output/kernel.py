"""HONEST: scalar_output (sum of squares as a Python-scalar output, max |x| as a 0-d tensor),
with the reduction done in numpy float64 on the host: the shape-null output is numpy's float64 scalar
(a subclass of Python float), which SOL's normalize_outputs turns into a tensor like any float."""

import numpy as np
import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(x: torch.Tensor):
    xs = x.detach().cpu().numpy().astype(np.float64)
    total = np.square(xs).sum()  # numpy.float64
    return total, x.abs().max()
