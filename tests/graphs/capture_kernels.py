"""The two element-wise bodies the capture tests launch (cuda.jit'ed where a test needs a kernel
of its own: a fresh dispatcher, a module to unload)."""

from __future__ import annotations

from gpunb import cuda


def inc(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


def twice(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2
