"""`--what-if`: an exploratory run with stand-ins for a few trivially missing names, to see
which failures they hide. Not the parity measurement: results are labelled `what_if`.

Stand-ins (each a gap listed in the report, none a gpunb behaviour):
- `cuda.get_current_device()` / `cuda.current_context().device` on the CPU target: a device
  whose compute capability is GPUNB_ARCH (tests read it at import in skip conditions);
- numba's type-domain sets and C-name aliases in `numba.cuda.types` (test_ufuncs reads them).
"""

from __future__ import annotations

import os
from types import SimpleNamespace

ENV = "NUMBA_CUDA_SUITE_WHATIF"


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


def cpu_device() -> SimpleNamespace:
    arch = os.environ.get("GPUNB_ARCH", "sm_90").removeprefix("sm_").rstrip("a")
    cc = (int(arch[:-1]), int(arch[-1]))
    return SimpleNamespace(compute_capability=cc, name="gpunb CPU target", id=0)


def apply_to_gpunb() -> None:
    import gpunb.cuda

    if gpunb.cuda.is_available():
        return
    device = cpu_device()
    gpunb.cuda.get_current_device = lambda: device
    gpunb.cuda.current_context = lambda devnum=None: SimpleNamespace(device=device)


def extra_types() -> dict:
    import gpunb

    t = gpunb.types
    signed = frozenset({t.int8, t.int16, t.int32, t.int64})
    unsigned = frozenset({t.uint8, t.uint16, t.uint32, t.uint64})
    real = frozenset({t.float32, t.float64})
    complex_ = frozenset({t.complex64, t.complex128})
    return {
        "signed_domain": signed, "unsigned_domain": unsigned,
        "integer_domain": signed | unsigned, "real_domain": real,
        "complex_domain": complex_, "number_domain": signed | unsigned | real | complex_,
        "longlong": t.int64, "ulonglong": t.uint64, "long_": t.int64, "ulong": t.uint64,
        "intc": t.int32, "uintc": t.uint32, "short": t.int16, "ushort": t.uint16,
        "byte": t.int8, "ubyte": t.uint8,
    }
