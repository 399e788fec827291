"""gpunb kernels in PyTorch programs: `custom_op` registers a kernel as a torch.library operator
(a fake implementation for torch.compile's tracing, autograd when asked), tensors pass without
copies on their device and PyTorch's current stream (ops.py, tensors.py); `current_stream` is
a stream for `kernel[grid, block, stream]` that follows PyTorch's current CUDA stream.

Importing this module imports torch (`pip install torch`, or gpunb's `torch` extra); gpunb itself
never does.
"""

from __future__ import annotations

from gpunb.torch.ops import custom_op
from gpunb.torch.tensors import current_stream, kernel_argument

__all__ = ["current_stream", "custom_op", "kernel_argument"]
