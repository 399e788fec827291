"""The part of libdevice a module calls: the `__nv_` functions it declares and what they call.

Linking all of libdevice (352 functions) into a kernel that calls one math function made LLVM's
-O3 simplify every one of them function by function before its module passes dropped the unused
ones: measured on the 2-core development host, 225 ms of optimisation and ~40 ms of linking in a
470 ms compile of a softmax kernel calling math.exp, against 9 ms for saxpy. The subset for a set
of names is made once per process (libdevice parsed, every other function made internal, global
dead-code elimination) and kept as bitcode, so the kernel's module links and optimises only the
functions it can reach - the same functions -O3 keeps from the whole library, so the same PTX.
"""

from __future__ import annotations

import functools
import threading

import llvmlite.binding as llvm  # initialised by target.py's emit_ptx, the only caller

_lock = threading.Lock()
# frozenset of function names -> bitcode of libdevice reduced to them and their callees
_subsets: dict = {}


@functools.cache
def _libdevice_bytes() -> bytes:
    from gpunb.backends.cuda.toolchain import libdevice_path

    with open(libdevice_path(), "rb") as f:
        return f.read()


def called_names(mod) -> frozenset:
    """The libdevice functions `mod` (a parsed llvmlite module) declares without defining."""
    return frozenset(fn.name for fn in mod.functions
                     if fn.is_declaration and fn.name.startswith("__nv_"))


def link_libdevice(mod, tm) -> None:
    """Link into `mod` the libdevice functions it calls (and theirs), nothing else."""
    names = called_names(mod)
    if not names:
        return
    lib = llvm.parse_bitcode(_subset_bitcode(names, tm))
    lib.triple = mod.triple
    lib.data_layout = mod.data_layout
    mod.link_in(lib)


def _subset_bitcode(names: frozenset, tm) -> bytes:
    with _lock:
        found = _subsets.get(names)
        if found is None:
            found = _subsets[names] = _reduce(names, tm)
        return found


def _reduce(names: frozenset, tm) -> bytes:
    """libdevice with every defined function outside `names` internal, then dead ones deleted
    (GlobalDCE keeps whatever the kept functions call, transitively)."""
    lib = llvm.parse_bitcode(_libdevice_bytes())
    internal = llvm.Linkage.internal
    for fn in lib.functions:
        if not fn.is_declaration and fn.name not in names:
            fn.linkage = internal
    passes = llvm.create_new_module_pass_manager()
    passes.add_global_dead_code_eliminate_pass()
    passes.run(lib, llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options()))
    return lib.as_bitcode()


__all__ = ["called_names", "link_libdevice"]
