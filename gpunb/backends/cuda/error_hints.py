"""What to do about each CUDA driver error: the hints `driver.check` adds to its messages, and
which errors leave the context unusable (sticky). Plain data, kept apart from the driver's calls.
"""

from __future__ import annotations

# Errors after which the context is corrupt: every later call fails with the same code.
STICKY_ERRORS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ASSERT", "CUDA_ERROR_ECC_UNCORRECTABLE",
    "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_TRAP",
})

_LOST = ("the CUDA context was lost: every later CUDA call fails with the same error. NVIDIA "
         "documents these errors as leaving the whole process unusable for CUDA (\"the process "
         "must be terminated and relaunched\"); gpunb.cuda.reset() still tries a fresh context "
         "and says at once when the driver refuses, as the H100's driver 580 does. Then the way "
         "out is restarting the Python process (in Jupyter: Kernel > Restart) and running the "
         "cells again; first save what you need to disk (device arrays are gone already; numpy "
         "arrays and other Python state go with the restart)")
_FIND = ("To find the bug without crashing again: run the kernel on the CPU target "
         "(gpunb.set_target('cpu') or @cuda.jit(target='cpu')), where every out-of-bounds "
         "access is reported with its line, or check the launch with "
         "gpunb.profiling.sanitize_launch(kernel[grid, block], *args, tool='memcheck'), which "
         "runs it only in a child process under compute-sanitizer (%%gpukernel --sanitize "
         "memcheck runs the cell here first, then replays it); @cuda.jit(debug=True) checks "
         "bounds on the GPU")
_RESTART = _LOST + ". " + _FIND
_CAPTURED = ("a stream is capturing a CUDA graph (gpunb.graph, torch.cuda.graph, CuPy) and this "
             "cannot be captured (a wait for the GPU, an allocation, a pageable host copy, the "
             "legacy default stream): do it before or after the capture")

HINTS = {
    "CUDA_ERROR_OUT_OF_MEMORY":
        "the GPU is out of memory: drop device arrays you no longer need (del them, then "
        "gc.collect()), use smaller arrays, or check other processes with nvidia-smi",
    "CUDA_ERROR_ILLEGAL_ADDRESS":
        "the kernel read or wrote outside its arrays (an index past the end, a wrong stride or "
        "size, a pointer into an array of another GPU or of a reset context); " + _RESTART,
    "CUDA_ERROR_MISALIGNED_ADDRESS":
        "the kernel accessed memory at a misaligned address (a reinterpreted view, a record "
        "field); " + _RESTART,
    "CUDA_ERROR_LAUNCH_FAILED": "the kernel crashed; " + _RESTART,
    "CUDA_ERROR_ASSERT": "a device-side assert failed; " + _RESTART,
    "CUDA_ERROR_TRAP": "a kernel executed a trap instruction; " + _RESTART,
    "CUDA_ERROR_LAUNCH_TIMEOUT":
        "the kernel ran longer than the display watchdog allows (an endless loop?); " + _RESTART,
    "CUDA_ERROR_ILLEGAL_INSTRUCTION": "the kernel executed an illegal instruction; " + _RESTART,
    "CUDA_ERROR_HARDWARE_STACK_ERROR":
        "the kernel overflowed its call stack (deep recursion?); " + _RESTART,
    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES":
        "the block needs more registers than the SM has: launch with a smaller block, or "
        "compile with max_registers=N (e.g. @cuda.jit(max_registers=64))",
    "CUDA_ERROR_INVALID_VALUE":
        "check the launch configuration (grid and block sizes, dynamic shared memory) and the "
        "arguments",
    "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE":
        "a grid-synchronising kernel needs every block resident at once: use at most "
        "kernel.max_cooperative_grid_blocks(blockdim) blocks and a grid-stride loop",
    "CUDA_ERROR_INVALID_CONTEXT":
        "no CUDA context is current in this thread; gpunb makes one current on first use",
    "CUDA_ERROR_NO_BINARY_FOR_GPU":
        "the kernel was built for another GPU architecture: clear the cache entry "
        "(gpunb.cache.invalidate()) or set GPUNB_ARCH to this GPU's sm_XX",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION":
        "the PTX is newer than this driver understands: update the NVIDIA driver",
    "CUDA_ERROR_INVALID_PTX": "the driver rejected the PTX; the log above says why",
    "CUDA_ERROR_NO_DEVICE": "no CUDA GPU is visible (check CUDA_VISIBLE_DEVICES, nvidia-smi)",
    "CUDA_ERROR_NOT_INITIALIZED": "the CUDA driver was not initialised",
    "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED": _CAPTURED, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT":
        _CAPTURED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED": "an earlier operation invalidated "
        "the capture: end it, move that work out of it and capture again",
}
