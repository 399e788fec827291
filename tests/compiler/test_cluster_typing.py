"""Typing of thread-block clusters (compiler/builtins/cluster.py and the cluster parameters of
cuda.mbarrier.arrive and cuda.tma.load): result types, and every bad use a typed error at its
line, before any target lowers anything. The targets' own tests run the kernels."""

from __future__ import annotations

import pytest

from gpunb import CompileError, JitOptionError, cuda, float16, uint64
from gpunb.compiler.typed import Feature
from gpunb.foundation import types as t
from gpunb.foundation.tensor_types import TensorMap
from gpunb.jit.options import check_options


def _typed(fn, argtypes):
    """The typed function of `fn` (no target involved)."""
    from gpunb.compiler.infer import infer_function

    return infer_function(fn, tuple(argtypes), {}, is_kernel=True)


@pytest.mark.parametrize(("value", "kept"), [(2, (2, 1, 1)), ((2,), (2, 1, 1)),
                                              ((2, 2), (2, 2, 1)), ((1, 2, 4), (1, 2, 4)),
                                              ((8, 1, 1), (8, 1, 1))])
def test_cluster_dims_are_kept_as_three_ints(value, kept):
    assert check_options({"cluster_dims": value}, ("cluster_dims",)) == {"cluster_dims": kept}


@pytest.mark.parametrize(("value", "text"), [
    ((4, 4), "a cluster of 16 blocks: at most 8"), (0, "must be positive"),
    ((2, 1, 1, 1), "one to three ints"), ("2", "an int or a tuple"), ((2.0,), "an int or"),
    ((True,), "one to three ints")])
def test_bad_cluster_dims_are_refused_at_the_decorator(value, text):
    with pytest.raises(JitOptionError, match=text):
        @cuda.jit(cluster_dims=value)
        def kernel(a):
            a[0] = 1


def test_the_cluster_dims_are_part_of_the_cache_key():
    from gpunb.cache.keys import effective_options

    assert effective_options({"cluster_dims": (2, 1, 1)}, "cuda") != \
        effective_options({"cluster_dims": (4, 1, 1)}, "cuda") != effective_options({}, "cuda")


def _queries(out):
    cluster = cuda.cg.this_cluster()
    x, y, z = cluster.block_index()
    dx, dy, dz = cluster.dim_blocks()
    out[0] = cluster.block_rank() + cluster.num_blocks() + x + y + z + dx + dy + dz
    out[1] = cluster.thread_rank() + cluster.num_threads() + cluster.size
    cluster.sync()
    cluster.barrier_arrive()
    cluster.barrier_wait()


def test_cluster_queries_have_cudas_types_and_need_a_cluster():
    typed = _typed(_queries, (t.int64[::1],))
    assert Feature.CLUSTER in typed.all_features()
    from gpunb.compiler.builtins.cluster import METHODS

    assert {"block_rank", "num_blocks", "block_index", "dim_blocks", "thread_rank",
            "num_threads", "sync", "barrier_arrive", "barrier_wait",
            "map_shared_rank"} == set(METHODS)


def _map(out, r):
    s = cuda.shared.array(32, t.int32)
    peer = cuda.cg.this_cluster().map_shared_rank(s, r)
    cuda.atomic.add(peer, 0, 1)
    out[0] = peer[1]


def test_map_shared_rank_keeps_the_array_type():
    typed = _typed(_map, (t.int32[::1], t.int32))
    assert Feature.CLUSTER in typed.all_features()


def _arrive(bars_count):
    bars = cuda.shared.array(2, uint64)
    cuda.mbarrier.arrive(bars, 0, block_rank=1)
    cuda.mbarrier.arrive(bars, 1, 2, block_rank=bars_count)


def test_a_remote_arrive_returns_nothing_and_needs_a_cluster():
    typed = _typed(_arrive, (t.int32,))
    assert Feature.CLUSTER in typed.all_features() and Feature.ASYNC in typed.all_features()


def _bad_method(out):
    out[0] = cuda.cg.this_cluster().block_id()


def _bad_map_args(out):
    s = cuda.shared.array(4, t.int32)
    out[0] = cuda.cg.this_cluster().map_shared_rank(s)[0]


def _bad_map_array(out):
    out[0] = cuda.cg.this_cluster().map_shared_rank(1, 0)


def _bad_map_rank(out):
    s = cuda.shared.array(4, t.int32)
    out[0] = cuda.cg.this_cluster().map_shared_rank(s, 1.5)[0]


def _bad_sync_args(out):
    cuda.cg.this_cluster().sync(1)


def _bad_arrive_rank(out):
    bars = cuda.shared.array(2, uint64)
    cuda.mbarrier.arrive(bars, 0, block_rank=1.0)


def _bad_remote_token(out):
    bars = cuda.shared.array(2, uint64)
    out[0] = cuda.mbarrier.arrive(bars, 0, block_rank=1)


@pytest.mark.parametrize(("fn", "text"), [
    (_bad_method, r"ClusterGroup has no method 'block_id'"),
    (_bad_map_args, r"map_shared_rank takes 2 arguments \(array, rank\), got 1"),
    (_bad_map_array, "map_shared_rank needs a shared-memory array, got int64"),
    (_bad_map_rank, "block rank of cluster.map_shared_rank must be an integer"),
    (_bad_sync_args, r"cluster.sync\(\) takes no arguments"),
    (_bad_arrive_rank, "block_rank of cuda.mbarrier.arrive must be an integer"),
    (_bad_remote_token, "none|None"),
])
def test_bad_cluster_uses_are_errors_at_their_line(fn, text):
    with pytest.raises(CompileError, match=text) as info:
        _typed(fn, (t.int64[::1],))
    assert info.value.loc is not None and info.value.loc.line > 0 and "^" in str(info.value)


_DESC = TensorMap(float16, 2, (16, 64), 128)


def _multicast(desc, mask):
    s = cuda.shared.array((16, 64), float16, alignment=1024)
    bars = cuda.shared.array(1, uint64)
    cuda.tma.load(s, desc, (0, 0), bars, 0, multicast=mask)


def _multicast_zero(desc, mask):
    s = cuda.shared.array((16, 64), float16, alignment=1024)
    bars = cuda.shared.array(1, uint64)
    cuda.tma.load(s, desc, (0, 0), bars, 0, multicast=0)


def _multicast_float(desc, mask):
    s = cuda.shared.array((16, 64), float16, alignment=1024)
    bars = cuda.shared.array(1, uint64)
    cuda.tma.load(s, desc, (0, 0), bars, 0, multicast=1.0)


def test_a_multicast_load_needs_a_cluster_and_an_integer_mask():
    typed = _typed(_multicast, (_DESC, t.int32))
    assert Feature.CLUSTER in typed.all_features()
    with pytest.raises(CompileError, match="must name at least one block"):
        _typed(_multicast_zero, (_DESC, t.int32))
    with pytest.raises(CompileError, match="multicast mask of cuda.tma.load must be an integer"):
        _typed(_multicast_float, (_DESC, t.int32))


def test_cluster_dims_on_a_device_function_is_refused():
    with pytest.raises(JitOptionError, match="cluster_dims is a kernel's launch shape"):
        @cuda.jit(device=True, cluster_dims=2)
        def helper(x):
            return x

    def plain(x):
        return x + 1

    with pytest.raises(JitOptionError, match="compile_ptx: cluster_dims"):
        cuda.compile_ptx(plain, "int32(int32)", device=True, cc=(9, 0), cluster_dims=2)
