"""Running a Plan: arguments onto the target, the output allocated, grids that fill the device.

Inputs may be numpy arrays, gpunb device arrays, or (on a GPU) CuPy/PyTorch/numba arrays through
__cuda_array_interface__ or DLPack. The result is the kind of array that came in: numpy for
numpy inputs (a numpy scalar for a 0-d result, as numpy gives), otherwise a device array (CuPy
in, CuPy out; PyTorch in, PyTorch out). Grids come from the device's SM count and each kernel's
occupancy, with grid-stride loops, so a large input is never covered by a few blocks.
"""

from __future__ import annotations

import numpy as np

from gpunb.fusion import graph as g
from gpunb.fusion.arguments import to_target
from gpunb.fusion.codegen import BLOCK
from gpunb.fusion.plan import Plan, Step
from gpunb.fusion.views import apply_view

_WEAK_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64)}


def run(plan: Plan, values: list):
    """Evaluate the plan for these argument values; returns the result (see module doc)."""
    for index, dtype in plan.int_checks:
        info = np.iinfo(dtype)
        if not info.min <= values[index] <= info.max:
            raise OverflowError(f"Python integer {values[index]} out of bounds for {dtype}")
    red = plan.reduction
    if red is not None and plan.red_size == 0 and not g.has_identity(red.op):
        raise ValueError(f"zero-size array to reduction operation "
                         f"{g.numpy_reduction_name(red.op)} which has no identity")
    target = plan.target
    out = _empty(plan.size, plan.out_dtype, target)
    if plan.size:
        on_target: dict = {}
        partials = _empty(plan.size * plan.parts, red.acc_dtype, target) if plan.parts > 1 \
            else None
        for step in plan.steps:
            head = {"map": (out,), "reduce_thread": (out,), "finish": (out, partials),
                    "reduce_block": (partials if plan.parts > 1 else out,)}[step.role]
            args = [*head,
                    *[_array_param(values, source, on_target, target)
                      for source in step.source.arrays],
                    *[_scalar_param(values[index]) for index in step.source.scalars],
                    *step.tail]
            launch(step, args, target)
    return wrap_result(out, plan)


def launch(step: Step, args: list, target: str) -> None:
    if step.grid is None:
        step.grid = grid_for(step, args, target)
    step.kernel[step.grid, BLOCK](*args)


def grid_for(step: Step, args: list, target: str) -> int:
    """Blocks for this step: enough for its work, at most what the device runs at once."""
    wanted = step.work if step.role in ("reduce_block", "finish") else -(-step.work // BLOCK)
    return max(1, min(wanted, resident_blocks(step.kernel, args, target)))


def resident_blocks(kernel, args: list, target: str) -> int:
    """How many BLOCK-thread blocks of this kernel the device holds at once: SMs x occupancy on
    a GPU, a few blocks per host thread on the CPU target."""
    if target == "cpu":
        from gpunb.foundation import config

        return 4 * config.cpu_threads()
    from gpunb.backends.cuda import driver
    from gpunb.runtime.typeof import typeof

    spec = kernel.specialization_for(tuple(typeof(a) for a in args), "cuda")
    per_sm = spec.backend.max_active_blocks_per_sm(spec.program, BLOCK)
    return max(1, per_sm) * driver.current_device().multiprocessor_count


def device_capacity(target: str) -> int:
    """Resident blocks before any kernel is compiled (to choose a reduction's split)."""
    if target == "cpu":
        from gpunb.foundation import config

        return 4 * config.cpu_threads()
    from gpunb.backends.cuda import driver

    device = driver.current_device()
    return device.multiprocessor_count * max(1, device.max_threads_per_multiprocessor // BLOCK)


# ---- arguments ----------------------------------------------------------------------------------


def _array_param(values: list, source: tuple, on_target: dict, target: str):
    index, views = source
    array = on_target.get(index)
    if array is None:
        array = on_target[index] = to_target(values[index], target)
    for view in views:
        array = apply_view(array, view)
    if array.ndim == 0:  # an element picked by integer indices: read as a 1-element array
        array = array.reshape(1)
    return array


def _scalar_param(value):
    dtype = _WEAK_DTYPES.get(type(value))
    if dtype is not None:
        return dtype.type(value)
    if isinstance(value, np.generic):
        return value
    host = value.copy_to_host() if hasattr(value, "copy_to_host") else np.asarray(value)
    return host[()]


def _empty(size: int, dtype: np.dtype, target: str):
    """A flat output: numpy memory on the CPU target; on a GPU, a block from the device's memory
    pool, so that dropping the previous result does not wait for the GPU (cuMemFree would)."""
    if target == "cpu":
        return np.empty(size, dtype)
    from gpunb.runtime.devicearray import DeviceAllocation, DeviceArray

    memory = DeviceAllocation(size * dtype.itemsize, stream_ordered=True)
    return DeviceArray((size,), None, dtype, 0, memory)


# ---- the result ---------------------------------------------------------------------------------


def wrap_result(flat_out, plan: Plan):
    kind = plan.result_kind
    shape = plan.out_shape
    if kind == "numpy":
        host = flat_out if isinstance(flat_out, np.ndarray) else flat_out.copy_to_host()
        host = host.reshape(shape)
        if shape != () or plan.zero_d_array:
            return host
        return host.item() if plan.python_scalar else host[()]
    device = flat_out
    if isinstance(device, np.ndarray):  # a device-array input on the CPU target
        from gpunb.runtime.devicearray import HostDeviceArray

        device = HostDeviceArray(device.reshape(shape))
    elif device.shape != shape:  # the same memory in the result's shape (C order)
        device = type(device)(shape, None, device.dtype, 0, device.gpu_data)
    if kind == "cupy":
        import cupy

        return cupy.asarray(device)
    if kind == "torch":
        import torch

        return torch.from_dlpack(device)
    return device


__all__ = ["device_capacity", "run"]
