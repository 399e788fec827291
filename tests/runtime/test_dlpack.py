"""The ctypes DLPack layer, exercised against numpy's own producer and consumer on the host."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from gpunb.runtime import dlpack


class Exporter:
    """Exports host memory through gpunb's ctypes producer, as DeviceArray does for GPU memory."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def __dlpack_device__(self):
        return (dlpack.kDLCPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        a = self.array
        return dlpack.export_capsule(a, a.__array_interface__["data"][0], a.shape, a.strides,
                                     a.dtype, dlpack.kDLCPU, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.int64,
                                   np.complex64, np.bool_, np.float16])
def test_numpy_consumes_our_capsules(dtype):
    a = (np.arange(24) % 3).astype(dtype).reshape(2, 3, 4)
    for view in (a, a[:, ::-1, 1::2], a.transpose(2, 0, 1), a[1, 2]):
        got = np.from_dlpack(Exporter(view))
        np.testing.assert_array_equal(got, view)
        assert got.strides == view.strides
        assert got.__array_interface__["data"][0] == view.__array_interface__["data"][0]


def test_export_keeps_the_owner_alive_until_the_consumer_deletes():
    before = dlpack.live_export_count()
    a = np.arange(6, dtype=np.float32)
    got = np.from_dlpack(Exporter(a))
    assert dlpack.live_export_count() == before + 1
    del a
    gc.collect()
    np.testing.assert_array_equal(got, np.arange(6))  # the memory is still valid
    del got
    gc.collect()
    assert dlpack.live_export_count() == before


def test_unconsumed_capsule_releases_on_destruction():
    before = dlpack.live_export_count()
    capsule = Exporter(np.zeros(3)).__dlpack__()
    assert dlpack.live_export_count() == before + 1
    del capsule
    gc.collect()
    assert dlpack.live_export_count() == before


def test_we_consume_numpy_capsules():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)[::2, 1:]
    tensor = dlpack.import_capsule(a.__dlpack__())
    assert tensor.shape == (2, 3) and tensor.strides == a.strides and tensor.dtype == np.int32
    assert tensor.device_type == dlpack.kDLCPU
    assert tensor.data == a.__array_interface__["data"][0]
    versioned = dlpack.import_capsule(a.__dlpack__(max_version=(1, 0)))
    assert versioned.shape == (2, 3) and versioned.strides == a.strides


def test_a_capsule_is_consumed_once():
    capsule = np.zeros(2).__dlpack__()
    dlpack.import_capsule(capsule)
    with pytest.raises(TypeError, match="already consumed"):
        dlpack.import_capsule(capsule)


def test_round_trip_through_both_directions():
    a = np.linspace(0, 1, 10)
    tensor = dlpack.import_capsule(Exporter(a[::3]).__dlpack__())
    assert tensor.shape == (4,) and tensor.strides == (24,)
    del tensor
    gc.collect()


def test_unsupported_dtypes_are_refused():
    with pytest.raises(BufferError):
        Exporter(np.zeros(2, np.dtype([("a", np.int8)]))).__dlpack__()
    with pytest.raises(BufferError):
        dlpack.export_capsule(None, 0, (2,), (3,), np.float32, dlpack.kDLCPU)


def test_bfloat16_tensors_cross_both_ways():
    md = pytest.importorskip("ml_dtypes")
    bf16 = np.dtype(md.bfloat16)
    code = dlpack.dl_dtype(bf16)
    assert (code.code, code.bits, code.lanes) == (4, 16, 1)  # kDLBfloat
    assert dlpack.np_dtype(code) == bf16


class OpaqueBfloat16:
    """CuPy's view of a bfloat16 device array: the interface says only "<V2", DLPack says
    bfloat16 (memory is never touched: typing reads the descriptions)."""

    def __init__(self, n: int):
        self.n = n
        self.__cuda_array_interface__ = {"shape": (n,), "strides": None, "typestr": "<V2",
                                         "data": (4096, False), "version": 3}

    def __dlpack_device__(self):
        return (dlpack.kDLCUDA, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        import ml_dtypes

        return dlpack.export_capsule(self, 4096, (self.n,), (2,), np.dtype(ml_dtypes.bfloat16),
                                     dlpack.kDLCUDA, 0)


def test_an_opaque_interface_type_is_read_through_dlpack():
    pytest.importorskip("ml_dtypes")
    from gpunb.foundation import types as t
    from gpunb.runtime.typeof import typeof

    assert typeof(OpaqueBfloat16(5)) == t.Array(t.bfloat16, 1, "C")
