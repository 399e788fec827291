"""Native launch plans (gpunb/runtime/native_pack.py, backends/native_launch/): for every argument
kind the machine code packs exactly the bytes the Python packer writes; what it must refuse it
declines (-1) without leaving a Python exception set; its checks (thread, version, watch list,
count, kinds) each decline; with a launch function it calls it with the bound configuration.
Launch functions here are recording C callbacks with cuLaunchKernel's signature; GPU tests:
tests/jit/test_native_launch_path.py.
"""

from __future__ import annotations

import ctypes
import struct
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("llvmlite")
import llvmlite.binding  # noqa: E402,F401 - launchers are built only once llvmlite is loaded

from gpunb import cuda  # noqa: E402
from gpunb.backends.base import DECLINED, PACKED, NativeLaunch  # noqa: E402
from gpunb.backends.native_launch import layout  # noqa: E402
from gpunb.foundation import abi  # noqa: E402
from gpunb.foundation import types as t  # noqa: E402
from gpunb.jit.launcher import LaunchVersion  # noqa: E402
from gpunb.runtime import native_pack  # noqa: E402
from gpunb.runtime.native_pack import NativePlan  # noqa: E402
from gpunb.runtime.packing import ArgPacker  # noqa: E402
from gpunb.runtime.typeof import typeof  # noqa: E402

MISSING = object()
U32, U64 = ctypes.c_uint32, ctypes.c_uint64
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, U64, U32, U32, U32, U32, U32, U32, U32, U64, U64, U64)
NAMESPACE = {"N": 5}
VERSION = LaunchVersion()
PACK_ONLY = NativeLaunch((1, 1, 1), (1, 1, 1), 0, 0)


def _bound(plan: NativePlan, launch: NativeLaunch = PACK_ONLY, watch=()):
    """The plan's builtin for `launch` at VERSION's value now, checking `watch`."""
    builtin = plan.bind(launch, VERSION.word, VERSION.value, tuple(watch), MISSING)
    assert builtin is not None
    return builtin


def _buffer(packer: ArgPacker, types: tuple) -> bytes:
    """The bytes of the packer's parameter slots, in order (the padding between them too)."""
    slots = [address for owned in packer.argument_slots(types) for address, _ in owned]
    last = packer.argument_slots(types)[-1][-1]
    end = last[0] + struct.calcsize("<" + last[1])
    return ctypes.string_at(slots[0], end - slots[0])


def _native_bytes(args: tuple, target: str = "cpu") -> tuple:
    """(each slot's bytes from the Python packer, the same natively, the native status); the
    padding between slots is written by neither."""
    types = tuple(typeof(a) for a in args)
    packer = ArgPacker(abi.signature_slots(types), target=target, kernel="k")
    packer.pack(args, types)

    def slots() -> list:
        return [ctypes.string_at(address, struct.calcsize(fmt))
                for owned in packer.argument_slots(types) for address, fmt in owned]

    expected = slots()
    for owned in packer.argument_slots(types):
        for address, fmt in owned:
            ctypes.memset(address, 0xAB, struct.calcsize(fmt))
    status = _bound(NativePlan(packer, types, args))(args)
    return expected, slots(), status


SCALARS = [7, -2**63, 2**63 - 1, True, False, 2.5, -0.0, float("inf"), complex(1.5, -2.0),
           *[cls(3) for cls in sorted(layout.NUMPY_SCALARS, key=lambda c: c.__name__)],
           np.float32(-1.25), np.uint64(2**64 - 1), np.int8(-128), np.complex64(1 - 2j)]


@pytest.mark.parametrize("value", SCALARS, ids=lambda v: f"{type(v).__name__}({v!r})")
def test_each_scalar_kind_packs_the_python_packers_bytes(value):
    expected, got, status = _native_bytes((np.zeros(4, np.float32), value))
    assert status == PACKED
    assert got == expected


ARRAYS = [np.arange(12, dtype=np.float32), np.arange(12.0).reshape(3, 4),
          np.asfortranarray(np.arange(12.0).reshape(3, 4)), np.arange(24)[::-3],
          np.zeros((2, 3, 4), np.int16)[:, ::2, 1:], np.zeros(0, np.float64),
          np.arange(6, dtype=np.complex64).reshape(2, 3).T]


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype}{a.shape}{a.strides}")
def test_numpy_arrays_on_the_cpu_target_pack_pointer_shape_strides(array):
    expected, got, status = _native_bytes((array, 1.0))
    assert status == PACKED
    assert got == expected


def test_gpunb_host_arrays_pack_their_slot_tuples():
    import gpunb
    from gpunb import cuda

    gpunb.set_target("cpu")
    try:
        host = cuda.to_device(np.arange(20, dtype=np.float64).reshape(4, 5))
        view = host[1:, ::2]
    finally:
        gpunb.set_target(None)
    for array in (host, view):
        expected, got, status = _native_bytes((array, np.int32(3)))
        assert status == PACKED and got == expected


def test_device_arrays_pack_on_the_cuda_target(fake_cuda):
    from gpunb.runtime.memory import to_device

    device = to_device(np.arange(8, dtype=np.float32), target="cuda")
    expected, got, status = _native_bytes((device, 2.0), target="cuda")
    assert status == PACKED and got == expected
    assert int.from_bytes(got[0], "little") == device._ptr


def _plan_for(args: tuple, target: str = "cpu"):
    types = tuple(typeof(a) for a in args)
    packer = ArgPacker(abi.signature_slots(types), target=target, kernel="k")
    packer.pack(args, types)
    return NativePlan(packer, types, args), packer


def test_other_kinds_decline_and_leave_no_exception():
    x = np.zeros(4, np.float32)
    plan, _ = _plan_for((x, 1, 2.0, np.float32(1)))
    f = _bound(plan)
    assert f((x, 1, 2.0, np.float32(1))) == PACKED
    refused = [
        (x, 2**63, 2.0, np.float32(1)),           # past int64: the Python path types it uint64
        (x, True, 2.0, np.float32(1)),            # bool where an int was seen
        (x, 1, 2, np.float32(1)),                 # int where a float was seen
        (x, 1, 2.0, np.float64(1)),               # another numpy scalar class
        (np.zeros(4, np.float64), 1, 2.0, np.float32(1)),   # another dtype
        (np.zeros((2, 2), np.float32), 1, 2.0, np.float32(1)),  # another ndim
        (x[::2], 1, 2.0, np.float32(1)),          # not contiguous any more
        (x, 1, 2.0, "s"),                         # a str
        (x, 1, 2.0),                              # too few
        (x, 1, 2.0, np.float32(1), 4),            # too many
    ]
    readonly = np.zeros(4, np.float32)
    readonly.flags.writeable = False
    refused.append((readonly, 1, 2.0, np.float32(1)))
    for args in refused:
        assert f(args) == DECLINED, args
        assert sys.exc_info() == (None, None, None)
    # and nothing was left pending for the next C-API call to trip over
    assert f((x, 1, 2.0, np.float32(1))) == PACKED


def test_array_of_another_key_declines():
    import gpunb
    from gpunb import cuda

    gpunb.set_target("cpu")
    try:
        a = cuda.to_device(np.zeros(4, np.float32))
        b = cuda.to_device(np.zeros((2, 2), np.float32))
        c = cuda.to_device(np.ones(9, np.float32))
    finally:
        gpunb.set_target(None)
    plan, packer = _plan_for((a,))
    f = _bound(plan)
    assert f((b,)) == DECLINED
    assert f((c,)) == PACKED  # another array of the same type key: packed, its own pointer
    [[(address, _), *_]] = packer.argument_slots((typeof(a),))
    assert ctypes.c_uint64.from_address(address).value == c._ptr


def test_the_watch_list_the_version_and_the_thread_each_decline():
    x = np.zeros(4, np.float32)
    plan, _ = _plan_for((x,))
    watch = ((NAMESPACE.get, "N", NAMESPACE["N"]), (NAMESPACE.get, "gone", MISSING))
    f = _bound(plan, watch=watch)
    assert f((x,)) == PACKED
    NAMESPACE["N"] = 6  # rebound
    assert f((x,)) == DECLINED
    NAMESPACE["N"] = 5  # bound back to the object seen (small ints are one object)
    assert f((x,)) == PACKED
    NAMESPACE["gone"] = 1  # a name that was unbound now is bound
    assert f((x,)) == DECLINED
    del NAMESPACE["gone"]
    assert f((x,)) == PACKED
    VERSION.bump()
    assert f((x,)) == DECLINED
    f = _bound(plan, watch=watch)  # bound again, at the version now
    assert f((x,)) == PACKED
    seen = []
    thread = threading.Thread(target=lambda: seen.append(f((x,))))
    thread.start()
    thread.join()
    assert seen == [DECLINED]  # another thread packs into its own buffer, the Python way


def test_watch_entries_outside_plain_dicts_are_refused():
    class Namespace:
        def get(self, name, default=None):
            return 1

    x = np.zeros(4, np.float32)
    plan, _ = _plan_for((x,))
    assert plan.bind(PACK_ONLY, VERSION.word, VERSION.value, ((Namespace().get, "N", 1),),
                     MISSING) is None


def test_kinds_the_launcher_cannot_pack_are_unsupported():
    for args in [((1, 2.0),), (np.zeros(3, [("a", np.int32)])[0],)]:
        types = tuple(typeof(a) for a in args)
        packer = ArgPacker(abi.signature_slots(types), target="cpu", kernel="k")
        with pytest.raises(native_pack.Unsupported):
            NativePlan(packer, types, args)
    # a converting declared signature (an int passed to a float32 parameter)
    packer = ArgPacker(abi.signature_slots((t.float32,)), target="cpu", kernel="k")
    with pytest.raises(native_pack.Unsupported):
        NativePlan(packer, (t.float32,), (3,))
    # host arrays on the CUDA target are copied the Python way
    x = np.zeros(4, np.float32)
    packer = ArgPacker(abi.signature_slots((typeof(x),)), target="cuda", kernel="k")
    with pytest.raises(native_pack.Unsupported):
        NativePlan(packer, (typeof(x),), (x,))


class Recorder:
    def __init__(self, result: int = 0):
        self.calls = []
        self.result = result
        self.callback = LAUNCH(self._record)
        self.address = ctypes.cast(self.callback, ctypes.c_void_p).value

    def _record(self, *args):
        self.calls.append(args)
        return self.result


def test_with_a_launch_function_it_launches_the_bound_configuration():
    rec = Recorder()
    last = ctypes.c_uint64(0)
    x = np.arange(4, dtype=np.float32)
    plan, packer = _plan_for((x, 2.5))
    f = _bound(plan, NativeLaunch((4096, 2, 3), (256, 1, 1), 49152, 0xDEAD_BEEF_0000,
                                  rec.address, 0x7F00_1234_5678, ctypes.addressof(last)))
    assert f((x, 2.5)) == 0
    assert rec.calls == [(0x7F00_1234_5678, 4096, 2, 3, 256, 1, 1, 49152, 0xDEAD_BEEF_0000,
                          packer.params_address, 0)]
    assert last.value == 0x7F00_1234_5678  # the kernel launched last, for sticky errors
    # the same plan bound to another configuration
    g = _bound(plan, NativeLaunch((1, 1, 1), (32, 1, 1), 0, 0, rec.address, 1))
    assert g((x, 2.5)) == 0 and rec.calls[-1][1:8] == (1, 1, 1, 32, 1, 1, 0)
    # what the packer holds is what the Python packer writes for these values
    types = (typeof(x), typeof(2.5))
    native = _buffer(packer, types)
    packer.pack((x, 2.5), types)
    assert _buffer(packer, types) == native
    assert f((x, 2)) == DECLINED and len(rec.calls) == 2


def test_driver_errors_come_back_as_their_codes():
    rec = Recorder(result=719)
    x = np.arange(4, dtype=np.float32)
    plan, _ = _plan_for((x,))
    assert _bound(plan, NativeLaunch((1, 1, 1), (1, 1, 1), 0, 0, rec.address, 1))((x,)) == 719


def test_the_gil_is_released_around_the_launch_function():
    """While this thread sits in the launch function (libc usleep stands in for a driver call
    blocking on a full queue: its first argument, the "function", is 0.3 s), another thread
    keeps running Python."""
    import time

    usleep = ctypes.cast(ctypes.CDLL(None).usleep, ctypes.c_void_p).value
    x = np.arange(4, dtype=np.float32)
    plan, _ = _plan_for((x,))
    f = _bound(plan, NativeLaunch((1, 1, 1), (1, 1, 1), 0, 0, usleep, 300_000))
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.01)

    counter = threading.Thread(target=count)
    counter.start()
    time.sleep(0.02)
    started = time.perf_counter()
    f((x,))
    ended = time.perf_counter()
    stop.set()
    counter.join()
    assert ended - started >= 0.25
    assert sum(started < tick < ended for tick in ticks) >= 5


# ---- the whole CUDA launch path against the simulated driver -----------------------------------

@pytest.fixture
def cuda_with_recorded_launches(fake_cuda, monkeypatch):
    """The CUDA target on the simulated driver, native launchers calling a recording function
    in place of libcuda's cuLaunchKernel."""
    import gpunb
    from gpunb.backends.cuda import launch

    rec = Recorder()
    monkeypatch.setattr(launch, "driver_launch_address", lambda: rec.address)
    gpunb.set_target("cuda")
    yield fake_cuda, rec
    gpunb.set_target(None)


def scale_add(out, x, a, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = x[i] * a


def _scale_kernel():
    return cuda.jit(scale_add)  # a fresh dispatcher per test: nothing compiled yet


def test_cuda_launches_go_native_through_the_dispatcher(cuda_with_recorded_launches):
    from gpunb.backends.cuda import driver

    fake, rec = cuda_with_recorded_launches
    kernel = _scale_kernel()
    x = cuda.to_device(np.arange(8, dtype=np.float32))
    out = cuda.device_array(8, np.float32)
    stream = cuda.stream()
    config = kernel[2, 4, stream, 16]
    for _ in range(3):
        config(out, x, np.float32(2), 8)
    python_launches = len(fake.launches)
    assert config.launcher is not None and python_launches == 1  # the first: the Python path
    rec.calls.clear()
    driver.last_launch.clear()
    config(out, x, np.float32(2), 8)
    assert len(fake.launches) == python_launches  # the native launcher called the driver itself
    spec = next(iter(kernel.specializations.values()))
    assert rec.calls == [(0x7100, 2, 1, 1, 4, 1, 1, 16, int(stream.handle),
                          spec.packer.params_address, 0)]
    assert driver.last_launch.kernel == "scale_add"
    # what the driver would read: the packed arguments, as the Python packer writes them
    native = _buffer(spec.packer, spec.argtypes)
    spec.packer.pack((out, x, np.float32(2), 8), spec.argtypes)
    assert _buffer(spec.packer, spec.argtypes) == native
    assert int.from_bytes(native[:8], "little") == out._ptr


def test_cuda_driver_errors_from_a_native_launch_are_launch_errors(cuda_with_recorded_launches):
    from gpunb.foundation.errors import LaunchError

    fake, rec = cuda_with_recorded_launches
    kernel = _scale_kernel()
    x = cuda.to_device(np.arange(8, dtype=np.float32))
    out = cuda.device_array(8, np.float32)
    config = kernel[1, 8]
    for _ in range(3):
        config(out, x, np.float32(2), 8)
    rec.result = 719  # CUDA_ERROR_LAUNCH_FAILED
    with pytest.raises(LaunchError, match="CUDA_ERROR_LAUNCH_FAILED") as info:
        config(out, x, np.float32(2), 8)
    assert info.value.loc is not None  # the user's launch line
    rec.result = 0
    config(out, x, np.float32(2), 8)


def test_a_second_context_sends_cuda_launches_back_to_the_python_path(cuda_with_recorded_launches):
    fake, rec = cuda_with_recorded_launches
    fake.device_count = 2
    kernel = _scale_kernel()
    x = cuda.to_device(np.arange(8, dtype=np.float32))
    out = cuda.device_array(8, np.float32)
    config = kernel[1, 8]
    for _ in range(3):
        config(out, x, np.float32(2), 8)
    assert config.launcher is not None
    with cuda.gpus[1]:
        cuda.device_array(1, np.float32)  # GPU 1's context: launches now check contexts
    rec.calls.clear()
    before = len(fake.launches)
    for _ in range(3):
        config(out, x, np.float32(2), 8)
    assert rec.calls == [] and len(fake.launches) == before + 3
