"""Cache-hinted loads and stores (cuda.ldca/ldcg/ldcs/ldlu/ldcv, cuda.stcg/stcs/stwb/stwt):
values on both targets, the hinted PTX instruction for every element width (accepted by ptxas),
1-d and 2-d indices, and bad arguments. Adapted from numba-cuda's test_cache_hints
(BSD-2-Clause, NVIDIA)."""

import numpy as np
import pytest

from gpunb import CompileError, cuda, float32, float64, int16, int64
from gpunb.cuda.types import CPointer

TYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
         np.float16, np.float32, np.float64)
LOADS = ((cuda.ldca, "ca"), (cuda.ldcg, "cg"), (cuda.ldcs, "cs"), (cuda.ldlu, "lu"),
         (cuda.ldcv, "cv"))
STORES = ((cuda.stcg, "cg"), (cuda.stcs, "cs"), (cuda.stwb, "wb"), (cuda.stwt, "wt"))


def load_kernel(operator):
    @cuda.jit
    def f(r, x):
        for i in range(len(r)):
            r[i] = operator(x, i)
    return f


def store_kernel(operator):
    @cuda.jit
    def f(r, x):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                operator(r, (i, j), x[i, j])
    return f


@pytest.mark.slow
@pytest.mark.parametrize("operator,hint", LOADS)
def test_loads(target, ptxas, operator, hint):
    f = load_kernel(operator)
    for ty in TYPES:
        x = np.arange(5).astype(ty)
        r = np.zeros_like(x)
        f[1, 1](r, x)
        np.testing.assert_equal(r, x)
        ptx = f.inspect_ptx()
        assert f"ld.global.{hint}.b{x.itemsize * 8}" in ptx, ty
    ptxas(ptx, "sm_90")


@pytest.mark.slow
@pytest.mark.parametrize("operator,hint", STORES)
def test_stores_2d(target, ptxas, operator, hint):
    f = store_kernel(operator)
    for ty in TYPES:
        x = np.arange(12).reshape(3, 4).astype(ty)
        r = np.zeros_like(x)
        f[1, 1](r, x)
        np.testing.assert_equal(r, x)
        ptx = f.inspect_ptx()
        assert f"st.global.{hint}.b{x.itemsize * 8}" in ptx, ty
    ptxas(ptx, "sm_90")


@cuda.jit
def wrong_index_count(r, x):
    r[0] = cuda.ldcs(x, 0)


@cuda.jit
def store_float_into_complex(r):
    cuda.stcs(r, 0, 1.0)


def test_bad_arguments_are_located_errors(target):
    with pytest.raises(CompileError, match="Expected 2 indices, got a scalar"):
        wrong_index_count[1, 1](np.zeros(1), np.zeros((2, 2)))
    with pytest.raises(CompileError, match="stcs requires array of integer or float type"):
        store_float_into_complex[1, 1](np.zeros(2, np.complex64))


@pytest.mark.parametrize("index,message", [("1.0", "float64 is not a valid index"),
                                           ("(1, 2)", "Expected 1 indices, got 2")])
def test_numba_cuda_index_messages(index, message):
    namespace: dict = {"cuda": cuda}
    exec(f"def f(x):\n    cuda.ldcs(x, {index})\n", namespace)
    with pytest.raises(CompileError, match=message):
        cuda.compile_ptx(namespace["f"], (float32[::1],))
    with pytest.raises(CompileError, match="Expected 2 indices, got 1"):
        cuda.compile_ptx(lambda x: cuda.ldcs(x, (1,)), (float32[:, ::1],))


@pytest.mark.parametrize("operator,hint", LOADS[:2])
def test_loads_through_c_pointers(target, operator, hint):
    """numba's CPointer: one flat index, the hinted instruction in the PTX."""
    def f_ptr(ptr, r, n):
        for i in range(n):
            r[i] = operator(ptr, i)

    sig = (CPointer(int16), int16[::1], int64)
    ptx, _ = cuda.compile_ptx(f_ptr, sig)
    assert f"ld.global.{hint}.b16" in ptx
    x = np.arange(5, dtype=np.int16)
    r = np.zeros_like(x)
    held = _memory_for(target, x)  # a GPU reads device memory through a pointer, not the host's
    cuda.jit(sig)(f_ptr)[1, 1](_address(held), r, 5)
    np.testing.assert_array_equal(r, x)


def test_stores_through_c_pointers(target):
    def f_ptr(ptr, values, n):
        for i in range(n):
            cuda.stcg(ptr, i, values[i])

    sig = (CPointer(float64), float64[::1], int64)
    ptx, _ = cuda.compile_ptx(f_ptr, sig)
    assert "st.global.cg.b64" in ptx
    out, values = np.zeros(4), np.arange(4.0)
    held = _memory_for(target, out)
    cuda.jit(sig)(f_ptr)[1, 1](_address(held), values, 4)
    if held is not out:
        out = held.copy_to_host()
    np.testing.assert_array_equal(out, values)


def _memory_for(target: str, host: np.ndarray):
    """What a kernel on `target` can read through a raw pointer: the host array itself on the
    CPU target, a device copy on the CUDA target."""
    return cuda.to_device(host) if target == "cuda" else host


def _address(memory) -> int:
    if isinstance(memory, np.ndarray):
        return memory.ctypes.data
    return memory.__cuda_array_interface__["data"][0]
