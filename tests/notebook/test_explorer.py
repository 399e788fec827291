"""launch_explorer's arguments (gpunb/notebook/explorer.py) are checked where it is called: a bad
kernel, size or arch is a JitOptionError at the caller's line, not a traceback when the notebook
later displays the explorer (CPU target; occupancy from the documented tables)."""

from __future__ import annotations

import numpy as np
import pytest

from gpunb import cuda
from gpunb.foundation.errors import JitOptionError
from gpunb.notebook.explorer import launch_explorer


@pytest.fixture
def kernel(cpu_env):
    @cuda.jit
    def fill(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = 1.0

    fill[1, 32](np.zeros(32))
    return fill


@pytest.mark.parametrize("arch", ["sm_999", "sm_121"])
def test_an_arch_without_an_occupancy_table_is_refused_at_the_call(kernel, arch):
    with pytest.raises(JitOptionError, match=f"arch '{arch}': no occupancy table") as info:
        launch_explorer(kernel, 100, arch=arch)
    assert info.value.loc.line > 0 and "sm_90" in str(info.value)


@pytest.mark.parametrize("n", [0, -5, "abc", 2.5, True])
def test_a_problem_size_that_is_not_a_positive_integer_is_refused(kernel, n):
    with pytest.raises(JitOptionError, match="n is the number of threads to cover"):
        launch_explorer(kernel, n)


@pytest.mark.parametrize(("options", "words"), [
    ({"block": 0}, "block is threads per block"),  # was taken as "no block given"
    ({"block": "256"}, "block is threads per block"),
    ({"shared": -1}, "shared is dynamic shared memory in bytes"),  # a traceback at display
])
def test_a_bad_block_or_shared_size_is_refused(kernel, options, words):
    with pytest.raises(JitOptionError, match=words):
        launch_explorer(kernel, 100, **options)


def test_something_that_is_not_a_kernel_is_refused(cpu_env):
    def plain(x):
        return x

    with pytest.raises(JitOptionError, match="launch_explorer needs a GPU kernel"):
        launch_explorer(plain, 10)
    with pytest.raises(JitOptionError, match="launch_explorer needs a GPU kernel"):
        launch_explorer(cuda.jit(device=True)(plain), 10)


def test_a_good_call_still_shows_occupancy(kernel):
    explorer = launch_explorer(kernel, 100, arch="sm_75", block=None, shared=0)
    assert "occupancy" in explorer.text() and "sm_75" in explorer.text()
    assert launch_explorer(kernel, np.int64(100), block=np.int32(128)).block == 128


def test_a_kernel_never_compiled_says_how_to_give_the_explorer_its_types(cpu_env):
    """The hint was the compile-time API's: "pass a signature, e.g. inspect_asm(...)"."""
    from gpunb.foundation.errors import CompileError

    @cuda.jit
    def fresh(out):
        out[0] = 1.0

    with pytest.raises(CompileError, match="'fresh' has not been compiled yet") as info:
        launch_explorer(fresh, 100)
    assert "launch_explorer(fresh, n, signature=" in info.value.hint
    assert launch_explorer(fresh, 100, signature="void(float64[::1])").n == 100
