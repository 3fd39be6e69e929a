"""HONEST: tests/fixtures/sol/r12_conv2d_groups_channels_last with TF32 allowed for matmuls and cuDNN
(a precision switch set at import, as many production kernels do), the input left in its own layout and
the result returned as a contiguous NCHW tensor where the reference's is channels_last."""

import torch
import torch.nn.functional as F

DESTINATION_PASSING_STYLE = False

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True


@torch.no_grad()
def run(x, weight, bias):
    y = F.conv2d(x, weight, bias, padding=2, dilation=2, groups=x.shape[1] // weight.shape[1])
    return (y * torch.sigmoid(y)).contiguous()
