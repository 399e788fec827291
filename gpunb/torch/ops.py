"""`gpunb.torch.custom_op`: a gpunb kernel registered as a PyTorch operator (torch.library), so a
model calling it compiles with `torch.compile(fullgraph=True)` in one graph.

The kernel's parameters are the operator's inputs followed by the outputs it writes:

    @gpunb.torch.custom_op("mylib::bias_gelu", out_shape=lambda x, bias: x)
    def bias_gelu(x, bias, out):            # a gpunb kernel (plain def or @cuda.jit)
        ...
    y = bias_gelu(x, bias)                  # or torch.ops.mylib.bias_gelu(x, bias)

The operator's schema comes from the kernel's parameters (tensors, or the Python scalars named in
`scalars=` or typed by a declared signature); its fake implementation (torch.library's
register_fake) allocates the outputs from `out_shape` and runs nothing, which is all that
torch.compile's tracing needs. A call allocates the outputs, views every tensor without a copy
(gpunb/torch/tensors.py) and launches on the tensors' device: a CUDA tensor's current
PyTorch stream (so the launch is captured by torch.cuda.graph and CUDA-graph modes of
torch.compile), the CPU target for CPU tensors. `backward=` registers autograd.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import field

import torch

from gpunb.foundation import types as t
from gpunb.foundation.errors import LaunchError, skip_frames_under
from gpunb.foundation.records import record
from gpunb.torch.tensors import current_stream_handle, kernel_argument

_PYTHON_SCALARS = {float: float, int: int, bool: bool, "float": float, "int": int,
                   "bool": bool}
DEFAULT_BLOCK = 256
# an error of an operator's launch names the user's call of the operator, not torch.library's
# dispatch frames it passed through
skip_frames_under(os.path.dirname(torch.__file__))


@record
class OpPlan:
    """What one operator does: its kernel, parameter names and kinds, outputs, launch rule."""

    name: str
    kernel: object  # the Dispatcher
    inputs: tuple  # (parameter name, annotation) of the operator's inputs
    outputs: tuple  # parameter names of the kernel's outputs
    out_shape: object  # (*inputs) -> an output description, or a tuple of them
    launch: object  # None, (grid, block) or (*inputs, *outputs) -> (grid, block)
    kernels: dict = field(default_factory=dict)  # device type -> Dispatcher for that target


def custom_op(name: str, kernel=None, *, out_shape=None, launch=None, outputs: int | None = None,
              scalars: dict | None = None, mutates_args=(), backward=None, setup_context=None,
              device_types=None):
    """Register `kernel` (a gpunb GPU function or a plain def) as the PyTorch operator `name`
    ("namespace::name"); without `kernel`, a decorator.

    - `out_shape(*inputs)`: each output as a tensor it is like (same shape, dtype, device) or
      a `(shape, dtype)` pair (on the inputs' device); a tuple of them for several outputs.
    - `outputs`: how many of the kernel's last parameters are outputs (default: 1 with
      `out_shape`, else 0 - an operator that only writes into inputs named in `mutates_args`).
    - `launch`: `(grid, block)`, or `(*inputs, *outputs) -> (grid, block)`; default: one
      thread per element of the first output (else of the first input), 256 per block.
    - `scalars`: {parameter name: float | int | bool} for inputs that are numbers (default:
      what the kernel's declared signature says, else tensors).
    - `backward`, `setup_context`: autograd, as torch.library.register_autograd takes them.
    Returns torch.library's operator object (call it like a function)."""
    if kernel is None:
        return lambda made: custom_op(name, made, out_shape=out_shape, launch=launch,
                                      outputs=outputs, scalars=scalars,
                                      mutates_args=mutates_args, backward=backward,
                                      setup_context=setup_context, device_types=device_types)
    plan = _plan(name, kernel, out_shape, launch, outputs, scalars or {}, tuple(mutates_args))
    op = torch.library.custom_op(name, _implementation(plan), mutates_args=tuple(mutates_args),
                                 device_types=device_types)
    op.register_fake(_fake(plan))
    if backward is not None:
        for given, what in ((backward, "backward"), (setup_context, "setup_context")):
            if given is not None and not callable(given):
                raise _usage(name, f"{what}= must be a function, not {type(given).__name__}")
        op.register_autograd(backward, setup_context=setup_context)
    elif setup_context is not None:
        raise _usage(name, "setup_context= was given without backward=")
    return op


def _plan(name, kernel, out_shape, launch, outputs, scalars, mutates_args) -> OpPlan:
    if not isinstance(name, str) or name.count("::") != 1 or not all(name.split("::")):
        raise _usage(name, "the name must be 'namespace::name', e.g. 'mylib::bias_gelu'")
    kernel = _as_kernel(name, kernel)
    params = list(inspect.signature(kernel.py_func).parameters)
    count = outputs if outputs is not None else (1 if out_shape is not None else 0)
    if count and out_shape is None:
        raise _usage(name, f"outputs={count} needs out_shape= to allocate them")
    if count > len(params):
        raise _usage(name, f"kernel '{kernel.__name__}' has {len(params)} parameters, fewer "
                           f"than the {count} outputs asked for")
    inputs = params[:len(params) - count]
    unknown = [n for n in (*scalars, *mutates_args) if n not in inputs]
    if unknown:
        raise _usage(name, f"{', '.join(map(repr, unknown))} not among the operator's inputs "
                           f"({', '.join(inputs)})")
    declared = _declared_kinds(kernel)
    annotated = []
    for k, param in enumerate(inputs):
        kind = scalars.get(param, declared[k] if declared else torch.Tensor)
        if kind is not torch.Tensor and kind not in _PYTHON_SCALARS:
            raise _usage(name, f"scalars[{param!r}] must be float, int or bool")
        annotated.append((param, _PYTHON_SCALARS.get(kind, kind)))
    if not callable(launch) and launch is not None and (
            not isinstance(launch, tuple) or len(launch) != 2):
        raise _usage(name, "launch= must be (grid, block) or a function returning it")
    _check_takes(name, "out_shape", out_shape, inputs)
    _check_takes(name, "launch", launch, params)
    return OpPlan(name, kernel, tuple(annotated), tuple(params[len(inputs):]), out_shape, launch)


def _check_takes(name: str, what: str, function, params: list) -> None:
    """Refuse, at registration, an out_shape= or launch= function that cannot be called with
    the arguments every call gives it (otherwise each call raises Python's bare TypeError)."""
    if function is None or not callable(function):
        return
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return
    try:
        signature.bind(*params)
    except TypeError:
        raise _usage(name, f"{what}= is called with the operator's "
                           f"{'inputs' if what == 'out_shape' else 'inputs and outputs'} "
                           f"({', '.join(params)}), but it takes {signature}: "
                           f"give it one parameter each, e.g. lambda {', '.join(params)}: ...")\
            from None


def _as_kernel(name: str, kernel):
    if getattr(type(kernel), "__gpunb_function__", False):
        if kernel.device:
            raise _usage(name, f"'{kernel.__name__}' is a device function; pass a kernel")
        return kernel
    if inspect.isfunction(kernel):
        from gpunb.jit.decorator import jit

        return jit(kernel)
    raise _usage(name, f"expected a gpunb kernel or a def, got {type(kernel).__name__}")


def _declared_kinds(kernel) -> list | None:
    """Tensor or float/int/bool per parameter, from the kernel's first declared signature."""
    if not kernel.declared_signatures:
        return None
    kinds = []
    for ty in kernel.declared_signatures[0].args:
        kinds.append(torch.Tensor if isinstance(ty, t.Array) else
                     bool if isinstance(ty, t.Boolean) else
                     int if isinstance(ty, t.Integer) else float)
    return kinds


def _usage(name, message: str) -> LaunchError:
    return LaunchError(f"gpunb.torch.custom_op({name!r}): {message}",
                       hint="see help(gpunb.torch.custom_op)")


def _signature(plan: OpPlan) -> inspect.Signature:
    """The operator's Python signature, from which torch.library infers its schema."""
    P = inspect.Parameter
    params = [P(name, P.POSITIONAL_OR_KEYWORD, annotation=kind) for name, kind in plan.inputs]
    count = len(plan.outputs)
    returns = None if not count else torch.Tensor if count == 1 else \
        tuple[(torch.Tensor,) * count]
    return inspect.Signature(params, return_annotation=returns)


def _implementation(plan: OpPlan):
    signature = _signature(plan)
    count = len(plan.inputs)

    def implementation(*args, **kwargs):
        # torch.library calls with every input positional (inductor's graphs too): binding
        # the signature is only needed for keywords
        inputs = args if not kwargs and len(args) == count else \
            signature.bind(*args, **kwargs).args
        outs = _allocate(plan, inputs)
        _launch(plan, inputs, outs)
        return _result(outs)

    implementation.__signature__ = signature
    implementation.__name__ = plan.name.split("::")[1]
    return implementation


def _fake(plan: OpPlan):
    signature = _signature(plan)

    def fake(*args, **kwargs):
        return _result(_allocate(plan, signature.bind(*args, **kwargs).args))

    fake.__signature__ = signature
    return fake


def _result(outs: list):
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else tuple(outs)


def _allocate(plan: OpPlan, inputs: tuple) -> list:
    """The outputs `out_shape` describes, on the inputs' device (fake tensors while tracing)."""
    if not plan.outputs:
        return []
    described = plan.out_shape(*inputs)
    many = len(plan.outputs) > 1
    items = list(described) if many and isinstance(described, (tuple, list)) else [described]
    if len(items) != len(plan.outputs):
        raise _usage(plan.name, f"out_shape returned {len(items)} output(s), expected "
                                f"{len(plan.outputs)}")
    device = next((a.device for a in inputs if isinstance(a, torch.Tensor)), None)
    return [_output(plan, item, device) for item in items]


def _output(plan: OpPlan, item, device) -> torch.Tensor:
    if isinstance(item, torch.Tensor):
        return torch.empty_like(item, memory_format=torch.contiguous_format)
    if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[1], torch.dtype):
        shape = item[0]  # a length, as torch.empty takes it, or a sequence of them
        shape = (shape,) if isinstance(shape, int) or (
            isinstance(shape, torch.SymInt)) else tuple(shape)
        return torch.empty(shape, dtype=item[1], device=device)
    raise _usage(plan.name, "out_shape must describe each output as a tensor it is like or a "
                            f"(shape, dtype) pair, not {type(item).__name__}")


def _launch(plan: OpPlan, inputs: tuple, outs: list) -> None:
    """Launch the kernel on the tensors' device, on PyTorch's current stream there."""
    values = (*inputs, *outs)
    devices = {a.device for a in values if isinstance(a, torch.Tensor)}
    if len(devices) != 1:
        raise LaunchError(f"{plan.name}: the tensors are on {len(devices)} devices "
                          f"({', '.join(sorted(map(str, devices)))})" if devices else
                          f"{plan.name}: no tensor argument", function=plan.kernel.__name__,
                          hint="put every tensor on one device")
    (device,) = devices
    grid, block = _configuration(plan, values)
    kernel = _kernel_for(plan, device.type)
    args = [kernel_argument(a) for a in values]
    if device.type != "cuda":
        kernel[grid, block](*args)
        return
    index = device.index if device.index is not None else torch.cuda.current_device()
    stream = current_stream_handle(index)
    from gpunb.backends.cuda import driver

    if index == driver.current_device().id:
        kernel[grid, block, stream](*args)
        return
    driver.push_device(index)
    try:
        kernel[grid, block, stream](*args)
    finally:
        driver.pop_device()


def _configuration(plan: OpPlan, values: tuple) -> tuple:
    if plan.launch is None:
        outs = [a for a in values[len(plan.inputs):] if isinstance(a, torch.Tensor)]
        first = outs[0] if outs else next(a for a in values if isinstance(a, torch.Tensor))
        return max(1, -(-first.numel() // DEFAULT_BLOCK)), DEFAULT_BLOCK
    return plan.launch(*values) if callable(plan.launch) else plan.launch


def _kernel_for(plan: OpPlan, device_type: str):
    """The kernel compiled for the tensors' device: the CPU target for CPU tensors."""
    found = plan.kernels.get(device_type)  # every call after the first (device types name targets)
    if found is not None:
        return found
    target = {"cpu": "cpu", "cuda": "cuda"}.get(device_type)
    if target is None:
        raise LaunchError(f"{plan.name}: tensors on {device_type} cannot run a gpunb kernel",
                          hint="use CUDA or CPU tensors")
    found = plan.kernels.get(target)
    if found is None:
        kernel = plan.kernel
        if kernel.requested_target == target:
            found = kernel
        else:
            from gpunb.jit.dispatcher import Dispatcher

            found = Dispatcher(kernel.py_func, target=target, signatures=list(
                kernel.declared_signatures), **kernel.options)
        plan.kernels[target] = found
    return found
