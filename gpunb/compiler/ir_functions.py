"""Functions generated code shares within one LLVM module.

Every outside function (LLVM intrinsics, libdevice, libc, pthreads) is declared once per module,
and every helper the CPU target's code generator writes (record an access, report an error, run
a tensor-core operation for a warp, ...) is made once and called from every site. These two
functions are that get-or-make step, in one place for the compiler and the backends.
"""

from __future__ import annotations

from llvmlite import ir


def declare(module: ir.Module, name: str, ret, args: list, var_arg: bool = False) -> ir.Function:
    """The module's function `name`, declared (no body) if the module does not have it yet."""
    found = module.globals.get(name)
    if found is None:
        found = ir.Function(module, ir.FunctionType(ret, args, var_arg=var_arg), name)
    return found


def new_function(module: ir.Module, name: str, ret, args: list, *, cold: bool = False):
    """(function, builder at its entry) of a new internal, never-inlined helper whose body the
    caller writes; (the existing function, None) if the module has it already. `cold`: a path
    taken only on errors (LLVM places it apart)."""
    fn = module.globals.get(name)
    if fn is not None:
        return fn, None
    fn = ir.Function(module, ir.FunctionType(ret, args), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    if cold:
        fn.attributes.add("cold")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))
