"""numba's extension API for kernels (gpunb.cuda.extending): @overload, register_jitable,
@overload_method, @overload_attribute - typing, targets, literals, numba's type objects,
errors at the user's line, and cache keys that follow the registrations."""

from __future__ import annotations

import numpy as np
import pytest

import gpunb
from gpunb import CompileError, cuda
from gpunb.cache import fingerprint
from gpunb.cuda import types
from gpunb.cuda.extending import (
    intrinsic,
    overload,
    overload_attribute,
    overload_method,
    register_jitable,
)
from gpunb.foundation.errors import JitOptionError


def scaled(x):
    raise NotImplementedError("a stub: kernels use its overloads")


@overload(scaled)
def _ol_scaled(x):
    if isinstance(x, types.Integer):
        return lambda x: x * 3
    if isinstance(x, types.Float):
        def impl(x):
            return x + 0.5
        return impl
    return None


@register_jitable
def add3(a, b, c=1):
    return a + b + c


@register_jitable
def fact(n):  # recursive: the jitable function calls itself
    if n <= 1:
        return 1
    return n * fact(n - 1)


@overload_method(types.Array, "first_times")
def _ol_first_times(arr, k=2):
    def impl(arr, k=2):
        return arr[0] * k
    return impl


@overload_attribute(types.Array, "half_size")
def _ol_half_size(arr):
    def get(arr):
        return arr.size // 2
    return get


@overload_method(types.Float, "clamped")
def _ol_clamped(x, lo, hi):
    def impl(x, lo, hi):
        return min(max(x, lo), hi)
    return impl


POINT = np.dtype([("x", np.float64), ("y", np.float64)])


@overload_attribute(types.Record, "norm1")
def _ol_norm1(rec):
    def get(rec):
        return abs(rec.x) + abs(rec.y)
    return get


def _calls_everything(out, x, y, pts):
    out[0] = scaled(3)
    out[1] = scaled(y[0])
    out[2] = add3(1, 2)
    out[3] = add3(1, 2, c=10)
    out[4] = x.first_times()
    out[5] = x.first_times(k=5)
    out[6] = x.half_size
    out[7] = y[0].clamped(0.0, 1.0)
    out[8] = pts[0].norm1
    out[9] = fact(5)


def test_overloads_in_a_kernel(target):
    out = np.zeros(10)
    x = np.arange(1, 5, dtype=np.float64)
    y = np.array([1.25])
    pts = np.zeros(1, dtype=POINT)
    pts[0] = (-1.5, 2.0)
    cuda.jit(_calls_everything)[1, 1](out, x, y, pts)
    np.testing.assert_array_equal(out, [9, 1.75, 4, 13, 2, 5, 2, 1.0, 3.5, 120])


def test_register_jitable_stays_a_python_function():
    assert add3(1, 2, 3) == 6
    assert fact(4) == 24


def test_overload_used_from_a_device_function(target):
    @cuda.jit(device=True)
    def helper(v):
        return scaled(v) + 1

    @cuda.jit
    def kernel(out):
        out[0] = helper(2)

    out = np.zeros(1, np.int64)
    kernel[1, 1](out)
    assert out[0] == 7


def test_default_values_and_keywords_follow_the_generator(target):
    def stub(out, x, y=5, z=6):
        pass

    @overload(stub)
    def ol_stub(out, x, y=5, z=6):
        def impl(out, x, y=5, z=6):
            out[0], out[1] = x + y, z
        return impl

    @cuda.jit
    def kernel(a, b, out):
        stub(out, a, z=b)

    out = np.empty(2, dtype=np.int64)
    kernel[1, 1](1, 2, out)
    assert tuple(out) == (6, 2)


def test_omitted_arguments_are_shown_as_omitted(target):
    def stub(x, scale=None):
        pass

    seen = []

    @overload(stub)
    def ol_stub(x, scale=None):
        seen.append(scale)
        if isinstance(scale, types.Omitted):
            return lambda x, scale=None: x
        return lambda x, scale=None: x * scale

    @cuda.jit
    def kernel(out):
        out[0] = stub(2.0)
        out[1] = stub(2.0, 4.0)

    out = np.zeros(2)
    kernel[1, 1](out)
    assert list(out) == [2.0, 8.0]
    assert isinstance(seen[0], types.Omitted) and seen[0].value is None


def test_cuda_target_overload_wins_over_generic(target):
    def which(x):
        pass

    @overload(which, target="generic")
    def ol_generic(x):
        return lambda x: 1

    @overload(which, target="cuda")
    def ol_cuda(x):
        return lambda x: 2

    @cuda.jit
    def kernel(out):
        out[0] = which(0)

    out = np.zeros(1, np.int64)
    kernel[1, 1](out)
    assert out[0] == 2


def test_a_cpu_only_overload_is_refused_at_the_call_line():
    def host_only(x):
        pass

    @overload(host_only, target="cpu")
    def ol_host(x):
        return lambda x: x

    @cuda.jit
    def kernel(out):
        out[0] = host_only(1)

    with pytest.raises(CompileError, match="only for numba's CPU target") as info:
        kernel[1, 1](np.zeros(1))
    assert "out[0] = host_only(1)" in str(info.value)


def test_prefer_literal_tries_literal_types_first(target):
    def prefer_lit(x):
        pass

    def non_lit(x):
        pass

    def ov(x):
        if isinstance(x, types.IntegerLiteral):
            if x.literal_value == 1:
                return lambda x: 0xCAFE
            raise CompileError("literal value")
        return lambda x: x * 100

    overload(prefer_lit, prefer_literal=True)(ov)
    overload(non_lit)(ov)

    @cuda.jit
    def kernel(x, res):
        res[0] = prefer_lit(1)
        res[1] = prefer_lit(2)
        res[2] = prefer_lit(x)
        res[3] = non_lit(1)
        res[4] = non_lit(x)

    res = np.zeros(5)
    kernel[1, 1](3, res)
    assert list(res) == [0xCAFE, 200, 300, 100, 300]


def test_literal_only_overload_gets_the_constant(target):
    """A generator that accepts only literals is offered them after the plain types."""
    def at(arr, k):
        pass

    @overload(at)
    def ol_at(arr, k):
        if isinstance(k, types.IntegerLiteral):
            index = k.literal_value

            def impl(arr, k):
                return arr[index]
            return impl
        return None

    @cuda.jit
    def kernel(a, out):
        out[0] = at(a, 2)

    out = np.zeros(1)
    kernel[1, 1](np.array([1.0, 2.0, 7.0]), out)
    assert out[0] == 7.0


def test_overload_returning_signature_and_implementation(target):
    def widened(x):
        pass

    @overload(widened)
    def ol_widened(x):
        if isinstance(x, types.Integer):
            return types.float64(types.float64), lambda x: x / 2
        return None

    @cuda.jit
    def kernel(out):
        out[0] = widened(3)

    out = np.zeros(1)
    kernel[1, 1](out)
    assert out[0] == 1.5


def test_generators_naming_numba_types_see_numba_types(target):
    numba_types = pytest.importorskip("numba.core.types")
    seen = []

    def kind(x):
        pass

    @overload(kind)
    def ol_kind(x):
        seen.append(type(x).__module__)
        if isinstance(x, numba_types.Integer):
            return lambda x: 1
        if isinstance(x, numba_types.Array) and x.layout == "C" and x.ndim == 1:
            return lambda x: 3
        return None

    @overload_method(numba_types.Array, "numba_first")
    def ol_first(a):
        if isinstance(a.dtype, numba_types.Float):
            return lambda a: a[0]
        return None

    @cuda.jit
    def kernel(out):
        out[0] = kind(7)
        out[1] = kind(out)
        out[2] = out.numba_first()

    out = np.zeros(3)
    out[0] = 9.0
    kernel[1, 1](out)
    assert list(out) == [1, 3, 1]
    assert all(m.startswith("numba.core.types") for m in seen)


def test_numba_extending_overload_for_cuda_is_used(target):
    numba_extending = pytest.importorskip("numba.extending")

    def get_42():
        raise NotImplementedError

    @numba_extending.overload(get_42, target="cuda", inline="always")
    def ol_get_42():
        def impl():
            a = cuda.local.array(1, dtype=np.float32)
            a[0] = 42.0
            return a[0]
        return impl

    @cuda.jit
    def kernel(a):
        a[0] = get_42()

    a = np.zeros(1, np.float32)
    kernel[1, 1](a)
    assert a[0] == 42.0


def test_overload_array_return_inline(target):
    def slice_a(a):
        pass

    @overload(slice_a, inline="always")
    def ol_slice(a):
        return lambda a: a[:, 0]

    @cuda.jit
    def add(a):
        s = slice_a(a)
        s[0] += 1.0

    a = np.array([[0.0], [1.0]], dtype=np.float32)
    add[1, 1](a)
    assert a[0, 0] == 1.0


# ---- errors ----------------------------------------------------------------------------------

def test_no_implementation_names_the_types_and_the_line():
    @cuda.jit
    def kernel(out, n):
        out[0] = scaled(out)

    with pytest.raises(CompileError) as info:
        kernel[1, 1](np.zeros(2, np.float32), np.int32(1))
    text = str(info.value)
    assert "no implementation for scaled with (float32[::1])" in text
    assert "out[0] = scaled(out)" in text and "^" in text
    assert "_ol_scaled" in text and "returned None" in text


def test_no_implementation_with_two_argument_types():
    def pair(a, b):
        pass

    @overload(pair)
    def ol_pair(a, b):
        if isinstance(a, types.Float) and isinstance(b, types.Float):
            return lambda a, b: a + b
        return None

    @cuda.jit
    def kernel(out, i, x):
        out[0] = pair(i, x)

    with pytest.raises(CompileError, match=r"no implementation for .*pair with \(int32, "
                       r"float64\)"):
        kernel[1, 1](np.zeros(1), np.int32(1), 2.0)


def test_strict_overload_checks_the_implementation_signature():
    def myoverload(a, b, c, kw=None):
        pass

    @overload(myoverload)
    def ol(a, b, c, kw=None):
        def impl(a, b, c, kw=12):
            return 1
        return impl

    @cuda.jit
    def kernel(a, b, c, d):
        myoverload(a, b, c, kw=d)

    with pytest.raises(CompileError) as info:
        kernel[1, 1](1, 2, 3, 4)
    text = str(info.value)
    assert "Typing and implementation arguments differ in keyword argument default values" \
        in text
    assert '<Parameter "kw=12">' in text and '<Parameter "kw=None">' in text
    assert "myoverload(a, b, c, kw=d)" in text


def test_var_keyword_generator_is_refused_when_strict():
    def f(a, kw=None):
        pass

    @overload(f)
    def ol(a, **kws):
        return lambda a, kw=10: a

    @cuda.jit
    def kernel(a):
        f(a, kw=11)

    with pytest.raises(CompileError, match=r"VAR_KEYWORD .*'\*\*kws'"):
        kernel[1, 1](1)


def test_non_strict_overload_accepts_var_keyword(target):
    def f(a, kw=None):
        pass

    @overload(f, strict=False)
    def ol(a, **kws):
        return lambda a, kw=10: a + kw

    @cuda.jit
    def kernel(out, a):
        out[0] = f(a, kw=11)

    out = np.zeros(1, np.int64)
    kernel[1, 1](out, 1)
    assert out[0] == 12


def test_generator_returning_something_else_is_an_error():
    def f(x):
        pass

    @overload(f)
    def ol(x):
        return 42

    @cuda.jit
    def kernel(out):
        out[0] = f(1)

    with pytest.raises(CompileError, match="returned 42, not a function"):
        kernel[1, 1](np.zeros(1))


def test_error_inside_an_implementation_points_into_it():
    def f(x):
        pass

    @overload(f)
    def ol(x):
        def impl(x):
            return x.no_such_attribute
        return impl

    @cuda.jit
    def kernel(out):
        out[0] = f(1.0)

    with pytest.raises(CompileError) as info:
        kernel[1, 1](np.zeros(1))
    assert "return x.no_such_attribute" in str(info.value)


def test_method_not_offered_for_other_types():
    @cuda.jit
    def kernel(out, i):
        out[0] = i.first_times()

    with pytest.raises(CompileError, match="int64 is not callable|has no attribute"):
        kernel[1, 1](np.zeros(1), 3)


def test_bad_registrations_are_refused():
    with pytest.raises(JitOptionError, match="unknown overload target 'gpu'"):
        overload(scaled, target="gpu")
    with pytest.raises(ValueError, match="`inline` should be passed as a separate argument"):
        overload(scaled, jit_options={"inline": "always"})
    with pytest.raises(TypeError, match="needs a type"):
        overload_method("Array", "m")
    with pytest.raises(TypeError, match="needs an attribute name"):
        overload_attribute(types.Array, "not a name")
    with pytest.raises(AttributeError, match="numba's low-level extension API"):
        from gpunb.cuda import extending

        extending.type_callable  # noqa: B018 - the access is the test


# ---- cache keys ------------------------------------------------------------------------------

def test_redefining_an_overload_recompiles_the_kernels_using_it(target):
    def tripled(x):
        pass

    namespace = {"overload": overload, "tripled": tripled, "types": types}
    source = ("@overload(tripled)\n"
              "def ol_tripled(x):\n"
              "    return lambda x: x * FACTOR\n")
    namespace["FACTOR"] = 3
    exec(source, namespace)

    @cuda.jit
    def kernel(out):
        out[0] = tripled(2)

    out = np.zeros(1, np.int64)
    kernel[1, 1](out)
    assert out[0] == 6
    before = fingerprint.collect(kernel, fresh=True).digest
    exec(source.replace("FACTOR", "10"), namespace)  # the same definition, run again
    kernel[1, 1](out)
    assert out[0] == 20
    assert fingerprint.collect(kernel, fresh=True).digest != before
    namespace["FACTOR"] = 4  # a global the generator's implementation reads
    exec(source, namespace)
    kernel[1, 1](out)
    assert out[0] == 8


def test_redefining_a_method_overload_recompiles(target):
    source = ("@overload_method(types.Array, 'bumped')\n"
              "def ol_bumped(a):\n"
              "    return lambda a: a[0] + STEP\n")
    namespace = {"overload_method": overload_method, "types": types, "STEP": 1}
    exec(source, namespace)

    @cuda.jit
    def kernel(out):
        out[1] = out.bumped()

    out = np.zeros(2)
    kernel[1, 1](out)
    assert out[1] == 1.0
    namespace["STEP"] = 100
    exec(source, namespace)
    kernel[1, 1](out)
    assert out[1] == 100.0


def test_register_jitable_body_is_part_of_the_key(target):
    namespace = {"register_jitable": register_jitable}
    exec("@register_jitable\ndef step(x):\n    return x + 1\n", namespace)

    def kernel_source(out):
        out[0] = step(1)  # noqa: F821 - bound below, in the kernel's globals

    kernel_source.__globals__["step"] = namespace["step"]
    kernel = cuda.jit(kernel_source)
    out = np.zeros(1, np.int64)
    kernel[1, 1](out)
    assert out[0] == 2
    exec("@register_jitable\ndef step(x):\n    return x + 5\n", namespace)
    kernel_source.__globals__["step"] = namespace["step"]
    kernel[1, 1](out)
    assert out[0] == 6


def test_overloads_appear_in_the_fingerprint_dependencies():
    @cuda.jit
    def kernel(out, x):
        out[0] = scaled(1) + x.half_size

    deps = {d.name for d in fingerprint.collect(kernel).dependencies}
    assert "scaled" in deps and "overloads of .half_size" in deps


# ---- the CUDA target ---------------------------------------------------------------------------

def test_cuda_lowering_of_overloads_is_accepted_by_ptxas(ptxas):
    ptx, _ = cuda.compile_ptx(_calls_everything, (types.float64[::1], types.float64[::1],
                                                  types.float64[::1],
                                                  types.from_dtype(POINT)[::1]), cc=(8, 0))
    ptxas(ptx, "sm_80")


@pytest.mark.gpu
def test_overloads_on_the_gpu():
    gpunb.set_target("cuda")
    try:
        out = cuda.to_device(np.zeros(10))
        x = cuda.to_device(np.arange(1, 5, dtype=np.float64))
        y = cuda.to_device(np.array([1.25]))
        pts = np.zeros(1, dtype=POINT)
        pts[0] = (-1.5, 2.0)
        cuda.jit(_calls_everything)[1, 1](out, x, y, cuda.to_device(pts))
        np.testing.assert_array_equal(out.copy_to_host(),
                                      [9, 1.75, 4, 13, 2, 5, 2, 1.0, 3.5, 120])
    finally:
        gpunb.set_target(None)


# ---- dead branches of `flag is True` (the closure-constant idiom of implementations) ----------

_FLAG = True


def test_identity_test_of_a_constant_bool_prunes_the_dead_branch(target):
    @cuda.jit
    def kernel(result, b):
        if _FLAG is True:  # the other branch would leave b a tuple: pruned, as numba does
            b = b[0]
        result[0] = b

    r = np.zeros(1, np.int64)
    kernel[1, 1](r, (2,))
    assert r[0] == 2


def test_overload_closure_constant_selects_the_branch(target):
    def first_or_self(a, b=None):
        pass

    @overload(first_or_self)
    def ol(a, b=None):
        b_is_tuple = isinstance(b, types.Tuple)

        def impl(a, b=None):
            if b_is_tuple is not False:
                b = b[0]
            return b
        return impl

    @cuda.jit
    def kernel(result, a, b, c):
        result[0] = first_or_self(a, b)
        result[1] = first_or_self(a, c)

    r = np.zeros(2, np.int64)
    kernel[1, 1](r, 1, (2,), 5)
    assert list(r) == [2, 5]


def test_inner_function_passed_to_an_overload(target):
    def apply(arg, func):
        return func(arg)

    @overload(apply)
    def ov_apply(arg, func):
        return lambda arg, func: func(arg)

    @cuda.jit
    def kernel(out, a):
        def mul10(x):
            return x * 10

        out[0] = apply(a, mul10)

    out = np.zeros(1, np.int64)
    kernel[1, 1](out, 10)
    assert out[0] == 100


def test_numba_own_overloads_of_python_builtins_are_not_the_kernels(target):
    """numba implements float(), len(), ... with overloads in its own package; once numba has
    typed some njit code they are in its registry, and the kernel language keeps its own."""
    numba = pytest.importorskip("numba")
    from gpunb.foundation import extending

    numba.njit(lambda x: float(x) + len((x, x)))(1)
    assert not extending.has_overloads(float) and not extending.has_overloads(len)

    @cuda.jit
    def kernel(out):
        out[0] = float("nan")
        out[1] = len((1, 2))

    out = np.zeros(2)
    kernel[1, 1](out)
    assert np.isnan(out[0]) and out[1] == 2


def test_cache_key_is_the_generators_content_not_its_identity():
    """Two processes (here: two namespaces) defining the same overload get the same kernel key
    (a disk hit); a different generator body gives another."""
    def key_with(body: str) -> str:
        namespace = {"overload": overload, "cuda": cuda}
        exec("def stub(x):\n    pass\n\n"
             "@overload(stub)\n"
             "def ol_stub(x):\n"
             f"    return lambda x: {body}\n\n"
             "def kernel(out):\n"
             "    out[0] = stub(1)\n", namespace)
        return fingerprint.collect(cuda.jit(namespace["kernel"]), fresh=True).digest

    assert key_with("x + 1") == key_with("x + 1")
    assert key_with("x + 1") != key_with("x + 2")


def test_overloads_of_a_gpu_function_stub_are_what_kernels_call(target):
    """In a %%gpukernel cell every def is a GPU function, the stub too: the overloads
    registered on it are what a call compiles, and what the kernel's key holds."""
    @cuda.jit(device=True)
    def stub(x):
        raise NotImplementedError

    @overload(stub)
    def ol_stub(x):
        return lambda x: x + 40

    @cuda.jit
    def kernel(out):
        out[0] = stub(2)

    out = np.zeros(1, np.int64)
    kernel[1, 1](out)
    assert out[0] == 42
    assert "stub" in {d.name for d in fingerprint.collect(kernel).dependencies}


# ---- @intrinsic ------------------------------------------------------------------------------


@intrinsic
def _add_one(typingctx, x):
    if isinstance(x, types.Integer):
        def codegen(context, builder, sig, args):
            return builder.add(args[0], context.get_constant(sig.return_type, 1))
        return x(x), codegen
    return None


@intrinsic
def _popcount(typingctx, x):
    if isinstance(x, types.Integer):
        def codegen(context, builder, sig, args):
            ty = context.get_value_type(sig.args[0])
            fn = builder.module.declare_intrinsic("llvm.ctpop", [ty])
            return builder.call(fn, args)
        return x(x), codegen
    return None


@intrinsic
def _nothing(typingctx, a):
    def codegen(context, builder, sig, args):
        pass
    return types.void(types.int32), codegen


def _uses_intrinsics(out, i):
    out[0] = _add_one(i)
    out[1] = _popcount(i)
    _nothing(1)


def test_intrinsics_in_a_kernel(target):
    out = np.zeros(2, np.int64)
    cuda.jit(_uses_intrinsics)[1, 1](out, 41)
    assert list(out) == [42, 3]


def test_intrinsic_with_numba_types():
    numba_types = pytest.importorskip("numba.core.types")

    @intrinsic
    def fmax_ir(typingctx, a, b):
        if isinstance(a, numba_types.Float) and a == b:
            def codegen(context, builder, sig, args):
                bigger = builder.fcmp_ordered(">", args[0], args[1])
                return builder.select(bigger, args[0], args[1])
            return numba_types.float64(a, b), codegen
        return None

    @cuda.jit
    def kernel(out, x):
        out[0] = fmax_ir(x, 2.5)

    out = np.zeros(1)
    kernel[1, 1](out, 1.0)
    assert out[0] == 2.5


def test_intrinsic_errors():
    @intrinsic
    def forgets_the_value(typingctx, a):
        def codegen(context, builder, sig, args):
            pass
        return types.int32(types.int32), codegen

    @intrinsic
    def on_arrays(typingctx, a):
        def codegen(context, builder, sig, args):
            return args[0]
        return a(a), codegen

    @cuda.jit
    def k1(out):
        out[0] = forgets_the_value(1)

    @cuda.jit
    def k2(out):
        out[0] = on_arrays(out)[0]

    @cuda.jit
    def k3(out):
        out[0] = _add_one(1.5)

    with pytest.raises(CompileError, match="non-void function returns None"):
        k1[1, 1](np.zeros(1))
    with pytest.raises(CompileError, match="is not one gpunb can lower"):
        k2[1, 1](np.zeros(1))
    with pytest.raises(CompileError, match=r"no implementation for @intrinsic _add_one with "
                       r"\(float64\)") as info:
        k3[1, 1](np.zeros(1))
    assert "out[0] = _add_one(1.5)" in str(info.value)
    with pytest.raises(TypeError, match="works in kernels and device functions only"):
        _add_one(1)


def test_intrinsic_keeps_its_function_facts():
    @intrinsic
    def documented(typingctx, a: int):
        """documented's docstring"""
        return None

    assert documented.__name__ == "documented"
    assert documented.__doc__ == "documented's docstring"
    assert documented.__module__ == __name__


def test_intrinsic_codegen_is_part_of_the_key():
    def key_with(op: str) -> str:
        namespace = {"intrinsic": intrinsic, "cuda": cuda}
        exec("@intrinsic\n"
             "def op(typingctx, x):\n"
             "    def codegen(context, builder, sig, args):\n"
             f"        return builder.{op}(args[0], args[0])\n"
             "    return x(x), codegen\n\n"
             "def kernel(out, i):\n"
             "    out[0] = op(i)\n", namespace)
        return fingerprint.collect(cuda.jit(namespace["kernel"]), fresh=True).digest

    assert key_with("add") == key_with("add")
    assert key_with("add") != key_with("mul")


def test_cuda_lowering_of_intrinsics_is_accepted_by_ptxas(ptxas):
    ptx, _ = cuda.compile_ptx(_uses_intrinsics, (types.int64[::1], types.int64), cc=(8, 0))
    assert "popc.b64" in ptx
    ptxas(ptx, "sm_80")


@pytest.mark.gpu
def test_intrinsics_on_the_gpu():
    gpunb.set_target("cuda")
    try:
        out = cuda.to_device(np.zeros(2, np.int64))
        cuda.jit(_uses_intrinsics)[1, 1](out, 41)
        assert list(out.copy_to_host()) == [42, 3]
    finally:
        gpunb.set_target(None)


def test_numba_register_jitable_functions_are_callable(target):
    numba_extending = pytest.importorskip("numba.extending")

    @numba_extending.register_jitable
    def plus_ten(x):
        return x + 10

    @cuda.jit
    def kernel(out):
        out[0] = plus_ten(32)

    out = np.zeros(1, np.int64)
    kernel[1, 1](out)
    assert out[0] == 42
    assert plus_ten(1) == 11
