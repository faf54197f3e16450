"""Convolution and pooling layers (NCHW)."""

import numpy as np

from .. import _ops
from . import init
from .layers import _positive_int
from .module import Module
from .parameter import Parameter


def _pair(v, what):
    return _ops._pair(v, what)


class Conv2d(Module):
    """2-D convolution with weight [out, in/groups, kh, kw]; the bias is a separate
    bias add on axis 1. Weight and bias start as U(+-1/sqrt(fan_in)) with
    ``fan_in = in/groups * kh * kw`` (PyTorch's default)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        self.in_channels = _positive_int(in_channels, "in_channels")
        self.out_channels = _positive_int(out_channels, "out_channels")
        self.groups = _positive_int(groups, "groups")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"groups={groups} must divide in_channels={in_channels} and out_channels={out_channels}")
        if padding_mode != "zeros":
            raise ValueError(f"Conv2d(padding_mode={padding_mode!r}) is not supported yet; only 'zeros'")
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.stride = _pair(stride, "stride")
        self.dilation = _pair(dilation, "dilation")
        if padding == "valid":
            padding = 0
        elif padding == "same":
            spans = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size, strict=True)]
            if self.stride != (1, 1) or any(s % 2 for s in spans):
                raise ValueError("padding='same' needs stride 1 and an odd effective kernel size")
            padding = tuple(s // 2 for s in spans)
        self.padding = _pair(padding, "padding")
        if min(self.kernel_size + self.stride + self.dilation) < 1 or min(self.padding) < 0:
            raise ValueError("kernel_size, stride and dilation must be positive and padding non-negative")
        fan_in = self.in_channels // self.groups * self.kernel_size[0] * self.kernel_size[1]
        shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        self.weight = Parameter(np.empty(shape, dtype=np.float32))
        init.default_uniform_(self.weight, fan_in)
        if bias:
            self.bias = Parameter(np.empty((self.out_channels,), dtype=np.float32))
            init.default_uniform_(self.bias, fan_in)
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return _ops.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")


class _Pool2d(Module):
    """A pooling layer's windows: kernel size, stride (the kernel size by
    default) and padding (at most half the kernel); ``_op`` pools with them."""

    _op = None

    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.stride = self.kernel_size if stride is None else _pair(stride, "stride")
        self.padding = _pair(padding, "padding")
        if any(2 * p > k for p, k in zip(self.padding, self.kernel_size, strict=True)):
            raise ValueError(f"padding {self.padding} must be at most half the kernel size {self.kernel_size}")

    def forward(self, x):
        return type(self)._op(x, self.kernel_size, self.stride, self.padding)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """Max over windows; the stride defaults to the kernel size."""

    _op = _ops.max_pool2d

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        if _pair(dilation, "dilation") != (1, 1):
            raise ValueError("MaxPool2d(dilation != 1) is not supported yet")
        if return_indices or ceil_mode:
            raise ValueError("MaxPool2d(return_indices=True / ceil_mode=True) is not supported yet")
        super().__init__(kernel_size, stride, padding)


class AvgPool2d(_Pool2d):
    """Mean over windows, counting padding as zeros (``count_include_pad=True``)."""

    _op = _ops.avg_pool2d

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        if ceil_mode or not count_include_pad or divisor_override is not None:
            raise ValueError("AvgPool2d supports only ceil_mode=False, count_include_pad=True "
                             "and no divisor_override")
        super().__init__(kernel_size, stride, padding)


class AdaptiveAvgPool2d(Module):
    """Global average pooling; only ``output_size=1`` is supported."""

    def __init__(self, output_size):
        super().__init__()
        if _pair(output_size, "output_size") != (1, 1):
            raise ValueError(f"AdaptiveAvgPool2d({output_size!r}) is not supported yet; only output_size=1")
        self.output_size = (1, 1)

    def forward(self, x):
        return _ops.global_avg_pool(x)

    def extra_repr(self):
        return "output_size=1"
