"""A read of a local that no assignment reaches on its path (numba-cuda's test_ssa
test_unhandled_undefined / test_undefined_var): numba compiles the kernel (its SSA gives the
read an undefined value), so gpunb compiles it too; the paths that assign run as usual, and the
read itself, when it runs, is Python's UnboundLocalError (always on the CPU target)."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import CompileError, LaunchError, cuda


@pytest.fixture(autouse=True)
def cpu_target():
    """The CPU target, where the read always raises (on a GPU it raises only with debug=True:
    test_on_a_gpu_... sets the CUDA target itself). A GPU machine's default is the GPU."""
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


@cuda.jit
def maybe_counts(result, n):
    if n:
        if n > 0:
            c = 0
        result[0] = c
    else:
        c += 1  # c is never assigned on this path
        result[0] = c


def test_the_assigned_paths_run():
    result = np.array([7])
    maybe_counts[1, 1](result, 1)
    assert result[0] == 0


def test_running_the_unassigned_read_is_unboundlocalerror_on_the_cpu_target():
    result = np.array([7])
    with pytest.raises(UnboundLocalError) as info:
        maybe_counts[1, 1](result, 0)
    assert isinstance(info.value, LaunchError)
    assert "cannot access local variable 'c'" in str(info.value)
    assert info.value.loc.line == maybe_counts.py_func.__code__.co_firstlineno + 7
    assert result[0] == 7  # the thread ended at the read


@cuda.jit(device=True)
def _unassigned_branches(arg1, arg2):
    if arg1:
        var4 = arg1
        return var4
    else:
        if arg2:
            var6 = var4  # var4 is assigned only on the path that returned
            return var6
    return 0


@cuda.jit
def call_unassigned(out, arg1, arg2):
    out[0] = _unassigned_branches(arg1, arg2)


def test_a_device_function_reading_on_a_path_without_assignment_compiles():
    out = np.zeros(1, np.int64)
    call_unassigned[1, 1](out, 5, 0)
    assert out[0] == 5
    call_unassigned[1, 1](out, 0, 0)
    assert out[0] == 0
    with pytest.raises(UnboundLocalError, match="'var4'"):
        call_unassigned[1, 1](out, 0, 1)


def test_a_read_before_any_assignment_of_the_name_is_still_a_compile_error():
    """Not numba's: the read is typed from the name's assignments typed before it, so one
    that only comes later in the function (numba compiles it) is refused, clearly."""
    @cuda.jit
    def later(out, n):
        if n:
            out[0] = set_later  # noqa: F821 - the point: assigned only below
        set_later = 1
        out[1] = set_later

    with pytest.raises(CompileError, match="'set_later' is used before it is assigned"):
        later[1, 1](np.zeros(2), 1)


def test_a_name_assigned_with_two_types_elsewhere_is_refused_at_the_read():
    @cuda.jit
    def two_types(out, n):
        if n > 1:
            x = 1.5
            out[0] = x
        elif n > 0:
            x = 2
            out[0] = x
        else:
            out[0] = x

    with pytest.raises(CompileError, match="'x' is used before it is assigned"):
        two_types[1, 1](np.zeros(1), 0)


def test_the_ptx_of_an_unassigned_read_is_accepted(ptxas):
    from gpunb.foundation.types import int64

    ptxas(maybe_counts.inspect_asm((int64[::1], int64)))


@pytest.mark.gpu
def test_on_a_gpu_the_read_ends_the_thread_or_raises_with_debug():
    gpunb.set_target("cuda")
    try:
        result = np.array([7])
        maybe_counts[1, 1](result, 1)
        assert result[0] == 0
        result[0] = 7
        maybe_counts[1, 1](result, 0)  # without debug=True: the thread ends at the read
        assert result[0] == 7
        checked = cuda.jit(debug=True, opt=False)(maybe_counts.py_func)
        with pytest.raises(UnboundLocalError, match="'c'"):
            checked[1, 1](result, 0)
    finally:
        gpunb.set_target(None)
