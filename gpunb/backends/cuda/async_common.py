"""What the asynchronous lowerings (async_ops, tma_ops, wgmma_ops) share: address spaces, the
architectures each feature needs and the check that names them in a CompileError."""

from __future__ import annotations

from llvmlite import ir

SHARED = ir.PointerType(addrspace=3)
GLOBAL = ir.PointerType(addrspace=1)
CLUSTER = ir.PointerType(addrspace=7)  # shared::cluster, the destination space of a TMA load
# what each feature needs: (major, minor), or (9, 0, "a") for the arch-specific sm_90a
SM80, SM90, SM90A = (8, 0), (9, 0), (9, 0, "a")
_ARCH_NAMES = {SM80: "sm_80 (Ampere) or newer", SM90: "sm_90 (Hopper) or newer",
               SM90A: "sm_90a (Hopper: H100, H200)"}


def arch_text(cc: tuple) -> str:
    return f"sm_{cc[0]}{cc[1]}{cc[2] if len(cc) > 2 else ''}"


def has_arch(have: tuple, cc: tuple) -> bool:
    """Whether compute capability `have` has the features of `cc`: an arch-specific `cc` only
    on exactly that architecture with its suffix (sm_90a code runs on no other GPU)."""
    have = tuple(have)
    if len(cc) == 3:
        return have[:2] == cc[:2] and len(have) == 3 and have[2] == cc[2]
    return have[:2] >= cc


def need(low, node, have: tuple, cc: tuple, what: str) -> None:
    """CompileError at `node` unless the target architecture `have` has `what`."""
    if not has_arch(have, cc):
        raise low.error(node, f"{what} needs {_ARCH_NAMES[cc]}; this kernel compiles for "
                        f"{arch_text(tuple(have))}",
                        "run it on a GPU that has it, or compile for it: "
                        f"cc={cc!r} in compile_ptx, --arch {arch_text(cc)} in %%gpukernel")
