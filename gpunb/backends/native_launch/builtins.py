"""One LLVM IR function compiled by llvmlite's MCJIT and called from Python as a builtin.

A builtin (PyCFunction) points at a method table entry, which points at the machine code; its
`self` is any object the code reads (a bytes object, a Python wrapper). The entry and the engine
holding the code must outlive every builtin made from them: a `CompiledFunction` keeps both,
and whoever makes builtins keeps the `CompiledFunction` (the process's plan follower is kept
for the whole process; a trampoline is its builtin's own `self`).
"""

from __future__ import annotations

import ctypes

METH_O = 0x0008
METH_FASTCALL = 0x0080


class _MethodDef(ctypes.Structure):
    """CPython's PyMethodDef."""

    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]


class CompiledFunction:
    """`symbol` of the IR module `ir_text`, compiled for this host (a generic machine at -O0: the
    code is a straight line of checks and calls, and probing the host CPU's features costs
    ~100 ms), as METH_O `f(self, arg)` or METH_FASTCALL `f(self, args, nargs)`."""

    def __init__(self, ir_text: str, symbol: str, name: str, fastcall: bool):
        import llvmlite.binding as llvm

        from gpunb.backends.llvm_lock import LLVM_LOCK

        with LLVM_LOCK:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            module = llvm.parse_assembly(ir_text)
            module.verify()
            machine = llvm.Target.from_default_triple().create_target_machine(opt=0)
            self._engine = llvm.create_mcjit_compiler(module, machine)  # owns module, machine
            self._engine.finalize_object()
            address = self._engine.get_function_address(symbol)
        self.address = address  # the machine code's entry point
        self._name = name.encode()
        self._def = _MethodDef(self._name, address, METH_FASTCALL if fastcall else METH_O, None)
        self._def_address = ctypes.addressof(self._def)

    def builtin(self, self_object, module_object=None):
        """A builtin calling the code with `self_object` as its `self`; `module_object` becomes
        its `__module__` (kept alive as long as the builtin)."""
        return _new_builtin(self._def_address, self_object, module_object)
