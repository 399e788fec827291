"""@cuda.jit forms and options as numba.cuda users write them: lazy specialisation per argument
types, string and annotation signatures, device=True, fastmath/lineinfo/debug/opt/max_registers/
cache accepted and honoured, one compile per argument types."""

import numpy as np
import pytest

from gpunb import cuda, float32, float64, int32


def _body(out, x, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * a + 1.0


lazy = cuda.jit(_body)
declared = cuda.jit("void(float32[::1], float32[::1], float32)")(_body)
declared_two = cuda.jit(["void(float32[::1], float32[::1], float32)",
                         "void(float64[::1], float64[::1], float64)"])(_body)
called_empty = cuda.jit()(_body)


@cuda.jit
def annotated(out: float32[::1], x: float32[::1], a: float32):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * a + 1.0


@pytest.mark.parametrize("kernel", [lazy, declared, declared_two, called_empty, annotated],
                         ids=["lazy", "declared", "declared_two", "jit()", "annotated"])
def test_jit_forms(target, kernel):
    x = np.arange(50, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[1, 64](out, x, np.float32(2.0))
    np.testing.assert_array_equal(out, x * 2 + 1)


def test_lazy_compilation_one_specialisation_per_types(target):
    k = cuda.jit(_body)
    assert k.specializations == {}  # nothing compiled at decoration time
    x32 = np.arange(8, dtype=np.float32)
    k[1, 8](np.zeros_like(x32), x32, np.float32(1.0))
    k[1, 8](np.zeros_like(x32), x32, np.float32(3.0))
    assert len(k.specializations) == 1
    x64 = np.arange(8, dtype=np.float64)
    out = np.zeros_like(x64)
    k[1, 8](out, x64, 0.5)
    assert len(k.specializations) == 2
    np.testing.assert_array_equal(out, x64 * 0.5 + 1)


def test_declared_signature_converts_scalars(target):
    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)
    declared[1, 8](out, x, 3)  # a Python int passed where float32 is declared
    np.testing.assert_array_equal(out, x * 3 + 1)
    # this target's specialisations (on a GPU machine other tests launch it on the other one)
    assert [sig for tgt, sig in declared.specializations if tgt == target] == [
        (float32[::1], float32[::1], float32)]


def test_declared_signatures_pick_matching(target):
    x = np.arange(8, dtype=np.float64)
    out = np.zeros_like(x)
    declared_two[1, 8](out, x, 0.25)
    np.testing.assert_array_equal(out, x * 0.25 + 1)
    assert (float64[::1], float64[::1], float64) in [s for _, s in declared_two.specializations]


def test_unknown_option_is_rejected():
    with pytest.raises(TypeError, match="unknown option"):
        cuda.jit(_body, fast_math=True)


@pytest.mark.parametrize("options", [dict(fastmath=True), dict(lineinfo=True), dict(debug=True),
                                     dict(opt=False), dict(max_registers=32), dict(cache=True),
                                     dict(boundscheck=True), dict(inline="always")],
                         ids=lambda o: next(iter(o)))
def test_numba_options_accepted(target, options):
    k = cuda.jit(**options)(_body)
    x = np.arange(40, dtype=np.float32)
    out = np.zeros_like(x)
    k[1, 64](out, x, np.float32(0.5))
    np.testing.assert_allclose(out, x * 0.5 + 1, rtol=1e-6)


def test_fastmath_option_reaches_ptx():
    @cuda.jit(fastmath=True)
    def fast(out, x):
        i = cuda.grid(1)
        out[i] = x[i] / 3.0 + 1.0 / x[i]

    @cuda.jit
    def precise(out, x):
        i = cuda.grid(1)
        out[i] = x[i] / 3.0 + 1.0 / x[i]

    sig = "void(float32[::1], float32[::1])"
    assert "approx" in fast.inspect_ptx(sig)
    assert "div.rn.f32" in precise.inspect_ptx(sig)


def test_opt_false_keeps_more_code():
    optimised = cuda.jit(_body).inspect_ptx("void(float32[::1], float32[::1], float32)")
    plain = cuda.jit(opt=False)(_body).inspect_ptx("void(float32[::1], float32[::1], float32)")
    # opt=False skips the LLVM optimisation pipeline: e.g. no global address-space inference
    assert plain != optimised
    assert "ld.global" in optimised and "ld.global" not in plain


def test_lineinfo_option_map():
    k = cuda.jit(lineinfo=True)(_body)
    lines = k.line_map("void(float32[::1], float32[::1], float32)")
    first = _body.__code__.co_firstlineno
    assert first + 3 in lines  # the store `out[i] = x[i] * a + 1.0`


def test_device_function_forms(target):
    @cuda.jit(device=True)
    def twice(v):
        return v * 2

    @cuda.jit("int32(int32)", device=True)
    def thrice(v):
        return v * 3

    @cuda.jit
    def use(out):
        i = cuda.grid(1)
        out[i] = twice(i) + thrice(i)

    out = np.zeros(16, np.int64)
    use[2, 8](out)
    np.testing.assert_array_equal(out, np.arange(16) * 5)
    assert repr(twice).startswith("<gpunb device function ") and "twice" in repr(twice)


@pytest.mark.gpu
def test_max_registers_honoured_on_gpu():
    import gpunb

    gpunb.set_target("cuda")
    try:
        k = cuda.jit(max_registers=32)(_body)
        x = np.arange(64, dtype=np.float32)
        k[1, 64](np.zeros_like(x), x, np.float32(1.0))
        assert k.resource_usage()["registers"] <= 32
    finally:
        gpunb.set_target(None)


@pytest.mark.gpu
def test_same_results_on_both_targets():
    import gpunb

    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    results = {}
    for tgt in ("cpu", "cuda"):
        gpunb.set_target(tgt)
        try:
            out = np.zeros_like(x)
            lazy[(x.size + 127) // 128, 128](out, x, np.float32(1.5))
            results[tgt] = out
        finally:
            gpunb.set_target(None)
    # the GPU contracts a * b + c into one fma (as numba-cuda does): equal to one rounding
    np.testing.assert_allclose(results["cpu"], results["cuda"], rtol=2e-6, atol=1e-6)


def test_int32_scalar_type_from_numpy(target):
    @cuda.jit
    def store(out, v):
        out[0] = v

    out = np.zeros(1, np.int64)
    store[1, 1](out, np.int32(-5))
    assert out[0] == -5
    assert [s for _, s in store.specializations][0][1] == int32


def _no_gpu() -> bool:
    from gpunb.backends.cuda import driver

    try:
        return not driver.is_available()
    except Exception:  # noqa: BLE001 - no driver at all is no GPU
        return True


@pytest.mark.skipif(not _no_gpu(), reason="needs a machine without a GPU")
def test_set_target_applies_to_kernels_already_on_the_fast_path():
    """A kernel launched on one target and then asked, by gpunb.set_target, for another must not
    keep running on the first from its fast-path entry (here: cpu, then cuda, which this machine
    lacks, so the launch must say so instead of quietly running on the CPU again)."""
    import gpunb
    from gpunb.foundation.errors import GpunbError

    @cuda.jit
    def bump(a):
        a[cuda.grid(1)] += 1

    a = np.zeros(4, np.float32)
    gpunb.set_target("cpu")
    try:
        bump[1, 4](a)
        bump[1, 4](a)  # now on the fast path
        gpunb.set_target("cuda")
        with pytest.raises(GpunbError):
            bump[1, 4](a)
        assert a.tolist() == [2.0] * 4
        gpunb.set_target("cpu")
        bump[1, 4](a)
        assert a.tolist() == [3.0] * 4
    finally:
        gpunb.set_target(None)


@pytest.mark.gpu
def test_set_target_moves_a_hot_kernel_between_gpu_and_cpu():
    import gpunb

    @cuda.jit
    def bump(a):
        a[cuda.grid(1)] += 1

    a = np.zeros(4, np.float32)
    try:
        gpunb.set_target("cuda")
        bump[1, 4](a)
        bump[1, 4](a)
        gpunb.set_target("cpu")
        bump[1, 4](a)
        assert a.tolist() == [3.0] * 4
        assert {target for target, _ in bump.specializations} == {"cuda", "cpu"}
    finally:
        gpunb.set_target(None)


def test_wrong_argument_count_at_launch_names_the_parameters(target):
    from gpunb.foundation.errors import LaunchError

    @cuda.jit
    def fill(out, value):
        out[cuda.grid(1)] = value

    with pytest.raises(LaunchError) as info:
        fill[1, 4](np.zeros(4))
    text = str(info.value)
    assert "kernel 'fill' takes 2 arguments (out, value) but 1 was given" in text
    assert "fill[grid, block](out, value)" in text
