"""gpunb: write GPU kernels in Python, compile them with our own JIT, see what was produced.

Importing gpunb is cheap and touches no CUDA driver; the compiler and runtime load on first use.
"""

from gpunb.errors import CompileError, GpunbError, LaunchError, ToolchainError

__version__ = "0.1.0"

__all__ = ["CompileError", "GpunbError", "LaunchError", "ToolchainError", "__version__"]
