"""numba.cuda.random under gpunb: xoroshiro128+ generators (`from gpunb.cuda.random import
create_xoroshiro128p_states, xoroshiro128p_uniform_float32`); they are gpunb.random's."""

from __future__ import annotations

from gpunb.random import (  # noqa: F401 - numba.cuda.random's public names
    TWO_PI_FLOAT32,
    TWO_PI_FLOAT64,
    create_xoroshiro128p_states,
    init_xoroshiro128p_state,
    init_xoroshiro128p_states,
    rotl,
    uint64_to_unit_float32,
    uint64_to_unit_float64,
    xoroshiro128p_dtype,
    xoroshiro128p_jump,
    xoroshiro128p_next,
    xoroshiro128p_normal_float32,
    xoroshiro128p_normal_float64,
    xoroshiro128p_type,
    xoroshiro128p_uniform_float32,
    xoroshiro128p_uniform_float64,
)
