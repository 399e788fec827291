"""Memory layouts shared by the CUDA target's generated code and its launcher.

The exception record: a kernel compiled with debug=True that can raise holds one device global,
written by the first thread that raises and read (then cleared) by the launcher after the kernel.
"""

from __future__ import annotations

EXCEPTION_SYMBOL = "gpunb_exception"
# i32 words: [0] raise site id + 1 (0: nothing raised), [1:4] threadIdx x/y/z, [4:7] blockIdx
EXCEPTION_WORDS = 7
