"""PyTorch tensors a kernel cannot read, on both launch paths (runtime/torch_tensors.py, the
Python packer, and the native launcher's tensor_code.py): tensors with elements but no memory
(a meta tensor, a storage resized to 0, a functionalized wrapper) made the kernel read address 0
(a fault on the CPU target, an illegal address that ends the CUDA context on a GPU), and tensors
whose reads torch refuses (torch.func transforms' wrappers, nested tensors) raised torch's raw
RuntimeError from gpunb's internals. Each is now a LaunchError naming the argument, also when it
comes after tensors of the same type launched natively."""

from __future__ import annotations

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
from gpunb.runtime.native_pack import NativePlan  # noqa: E402
from gpunb.runtime.packing import ArgPacker  # noqa: E402
from gpunb.runtime.typeof import typeof  # noqa: E402


@cuda.jit
def _scale(out, x, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * a


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _freed_storage() -> torch.Tensor:
    x = torch.arange(32, dtype=torch.float32)
    x.untyped_storage().resize_(0)  # what FSDP does to a parameter between uses
    return x


def _functionalized() -> torch.Tensor:
    seen = []
    torch.func.functionalize(lambda t: seen.append(t) or t)(torch.ones(32))
    return seen[0]


WITHOUT_MEMORY = {
    "meta": (lambda: torch.empty(32, device="meta"), "meta tensor"),
    "storage resized to 0": (_freed_storage, "no memory"),
    "functionalized wrapper": (_functionalized, "no memory"),
}


@pytest.mark.parametrize("name", WITHOUT_MEMORY)
def test_a_tensor_with_elements_but_no_memory_is_refused_not_launched_at_address_0(name):
    make, words = WITHOUT_MEMORY[name]
    out, x = torch.zeros(32), torch.arange(32, dtype=torch.float32)
    config = _scale[1, 32]
    with pytest.raises(LaunchError, match=f"argument 2 .*{words}.*address 0"):
        config(out, make(), np.float32(2.0))  # a first launch: typed from the tensor
    for _ in range(3):  # the same type launched natively from now on
        config(out, x, np.float32(2.0))
    assert config.launcher is not None and config.launcher.native is not None
    with pytest.raises(LaunchError, match=f"argument 2 .*{words}"):
        config(out, make(), np.float32(2.0))  # declined by the machine code, refused by Python
    config(out, x, np.float32(3.0))
    assert torch.equal(out, x * 3)


def test_the_native_plan_declines_a_tensor_at_address_0():
    x = torch.zeros(8)
    types = (typeof(x),)
    packer = ArgPacker(abi.signature_slots(types), target="cpu", kernel="k")
    packer.pack((x,), types)
    version = LaunchVersion()
    f = NativePlan(packer, types, (x,)).bind(NativeLaunch((1, 1, 1), (1, 1, 1), 0, 0),
                                             version.word, version.value, (), object())
    assert f((x,)) == PACKED
    freed = torch.zeros(8)
    freed.untyped_storage().resize_(0)
    assert f((freed,)) == DECLINED and sys.exc_info() == (None, None, None)
    assert f((torch.zeros(0),)) == PACKED  # no elements: address 0 is what geometry gives
    assert f((x,)) == PACKED


def test_empty_tensors_still_pass_with_address_0():
    out, x = torch.zeros(0), torch.zeros(0)
    for _ in range(4):
        _scale[1, 32](out, x, np.float32(2.0))
    assert out.shape == (0,)


def test_a_wrapper_inside_vmap_is_a_launch_error_naming_the_argument():
    out = torch.zeros(8)

    def per_row(row):
        _scale[1, 8](out, row, np.float32(2.0))
        return row

    with pytest.raises(LaunchError, match=r"argument 2 \('x'\).*torch.func transform"):
        torch.func.vmap(per_row)(torch.ones(3, 8))


def test_a_nested_tensor_is_a_launch_error_naming_the_argument():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "nested tensors are a prototype"
        nested = torch.nested.nested_tensor([torch.zeros(3), torch.zeros(5)])
    with pytest.raises(LaunchError, match=r"argument 1 \('out'\).*nested"):
        _scale[1, 8](nested, torch.zeros(8), np.float32(2.0))


def test_a_tensor_freed_between_python_path_launches_is_refused_by_the_packer():
    """The Python packer checks at every launch too, not only when a new specialisation is
    typed (a launch of a known type on another thread, or without a native launcher)."""
    out, x = torch.zeros(32), torch.arange(32, dtype=torch.float32)
    packer = ArgPacker(abi.signature_slots((typeof(out), typeof(x))), target="cpu",
                       kernel="_scale")
    types = (typeof(out), typeof(x))
    packer.pack((out, x), types)
    with pytest.raises(LaunchError, match="argument 2 cannot be passed: .*no memory"):
        packer.pack((out, _freed_storage()), types)


def test_a_tma_descriptor_of_a_meta_tensor_is_refused():
    from gpunb.foundation.errors import TensorMapError

    with pytest.raises(TensorMapError, match="meta tensor"):
        cuda.tma.descriptor(torch.empty((64, 128), device="meta"), (16, 64), 128)


# ---- the device ordinal: a CUDA tensor on another GPU than the launch's context ----------------

def _bound_plan(x):
    types = (typeof(x),)
    packer = ArgPacker(abi.signature_slots(types), target="cpu", kernel="k")
    packer.pack((x,), types)
    version = LaunchVersion()
    plan = NativePlan(packer, types, (x,))
    return plan, plan.bind(NativeLaunch((1, 1, 1), (1, 1, 1), 0, 0), version.word,
                           version.value, (), object())


def test_the_machine_code_compares_get_device_with_the_plans_ordinal():
    """Where the process sees several GPUs a plan holds its context's GPU and compares each
    tensor's get_device() with it; otherwise (-1, and always on the CPU target) it calls
    nothing. Here a CPU-target plan is told GPU 1 (get_device() of a CPU tensor is -1); the
    CUDA case, a cuda:1 tensor on a GPU 0 context, needs two GPUs:
    test_a_tensor_on_another_gpu_is_refused_on_both_paths."""
    x = torch.zeros(8)
    plan, f = _bound_plan(x)
    facts = plan._more[0]
    assert facts.ordinal == -1 and f((x,)) == PACKED
    facts.ordinal = 1
    assert f((x,)) == DECLINED and sys.exc_info() == (None, None, None)
    x.get_device = lambda: 1  # (an instance attribute: what the method call finds first)
    assert f((x,)) == PACKED
    facts.ordinal = -1
    assert f((torch.zeros(8),)) == PACKED


def test_a_get_device_that_raises_or_lies_declines_without_a_pending_exception():
    x = torch.zeros(8)
    plan, f = _bound_plan(x)
    plan._more[0].ordinal = 0
    x.get_device = lambda: 0
    raising = torch.zeros(8)
    raising.get_device = lambda: (_ for _ in ()).throw(RuntimeError("no device"))
    not_int = torch.zeros(8)
    not_int.get_device = lambda: "cpu"
    other = torch.zeros(8)
    other.get_device = lambda: 1
    minus_one = torch.zeros(8)  # -1, the value PyLong_AsLongLong also gives on an error
    for tensor in (raising, not_int, other, minus_one):
        assert f((tensor,)) == DECLINED and sys.exc_info() == (None, None, None)
        assert f((x,)) == PACKED


@pytest.mark.gpu
def test_a_tensor_on_another_gpu_is_refused_on_both_paths():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    gpunb.set_target("cuda")
    out0 = torch.zeros(32, device="cuda:0")
    x0 = torch.arange(32, dtype=torch.float32, device="cuda:0")
    x1 = x0.to("cuda:1")
    config = _scale[1, 32]
    with pytest.raises(LaunchError, match=r"argument 2 is a tensor on cuda:1, but this launch "
                                          r"runs on GPU 0"):
        config(out0, x1, np.float32(2.0))  # the Python path
    for _ in range(3):
        config(out0, x0, np.float32(2.0))
    assert config.launcher is not None and config.launcher.native is not None
    with pytest.raises(LaunchError, match="cuda:1"):
        config(out0, x1, np.float32(2.0))  # declined by the machine code, refused by Python
    torch.cuda.synchronize()
    assert torch.equal(out0, x0 * 2)
    with cuda.gpus[1]:
        out1 = torch.zeros(32, device="cuda:1")
        for _ in range(3):
            _scale[1, 32](out1, x1, np.float32(3.0))
        torch.cuda.synchronize(1)
    assert torch.equal(out1.cpu(), x0.cpu() * 3)


# ---- the launch's type key of a tensor at an odd address ---------------------------------------

def _misaligned(count: int) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # frombuffer's "not writable" warning
        return torch.frombuffer(bytearray(4 * count + 4), dtype=torch.float32, offset=2,
                                count=count)


@pytest.mark.parametrize("order", ["aligned first", "misaligned first"])
def test_a_misaligned_tensor_gets_its_own_specialisation(order):
    """typeof gives a float32 tensor at an odd address an unaligned array type; the launch's
    type key gave it the key of an aligned one, so after an aligned launch a misaligned
    tensor ran the code compiled for aligned data (on a GPU: a misaligned address that ends
    the context) - and the other way round aligned data the slower unaligned code."""
    kernel = cuda.jit(_scale.py_func)
    aligned, odd = torch.arange(8, dtype=torch.float32), _misaligned(8)
    odd.copy_(aligned)
    tensors = [aligned, odd] if order == "aligned first" else [odd, aligned]
    for x in tensors:
        out = torch.zeros(8)
        for _ in range(3):
            kernel[1, 8](out, x, np.float32(2.0))
        spec, _, _ = kernel.specialization_for_launch((out, x, np.float32(2.0)))
        assert spec.argtypes[1] == typeof(x), order
        assert torch.equal(out, aligned * 2)
    assert len(kernel.specializations) == 2
