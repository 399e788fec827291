"""xoroshiro128+ random numbers in kernels, stream-compatible with numba.cuda.random.

Same state layout, seeding (splitmix64), jump-ahead of 2**64 per generator and float conversions
as numba's, so the same seed gives the same numbers. The generators are ordinary gpunb device
functions: they work on every target and go through the same cache as user code.
"""

from __future__ import annotations

import math

import numpy as np

from gpunb.foundation.types import float32, float64, int64, uint32, uint64
from gpunb.jit.decorator import jit

xoroshiro128p_dtype = np.dtype([("s0", np.uint64), ("s1", np.uint64)], align=True)
xoroshiro128p_type = xoroshiro128p_dtype

TWO_PI_FLOAT32 = np.float32(2 * math.pi)
TWO_PI_FLOAT64 = np.float64(2 * math.pi)


@jit(device=True)
def init_xoroshiro128p_state(states, index, seed):
    """Seed one generator with splitmix64(seed)."""
    index = int64(index)
    seed = uint64(seed)
    z = seed + uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> uint32(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint32(27))) * uint64(0x94D049BB133111EB)
    z = z ^ (z >> uint32(31))
    states[index]["s0"] = z
    states[index]["s1"] = z


@jit(device=True)
def rotl(x, k):
    return (x << k) | (x >> uint32(64 - k))


@jit(device=True)
def xoroshiro128p_next(states, index):
    """The next 64 random bits of generator `index`."""
    index = int64(index)
    s0 = states[index]["s0"]
    s1 = states[index]["s1"]
    result = s0 + s1
    s1 ^= s0
    states[index]["s0"] = uint64(rotl(s0, uint32(55))) ^ s1 ^ (s1 << uint32(14))
    states[index]["s1"] = uint64(rotl(s1, uint32(36)))
    return result


@jit(device=True)
def xoroshiro128p_jump(states, index):
    """Advance generator `index` by 2**64 steps."""
    index = int64(index)
    jump = (uint64(0xBEAC0467EBA5FACB), uint64(0xD86B048B86AA9922))
    s0 = uint64(0)
    s1 = uint64(0)
    for i in range(2):
        for b in range(64):
            if jump[i] & (uint64(1) << uint32(b)):
                s0 ^= states[index]["s0"]
                s1 ^= states[index]["s1"]
            xoroshiro128p_next(states, index)
    states[index]["s0"] = s0
    states[index]["s1"] = s1


@jit(device=True)
def uint64_to_unit_float64(x):
    return (x >> uint32(11)) * (float64(1) / (uint64(1) << uint32(53)))


@jit(device=True)
def uint64_to_unit_float32(x):
    return float32(uint64_to_unit_float64(x))


@jit(device=True)
def xoroshiro128p_uniform_float32(states, index):
    """A float32 uniform in [0, 1)."""
    return uint64_to_unit_float32(xoroshiro128p_next(states, index))


@jit(device=True)
def xoroshiro128p_uniform_float64(states, index):
    """A float64 uniform in [0, 1)."""
    return uint64_to_unit_float64(xoroshiro128p_next(states, index))


@jit(device=True)
def xoroshiro128p_normal_float32(states, index):
    """A float32 standard normal (Box-Muller; the second value is discarded, as numba does)."""
    u1 = xoroshiro128p_uniform_float32(states, index)
    u2 = xoroshiro128p_uniform_float32(states, index)
    z0 = math.sqrt(-float32(2.0) * math.log(u1)) * math.cos(TWO_PI_FLOAT32 * u2)
    return z0


@jit(device=True)
def xoroshiro128p_normal_float64(states, index):
    """A float64 standard normal. From float32 uniforms, as numba.cuda.random does (so the
    streams stay bit-compatible with numba's for the same seed)."""
    u1 = xoroshiro128p_uniform_float32(states, index)
    u2 = xoroshiro128p_uniform_float32(states, index)
    z0 = math.sqrt(-float64(2.0) * math.log(u1)) * math.cos(TWO_PI_FLOAT64 * u2)
    return z0


@jit(target="cpu")
def _init_states(states, seed, subsequence_start):
    # sequential by nature: generator i is generator i-1 jumped 2**64 ahead
    if states.shape[0] == 0:
        return
    init_xoroshiro128p_state(states, 0, seed)
    for _ in range(subsequence_start):
        xoroshiro128p_jump(states, 0)
    for i in range(1, states.shape[0]):
        states[i] = states[i - 1]
        xoroshiro128p_jump(states, i)


def init_xoroshiro128p_states(states, seed: int, subsequence_start: int = 0, stream=0) -> None:
    """Seed `states` (a device array of xoroshiro128p_dtype) in place, computed on the host."""
    host = np.empty(states.shape[0], dtype=xoroshiro128p_dtype)
    _init_states[1, 1](host, np.uint64(seed), np.uint64(subsequence_start))
    states.copy_to_device(host, stream=stream)


def create_xoroshiro128p_states(n: int, seed: int, subsequence_start: int = 0, stream=0):
    """n generators on the device, seeded from `seed` exactly as numba.cuda.random does."""
    from gpunb.runtime.memory import device_array

    states = device_array(n, dtype=xoroshiro128p_dtype, stream=stream)
    init_xoroshiro128p_states(states, seed, subsequence_start, stream)
    return states
