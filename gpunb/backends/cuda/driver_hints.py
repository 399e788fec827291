"""What to do about each CUDA driver error: the hints driver.check's errors carry.

The sticky errors leave the process's context unusable; their hint says how to recover (a fresh
context, or a restart) and how to find the bug without crashing again.
"""

from __future__ import annotations

# Errors after which the context is corrupt: every later call fails with the same code.
STICKY_ERRORS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ASSERT", "CUDA_ERROR_ECC_UNCORRECTABLE",
    "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_TRAP",
})

LOST = ("the CUDA context was lost: every later CUDA call fails with the same error. NVIDIA "
         "documents these errors as leaving the whole process unusable for CUDA (\"the process "
         "must be terminated and relaunched\"); gpunb.cuda.reset() still tries a fresh context "
         "and says at once when the driver refuses, as the H100's driver 580 does. Then the way "
         "out is restarting the Python process (in Jupyter: Kernel > Restart) and running the "
         "cells again; first save what you need to disk (device arrays are gone already; numpy "
         "arrays and other Python state go with the restart)")
FIND = ("To find the bug without crashing again: run the kernel on the CPU target "
         "(gpunb.set_target('cpu') or @cuda.jit(target='cpu')), where every out-of-bounds "
         "access is reported with its line, or check the launch with "
         "gpunb.profiling.sanitize_launch(kernel[grid, block], *args, tool='memcheck'), which "
         "runs it only in a child process under compute-sanitizer (%%gpukernel --sanitize "
         "memcheck runs the cell here first, then replays it); @cuda.jit(debug=True) checks "
         "bounds on the GPU")
RESTART = LOST + ". " + FIND

CAPTURED = ("a stream is capturing a CUDA graph (gpunb.graph, torch.cuda.graph, CuPy's capture) "
            "and this operation cannot be captured: it waits for the GPU, allocates, copies "
            "pageable host memory or uses the legacy default stream. Do it before or after the "
            "capture; inside it, launch on the capturing stream and copy between device arrays "
            "or pinned host arrays (cuda.pinned_array)")

HINTS = {
    "CUDA_ERROR_OUT_OF_MEMORY":
        "the GPU is out of memory: drop device arrays you no longer need (del them, then "
        "gc.collect()), use smaller arrays, or check other processes with nvidia-smi",
    "CUDA_ERROR_ILLEGAL_ADDRESS":
        "the kernel read or wrote outside its arrays (an index past the end, a wrong stride or "
        "size, a pointer into an array of another GPU or of a reset context); " + RESTART,
    "CUDA_ERROR_MISALIGNED_ADDRESS":
        "the kernel accessed memory at a misaligned address (a reinterpreted view, a record "
        "field); " + RESTART,
    "CUDA_ERROR_LAUNCH_FAILED": "the kernel crashed; " + RESTART,
    "CUDA_ERROR_ASSERT": "a device-side assert failed; " + RESTART,
    "CUDA_ERROR_TRAP": "a kernel executed a trap instruction; " + RESTART,
    "CUDA_ERROR_LAUNCH_TIMEOUT":
        "the kernel ran longer than the display watchdog allows (an endless loop?); " + RESTART,
    "CUDA_ERROR_ILLEGAL_INSTRUCTION": "the kernel executed an illegal instruction; " + RESTART,
    "CUDA_ERROR_HARDWARE_STACK_ERROR":
        "the kernel overflowed its call stack (deep recursion?); " + RESTART,
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
    "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED": CAPTURED,
    "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT": CAPTURED,
    "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED":
        "an earlier operation invalidated the stream's capture (a synchronisation, an allocation "
        "or a pageable host copy while it captured): end the capture, do that work before it, "
        "and capture again",
    "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD": "a capture must end on the thread that began it",
}
