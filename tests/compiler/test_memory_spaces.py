"""memory_spaces.py: which memory a view lies in, joins included (a name assigned in two
branches: the same space in both is that space, else unknown), as both its users read it -
lowering (memory_space: shared-memory forms, compile-time refusals) and inference (a returned
view that may be of the function's own cuda.local.array)."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import CompileError
from gpunb.foundation.types import float16, float32, int32


@pytest.fixture
def cpu():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


# ---- lowering: cluster.map_shared_rank refuses a view provably outside shared memory -----------

@cuda.jit(cluster_dims=(2, 1, 1))
def map_a_joined_local(out, flag):
    a = cuda.local.array(4, int32)
    b = cuda.local.array(4, int32)
    a[0] = 1
    b[0] = 2
    if flag:
        v = a
    else:
        v = b[1:]
    out[0] = cuda.cg.this_cluster().map_shared_rank(v, 1)[0]


@cuda.jit(cluster_dims=(2, 1, 1))
def map_a_joined_mix(out, g, flag):
    s = cuda.shared.array(4, int32)
    s[cuda.threadIdx.x % 4] = 1
    cuda.cg.this_cluster().sync()
    if flag:
        v = s
    else:
        v = g
    out[0] = cuda.cg.this_cluster().map_shared_rank(v, 1)[0]


def test_a_join_of_two_local_views_is_local(cpu):
    # the phi used to be 'not known here': the error waited for the run time check
    with pytest.raises(CompileError, match=r"this array is in the thread's local memory") as info:
        map_a_joined_local[2, 32](np.zeros(1, np.int32), True)
    assert "map_shared_rank(v, 1)" in str(info.value)


def test_a_join_of_shared_and_global_is_not_known_at_compile_time(cpu):
    out = np.zeros(1, np.int32)
    map_a_joined_mix[2, 32](out, np.zeros(4, np.int32), True)  # compiles; the shared path runs
    assert out[0] == 1


def _wmma_from_joined_tiles(out, flag):
    sa = cuda.shared.array((16, 16), float16)
    sb = cuda.shared.array((16, 16), float16)
    for k in range(cuda.threadIdx.x, 256, 32):
        sa[k // 16, k % 16] = 1.0
        sb[k // 16, k % 16] = 2.0
    cuda.syncthreads()
    if flag:
        tile = sa
    else:
        tile = sb
    fa = cuda.wmma.fragment(cuda.wmma.matrix_a, 16, 16, 16, float16, cuda.wmma.row_major)
    fb = cuda.wmma.fragment(cuda.wmma.matrix_b, 16, 16, 16, float16, cuda.wmma.row_major)
    acc = cuda.wmma.fragment(cuda.wmma.accumulator, 16, 16, 16, float32)
    cuda.wmma.fill_fragment(acc, 0.0)
    cuda.wmma.load_matrix_sync(fa, tile)
    cuda.wmma.load_matrix_sync(fb, sa)
    cuda.wmma.mma_sync(acc, fa, fb, acc)
    cuda.wmma.store_matrix_sync(out, acc, cuda.wmma.mem_row_major)


def test_a_join_of_two_shared_tiles_loads_from_shared_memory(ptxas):
    from gpunb.foundation.types import boolean

    ptx, _ = cuda.compile_ptx(_wmma_from_joined_tiles, (float32[:, ::1], boolean), cc=(8, 0))
    loads = [line for line in ptx.splitlines() if "wmma.load.a" in line]
    assert loads and all(".shared" in line for line in loads), loads
    ptxas(ptx, "sm_80")


# ---- inference: a returned view that may be of the function's own local array -----------------

@cuda.jit(device=True)
def local_on_one_path(x, flag):
    mine = cuda.local.array(4, float32)
    mine[0] = 1.0
    if flag:
        v = mine[1:]
    else:
        v = x
    return v


@cuda.jit
def uses_local_on_one_path(out, x, flag):
    out[0] = local_on_one_path(x, flag)[0]


def test_a_view_of_the_local_array_on_one_path_is_refused(cpu):
    with pytest.raises(CompileError, match=r"cannot return a view of its own cuda.local.array "
                                           r"\(line (\d+)\)") as info:
        uses_local_on_one_path[1, 1](np.zeros(1, np.float32), np.ones(4, np.float32), True)
    line = local_on_one_path.py_func.__code__.co_firstlineno + 2
    assert f"(line {line})" in str(info.value)


@cuda.jit(device=True)
def local_then_argument(x):
    v = cuda.local.array(4, float32)
    v[0] = 1.0
    x[0] = v[0]
    v = x  # the name now holds the argument: returning it is fine
    return v[1:]


@cuda.jit
def uses_local_then_argument(out, x):
    out[0] = local_then_argument(x)[0]


def test_a_name_reassigned_to_an_argument_may_be_returned(cpu):
    out, x = np.zeros(1, np.float32), np.arange(4, dtype=np.float32)
    uses_local_then_argument[1, 1](out, x)
    assert out[0] == 1.0
