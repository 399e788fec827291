"""On a GPU machine: breakpoint() refuses the CUDA target, and the debugger still runs a kernel
on the CPU target while CUDA is the active target."""

from __future__ import annotations

import numpy as np
import pytest
from debug_kernels import conditional_stop, line_of, saxpy_like

import gpunb
from gpunb import CompileError
from gpunb.debugger.session import open_sessions

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def cuda_target():
    gpunb.set_target("cuda")
    yield
    for session in open_sessions():
        session.abort("test ended")
    gpunb.set_target(None)


def test_breakpoint_in_a_cuda_launch_is_a_compile_error():
    with pytest.raises(CompileError) as info:
        conditional_stop[1, 32](np.zeros(32, np.int64))
    assert "CPU target" in info.value.message and "GPUNB_TARGET=cpu" in info.value.hint


def test_the_debugger_runs_on_the_cpu_target_while_cuda_is_active():
    out, x, y = np.zeros(64, np.float32), np.ones(64, np.float32), np.ones(64, np.float32)
    saxpy_like[2, 32](out, x, y)  # on the GPU
    gpu = out.copy()
    out[:] = 0
    s = gpunb.debug(saxpy_like[2, 32], out, x, y, breaks=[line_of(saxpy_like, "t = scale")],
                    thread=3, block=1)
    assert s.stop.block == (1, 0, 0) and s.stop.thread == (3, 0, 0)
    s.run_to_end()
    s.result()
    np.testing.assert_allclose(out, gpu, rtol=1e-6)
