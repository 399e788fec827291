"""Cooperative groups, print(), gpunb.random, cmath/complex and fp16 on every target."""

import cmath
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gpunb import cuda
from gpunb import random as grandom


@cuda.jit
def grid_rotate(a, b):
    g = cuda.cg.this_grid()
    i = g.thread_rank()
    a[i] = i
    g.sync()
    b[i] = a[(i + 1) % g.size]


def test_grid_sync_sees_every_block(target):
    a = np.zeros(1024, np.float32)
    b = np.zeros_like(a)
    grid_rotate[8, 128](a, b)
    np.testing.assert_array_equal(b, np.roll(np.arange(1024, dtype=np.float32), -1))
    spec = next(iter(grid_rotate.specializations.values()))
    assert spec.artifact.cooperative


def test_grid_sync_ptx(ptxas):
    ptx, _ = cuda.compile_ptx(grid_rotate, "void(float32[::1], float32[::1])", cc=(9, 0))
    ptxas(ptx)


@cuda.jit
def printer(x):
    i = cuda.grid(1)
    if i % 4 == 0:
        print("i =", i, "x =", x[i])


def test_print_ordered_on_cpu(capfd):
    import gpunb

    gpunb.set_target("cpu")
    try:
        printer[2, 8](np.arange(16, dtype=np.float64))
    finally:
        gpunb.set_target(None)
    out = capfd.readouterr().out.splitlines()
    assert out == [f"i = {i} x = {float(i):f}" for i in (0, 4, 8, 12)]


def test_print_ptx(ptxas):
    ptx, _ = cuda.compile_ptx(printer, "void(float64[::1])")
    assert "vprintf" in ptx
    ptxas(ptx)


@cuda.jit
def print_structured(tup):
    print(tup, (1,), cuda.threadIdx, cuda.bfloat16(0.9375))


def test_print_tuples_dim3_and_bfloat16(capfd):
    # numba-cuda's formats: tuples as Python prints them, cuda.threadIdx as (x, y, z)
    import gpunb

    gpunb.set_target("cpu")
    try:
        print_structured[1, (2, 1, 1)]((1, ((2, 4), 3.0), (4,), np.uint8(5)))
    finally:
        gpunb.set_target(None)
    assert capfd.readouterr().out.splitlines() == [
        f"(1, ((2, 4), 3.000000), (4,), 5) (1,) ({x}, 0, 0) 0.937500" for x in (0, 1)]


def test_print_structured_ptx(ptxas):
    from gpunb.foundation import types as t

    sig = t.Signature(t.void, (t.Tuple((t.int64, t.int64, t.int64)),))
    ptx, _ = cuda.compile_ptx(print_structured.py_func, sig)
    assert "vprintf" in ptx and "%tid.x" in ptx
    ptxas(ptx)


@cuda.jit
def print_33(r):
    print(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12],
          r[13], r[14], r[15], r[16], r[17], r[18], r[19], r[20], r[21], r[22], r[23], r[24],
          r[25], r[26], r[27], r[28], r[29], r[30], r[31], r[32])


def test_print_more_than_32_items_prints_the_format(capfd):
    # CUDA's vprintf takes 32 arguments: numba-cuda warns and prints the format instead
    import gpunb
    from gpunb.foundation.errors import CompileWarning

    gpunb.set_target("cpu")
    try:
        with pytest.warns(CompileWarning, match="cannot print more than 32 items"):
            print_33[1, 1](np.arange(33))
    finally:
        gpunb.set_target(None)
    assert capfd.readouterr().out.strip() == " ".join(["%lld"] * 33)


def test_print_more_than_32_items_ptx(ptxas):
    with pytest.warns(UserWarning, match="32 items"):
        ptx, _ = cuda.compile_ptx(print_33, "void(int64[::1])")
    assert "%%lld %%lld" in bytes(int(v) for v in _const_bytes(ptx)).decode("ascii", "replace")
    ptxas(ptx)


def _const_bytes(ptx: str) -> list:
    """The bytes of the PTX's .const initialisers (the printf formats)."""
    import re

    found = []
    for body in re.findall(r"\.const [^=]*= \{([^}]*)\}", ptx):
        found.extend(body.replace(" ", "").split(","))
    return found


@cuda.jit
def draw(states, out):
    i = cuda.grid(1)
    out[i, 0] = grandom.xoroshiro128p_uniform_float32(states, i)
    out[i, 1] = grandom.xoroshiro128p_normal_float32(states, i)


@cuda.jit
def draw64(states, out):
    i = cuda.grid(1)
    out[i, 0] = grandom.xoroshiro128p_uniform_float64(states, i)
    out[i, 1] = grandom.xoroshiro128p_normal_float64(states, i)


def _reference_streams(n, seed, draws):
    """numba.cuda.random's algorithm in plain Python: splitmix64 seed, 2**64 jumps, next()."""
    m = (1 << 64) - 1

    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & m

    def nxt(s):
        s0, s1 = s
        r = (s0 + s1) & m
        s1 ^= s0
        return [rotl(s0, 55) ^ s1 ^ ((s1 << 14) & m), rotl(s1, 36)], r

    def jump(s):
        a = b = 0
        for j in (0xBEAC0467EBA5FACB, 0xD86B048B86AA9922):
            for bit in range(64):
                if j & (1 << bit):
                    a ^= s[0]
                    b ^= s[1]
                s, _ = nxt(s)
        return [a, b]

    z = (seed + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    z ^= z >> 31
    states = [[z, z]]
    for _ in range(1, n):
        states.append(jump(list(states[-1])))
    out = []
    for s in states:
        values = []
        for _ in range(draws):
            s, r = nxt(s)
            values.append(r)
        out.append(values)
    return states, out


def test_random_streams_match_numba_algorithm(target):
    n = 8
    states = grandom.create_xoroshiro128p_states(n, seed=42)
    host_states = states.copy_to_host() if hasattr(states, "copy_to_host") else states
    ref_states, ref_bits = _reference_streams(n, 42, 3)
    assert [[int(s["s0"]), int(s["s1"])] for s in host_states] == ref_states
    out = np.zeros((n, 2), np.float32)
    draw[1, n](states, out)
    for k in range(n):
        u = np.float32((ref_bits[k][0] >> 11) * (1.0 / (1 << 53)))
        assert out[k, 0] == u
        u1 = np.float32((ref_bits[k][1] >> 11) * (1.0 / (1 << 53)))
        u2 = np.float32((ref_bits[k][2] >> 11) * (1.0 / (1 << 53)))
        z0 = math.sqrt(-2.0 * math.log(u1)) * math.cos(np.float32(2 * math.pi) * u2)
        assert out[k, 1] == pytest.approx(z0, rel=1e-5, abs=1e-6)


def test_float64_draws_follow_numba(target):
    """uniform_float64 uses 53 bits; normal_float64 is built from float32 uniforms, as numba's."""
    n = 8
    states = grandom.create_xoroshiro128p_states(n, seed=7)
    _, ref_bits = _reference_streams(n, 7, 3)
    out = np.zeros((n, 2), np.float64)
    draw64[1, n](states, out)
    for k in range(n):
        assert out[k, 0] == (ref_bits[k][0] >> 11) * (1.0 / (1 << 53))
        u1 = float(np.float32((ref_bits[k][1] >> 11) * (1.0 / (1 << 53))))
        u2 = float(np.float32((ref_bits[k][2] >> 11) * (1.0 / (1 << 53))))
        z0 = math.sqrt(-2.0 * float(np.float32(math.log(u1)))) * math.cos(2 * math.pi * u2)
        assert out[k, 1] == pytest.approx(z0, rel=1e-12, abs=1e-12)


@cuda.jit
def complex_math(out, x):
    i = cuda.grid(1)
    z = complex(x[i], 0.5)
    w = cmath.exp(z) * z.conjugate() + cmath.sqrt(z) - cmath.log(z) / (z + 1)
    out[i, 0] = w.real
    out[i, 1] = w.imag
    out[i, 2] = abs(w) + cmath.phase(w)


def test_complex_and_cmath(target):
    x = np.linspace(-2, 2, 16)
    out = np.zeros((16, 3))
    complex_math[1, 16](out, x)
    for k, v in enumerate(x):
        z = complex(v, 0.5)
        w = cmath.exp(z) * z.conjugate() + cmath.sqrt(z) - cmath.log(z) / (z + 1)
        np.testing.assert_allclose(out[k], [w.real, w.imag, abs(w) + cmath.phase(w)], rtol=1e-9)


@cuda.jit
def half_ops(out, a, b):
    i = cuda.grid(1)
    out[i] = cuda.fp16.hfma(a[i], b[i], cuda.fp16.hadd(a[i], b[i]))


def test_fp16(target):
    a = np.linspace(0, 2, 32).astype(np.float16)
    b = np.linspace(1, -1, 32).astype(np.float16)
    out = np.zeros(32, np.float16)
    half_ops[1, 32](out, a, b)
    expected = (a * b + (a + b)).astype(np.float16)
    np.testing.assert_allclose(out.astype(np.float32), expected.astype(np.float32), atol=2e-2)


def test_fp16_ptx(ptxas):
    ptx, _ = cuda.compile_ptx(half_ops, "void(float16[::1], float16[::1], float16[::1])")
    ptxas(ptx)


SEED_000 = """
import sys
sys.path.insert(0, {root!r})
import gpunb
from gpunb import cuda
gpunb.set_target({target!r})

@cuda.jit(cache=True)
def assign_edges_kernel() -> None:
    gg = cuda.cg.this_grid()
    gg.sync()

assign_edges_kernel[1, 1]()
print("ok", next(iter(assign_edges_kernel.specializations.values())).artifact.cooperative)
"""


def test_seed_000_cached_grid_sync_two_processes(tmp_path, target):
    """A cached grid-sync kernel launches in a second process (numba 0.59's regression)."""
    import os

    script = tmp_path / "seed000.py"
    script.write_text(textwrap.dedent(SEED_000).format(
        root=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        target=target))
    env = dict(os.environ, GPUNB_CACHE_DIR=str(tmp_path / "cache"), GPUNB_NOTICES="0")
    for _ in range(2):
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "ok True"


@pytest.mark.gpu
def test_random_streams_equal_numba_cuda_on_the_gpu():
    """The same seed gives the same states and the same draws as numba.cuda.random itself."""
    numba_cuda = pytest.importorskip("numba.cuda")
    numba_random = pytest.importorskip("numba.cuda.random")
    import gpunb

    n, seed = 4096, 1234
    ours = grandom.create_xoroshiro128p_states(n, seed=seed)
    theirs = numba_random.create_xoroshiro128p_states(n, seed=seed)
    ours_host, theirs_host = ours.copy_to_host(), theirs.copy_to_host()
    assert (ours_host["s0"] == theirs_host["s0"]).all()
    assert (ours_host["s1"] == theirs_host["s1"]).all()

    @numba_cuda.jit
    def numba_draw(states, out):
        i = numba_cuda.grid(1)
        if i < out.shape[0]:
            out[i, 0] = numba_random.xoroshiro128p_uniform_float32(states, i)
            out[i, 1] = numba_random.xoroshiro128p_normal_float32(states, i)

    @numba_cuda.jit
    def numba_draw64(states, out):
        i = numba_cuda.grid(1)
        if i < out.shape[0]:
            out[i, 0] = numba_random.xoroshiro128p_uniform_float64(states, i)
            out[i, 1] = numba_random.xoroshiro128p_normal_float64(states, i)

    theirs_out = numba_cuda.device_array((n, 2), np.float32)
    numba_draw[n // 256, 256](theirs, theirs_out)
    theirs_out64 = numba_cuda.device_array((n, 2), np.float64)
    numba_draw64[n // 256, 256](theirs, theirs_out64)
    gpunb.set_target("cuda")
    try:
        ours_out = cuda.device_array((n, 2), np.float32)
        draw[n // 256, 256](ours, ours_out)
        ours_out64 = cuda.device_array((n, 2), np.float64)
        draw64[n // 256, 256](ours, ours_out64)
        cuda.synchronize()
    finally:
        gpunb.set_target(None)
    a, b = ours_out.copy_to_host(), theirs_out.copy_to_host()
    np.testing.assert_array_equal(a[:, 0], b[:, 0])
    np.testing.assert_allclose(a[:, 1], b[:, 1], rtol=2e-6, atol=1e-6)
    a, b = ours_out64.copy_to_host(), theirs_out64.copy_to_host()
    np.testing.assert_array_equal(a[:, 0], b[:, 0])
    np.testing.assert_allclose(a[:, 1], b[:, 1], rtol=1e-12, atol=1e-12)
