"""The guard module (guard_ir.py -> guard.ll): shipped text up to date, handlers chained."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest


def test_guard_ll_is_what_guard_ir_writes():
    """guard.ll is read at run time (building it would import llvmlite.ir at the first launch):
    after editing guard_ir.py, run write_guard_ll() (see its docstring)."""
    from gpunb.backends.cpu import guard_ir

    path = os.path.join(os.path.dirname(guard_ir.__file__), guard_ir.GUARD_LL)
    with open(path) as f:
        shipped = f.read()
    assert shipped == guard_ir.guard_module(), "guard.ll is stale: run write_guard_ll()"


def test_the_guard_module_verifies():
    import llvmlite.binding as llvm

    from gpunb.backends.cpu import guard_ir
    from gpunb.backends.cpu.target import _llvm

    _llvm()
    llvm.parse_assembly(guard_ir.guard_module()).verify()


@pytest.fixture
def cpu():
    import gpunb

    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def test_handlers_are_installed_in_front_and_chain(cpu):
    """After a launch the fault signals and SIGINT go through the guard, which calls what was
    there before; restore() puts those back."""
    import ctypes

    from gpunb import cuda
    from gpunb.backends.cpu import abi
    from gpunb.backends.cpu.executor import _guard

    @cuda.jit
    def add_one(o):
        o[cuda.grid(1)] += 1

    add_one[1, 4](np.zeros(4))
    guard = _guard()
    guard.ensure_handlers()
    for name in abi.FAULT_SIGNALS:
        assert guard._current(int(getattr(signal, name))).handler == guard.fault_handler
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        assert guard._current(signal.SIGINT).handler == guard.sigint_handler
        previous = ctypes.c_void_p.from_address(guard.previous + 8 * signal.SIGINT).value
        assert previous not in (None, 0, 1, guard.sigint_handler)  # Python's, called by ours


def test_registry_is_empty_between_launches(cpu):
    from gpunb import cuda
    from gpunb.backends.cpu.executor import _guard

    @cuda.jit
    def add_one(o):
        o[cuda.grid(1)] += 1

    add_one[64, 256](np.zeros(64 * 256))
    assert _guard().active_launches() == set()
