"""`raise` and `assert` in kernels, as numba.cuda does them (its test_exception / test_debug):
without debug a raise ends the raising thread and nothing is reported, and assert compiles to
nothing; with debug=True the launch raises the exception class on the host, with the message,
the thread and block that raised and the source line. Runs on every available target."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gpunb import CompileError, LaunchError, cuda

REPO = Path(__file__).resolve().parents[2]
MESSAGE = "Device Function Error"


def _positive_twice(v):
    if v < 0:
        raise ValueError("negative input")
    return v * 2


positive_twice = cuda.jit(device=True)(_positive_twice)


def _double_or_raise(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = positive_twice(x[i])


def _kernel_raise(out, flag):
    i = cuda.threadIdx.x
    if flag[i] != 0:
        raise IndexError
    out[i] = 1.0


def _checked(out, x):
    i = cuda.grid(1)
    if i < out.size:
        assert x[i] < 100, "x is too large"
        out[i] = x[i] + 1


def _raise_then_sync(out, shared_n):
    buf = cuda.shared.array(32, dtype=np.float32)
    i = cuda.threadIdx.x
    if i == 3:
        raise RuntimeError("thread three stops")
    buf[i] = i
    cuda.syncthreads()  # the exited thread counts as arrived, as on the GPU
    out[i] = buf[(i + 1) % 32] if (i + 1) % 32 != 3 else -1.0


@cuda.jit(device=True)
def _raise_global_message():
    raise ValueError(MESSAGE)


def _calls_global_message(out):
    out[0] = 1.0
    _raise_global_message()
    out[1] = 1.0  # never reached: the device function ended the thread


def test_raise_in_device_function_ends_only_that_thread_without_debug(target):
    x = np.arange(8, dtype=np.float32)
    x[3] = -1
    out = np.full(8, 7.0, np.float32)
    cuda.jit(_double_or_raise)[1, 8](out, x)
    expect = x * 2
    expect[3] = 7.0  # the raising thread stored nothing; every other thread ran on
    np.testing.assert_array_equal(out, expect)


def test_raise_in_device_function_is_reported_with_debug(target):
    x = np.arange(8, dtype=np.float32)
    x[5] = -2
    out = np.zeros(8, np.float32)
    kernel = cuda.jit(debug=True, opt=False)(_double_or_raise)
    with pytest.raises(ValueError) as info:
        kernel[1, 8](out, x)
    err = info.value
    assert isinstance(err, LaunchError)
    text = str(err)
    assert "negative input" in text and "ValueError" in text
    assert "thread (5, 0, 0), block (0, 0, 0)" in text and "'_double_or_raise'" in text
    assert err.loc.line == _positive_twice.__code__.co_firstlineno + 2
    assert 'raise ValueError("negative input")' in text  # the line, with a caret
    x[5] = 5
    kernel[1, 8](out, x)  # nothing raised: no stale report from the previous launch
    np.testing.assert_array_equal(out, x * 2)


def test_numba_user_raise_without_message(target):
    """numba-cuda's test_user_raise: `raise ValueError` only when asked to."""
    @cuda.jit(debug=True, opt=False)
    def foo(do_raise):
        if do_raise:
            raise ValueError

    foo[1, 1](False)
    with pytest.raises(ValueError):
        foo[1, 1](True)


def test_numba_raise_in_device_function_with_global_message(target):
    """numba-cuda's test_raise_in_device_function (an expected failure there, issue 8036)."""
    out = cuda.to_device(np.zeros(2, np.float32))  # host arrays are not copied back on error
    with pytest.raises(ValueError, match=MESSAGE):
        cuda.jit(debug=True, opt=False)(_calls_global_message)[1, 1](out)
    np.testing.assert_array_equal(out.copy_to_host(), [1.0, 0.0])


def test_kernel_raise_reports_block_and_thread(target):
    flag = np.zeros(4 * 2, np.int32)
    flag[2] = 1

    @cuda.jit(debug=True)
    def kern(out, flag):
        i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
        if flag[i] != 0:
            raise IndexError("flagged")
        out[i] = 1.0

    out = np.zeros(8, np.float32)
    with pytest.raises(IndexError, match=r"flagged \(thread \(2, 0, 0\), block \(0, 0, 0\)"):
        kern[2, 4](out, flag)
    flag[2], flag[6] = 0, 1
    with pytest.raises(IndexError, match=r"thread \(2, 0, 0\), block \(1, 0, 0\)"):
        kern[2, 4](out, flag)


def test_kernel_raise_without_debug_skips_the_rest_of_the_thread(target):
    flag = np.array([0, 1, 0, 1], np.int32)
    out = np.zeros(4, np.float32)
    cuda.jit(_kernel_raise)[1, 4](out, flag)
    np.testing.assert_array_equal(out, [1.0, 0.0, 1.0, 0.0])


def test_raising_thread_counts_as_exited_at_barriers(target):
    out = np.zeros(32, np.float32)
    cuda.jit(_raise_then_sync)[1, 32](out, 0)
    expect = np.array([(i + 1) % 32 for i in range(32)], np.float32)
    expect[2] = -1.0  # reads the slot of thread 3, which had stopped
    expect[3] = 0.0
    np.testing.assert_array_equal(out, expect)
    with pytest.raises(RuntimeError, match="thread three stops"):
        cuda.jit(debug=True)(_raise_then_sync)[1, 32](out, 0)


def test_assert_is_a_no_op_without_debug(target):
    x = np.array([1, 500, 3], np.float32)
    out = np.zeros(3, np.float32)
    cuda.jit(_checked)[1, 3](out, x)
    np.testing.assert_array_equal(out, x + 1)


def test_assert_raises_assertion_error_with_debug(target):
    x = np.array([1, 500, 3], np.float32)
    out = cuda.to_device(np.full(3, -5.0, np.float32))
    kernel = cuda.jit(debug=True)(_checked)
    with pytest.raises(AssertionError, match=r"x is too large \(thread \(1, 0, 0\)"):
        kernel[1, 3](out, cuda.to_device(x))
    # the failing thread stopped at the assert; the others ran on
    np.testing.assert_array_equal(out.copy_to_host(), [2, -5, 4])
    out = np.zeros(3, np.float32)
    kernel[1, 3](out, np.array([1, 2, 3], np.float32))
    np.testing.assert_array_equal(out, [2, 3, 4])


def test_assert_without_message(target):
    @cuda.jit(debug=True)
    def kern(x):
        assert x[0] == 0

    kern[1, 1](np.zeros(1, np.int32))
    with pytest.raises(AssertionError, match="assertion failed"):
        kern[1, 1](np.ones(1, np.int32))


# ---- PTX: the CUDA lowering, checked by ptxas ---------------------------------------------------


@pytest.mark.parametrize("debug", [False, True])
def test_cuda_lowering_is_accepted_by_ptxas(ptxas, debug):
    sig = "void(float32[::1], float32[::1])"
    ptx, _ = cuda.compile_ptx(_double_or_raise, sig, debug=debug, opt=not debug)
    ptxas(ptx, "sm_90")
    assert ("gpunb_exception" in ptx) is debug  # the record exists only to be reported
    ptx, _ = cuda.compile_ptx(_checked, sig, debug=debug)
    ptxas(ptx, "sm_90")
    assert ("gpunb_exception" in ptx) is debug  # assert: compiled only with debug


def test_cuda_device_function_ends_the_thread_with_exit(ptxas):
    ptx, _ = cuda.compile_ptx(_positive_twice, "float32(float32)", device=True)
    ptxas(ptx, "sm_90")
    assert "exit;" in ptx  # not a return: the caller must not go on


def test_artifact_carries_the_raise_sites():
    """What a disk hit's launcher needs is in the artifact, JSON round trip included."""
    from gpunb import backends
    from gpunb.backends.pipeline import compile
    from gpunb.foundation import types as t
    from gpunb.foundation.artifact import KernelArtifact
    from gpunb.foundation.events import Stage

    arr = t.Array(t.float32, 1, "C")
    built = compile(_double_or_raise, (arr, arr), {"debug": True}, backends.get("cuda"),
                    stop_after=Stage.PTX, arch=(9, 0)).artifact
    artifact = KernelArtifact.from_json_dict(
        json.loads(json.dumps(built.to_json_dict())), b"")
    assert artifact.raise_sites == built.raise_sites
    (site,) = artifact.raise_sites
    assert site[:2] == ("ValueError", "negative input")
    assert site[3] == _positive_twice.__code__.co_firstlineno + 2
    assert site[5] == "_positive_twice"


# ---- the cache: a disk hit in a new process still raises ----------------------------------------

CACHED_MODULE = """
    import numpy as np
    from gpunb import cuda

    @cuda.jit(debug=True)
    def kern(out, x):
        i = cuda.grid(1)
        if i < out.size:
            if x[i] < 0:
                raise ZeroDivisionError("cannot divide by a negative")
            out[i] = 1.0 / x[i]
"""

CACHED_RUN = """
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import cached_raise
    x = np.ones(8, np.float32)
    x[6] = -1
    out = np.zeros(8, np.float32)
    spec = cached_raise.kern.specialization_for(
        tuple(__import__("gpunb.runtime.typeof", fromlist=["typeof"]).typeof(a)
              for a in (out, x)), sys.argv[2])
    try:
        cached_raise.kern[1, 8](out, x)
        raised = None
    except ZeroDivisionError as exc:
        raised = str(exc)
    print(json.dumps({"kind": spec.cache_event.kind, "source": spec.cache_event.source,
                      "raised": raised}))
"""


def test_disk_cache_hit_in_a_new_process_still_raises(target, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "cached_raise.py").write_text(textwrap.dedent(CACHED_MODULE))
    env = dict(os.environ, GPUNB_CACHE_DIR=str(tmp_path / "cache"), GPUNB_TARGET=target,
               GPUNB_NOTICES="0", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(filter(None, (str(REPO),
                                                        os.environ.get("PYTHONPATH")))))
    env.pop("GPUNB_CACHE", None)
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(CACHED_RUN), str(src),
                               target], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert runs[0]["kind"] == "miss"
    assert (runs[1]["kind"], runs[1]["source"]) == ("hit", "disk")
    for run in runs:
        assert "cannot divide by a negative" in run["raised"]
        assert "thread (6, 0, 0)" in run["raised"] and "line 10," in run["raised"]


# ---- raises that GPU code cannot express --------------------------------------------------


def _compile_error(func, sig="void(float32[::1])", debug=False) -> CompileError:
    with pytest.raises(CompileError) as info:
        cuda.compile_ptx(func, sig, debug=debug)
    return info.value


def test_raise_of_a_variable_is_a_compile_error():
    def kern(x):
        raise x

    err = _compile_error(kern)
    assert "only raise an exception class" in err.message and err.loc.line > 0
    assert "constant message" in err.hint


def test_raise_with_computed_message_is_a_compile_error():
    def kern(x):
        raise ValueError(f"bad {x[0]}")

    err = _compile_error(kern)
    assert "constant string" in err.message
    assert "print()" in err.hint


def test_raise_from_is_a_compile_error():
    def kern(x):
        raise ValueError("a") from None

    assert "raise ... from" in _compile_error(kern).message


def test_bare_raise_and_non_exception_classes_are_compile_errors():
    class Interrupt(BaseException):  # not an Exception: numba refuses it too
        pass

    def bare(x):
        raise

    def custom(x):
        raise Interrupt("mine")

    def instance_kw(x):
        raise ValueError(msg="x")

    assert "bare `raise`" in _compile_error(bare).message
    err = _compile_error(custom)
    assert "cannot raise Interrupt" in err.message and "ValueError" in err.hint
    assert "at most one argument" in _compile_error(instance_kw).message


def test_assert_with_computed_message_is_a_compile_error_only_with_debug(ptxas):
    def kern(x):
        assert x[0] > 0, x[0]

    ptxas(cuda.compile_ptx(kern, "void(float32[::1])")[0])  # no debug: typed, compiled away
    assert "constant string" in _compile_error(kern, debug=True).message


@cuda.jit(debug=True, opt=False)
def _divide(r, x, y, n):
    r[0] = y[0] / x[0]
    r[1] = n // int(x[0])


@cuda.jit
def _divide_quietly(r, x, y, n):
    r[0] = y[0] / x[0]
    r[1] = n // int(x[0])


def test_debug_divisions_by_zero_raise_zero_division_error_as_numba(target):
    r = np.zeros(2)
    with pytest.raises(ZeroDivisionError, match="float division by zero"):
        _divide[1, 1](r, np.zeros(1), np.ones(1), 7)
    _divide[1, 1](r, np.full(1, 2.0), np.ones(1), 7)
    assert r.tolist() == [0.5, 3.0]
    _divide_quietly[1, 1](r, np.zeros(1), np.ones(1), 7)  # numba's error model: no raise
    assert r[0] == np.inf and r[1] == 0


@cuda.jit(debug=True, opt=False)
def _divide_by_literal_zero(r, x):
    r[0] = x[0] / 0.0
    r[1] = 5


@cuda.jit(debug=True, opt=False)
def _floor_divide_by_literal_zero(r, n):
    r[0] = n // 0


def test_debug_division_by_a_literal_zero_raises_too(target):
    """The divisor check once skipped every literal divisor, so `x / 0.0` gave inf with
    debug=True where numba-cuda raises ZeroDivisionError (and stops before the next line)."""
    r = np.zeros(2)
    with pytest.raises(ZeroDivisionError, match="float division by zero"):
        _divide_by_literal_zero[1, 1](r, np.ones(1))
    assert r.tolist() == [0.0, 0.0]
    with pytest.raises(ZeroDivisionError, match="integer division by zero"):
        _floor_divide_by_literal_zero[1, 1](np.zeros(1, np.int64), 7)


@cuda.jit(debug=True, opt=False)
def _tuple_index(ary):
    x = cuda.threadIdx.x
    if x == 2:
        ary[0] = ary.shape[-x]


def test_debug_tuple_index_out_of_range_is_pythons_index_error(target):
    with pytest.raises(IndexError, match="tuple index out of range"):
        _tuple_index[1, 3](np.array([0, 1]))


class KernelOwnError(Exception):
    pass


class PickyError(Exception):
    def __init__(self, code, detail):  # an __init__ gpunb cannot call with a message alone
        super().__init__(f"{code}: {detail}")


@cuda.jit("void(int32)", debug=True, opt=False)
def _raise_own(x):
    if x == 1:
        raise KernelOwnError
    elif x == 2:
        raise KernelOwnError("foo")
    elif x == 3:
        raise PickyError


def test_user_defined_exception_classes_are_raised_on_the_host(target):
    _raise_own[1, 1](0)
    with pytest.raises(KernelOwnError) as info:
        _raise_own[1, 1](1)
    assert isinstance(info.value, LaunchError)
    text = str(info.value)
    assert "In function '_raise_own', file" in text and "tid=[0, 0, 0] ctaid=[0, 0, 0]" in text
    with pytest.raises(KernelOwnError, match="tid=\\[0, 0, 0\\] ctaid=\\[0, 0, 0\\]: foo"):
        _raise_own[1, 1](2)
    with pytest.raises(PickyError, match="raised PickyError"):
        _raise_own[1, 1](3)


def test_a_user_class_is_found_again_after_a_disk_hit():
    from gpunb.foundation.kernel_errors import USER_CLASSES, user_class

    name = f"{__name__}:KernelOwnError"
    USER_CLASSES.pop(name, None)
    assert user_class(name) is KernelOwnError  # imported by module and qualname
    assert user_class("no_such_module_x:Thing") is Exception
