"""numba.cuda.cudadrv.error under gpunb: the driver's exception classes by numba's names."""

from __future__ import annotations

from gpunb.backends.cuda.driver import CudaDriverError  # noqa: F401 - a failing driver call
from gpunb.foundation.errors import CudaUnavailableError, ToolchainError

CudaSupportError = CudaUnavailableError  # no usable driver or device
NvvmError = ToolchainError  # gpunb's compile toolchain (LLVM, ptxas, the driver's linker)
NvrtcError = ToolchainError
