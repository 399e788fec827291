"""ArgPacker writes each argument into its parameter slots; launch checks fail before the driver."""

from __future__ import annotations

import ctypes
import warnings

import numpy as np
import pytest

from gpunb.backends.cuda import launch
from gpunb.backends.launch_config import validate_config
from gpunb.foundation import abi
from gpunb.foundation import types as t
from gpunb.foundation.errors import LaunchError, PerformanceWarning
from gpunb.runtime import memory
from gpunb.runtime.devicearray import HostDeviceArray
from gpunb.runtime.packing import ArgPacker

_READ = {"ptr": ctypes.c_uint64, "i8": ctypes.c_int8, "i16": ctypes.c_int16,
         "i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float,
         "f64": ctypes.c_double, "f16": ctypes.c_uint16}


def packer_for(argtypes: tuple, target: str = "cpu") -> ArgPacker:
    return ArgPacker(abi.signature_slots(argtypes), target=target, kernel="k")


def read_slots(packer: ArgPacker, address: int) -> list:
    """What the kernel would see: follow the void* array to each slot and read its type."""
    pointers = (ctypes.c_void_p * len(packer.slots)).from_address(address)
    values = []
    for slot, pointer in zip(packer.slots, pointers, strict=True):
        values.append(_READ[slot].from_address(pointer).value)
    return values


def test_scalars_in_their_slots():
    types = (t.int32, t.float32, t.float64, t.boolean, t.int8, t.uint64, t.int64, t.uint16)
    p = packer_for(types)
    address, writeback = p.pack((-7, 1.5, 2.25, True, -3, 2**64 - 1, -(2**40), 65535), types)
    assert writeback == ()
    got = read_slots(p, address)
    assert got[:5] == [-7, 1.5, 2.25, 1, -3]
    assert ctypes.c_uint64(got[5]).value == 2**64 - 1 and got[6] == -(2**40)
    assert ctypes.c_uint16(got[7]).value == 65535


def test_slots_are_naturally_aligned():
    types = (t.int8, t.float64, t.int16, t.int64)
    p = packer_for(types)
    assert p.offsets == (0, 8, 16, 24)
    address, _ = p.pack((1, 2.0, 3, 4), types)
    assert read_slots(p, address) == [1, 2.0, 3, 4]


def test_numpy_compatible_conversions():
    types = (t.float32, t.int32, t.boolean, t.float16, t.uint8)
    p = packer_for(types)
    with np.errstate(over="ignore"):
        address, _ = p.pack((1e300, 2.9, 0.5, np.float16(1.5), np.int64(257)), types)
    got = read_slots(p, address)
    assert got[0] == float("inf")  # float32 overflow: inf, as numpy
    assert got[1] == 2  # a float into an int slot truncates, as numba casts
    assert got[2] == 1  # bool of 0.5
    assert got[3] == np.float16(1.5).view(np.uint16)
    assert got[4] == 1  # numpy scalars wrap like astype


def test_python_ints_wrap_as_numba_casts_them_and_larger_ones_are_launch_errors():
    p = packer_for((t.int32, t.int32, t.int64))
    address, _ = p.pack((0xFFFFFFFF, 2**32 + 5, 2**63), (t.int32, t.int32, t.int64))
    assert read_slots(p, address) == [-1, 5, -(2**63)]  # numba: int64 then cast, wrapping
    p = packer_for((t.int64,))
    with pytest.raises(LaunchError, match="int64"):
        p.pack((2**70,), (t.int64,))


def test_complex_takes_two_slots():
    types = (t.complex64, t.complex128)
    p = packer_for(types)
    address, _ = p.pack((1 + 2j, np.complex128(-3.5 + 0.25j)), types)
    assert read_slots(p, address) == [1.0, 2.0, -3.5, 0.25]


def test_arrays_are_pointer_shape_strides_on_cpu():
    a = np.zeros((3, 4), np.float32)
    view = a[::2, 1:]
    h = HostDeviceArray(np.zeros(5, np.int64))
    types = (t.float32[:, ::1], t.Array(t.float32, 2, "A"), t.int64[::1])
    p = packer_for(types)
    address, writeback = p.pack((a, view, h), types)
    assert writeback == ()
    got = read_slots(p, address)
    assert got[:5] == [a.ctypes.data, 3, 4, 16, 4]  # in place on the CPU target: no copy
    assert got[5:10] == [view.ctypes.data, 2, 3, 32, 4]
    assert got[10:] == [h._ptr, 5, 8]


def test_tuples_flatten_in_order():
    types = (t.Tuple((t.int32, t.Tuple((t.float64, t.float32[::1])))), t.int8)
    a = np.ones(3, np.float32)
    p = packer_for(types)
    address, _ = p.pack(((1, (2.5, a)), 9), types)
    assert read_slots(p, address) == [1, 2.5, a.ctypes.data, 3, 4, 9]


def test_records_pass_by_pointer_and_write_back():
    dtype = np.dtype([("x", np.float64), ("n", np.int32)], align=True)
    arr = np.zeros(2, dtype)
    rec = arr[1]
    ty = t.from_dtype(dtype)
    p = packer_for((ty,))
    address, writeback = p.pack((rec,), (ty,))
    (pointer,) = read_slots(p, address)
    copy = np.ndarray((1,), dtype, buffer=(ctypes.c_char * dtype.itemsize).from_address(pointer))
    copy[0]["x"], copy[0]["n"] = 2.5, 7  # what a kernel writing the record does
    for fn in writeback:
        fn()
    assert arr[1]["x"] == 2.5 and arr[1]["n"] == 7


def test_wrong_argument_count_names_expected_and_got():
    p = packer_for((t.int32, t.int32))
    with pytest.raises(LaunchError, match="'k' takes 2 argument\\(s\\) but 3 were given"):
        p.pack((1, 2, 3), (t.int32, t.int32))


def test_device_arrays_are_refused_on_the_cpu_target(fake_cuda):
    d = memory.to_device(np.zeros(4, np.float32), target="cuda")
    p = packer_for((t.float32[::1],))
    with pytest.raises(LaunchError, match="CUDA device array.*CPU target") as info:
        p.pack((d,), (t.float32[::1],))
    assert "copy_to_host" in str(info.value)


def test_cuda_target_device_arrays_and_interfaces(fake_cuda):
    d = memory.to_device(np.arange(6, dtype=np.float32), target="cuda")

    class Foreign:  # e.g. a CuPy array
        __cuda_array_interface__ = {"shape": (2, 3), "typestr": "<f4", "strides": None,
                                    "data": (0xABC000, False), "version": 3, "stream": 1}

    types = (t.float32[::1], t.float32[:, ::1])
    p = packer_for(types, target="cuda")
    address, writeback = p.pack((d, Foreign()), types)
    assert writeback == ()
    assert read_slots(p, address) == [d._ptr, 6, 4, 0xABC000, 2, 3, 12, 4]
    # a wait is a blocking synchronize or (backends/cuda/waits.py) a query until done
    assert not any(c[0] in ("cuStreamSynchronize", "cuStreamQuery") and c[1] != (0,)
                   for c in fake_cuda.calls)  # legacy stream 1

    Foreign.__cuda_array_interface__ = dict(Foreign.__cuda_array_interface__, stream=0x777)
    p.pack((d, Foreign()), types)
    assert ("cuStreamQuery", (0x777,)) in fake_cuda.calls  # producer's stream honoured


def test_host_arrays_on_cuda_copy_in_and_back_with_one_warning(fake_cuda, monkeypatch):
    monkeypatch.setenv("GPUNB_NOTICES", "1")
    a = np.arange(4, dtype=np.float32)
    ty = (t.float32[::1],)
    p = packer_for(ty, target="cuda")
    numba_text = "Host array used in CUDA kernel will incur copy overhead to/from device"
    with pytest.warns(PerformanceWarning, match=f"{numba_text}: .* copied to the GPU and back"):
        address, writeback = p.pack((a,), ty)
    (pointer, n, stride) = read_slots(p, address)
    assert (n, stride) == (4, 4) and pointer != a.ctypes.data
    device = (ctypes.c_float * 4).from_address(pointer)
    device[2] = 99.0  # the kernel writes the device copy
    assert a[2] == 2.0
    for fn in writeback:
        fn()
    assert a[2] == 99.0  # copied back after the launch
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p.pack((a,), ty)  # the warning is shown once per kernel
    with pytest.warns(PerformanceWarning, match=numba_text):
        packer_for(ty, target="cuda").pack((a,), ty)  # another kernel warns again


def test_validate_config_normalises():
    limits = {"max_threads_per_block": 1024, "max_block_dim": (1024, 1024, 64),
              "max_grid_dim": (2**31 - 1, 65535, 65535), "max_shared_memory_per_block": 48000}
    assert validate_config(10, 256, limits, 0, "k") == ((10, 1, 1), (256, 1, 1))
    assert validate_config((2, 3), (16, 16), limits, 100, "k") == ((2, 3, 1), (16, 16, 1))
    assert validate_config([np.int64(4)], (8, 8, 4), limits, 0, "k") == ((4, 1, 1), (8, 8, 4))


@pytest.mark.parametrize("grid,block,shared,message", [
    (0, 32, 0, "grid dimensions must be positive"),
    (-1, 32, 0, "grid dimensions must be positive"),
    (1, (32, 0), 0, "block dimensions must be positive"),
    (1.5, 32, 0, "griddim must be a sequence of integers"),
    (1, (1, 2, 3, 4), 0, r"blockdim must be a sequence of 1, 2 or 3 integers"),
    (1, 2048, 0, "2048 threads; the device allows at most 1024"),
    (1, (32, 32, 2), 0, "2048 threads"),
    (1, (1, 1, 128), 0, "block dimension z is 128; the device allows at most 64"),
    ((1, 70000), 32, 0, "grid dimension y is 70000"),
    (1, 32, 50000, "50000 bytes of shared memory"),
    (1, 32, -5, "non-negative"),
])
def test_validate_config_errors(grid, block, shared, message):
    limits = {"max_threads_per_block": 1024, "max_block_dim": (1024, 1024, 64),
              "max_grid_dim": (2**31 - 1, 65535, 65535), "max_shared_memory_per_block": 48000}
    with pytest.raises(LaunchError, match=message) as info:
        validate_config(grid, block, limits, shared, "my_kernel")
    assert "my_kernel" in str(info.value)


def test_kernel_thread_limit_is_named():
    limits = {"max_threads_per_block": 512, "kernel_max_threads_per_block": 512,
              "max_block_dim": (1024, 1024, 64), "max_grid_dim": (2**31 - 1, 65535, 65535)}
    with pytest.raises(LaunchError, match="this kernel allows at most 512"):
        validate_config(1, 1024, limits, 0, "k")


def test_launch_cuda_calls_the_driver_and_translates_errors(fake_cuda):
    class Fn:  # modules.Function's attributes the launch reads
        handle = address = 1234
        name = "saxpy"

    launch.launch_cuda(Fn, (4, 1, 1), (256, 1, 1), 0, 0, 0xFEED)
    assert fake_cuda.launches[-1] == ("kernel", (4, 1, 1), (256, 1, 1), 0, 0, 0xFEED)
    launch.launch_cuda(Fn, (4, 1, 1), (256, 1, 1), 128, 7, 0xFEED, cooperative=True)
    assert fake_cuda.launches[-1][0] == "cooperative"
    fake_cuda.fail_next["cuLaunchKernel"] = fake_cuda.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    with pytest.raises(LaunchError, match="max_registers") as info:
        launch.launch_cuda(Fn, (1, 1, 1), (1024, 1, 1), 0, 0, 0)
    assert "saxpy" in str(info.value) and "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" in str(info.value)
    # a thread without a current context: made current, then retried once
    fake_cuda.fail_next["cuLaunchKernel"] = fake_cuda.CUresult.CUDA_ERROR_INVALID_CONTEXT
    launch.launch_cuda(Fn, (1, 1, 1), (32, 1, 1), 0, 0, 0)
    assert fake_cuda.launches[-1][1:3] == ((1, 1, 1), (32, 1, 1))
