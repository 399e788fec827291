"""Kernels the debugger tests stop in (a module of their own: breakpoints name their lines)."""

from __future__ import annotations

import inspect

import numpy as np

from gpunb import cuda


def line_of(function, text: str) -> int:
    """The file line of the first line of `function` containing `text`."""
    py_func = getattr(function, "py_func", function)
    lines, first = inspect.getsourcelines(py_func)
    for k, line in enumerate(lines):
        if text in line:
            return first + k
    raise AssertionError(f"{text!r} is not in {py_func.__name__}")


@cuda.jit
def scale(value, factor):
    scaled = value * factor
    return scaled + 1


@cuda.jit
def saxpy_like(out, x, y):
    i = cuda.grid(1)
    a = np.float32(2.5)
    if i < out.size:
        t = scale(x[i], a)
        out[i] = t + y[i]


@cuda.jit
def shared_shift(out, a):
    tile = cuda.shared.array(64, np.float32)
    i = cuda.threadIdx.x
    tile[i] = a[i] * 2
    cuda.syncthreads()
    j = (i + 1) % cuda.blockDim.x
    out[i] = tile[j]


@cuda.jit
def conditional_stop(out):
    i = cuda.grid(1)
    total = 0
    for k in range(4):
        total += k * i
    if i == 37:
        breakpoint()
    if i < out.size:
        out[i] = total


@cuda.jit
def off_by_one(out):
    i = cuda.grid(1)
    out[i + 1] = i


@cuda.jit
def fill_index(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = i


@cuda.jit
def mixed_types(out, n):
    i = cuda.grid(1)
    x = i * 2
    if i % 2 == 0:
        x = 0.5 * i
    pair = (i, np.float32(1.5))
    flag = i > n
    if i < out.size:
        out[i] = x + pair[1] + flag


@cuda.jit
def spin_until_told(flags):
    count = 0
    while flags[0] == 0:
        count += 1
    flags[1] = count


@cuda.jit
def racy_sum(out, data):
    acc = cuda.shared.array(1, np.float32)
    i = cuda.threadIdx.x
    if i == 0:
        acc[0] = 0
    cuda.syncthreads()
    acc[0] += data[i]
    cuda.syncthreads()
    if i == 0:
        out[0] = acc[0]


@cuda.jit(device=True)
def clamp_and_stop(v, hi):
    if v > hi:
        breakpoint()
        v = hi
    return v


@cuda.jit
def clamp_all(out, hi):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = clamp_and_stop(i * 10, hi)
