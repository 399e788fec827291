# Parts adapted from numba-cuda's numba_cuda/numba/cuda/tests/cudapy/test_serialize.py
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
"""Pickling GPU functions (by value, local functions included) and configured launches."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gpunb
from gpunb import cuda


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    gpunb.set_target("auto")


def _check_call(callee):
    arr = np.array([100])
    callee[1, 1](arr)
    expected = arr.copy()
    foo1 = pickle.loads(pickle.dumps(callee))
    arr = np.array([100])
    foo1[1, 1](arr)
    np.testing.assert_equal(arr, expected)
    foo2 = pickle.loads(pickle.dumps(foo1))  # a rebuilt one pickles again
    arr = np.array([100])
    foo2[1, 1](arr)
    np.testing.assert_equal(arr, expected)
    foo3 = pickle.loads(pickle.dumps(foo2[5, 8]))
    assert foo3.griddim == (5, 1, 1) and foo3.blockdim == (8, 1, 1)


def test_pickling_jit_typing():
    @cuda.jit(device=True)
    def inner(a):
        return a + 1

    @cuda.jit("void(intp[:])")
    def foo(arr):
        arr[0] = inner(arr[0])

    _check_call(foo)
    assert pickle.loads(pickle.dumps(foo)).specialized


def test_pickling_jit():
    @cuda.jit(device=True)
    def inner(a):
        return a + 1

    @cuda.jit(fastmath=True)
    def foo(arr):
        arr[0] = inner(arr[0])

    _check_call(foo)
    assert pickle.loads(pickle.dumps(foo)).options == foo.options


def test_pickling_a_kernel_made_from_a_string():
    """An exec'd kernel unpickles to a new (equal) code object; its text is found by file name
    and verified (a test runner that loads modules from strings does exactly this)."""
    text = (
        "from gpunb import cuda\n"
        "@cuda.jit(device=True)\n"
        "def inner(a):\n"
        "    return a + 1\n"
        "@cuda.jit('void(intp[:])')\n"
        "def foo(arr):\n"
        "    arr[0] = inner(arr[0])\n"
    )
    namespace: dict = {}
    exec(compile(text, "<generated-by-test>", "exec"), namespace)
    _check_call(namespace["foo"])


def test_an_unpickled_kernel_compiles_where_its_text_cannot_be_read(tmp_path):
    """A Dask worker or a fresh process unpickles a kernel whose cell, file or string it has
    never seen: the text travels in the pickle, so the kernel compiles and runs there."""
    import subprocess
    import sys

    text = (
        "from gpunb import cuda\n"
        "@cuda.jit\n"
        "def triple(arr):\n"
        "    i = cuda.grid(1)\n"
        "    if i < arr.size:\n"
        "        arr[i] *= 3\n"
    )
    namespace: dict = {}
    exec(compile(text, "<only-in-the-parent>", "exec"), namespace)
    blob = tmp_path / "kernel.pickle"
    blob.write_bytes(pickle.dumps(namespace["triple"]))
    child = (
        "import pickle, sys, numpy as np, gpunb\n"
        "gpunb.set_target('cpu')\n"
        "kernel = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "arr = np.arange(5.0)\n"
        "kernel[1, 8](arr)\n"
        "print(arr.tolist())\n"
    )
    done = subprocess.run([sys.executable, "-c", child, str(blob)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0.0, 3.0, 6.0, 9.0, 12.0]"
