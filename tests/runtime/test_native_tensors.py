"""PyTorch tensors on the native launch path (backends/native_launch/tensor_code.py, the TENSOR
kind of runtime/native_pack.py): the machine code writes exactly the bytes the Python packer
writes for every dtype and layout; it declines, leaving no Python exception set, every tensor the
Python path treats otherwise (requiring grad, a negation or conjugation bit, another dtype, ndim
or layout, a subclass, sparse, another device, misaligned data, attributes that raise); it reads
the tensor at each launch (a tensor resized or reallocated between launches); and through the
dispatcher a configuration launching torch tensors binds a native launcher. CPU tensors on the
CPU target here; CUDA tensors on the GPU in the gpu-marked tests at the end."""

from __future__ import annotations

import ctypes
import struct
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("llvmlite")
torch = pytest.importorskip("torch")
pytest.importorskip("ml_dtypes")
import llvmlite.binding  # noqa: E402,F401 - launchers are built only once llvmlite is loaded

import gpunb  # noqa: E402
from gpunb import cuda  # noqa: E402
from gpunb.backends.base import DECLINED, PACKED, NativeLaunch  # noqa: E402
from gpunb.foundation import abi  # noqa: E402
from gpunb.foundation.errors import LaunchError  # noqa: E402
from gpunb.jit.launcher import LaunchVersion  # noqa: E402
from gpunb.runtime import native_pack  # noqa: E402
from gpunb.runtime.native_pack import NativePlan  # noqa: E402
from gpunb.runtime.packing import ArgPacker  # noqa: E402
from gpunb.runtime.typeof import typeof  # noqa: E402

VERSION = LaunchVersion()
PACK_ONLY = NativeLaunch((1, 1, 1), (1, 1, 1), 0, 0)
MISSING = object()


def _plan(args: tuple, target: str = "cpu"):
    """(the plan's bound builtin, the packer, the argument types) for `args`' kinds."""
    types = tuple(typeof(a) for a in args)
    packer = ArgPacker(abi.signature_slots(types), target=target, kernel="k")
    packer.pack(args, types)
    builtin = NativePlan(packer, types, args).bind(PACK_ONLY, VERSION.word, VERSION.value, (),
                                                    MISSING)
    assert builtin is not None
    return builtin, packer, types


def _slots(packer: ArgPacker, types: tuple) -> list:
    return [ctypes.string_at(address, struct.calcsize(fmt))
            for owned in packer.argument_slots(types) for address, fmt in owned]


def _scrub(packer: ArgPacker, types: tuple) -> None:
    for owned in packer.argument_slots(types):
        for address, fmt in owned:
            ctypes.memset(address, 0xAB, struct.calcsize(fmt))


def _python_slots(args: tuple, packer: ArgPacker, types: tuple) -> list:
    packer.pack(args, types)
    return _slots(packer, types)


BASE = torch.arange(120, dtype=torch.float32).reshape(4, 6, 5)
VIEWS = {
    "contiguous": BASE,
    "transposed": BASE.transpose(0, 2),
    "stepped": BASE[:, ::2],
    "offset": BASE[1:, 2:],
    "row": BASE[2, 3],
    "extent-1 axes": BASE[:, :1, :],
    "2d F": BASE[0].t(),
    "unsqueezed": BASE.unsqueeze(1)[:, 0],
    "zero-dim": torch.tensor(2.5),
    "empty": torch.zeros((0, 5)),
    "empty strided": torch.zeros((4, 0, 3))[:, :, ::2],
    "expanded": torch.ones(5).expand(3, 5),  # a 0 stride
    "permuted contiguous": BASE.permute(2, 0, 1).contiguous().permute(1, 2, 0),
}
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.float8_e4m3fn,
          torch.float8_e5m2, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64,
          torch.bool, torch.complex64, torch.complex128]


@pytest.mark.parametrize("name", VIEWS)
def test_every_layout_packs_the_python_packers_bytes(name):
    view = VIEWS[name]
    args = (view, 1.5)
    f, packer, types = _plan(args)
    expected = _python_slots(args, packer, types)
    _scrub(packer, types)
    assert f(args) == PACKED
    assert _slots(packer, types) == expected
    assert int.from_bytes(expected[0], "little") == (view.data_ptr() if view.numel() else 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_packs_the_python_packers_bytes(dtype):
    view = torch.zeros((3, 8), dtype=dtype)[:, 1::3]
    args = (view, view.t())
    f, packer, types = _plan(args)
    expected = _python_slots(args, packer, types)
    _scrub(packer, types)
    assert f(args) == PACKED and _slots(packer, types) == expected


def _refused_variants(x: torch.Tensor) -> dict:
    """Tensors of x's kind in every way but one (x: 2-d float32, C-contiguous, on the CPU)."""
    grad = torch.zeros_like(x, requires_grad=True)
    overridden = x.clone()
    overridden.data_ptr = lambda: (_ for _ in ()).throw(RuntimeError("no storage here"))
    listed = x.clone()
    listed.stride = lambda: list(x.stride())  # not a tuple: declined, not read
    bad_stride = x.clone()
    bad_stride.stride = lambda: ("a", "b")  # items that are no ints: the read fails
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # frombuffer's "not writable" warning
        misaligned = torch.frombuffer(bytearray(4 * x.numel() + 4), dtype=torch.float32,
                                      offset=2, count=x.numel()).reshape(x.shape)
    return {
        "requires grad": grad,
        "negation bit": torch._neg_view(x),
        "another dtype": x.double(),
        "another ndim": x[0],
        "F layout": x.t().contiguous().t(),
        "A layout": x[:, ::2],
        "subclass": torch.nn.Parameter(x.clone(), requires_grad=False),
        "sparse": x.to_sparse(),
        "meta device": torch.empty(x.shape, device="meta"),
        "misaligned": misaligned,
        "raising data_ptr": overridden,
        "stride() a list": listed,
        "stride() of strs": bad_stride,
        "a numpy array": x.numpy(),
    }


def test_other_tensors_decline_and_leave_no_exception():
    x = torch.zeros((4, 6))
    f, packer, types = _plan((x, 2.0))
    for name, other in _refused_variants(x).items():
        assert f((other, 2.0)) == DECLINED, name
        assert sys.exc_info() == (None, None, None), name
        assert f((x, 2.0)) == PACKED, name  # nothing pending trips the next C-API call
    conj_plan, *_ = _plan((torch.zeros(3, dtype=torch.complex64),))
    conj = torch.tensor([1 + 2j, 3 - 1j, 0j], dtype=torch.complex64).conj()
    assert conj.is_conj() and conj_plan((conj,)) == DECLINED
    assert conj_plan((conj.resolve_conj(),)) == PACKED


def test_tensors_are_read_at_each_launch_resized_or_reallocated():
    x = torch.zeros((2, 3))
    f, packer, types = _plan((x,))
    assert f((x,)) == PACKED
    x.resize_(40, 50)  # new storage, same kind
    assert f((x,)) == PACKED
    assert _slots(packer, types) == _python_slots((x,), packer, types)
    assert int.from_bytes(_slots(packer, types)[0], "little") == x.data_ptr()
    x.resize_(7)  # another ndim now: the Python path types it anew
    assert f((x,)) == DECLINED
    y = torch.ones((9, 9))  # another tensor of the kind: its own pointer and shape
    assert f((y,)) == PACKED
    assert _slots(packer, types) == _python_slots((y,), packer, types)


def test_a_tensor_the_plan_must_not_take_is_unsupported():
    """What the Python path copies or refuses never gets a plan: a CPU tensor on the CUDA
    target (copied in and back), a tensor requiring grad (torch's refusal), another type than
    the compiled one (a declared signature converting)."""
    x = torch.zeros(4)
    for target, value, ty in [("cuda", x, typeof(x)), ("cpu", x[::2], typeof(x))]:
        packer = ArgPacker(abi.signature_slots((ty,)), target=target, kernel="k")
        with pytest.raises(native_pack.Unsupported):
            NativePlan(packer, (ty,), (value,))
    grad = torch.zeros(4, requires_grad=True)
    packer = ArgPacker(abi.signature_slots((typeof(x),)), target="cpu", kernel="k")
    with pytest.raises(native_pack.Unsupported):
        NativePlan(packer, (typeof(x),), (grad,))


@cuda.jit
def _scale(out, x, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * a


@pytest.fixture
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def test_the_dispatcher_launches_cpu_tensors_natively(cpu_target):
    out, x = torch.zeros(32), torch.arange(32, dtype=torch.float32)
    config = _scale[1, 32]
    for _ in range(3):
        config(out, x, np.float32(2.0))
    launcher = config.launcher
    assert launcher is not None and launcher.native.plan.kinds[0][0] == "tensor"
    out.zero_()
    status = launcher.native.builtin((out, x, np.float32(3.0)))
    assert status == PACKED  # the machine code took the tensors; the CPU target runs it
    launcher.native.finish(status)
    assert torch.equal(out, x * 3)
    config(out, x.flip(0).contiguous(), np.float32(1.0))  # another tensor, same kind
    assert torch.equal(out, x.flip(0))
    # the Python path's rules hold after the native launcher was bound
    with pytest.raises((LaunchError, RuntimeError, TypeError), match="grad"):
        config(torch.zeros(32, requires_grad=True), x, np.float32(1.0))
    bf16 = torch.zeros(32, dtype=torch.bfloat16)
    config(bf16, x.to(torch.bfloat16), np.float32(0.5))  # a new kind: its own specialisation
    assert torch.equal(bf16.float(), (x * 0.5).to(torch.bfloat16).float())


def test_cpu_tensors_on_the_cuda_target_keep_the_copying_python_path(simulated_gpu,
                                                                    monkeypatch):
    """On the simulated driver, native launches calling a recording function: CPU tensors are
    copied in and back by the Python path at every launch (never a native launcher), while
    device arrays of the same kernel launch natively."""
    from gpunb.backends.cuda import launch

    calls = []
    recorder = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_uint64] + [ctypes.c_uint32] * 7 +
                                [ctypes.c_uint64] * 3)(lambda *args: calls.append(args) or 0)
    address = ctypes.cast(recorder, ctypes.c_void_p).value
    monkeypatch.setattr(launch, "driver_launch_address", lambda: address)
    kernel = cuda.jit(_scale.py_func)
    config = kernel[1, 32]
    out, x = torch.zeros(32), torch.arange(32, dtype=torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the host-copy performance warning
        for _ in range(4):
            config(out, x, np.float32(2.0))
    assert calls == [] and config.launcher is None
    assert len(simulated_gpu.launches) == 4
    d_out, d_x = cuda.to_device(out.numpy()), cuda.to_device(x.numpy())
    for _ in range(3):
        config(d_out, d_x, np.float32(2.0))
    assert config.launcher is not None and len(calls) >= 1


# ---- on the GPU -----------------------------------------------------------------------------

@pytest.mark.gpu
def test_cuda_tensors_launch_through_the_native_launcher():
    gpunb.set_target("cuda")
    try:
        out = torch.zeros(64, device="cuda")
        x = torch.arange(64, dtype=torch.float32, device="cuda")
        config = _scale[2, 32]
        for _ in range(3):
            config(out, x, np.float32(2.0))
        launcher = config.launcher
        assert launcher is not None and launcher.native.plan.kinds[0][0] == "tensor"
        assert launcher.native.launch.stream == 0  # gpunb's default stream, as before
        for factor in range(4, 8):
            config(out, x, np.float32(factor))
        torch.cuda.synchronize()
        assert torch.equal(out, x * 7)
        big = torch.arange(64, dtype=torch.float32, device="cuda")
        del x  # freed: the next launch reads the new tensor's own pointer
        config(out, big.flip(0).contiguous(), np.float32(1.0))
        torch.cuda.synchronize()
        assert torch.equal(out, big.flip(0))
        host = torch.ones(64)  # a CPU tensor on the CUDA target: copied in and back out
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config(host, big, np.float32(1.0))
        assert torch.equal(host, big.cpu())
        with pytest.raises((LaunchError, RuntimeError, TypeError), match="grad"):
            config(torch.zeros(64, device="cuda", requires_grad=True), big, np.float32(1.0))
        for dtype in (torch.bfloat16, torch.float16):
            low = torch.zeros(64, dtype=dtype, device="cuda")
            for _ in range(3):
                config(low, big.to(dtype), np.float32(0.5))
            torch.cuda.synchronize()
            assert torch.equal(low, (big * 0.5).to(dtype))
    finally:
        gpunb.set_target(None)


@pytest.mark.gpu
def test_cuda_tensor_views_launch_natively_with_their_own_strides():
    gpunb.set_target("cuda")
    try:
        base = torch.arange(96, dtype=torch.float32, device="cuda").reshape(8, 12)
        out_base = torch.zeros(8, 12, device="cuda")
        config = cuda.jit(_copy2)[(1, 1), (16, 16)]
        for src, dst in [(base[:, ::3], out_base[:, 1::3]), (base.t(), out_base.t()),
                         (base[:, ::3], out_base[:, 2::3])]:  # A, F, then A again
            out_base.zero_()
            for _ in range(3):
                config(src, dst)
            torch.cuda.synchronize()
            assert config.launcher is not None and config.launcher.kinds is not None
            assert torch.equal(dst, src)
            assert int((out_base != 0).sum()) == int((src != 0).sum())  # nothing else written
    finally:
        gpunb.set_target(None)


def _copy2(src, dst):
    i, j = cuda.grid(2)
    if i < src.shape[0] and j < src.shape[1]:
        dst[i, j] = src[i, j]
