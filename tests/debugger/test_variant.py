"""The debug variant is compiled only when asked for: plain kernels keep their code and their
launch path; breakpoint() asks for it; other targets refuse breakpoint() clearly."""

from __future__ import annotations

import numpy as np
import pytest
from debug_kernels import conditional_stop, fill_index, line_of

import gpunb
from gpunb import CompileError, cuda
from gpunb.backends.cpu.executor import LoadedCpuKernel, LoadedDebugKernel
from gpunb.debugger.session import open_sessions


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    for session in open_sessions():
        session.abort("test ended")
    gpunb.set_target(None)


def _spec(dispatcher):
    return next(iter(dispatcher.specializations.values()))


def test_a_kernel_without_breakpoints_compiles_and_launches_as_before():
    out = np.zeros(300, np.int64)
    launch = fill_index[3, 128]
    for _ in range(3):  # the third launch of a configuration binds its native launcher
        launch(out)
    np.testing.assert_array_equal(out, np.arange(300))
    spec = _spec(fill_index)
    art = spec.artifact
    assert art.debug_area == 0 and art.debug_sites == () and art.debug_frames == ()
    assert "gpunb_debug" not in art.llvm_ir
    assert "gpunb_debug" not in spec.backend.assembly(art)  # made on request from the IR
    assert art.cpu_mode == "workgroup"
    assert spec.launch == spec.program.launch  # the program's own launch, nothing around it
    assert type(spec.program.loaded) is LoadedCpuKernel  # no debugger control in its launches
    assert launch._native is not None  # and the native fast path still takes it


def test_breakpoint_makes_the_debug_variant_and_its_launches_go_through_the_debugger():
    out = np.zeros(16, np.int64)
    s = gpunb.debug(conditional_stop[1, 16], out)  # thread 37 is not there: no stop
    s.result()
    twin = conditional_stop._gpunb_debug_twin
    art = _spec(twin).artifact
    assert art.debug_area > 0 and "gpunb_debug_event" in art.llvm_ir
    assert art.cpu_mode == "coroutine" and art.cpu_mode_reason == "compiled for the debugger"
    assert type(_spec(twin).program.loaded) is LoadedDebugKernel
    assert len(art.debug_sites) > 5
    lines = {site[1] for site in art.debug_sites[1:]}
    assert line_of(conditional_stop, "breakpoint()") in lines


def test_a_plain_launch_of_a_kernel_with_breakpoint_runs_its_variant_under_the_debugger(
        monkeypatch):
    from gpunb.debugger import frontend

    seen = []

    def scripted(session):
        event = session.start()
        seen.append((event.reason, event.thread, event.block))
        session.continue_()
        session.result()

    previous = frontend.use(scripted)
    try:
        out = np.zeros(64, np.int64)
        launch = conditional_stop[2, 32]
        for _ in range(3):  # the third launch of a configuration would take a native launcher
            launch(out)
    finally:
        frontend.use(previous)
    assert seen == [("breakpoint()", (5, 0, 0), (1, 0, 0))] * 3
    np.testing.assert_array_equal(out, np.arange(64) * 6)
    assert _spec(conditional_stop).launch != _spec(conditional_stop).program.launch


def test_pythonbreakpoint_0_runs_without_stopping(monkeypatch):
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    out = np.zeros(64, np.int64)
    conditional_stop[2, 32](out)  # the terminal front end would read stdin if it stopped
    np.testing.assert_array_equal(out, np.arange(64) * 6)


def test_breakpoint_on_the_cuda_target_is_a_compile_error_saying_what_to_do():
    def kernel(a):
        i = cuda.grid(1)
        if i == 3:
            breakpoint()
        a[i] = i

    with pytest.raises(CompileError) as info:
        cuda.compile_ptx(kernel, "void(int64[::1])")
    err = info.value
    assert "breakpoint()" in err.message and "CPU target" in err.message
    assert "GPUNB_TARGET=cpu" in err.hint and "%%gpukernel --target cpu" in err.hint
    assert err.loc.line == kernel.__code__.co_firstlineno + 3


def test_breakpoint_with_arguments_is_refused():
    @cuda.jit
    def kernel(a):
        breakpoint(a)

    with pytest.raises(CompileError, match="takes no arguments"):
        kernel[1, 1](np.zeros(1))


def test_breakpoint_in_a_recursive_device_function_is_refused():
    @cuda.jit(device=True)
    def countdown(n):
        if n <= 0:
            breakpoint()
            return 0
        return countdown(n - 1) + 1

    @cuda.jit
    def kernel(a):
        a[0] = countdown(3)

    with pytest.raises(CompileError, match="recursively"):
        kernel[1, 1](np.zeros(1, np.int64))


def test_the_debug_variant_of_a_recursive_kernel_steps_over_the_recursion():
    @cuda.jit(device=True)
    def fact(n):
        if n <= 1:
            return 1
        return n * fact(n - 1)

    @cuda.jit
    def kernel(a):
        i = cuda.grid(1)
        v = fact(i + 1)
        a[i] = v

    out = np.zeros(4, np.int64)
    s = gpunb.debug(kernel[1, 4], out, breaks=[kernel.py_func.__code__.co_firstlineno + 3],
                    thread=2)
    s.next()
    assert int({v.name: v for v in s.view().variables()}["v"].value) == 6
    s.run_to_end()
    s.result()
    np.testing.assert_array_equal(out, [1, 2, 6, 24])


def test_the_debugger_option_on_the_cuda_target_is_a_compile_error():
    def kernel(a):
        a[0] = 1

    with pytest.raises(CompileError, match="debugger=True") as info:
        cuda.jit(kernel, debugger=True).inspect_ptx("void(int64[::1])")  # PTX: the CUDA target
    assert "target='cpu'" in info.value.hint
