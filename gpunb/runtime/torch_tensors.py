"""PyTorch tensors as launch arguments, read from the tensor itself (data_ptr, shape, stride).

Why: a tensor used to be typed and packed through its exchange protocols. A CUDA tensor's
`__cuda_array_interface__` is a dict torch builds at every read (twice per launch: once to type,
once to pack); bfloat16 and fp8 tensors have no interface at all (numpy has no typestr for
them), so they went through `__dlpack__`, a capsule per read: 36-248 us of host time per
argument per launch on an H200 against ~8 us for float16 (RESULTS.md, ninth H200 session),
which bounded every bfloat16 GEMM under ~0.2 ms. On the CPU target `np.from_dlpack` refuses
bfloat16 outright ("Unsupported dtype in DLTensor"). Reading the tensor's own attributes costs
a few hundred nanoseconds each and knows every dtype.

Only plain tensors take this path: class exactly `torch.Tensor`, strided layout, no pending
conjugate/negation bit, not requiring grad, a dtype numpy (or ml_dtypes) names, aligned data.
Everything else (subclasses with __torch_function__, sparse/nested/quantized tensors, tensors
that require grad) keeps going through the protocols, whose exporters refuse what they cannot
describe with torch's own message. torch is never imported here: a tensor argument means the
caller imported it.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np

from gpunb.runtime import arrayview as av


class TensorGeometry(NamedTuple):
    """What a launch needs of a tensor: element dtype, shape, strides in bytes, address, device."""

    dtype: np.dtype
    shape: tuple
    strides: tuple
    pointer: int
    on_cuda: bool


_tensor_class: type | None = None  # torch.Tensor, once torch is imported
_dtypes: dict = {}  # torch dtype -> numpy dtype
_strided = None  # torch.strided


def _torch_ready() -> bool:
    """Learn torch's tensor class and dtypes once torch is imported (never import it)."""
    global _tensor_class, _strided
    if _tensor_class is not None:
        return True
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "Tensor"):
        return False
    names = {"bool": "bool", "uint8": "uint8", "int8": "int8", "int16": "int16",
             "int32": "int32", "int64": "int64", "uint16": "uint16", "uint32": "uint32",
             "uint64": "uint64", "float16": "float16", "float32": "float32",
             "float64": "float64", "complex64": "complex64", "complex128": "complex128"}
    for name, np_name in names.items():
        if hasattr(torch, name):
            _dtypes[getattr(torch, name)] = np.dtype(np_name)
    try:
        import ml_dtypes
    except ImportError:  # bfloat16/fp8 tensors then keep the protocol path (and its message)
        ml_dtypes = None
    if ml_dtypes is not None:
        for name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"):
            if hasattr(torch, name) and hasattr(ml_dtypes, name):
                _dtypes[getattr(torch, name)] = np.dtype(getattr(ml_dtypes, name))
    _strided = torch.strided
    _tensor_class = torch.Tensor
    return True


def is_tensor_class(cls: type) -> bool:
    """Whether `cls` is exactly torch.Tensor (cheap: a tensor means torch is imported)."""
    if _tensor_class is None and not (cls.__name__ == "Tensor" and _torch_ready()):
        return False
    return cls is _tensor_class


def _readable(value) -> bool:
    """Whether this path may read the tensor (see the module docstring)."""
    return not (value.requires_grad or value.layout is not _strided or value.is_conj() or
                value.is_neg())


def type_facts(value) -> tuple | None:
    """(numpy dtype, ndim, layout) of a plain tensor with element-aligned data - all its
    kernel type depends on - read with fewer calls than geometry() (the launch's type key needs
    no shape or strides when torch says the tensor is C-contiguous); None where geometry() is
    None or the data is not aligned (the key is then the type itself, an unaligned one).
    TypeError where torch refuses a read (the launch then types it with geometry(), which
    says why)."""
    if not is_tensor_class(value.__class__):
        return None
    try:
        return _type_facts(value)
    except Exception as exc:  # noqa: BLE001 - torch refuses reads of tensors without storage
        raise TypeError(_refused_read(exc)) from None


def _type_facts(value) -> tuple | None:
    if not _readable(value):
        return None
    dtype = _dtypes.get(value.dtype)
    if dtype is None or value.data_ptr() % dtype.itemsize:
        return None  # (at an odd address typeof gives an unaligned type: keyed by that type)
    ndim = value.dim()
    if value.is_contiguous():
        return dtype, ndim, "C"
    shape = tuple(value.shape)
    strides = tuple([s * dtype.itemsize for s in value.stride()])
    c, f = av.contiguity(shape, strides, dtype.itemsize)
    return dtype, ndim, av.layout_of(ndim, c, f)


def geometry(value) -> TensorGeometry | None:
    """The geometry of a plain torch tensor, or None for anything this path leaves to the
    exchange protocols (see the module docstring). TypeError (a LaunchError naming the
    argument, at a launch) for a tensor whose data a kernel cannot reach: torch refuses to
    read it (a torch.func transform's wrapper, a nested tensor), or it has elements but no
    memory (a meta tensor, a storage resized to 0, a functionalized wrapper) - where the
    kernel would read address 0."""
    if not is_tensor_class(value.__class__):
        return None
    try:
        geo = _geometry(value)
    except Exception as exc:  # noqa: BLE001 - torch's refusals are RuntimeErrors, mostly
        raise TypeError(_refused_read(exc)) from None
    if geo is not None and geo.pointer == 0 and 0 not in geo.shape:
        raise TypeError(_no_memory(value))
    return geo


def _geometry(value) -> TensorGeometry | None:
    if not _readable(value):
        return None
    dtype = _dtypes.get(value.dtype)
    if dtype is None:
        return None
    itemsize = dtype.itemsize
    pointer = value.data_ptr() if value.numel() else 0
    if pointer % itemsize:
        return None  # a byte view at an odd offset: the protocols say what they make of it
    shape = tuple(value.shape)
    strides = tuple([s * itemsize for s in value.stride()])
    return TensorGeometry(dtype, shape, strides, pointer, value.is_cuda)


def _refused_read(exc: Exception) -> str:
    return (f"the tensor's data is not given out by torch ({type(exc).__name__}: "
            f"{str(exc).strip()}): a tensor inside a torch.func transform (vmap, grad) or a "
            "nested tensor is not plain memory a kernel can read; launch the kernel on plain "
            "tensors (outside the transform; a nested tensor's .values() or .unbind())")


def _no_memory(value) -> str:
    what = "a meta tensor (shapes only)" if value.is_meta else \
        "a tensor whose storage holds no memory (freed with untyped_storage().resize_(0), or a" \
        " functionalized or fake tensor's wrapper)"
    return (f"the tensor is {what}: it has {value.numel()} elements but no data, so the "
            "kernel would read and write address 0; pass a tensor with memory (e.g. "
            "torch.empty_like(t, device='cpu') or device='cuda')")


def memory_address(value) -> int | None:
    """Where a torch tensor's memory is now (data_ptr()), for any tensor class; None for
    anything else or where torch does not say. A tensor's memory can move while the object
    lives (resize_, set_, .data =, a storage resized to 0): what a graph that holds its address
    compares at each replay (graphs/memory.py)."""
    if not _torch_ready() or not isinstance(value, _tensor_class):
        return None
    try:
        return value.data_ptr()
    except Exception:  # noqa: BLE001 - a tensor without storage: nothing to compare
        return None


class PlanFacts(NamedTuple):
    """What a native launch plan compares a tensor argument with (runtime/native_pack.py)."""

    dtype: object  # the torch dtype object
    ndim: int
    layout: str  # the kernel layout, "C", "F" or "A"
    itemsize: int
    strided: object  # torch.strided
    size_class: type  # torch.Size, the class of `tensor.shape`
    device_flag: str  # the tensor's attribute that is True on the target's device
    ordinal: int  # its get_device() where several GPUs are seen (the context's GPU), else -1


# the attribute saying a tensor lives where a target's kernels read memory directly
DEVICE_FLAGS = {"cuda": "is_cuda", "cpu": "is_cpu"}


def plan_facts(value, target: str, ordinal: int = -1) -> PlanFacts | None:
    """The facts of a plain tensor on `target`'s own device (for CUDA where the process sees
    several GPUs, the GPU `ordinal`, the launch context's; -1: any) that a native plan checks
    each launch; None for anything else (a CPU tensor on the CUDA target is copied in and
    back, a CUDA tensor on the CPU target or on another GPU refused: the Python path's work)."""
    geo = geometry(value)
    flag = DEVICE_FLAGS.get(target)
    if geo is None or flag is None or getattr(value, flag) is not True or \
            ordinal >= 0 and value.get_device() != ordinal:
        return None
    c, f = av.contiguity(geo.shape, geo.strides, geo.dtype.itemsize)
    layout = av.layout_of(len(geo.shape), c, f)
    return PlanFacts(value.dtype, len(geo.shape), layout, geo.dtype.itemsize, _strided,
                     type(value.shape), flag, ordinal)


def wrong_gpu(value, ordinal: int) -> tuple | None:
    """For a CUDA tensor on another GPU than `ordinal` (the launch context's), whose data
    would be an illegal address there: (what to say, the hint); None where it is on it."""
    there = value.get_device()
    if there == ordinal:
        return None
    return (f"is a tensor on cuda:{there}, but this launch runs on GPU {ordinal}",
            f"launch inside `with cuda.gpus[{there}]:` (where the tensor is), or move it: "
            f"t.to('cuda:{ordinal}')")


def host_view(value, geo: TensorGeometry) -> np.ndarray:
    """A numpy view of a CPU tensor's elements, any dtype (torch's .numpy() refuses bfloat16
    and fp8: viewed through the integer type of their size, then as the ml_dtypes type)."""
    torch = sys.modules["torch"]
    if geo.dtype.kind in "biufc" and not geo.dtype.type.__module__.startswith("ml_dtypes"):
        return value.numpy()
    as_int = {1: torch.uint8, 2: torch.int16}[geo.dtype.itemsize]
    return value.view(as_int).numpy().view(geo.dtype)
