"""The runtime on a real GPU: device arrays, interfaces to CuPy/PyTorch/numba, streams and events,
PTX linking and a hand-written kernel launched through ArgPacker, driver vs Python occupancy.

All but the PTX validation need a CUDA GPU (`gpu` marker; skipped elsewhere).
"""

from __future__ import annotations

import gc
import importlib.util

import numpy as np
import pytest

from gpunb import cuda
from gpunb.backends.cuda import driver, modules, occupancy
from gpunb.backends.cuda.launch import launch_cuda
from gpunb.backends.launch_config import validate_config
from gpunb.foundation import abi
from gpunb.foundation import types as t
from gpunb.foundation.errors import LaunchError
from gpunb.runtime import memory
from gpunb.runtime.packing import ArgPacker

# data[i * stride_bytes] += value for i < n: the ABI of an array argument (pointer, shape,
# strides in bytes) followed by a float32 scalar, as gpunb's compiler lays it out
ADD_VALUE_PTX = """
.version 8.0
.target {arch}
.address_size 64

.shared .align 4 .b8 scratch[{shared}];

.visible .entry add_value(
    .param .u64 p_data,
    .param .u64 p_n,
    .param .u64 p_stride,
    .param .f32 p_value
)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<9>;
    .reg .f32 %f<4>;

    ld.param.u64 %rd1, [p_data];
    ld.param.u64 %rd2, [p_n];
    ld.param.u64 %rd3, [p_stride];
    ld.param.f32 %f1, [p_value];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %rd4, %r1, %r2;
    cvt.u64.u32 %rd5, %r3;
    add.s64 %rd4, %rd4, %rd5;
    setp.ge.s64 %p1, %rd4, %rd2;
    @%p1 bra DONE;
    mul.lo.s64 %rd6, %rd4, %rd3;
    cvta.to.global.u64 %rd7, %rd1;
    add.s64 %rd7, %rd7, %rd6;
    ld.global.f32 %f2, [%rd7];
    add.f32 %f2, %f2, %f1;
    mov.u32 %r4, scratch;
    st.shared.f32 [%r4], %f2;
    ld.shared.f32 %f3, [%r4];
    st.global.f32 [%rd7], %f3;
DONE:
    ret;
}}
"""

ADD_VALUE_TYPES = (t.Array(t.float32, 1, "A"), t.float32)


def add_value_ptx(arch: str = "sm_90", shared: int = 4) -> str:
    return ADD_VALUE_PTX.format(arch=arch, shared=shared)


def test_hand_written_ptx_is_valid(ptxas):
    """Runs without a GPU: the PTX the GPU tests link is accepted by ptxas."""
    assert abi.signature_slots(ADD_VALUE_TYPES) == ("ptr", "i64", "i64", "f32")
    ptxas(add_value_ptx("sm_90"), "sm_90")
    ptxas(add_value_ptx("sm_80", 20000), "sm_80")


gpu = pytest.mark.gpu


@pytest.fixture
def on_gpu():
    import gpunb

    gpunb.set_target("cuda")
    yield driver.current_device()
    gpunb.set_target(None)


def _load_add_value(device, shared: int = 4):
    ptx = add_value_ptx(device.arch, shared)
    cubin, log = modules.link_ptx(ptx, device.compute_capability)
    return modules.load_module(cubin).get_function("add_value"), log


@gpu
def test_device_info(on_gpu):
    d = on_gpu
    assert d.compute_capability >= (7, 0) and d.multiprocessor_count > 0
    assert d.max_threads_per_block == 1024 and d.warp_size == 32
    assert d.total_memory > 2**30 and d.name and d.pci_bus_id
    assert d.MULTIPROCESSOR_COUNT == d.multiprocessor_count
    free, total = driver.memory_info()
    assert 0 < free <= total


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.int64,
                                   np.complex128, np.bool_])
def test_round_trips(on_gpu, dtype):
    a = (np.arange(60) % 7).astype(dtype).reshape(3, 4, 5)
    for host in (a, np.asfortranarray(a), a[:, ::2, ::-1], a[1]):
        d = memory.to_device(host)
        np.testing.assert_array_equal(d.copy_to_host(), host)
        np.testing.assert_array_equal(np.asarray(d), host)
    d = memory.to_device(a)
    np.testing.assert_array_equal(d[:, 1, ::2].copy_to_host(), a[:, 1, ::2])
    assert d[2, 3, 4] == a[2, 3, 4]


@gpu
def test_views_share_device_memory(on_gpu):
    d = memory.to_device(np.zeros((4, 6), np.float32))
    d[1] = np.arange(6, dtype=np.float32)
    d[:, 5] = 9.0
    expected = np.zeros((4, 6), np.float32)
    expected[1] = np.arange(6)
    expected[:, 5] = 9
    np.testing.assert_array_equal(d.copy_to_host(), expected)
    np.testing.assert_array_equal(d.reshape(24).copy_to_host(), expected.ravel())
    np.testing.assert_array_equal(d.T.copy_to_host(), expected.T)


@gpu
def test_split_squeeze_and_stream_indexing_on_a_gpu(on_gpu):
    """numba's split / squeeze / getitem / setitem with a stream on real device memory, and a
    Python int past int64 reaching a kernel as uint64 (numba's typeof) on the CUDA target."""
    d = memory.to_device(np.arange(10, dtype=np.int64))
    parts = list(d.split(4))
    assert [p.copy_to_host().tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    s = cuda.stream()
    d.setitem(slice(0, 2), np.array([7, 8], np.int64), stream=s)
    s.synchronize()
    assert d.getitem(slice(0, 3), stream=s).copy_to_host().tolist() == [7, 8, 2]
    q = memory.to_device(np.arange(6.0).reshape(1, 6, 1)).squeeze()
    assert q.shape == (6,) and q.copy_to_host().tolist() == list(range(6))

    @cuda.jit
    def store(out, v):
        out[0] = v

    out = memory.to_device(np.zeros(1))
    store[1, 1](out, 2**64 - 1)
    assert out.copy_to_host()[0] == float(2**64 - 1)


@gpu
def test_memory_is_freed(on_gpu):
    """256 MiB allocated then dropped: the free memory falls and rises again by as much. The
    free memory is the GPU's, which other processes (pytest-xdist workers) change meanwhile:
    up to five tries, one clean reading suffices (memory never freed fails every try)."""
    readings = []
    for _ in range(5):
        before = driver.memory_info()[0]
        arrays = [memory.device_array(64 << 20, np.uint8) for _ in range(4)]
        during = driver.memory_info()[0]
        del arrays
        gc.collect()
        after = driver.memory_info()[0]
        readings.append((before - during, after - during))
        if before - during >= 200 << 20 and after - during >= 200 << 20:
            return
    raise AssertionError(f"freed memory never came back: (fell, rose) bytes {readings}")


@gpu
def test_streams_events_and_async_copies(on_gpu):
    s = memory.stream()
    host = memory.pinned_array((1 << 22,), np.float32)
    host[:] = 3.0
    start, end = memory.event(), memory.event()
    start.record(s)
    d = memory.to_device(host, stream=s)
    back = memory.pinned_array_like(host)
    d.copy_to_host(back, stream=s)
    end.record(s)
    end.synchronize()
    assert end.query() and s.query()
    np.testing.assert_array_equal(back, 3.0)
    assert start.elapsed_time(end) > 0
    assert memory.event_elapsed_time(start, end) == pytest.approx(start.elapsed_time(end))
    with s.auto_synchronize():
        d.copy_to_host(back, stream=s)


@gpu
def test_link_and_launch_hand_written_kernel(on_gpu):
    function, log = _load_add_value(on_gpu)
    attrs = function.attributes()
    assert attrs["num_regs"] > 0 and attrs["shared_size_bytes"] == 4
    host = np.arange(1000, dtype=np.float32)
    d = memory.to_device(host)
    view = d[::2]  # strided: the kernel uses the byte stride from the packer
    packer = ArgPacker(abi.signature_slots(ADD_VALUE_TYPES), target="cuda", kernel="add_value")
    params, writeback = packer.pack((view, 1.5), ADD_VALUE_TYPES)
    assert writeback == ()
    limits = {"max_threads_per_block": attrs["max_threads_per_block"],
              "max_block_dim": on_gpu.max_block_dim, "max_grid_dim": on_gpu.max_grid_dim,
              "max_shared_memory_per_block": on_gpu.max_shared_memory_per_block_optin}
    grid, block = validate_config(4, 128, limits, attrs["shared_size_bytes"], "add_value")
    launch_cuda(function, grid, block, 0, 0, params)
    driver.synchronize()
    expected = host.copy()
    expected[::2] += 1.5
    np.testing.assert_array_equal(d.copy_to_host(), expected)


@gpu
def test_host_arrays_are_copied_in_and_back(on_gpu):
    function, _ = _load_add_value(on_gpu)
    host = np.ones(300, np.float32)
    packer = ArgPacker(abi.signature_slots(ADD_VALUE_TYPES), target="cuda", kernel="add_value")
    params, writeback = packer.pack((host, 2.0), ADD_VALUE_TYPES)
    s = memory.stream()
    launch_cuda(function, (3, 1, 1), (128, 1, 1), 0, s.handle, params)
    for fn in writeback:
        fn()
    np.testing.assert_array_equal(host, 3.0)


def _refused_launch_is_a_launch_error(on_gpu) -> None:
    """A launch the driver refuses (2048 threads, past validate_config) is a LaunchError naming
    the kernel, and the context survives it."""
    function, _ = _load_add_value(on_gpu)
    packer = ArgPacker(abi.signature_slots(ADD_VALUE_TYPES), target="cuda", kernel="add_value")
    params, _ = packer.pack((memory.device_array(4, np.float32), 1.0), ADD_VALUE_TYPES)
    with pytest.raises(LaunchError, match="CUDA_ERROR_INVALID_VALUE") as info:
        launch_cuda(function, (1, 1, 1), (2048, 1, 1), 0, 0, params)
    assert "add_value" in str(info.value)
    driver.synchronize()


@gpu
def test_driver_errors_become_launch_errors(on_gpu):
    _refused_launch_is_a_launch_error(on_gpu)
    with pytest.raises(modules.PtxLinkError, match="could not compile"):
        modules.link_ptx(".version 8.0\n.target sm_90\n.address_size 64\nnonsense;\n", "sm_90")


@gpu
def test_mapped_and_pinned_memory_in_kernels(on_gpu):
    function, _ = _load_add_value(on_gpu)
    mapped = memory.mapped_array(256, np.float32)
    mapped[:] = 1.0
    packer = ArgPacker(abi.signature_slots(ADD_VALUE_TYPES), target="cuda", kernel="add_value")
    params, writeback = packer.pack((mapped, 4.0), ADD_VALUE_TYPES)
    assert writeback == ()  # zero-copy: the kernel writes host memory directly
    launch_cuda(function, (2, 1, 1), (128, 1, 1), 0, 0, params)
    driver.synchronize()
    np.testing.assert_array_equal(mapped, 5.0)
    host = np.zeros(64, np.float32)
    with memory.pinned(host):
        d = memory.to_device(host)
    with memory.mapped(host) as d_host:
        params, _ = packer.pack((d_host, 1.0), ADD_VALUE_TYPES)
        launch_cuda(function, (1, 1, 1), (64, 1, 1), 0, 0, params)
        driver.synchronize()
    np.testing.assert_array_equal(host, 1.0)
    assert d.copy_to_host().sum() == 0


@gpu
@pytest.mark.parametrize("shared", [4, 20000])
@pytest.mark.parametrize("block", [32, 96, 128, 256, 512, 640, 1024])
@pytest.mark.parametrize("dynamic", [0, 9000, 24000])
def test_driver_occupancy_matches_the_calculator(on_gpu, shared, block, dynamic):
    function, _ = _load_add_value(on_gpu, shared)
    attrs = function.attributes()
    if dynamic > attrs["max_dynamic_shared_size_bytes"]:
        function.set_max_dynamic_shared(dynamic)
    from_driver = occupancy.max_active_blocks_per_sm(function, block, dynamic)
    computed = occupancy.occupancy(on_gpu, block, attrs["num_regs"],
                                   attrs["shared_size_bytes"] + dynamic)
    assert computed.active_blocks_per_sm == from_driver
    if on_gpu.arch in occupancy.ARCHS:  # the built-in table agrees with the device's numbers
        table = occupancy.occupancy(on_gpu.arch, block, attrs["num_regs"],
                                    attrs["shared_size_bytes"] + dynamic)
        assert table.active_blocks_per_sm == from_driver
    min_grid, best = occupancy.max_potential_block_size(function, dynamic)
    assert best % 32 == 0 and min_grid >= on_gpu.multiprocessor_count


@gpu
def test_cuda_array_interface_with_cupy_and_torch(on_gpu):
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = memory.to_device(host)
    if importlib.util.find_spec("cupy"):
        import cupy

        c = cupy.asarray(d[:, 1::2])  # no copy: CuPy reads our interface
        np.testing.assert_array_equal(cupy.asnumpy(c), host[:, 1::2])
        c[:] = -1
        assert d.copy_to_host()[0, 1] == -1
        back = memory.as_cuda_array(cupy.arange(5, dtype=cupy.int32))
        np.testing.assert_array_equal(back.copy_to_host(), np.arange(5))
        np.testing.assert_array_equal(cupy.asnumpy(cupy.from_dlpack(d)), d.copy_to_host())
        theirs = cupy.arange(6, dtype=cupy.float64)
        mine = memory.from_dlpack(theirs)
        np.testing.assert_array_equal(mine.copy_to_host(), np.arange(6))
    if importlib.util.find_spec("torch"):
        import torch

        before = d.copy_to_host()
        tt = torch.as_tensor(d, device="cuda")  # no copy: PyTorch reads our interface
        assert tt.shape == (3, 4)
        tt += 1
        torch.cuda.synchronize()
        np.testing.assert_array_equal(d.copy_to_host(), before + 1)
        td = torch.from_dlpack(d)
        assert td.data_ptr() == d._ptr
        mine = memory.from_dlpack(torch.arange(4, device="cuda", dtype=torch.int64))
        np.testing.assert_array_equal(mine.copy_to_host(), np.arange(4))


@gpu
def test_numba_reads_our_arrays(on_gpu):
    try:
        from numba import cuda as numba_cuda
    except ImportError as exc:  # not installed, or built for another llvmlite
        pytest.skip(f"numba.cuda is not importable here: {exc}")

    d = memory.to_device(np.arange(8, dtype=np.int32))
    view = numba_cuda.as_cuda_array(d)
    np.testing.assert_array_equal(view.copy_to_host(), np.arange(8))


def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@gpu
def test_dispatcher_launch_end_to_end(on_gpu):
    """kernel[grid, block](3 device arrays, scalar) through the dispatcher, first and repeated
    launches (the native launcher from the third on) with a new scalar each time. Its speed is
    measured by benchmarks/bench_launch.py and profile_launch.py, not here."""
    kernel = cuda.jit(saxpy)
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    d_out, d_x, d_y = memory.device_array(n, np.float32), memory.to_device(x), memory.to_device(y)
    for a in range(1, 6):
        kernel[4, 256](d_out, d_x, d_y, np.float32(a))
        np.testing.assert_array_equal(d_out.copy_to_host(), a * x + y)


@gpu
def test_dispatcher_launches_on_every_kind_of_stream(on_gpu):
    """gpunb streams, raw handles, and CuPy / numba streams when installed, through the ctypes
    launch path: the kernel runs on that stream (results read after its synchronize)."""
    kernel = cuda.jit(saxpy)
    n = 1 << 16
    x = memory.to_device(np.arange(n, dtype=np.float32))
    y = memory.to_device(np.ones(n, np.float32))
    streams = [cuda.stream(), 0]
    try:
        import cupy

        streams.append(cupy.cuda.Stream(non_blocking=True))
    except ImportError:
        pass
    try:
        from numba import cuda as numba_cuda

        streams.append(numba_cuda.stream())
    except ImportError:
        pass
    expected = 2 * np.arange(n, dtype=np.float32) + 1
    for stream in streams:
        out = memory.device_array(n, np.float32)
        kernel[n // 256, 256, stream](out, x, y, np.float32(2.0))
        if hasattr(stream, "synchronize"):
            stream.synchronize()
        else:
            driver.synchronize()
        np.testing.assert_array_equal(out.copy_to_host(), expected, err_msg=repr(stream))


@gpu
def test_native_launch_trampoline(on_gpu):
    """Once a kernel is compiled (llvmlite loaded), launches go through the native trampoline:
    results are right, numpy-integer configs fall back to cuda.bindings, driver errors still
    become LaunchErrors naming the kernel (its speed beside the bindings call: profile_launch)."""
    from gpunb.backends.cuda import launch

    kernel = cuda.jit(saxpy)
    n = 1000
    x = np.arange(n, dtype=np.float32)
    d_out, d_x, d_y = memory.device_array(n, np.float32), memory.to_device(x), memory.to_device(x)
    kernel[4, 256](d_out, d_x, d_y, np.float32(3.0))
    assert launch.driver_calls.prepare() and launch.driver_calls.trampolines is not None
    np.testing.assert_array_equal(d_out.copy_to_host(), 4 * x)
    kernel[np.int64(4), np.int32(256)](d_out, d_x, d_y, np.float32(2.0))  # the fallback path
    np.testing.assert_array_equal(d_out.copy_to_host(), 3 * x)
    _refused_launch_is_a_launch_error(on_gpu)  # now through the trampoline
    driver.synchronize()
