"""User mistakes give gpunb.CompileError (file, line, column, the source line with a caret under
the offending code, a hint) or gpunb.LaunchError (bad launch configurations and arguments, before
anything runs) - never an internal error or an LLVM traceback."""

import inspect

import numpy as np
import pytest

import gpunb
from gpunb import cuda, float32

# Each kernel marks the line where the error must point with `# <- error` and the code the caret
# must sit under with the first word after it.


@cuda.jit
def unknown_name(out):
    out[0] = undefined_thing + 1  # <- error undefined_thing  # noqa: F821


@cuda.jit
def uses_try(out):
    try:  # <- error try
        out[0] = 1
    except Exception:
        out[0] = 2


@cuda.jit
def uses_with(out):
    with open("x"):  # <- error with
        out[0] = 1


@cuda.jit
def uses_listcomp(out):
    v = [k for k in range(3)]  # <- error [k
    out[0] = v[0]


@cuda.jit
def uses_lambda(out):
    out[0] = (lambda v: v + 1)(1)  # <- error lambda  (only `name = lambda` can be called)


@cuda.jit
def uses_dict(out):
    d = {1: 2}  # <- error {1:
    out[0] = d[1]


@cuda.jit
def uses_raise(out):
    if out[0] > 0:
        raise ValueError(out)  # <- error out)


@cuda.jit
def nested_def(out):
    def inner(v):
        return v

    g = inner  # <- error inner  (an inner function used as a value escapes)
    out[0] = g(1)


@cuda.jit
def type_mismatch_variable(out, x):
    v = x[0]
    if x[1] > 0:
        v = (1, 2)  # a new definition may change the type (numba types each one)...
    out[0] = v  # <- error v  (...but where the two meet they must join)


@cuda.jit
def array_arithmetic(out, x):
    out[0] = x + 1  # <- error x


@cuda.jit
def store_complex_into_float(out, x):
    out[0] = x[0] * 1j  # <- error x[0]


@cuda.jit
def float_index(out, x):
    out[0] = x[1.5]  # <- error 1.5


@cuda.jit(device=True)
def two_args(a, b=1):
    return a + b


@cuda.jit
def too_many_args(out):
    out[0] = two_args(1, 2, 3)  # <- error two_args


@cuda.jit
def unknown_keyword(out):
    out[0] = two_args(1, c=3)  # <- error two_args


@cuda.jit
def missing_argument(out):
    out[0] = two_args()  # <- error two_args


@cuda.jit
def math_arity(out, x):
    out[0] = math_sin_two(x)  # <- error math_sin_two


@cuda.jit
def range_arity(out):
    for k in range(1, 2, 3, 4):  # <- error range
        out[0] = k


@cuda.jit
def returns_value(out):
    out[0] = 1
    return 5  # <- error return


@cuda.jit(device=True)
def recursive(n):  # recursion works as in numba; one without a base case cannot be typed
    return recursive(n - 1) + 1  # <- error recursive


@cuda.jit
def calls_recursive(out):
    out[0] = recursive(3)


@cuda.jit
def shared_non_constant_shape(out, n):
    s = cuda.shared.array(n, float32)  # <- error n
    out[0] = s[0]


@cuda.jit
def bad_atomic(out):
    cuda.atomic.add(out, (0, 1), 1)  # <- error (0


@cuda.jit(device=True)
def broken_helper(x):
    return x + no_such_global  # <- error no_such_global  # noqa: F821


@cuda.jit
def calls_broken_helper(out):
    out[0] = broken_helper(1)


@cuda.jit
def too_many_indices(out):
    out[0, 1] = 1  # <- error out[0, 1]


@cuda.jit
def mixed_return(out):
    out[0] = mixed_helper(1)


@cuda.jit(device=True)
def mixed_helper(x):
    if x > 0:
        return (1, 2)
    return 1.5  # <- error return


def math_sin_two(x):  # a host function, not decorated
    return x


@cuda.jit
def shared_shape_from_launch(out):
    s = cuda.shared.array(cuda.blockDim.x, float32)  # <- error cuda.blockDim.x
    out[0] = s[0]


@cuda.jit
def local_shape_from_launch(out):
    s = cuda.local.array((2, cuda.blockDim.y), float32)  # <- error (2,
    out[0] = s[0, 0]


@cuda.jit
def uses_numbas_cuda(out):
    out[0] = numba_cuda_module.threadIdx.x  # <- error numba_cuda_module


@cuda.jit
def calls_numbas_cuda(out):
    numba_cuda_module.syncthreads()  # <- error numba_cuda_module
    out[0] = 1


numba_cuda_module = pytest.importorskip("numba.cuda")  # numba's own, as an unchanged import

@cuda.jit
def formats_a_string(out):
    print("x = %d" % out[0])  # noqa: UP031  # <- error "x


WEIGHTS = [0.25, 0.5, 0.25]  # a list: GPU code cannot read it


@cuda.jit
def indexes_a_global_list(out):
    out[0] = WEIGHTS[1]  # <- error WEIGHTS[1]


@cuda.jit
def launches_a_kernel(out):
    indexes_a_global_list[1, 1](out)  # <- error indexes_a_global_list[1,


@cuda.jit
def rebinds_its_array(out):
    out = 5
    out[0] = 1  # <- error out[0]


CASES = [
    # kernel, signature, words the message must contain, words the hint must contain
    (unknown_name, "void(int64[::1])", ["undefined_thing", "not defined"], ["define"]),
    (uses_try, "void(int64[::1])", ["Try"], ["try"]),
    (uses_with, "void(int64[::1])", ["With"], ["with"]),
    (uses_listcomp, "void(int64[::1])", ["ListComp"], ["loop"]),
    (uses_lambda, "void(int64[::1])", ["Lambda"], ["lambda"]),
    (uses_dict, "void(int64[::1])", ["Dict"], ["dict"]),
    (uses_raise, "void(int64[::1])", ["constant string"], ["constant message"]),
    (nested_def, "void(int64[::1])", ["inner", "used as a value"], ["can be called"]),
    (type_mismatch_variable, "void(int64[::1], float32[::1])", ["float32", "int64"], ["type"]),
    (array_arithmetic, "void(float32[::1], float32[::1])", ["float32[::1]"], ["index"]),
    (store_complex_into_float, "void(float32[::1], float32[::1])", ["complex128", "float32"],
     None),
    (float_index, "void(float32[::1], float32[::1])", ["integer", "float64"], ["int("]),
    (too_many_args, "void(int64[::1])", ["two_args", "too many"], ["(a, b=1)"]),
    (unknown_keyword, "void(int64[::1])", ["two_args", "'c'"], ["(a, b=1)"]),
    (missing_argument, "void(int64[::1])", ["two_args", "'a'"], ["(a, b=1)"]),
    (math_arity, "void(float32[::1], float32)", ["math_sin_two"], ["@cuda.jit"]),
    (range_arity, "void(int64[::1])", ["range", "1 to 3"], None),
    (returns_value, "void(int64[::1])", ["kernel cannot return"], ["output array"]),
    (calls_recursive, "void(int64[::1])", ["runaway recursion"], ["base case"]),
    (shared_non_constant_shape, "void(float32[::1], int64)", ["compile-time constant"],
     ["constant"]),
    (bad_atomic, "void(int64[::1])", ["1-d", "got 2"], None),
    (calls_broken_helper, "void(int64[::1])", ["broken_helper", "no_such_global"], None),
    (too_many_indices, "void(int64[::1])", ["too many indices"], None),
    (mixed_return, "void(float64[::1])", ["returns both"], ["one type"]),
    # said "must be non-negative integers, got (<gpunb kernel intrinsic ...>,)"
    (shared_shape_from_launch, "void(float32[::1])",
     ["compile-time constant", "cuda.blockDim.x is only known at launch"], ["4th launch"]),
    (local_shape_from_launch, "void(float32[::1])", ["cuda.blockDim.y is only known"],
     ["constant"]),
    # numba's cuda module left in a gpunb kernel said "unsupported operand types: <property>"
    (uses_numbas_cuda, "void(float32[::1])", ["numba's CUDA module"], ["from gpunb import"]),
    (calls_numbas_cuda, "void(float32[::1])", ["numba's CUDA module"], ["from gpunb import"]),
    # "<list> cannot be indexed" and the like said nothing about what to do
    (indexes_a_global_list, "void(float64[::1])", ["<list> cannot be indexed"],
     ["tuple", "numpy array"]),
    (launches_a_kernel, "void(float64[::1])", ["cannot be indexed"], ["dynamic parallelism"]),
    (rebinds_its_array, "void(float64[::1])", ["int64 cannot be indexed"], ["rebound"]),
    (formats_a_string, "void(int64[::1])", ["unsupported operand types for %"],
     ["print(\"x =\", x"]),
]


def _marked(kernel_or_func):
    """(function, line, column within the stripped line, stripped code) of the mark."""
    for func in _candidates(kernel_or_func):
        lines, first = inspect.getsourcelines(func)
        for offset, text in enumerate(lines):
            if "# <- error " in text:
                word = text.split("# <- error ")[1].split()[0]
                code = text.split("# <- error")[0]
                indent = len(code) - len(code.lstrip())
                return func, first + offset, code.index(word) - indent, code.strip()
    raise AssertionError("no error mark")


def _candidates(kernel):
    py = kernel.py_func
    yield py
    for name in py.__code__.co_names:
        obj = py.__globals__.get(name)
        if hasattr(obj, "py_func"):
            yield obj.py_func


@pytest.mark.parametrize("kernel,sig,words,hint", CASES, ids=[c[0].__name__ for c in CASES])
def test_compile_error_points_at_the_line(kernel, sig, words, hint):
    func, line, col, code = _marked(kernel)
    with pytest.raises(gpunb.CompileError) as info:
        cuda.compile_ptx(kernel, sig)
    err = info.value
    text = str(err)
    assert "internal compiler error" not in text, text
    assert err.loc is not None and err.loc.line == line, text
    assert err.loc.filename == inspect.getsourcefile(func)
    assert f"line {line}" in text and "test_errors.py" in text
    for w in words:
        assert w in text, f"{w!r} not in:\n{text}"
    if hint is not None:
        assert err.hint is not None and all(h in err.hint for h in hint), text
    # the source line, then a caret under the offending column
    lines = text.splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.strip() == code or
             ln.strip().startswith(code.split("#")[0].strip()))
    caret = lines[k + 1]
    source = lines[k]
    assert caret.strip().startswith("^"), text
    assert caret.index("^") - (len(source) - len(source.lstrip())) == col, text
    # no chained internal traceback either
    assert err.__cause__ is None


def test_compile_error_at_launch_on_the_target(target):
    with pytest.raises(gpunb.CompileError) as info:
        unknown_name[1, 1](np.zeros(1, np.int64))
    assert "undefined_thing" in str(info.value)


def test_plain_positional_parameters_only():
    def star(out, *rest):
        out[0] = 1

    kernel = cuda.jit(star)
    with pytest.raises(gpunb.CompileError) as info:
        cuda.compile_ptx(kernel, "void(int64[::1])")
    assert "positional" in str(info.value)


# ---- launch errors --------------------------------------------------------------------------

@cuda.jit
def simple(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x


@pytest.mark.parametrize("grid,block,words", [
    (1, 0, ["block"]),
    (1, (0, 1), ["block"]),
    (1, 2048, ["block"]),
    (1, (32, 32, 2), ["block"]),
    (1, (1, 1, 65), ["block"]),
    (-1, 32, ["grid"]),
    (0, 32, ["grid"]),
    ((4, 0), 32, ["grid"]),
    (2**31, 32, ["grid"]),
    ((1, 70000), 32, ["grid"]),
    (1.5, 32, ["grid"]),
    ((1, 1, 1, 1), 32, ["grid"]),
    (1, "x", ["block"]),
])
def test_bad_launch_configuration(target, grid, block, words):
    out = np.zeros(4, np.float64)
    with pytest.raises(gpunb.LaunchError) as info:
        simple[grid, block](out, 1.0)
    text = str(info.value).lower()
    assert "simple" in text
    assert any(w in text for w in words), text
    assert not out.any()


def test_too_much_dynamic_shared_memory(target):
    with pytest.raises(gpunb.LaunchError) as info:
        simple[1, 32, 0, 1 << 30](np.zeros(4), 1.0)
    assert "shared" in str(info.value)


@cuda.jit
def huge_static_shared(out):
    s = cuda.shared.array(40000, np.float64)  # 320 kB: more than any GPU gives a block
    s[cuda.threadIdx.x] = 1
    cuda.syncthreads()
    out[cuda.threadIdx.x] = s[0]


def test_too_much_static_shared_memory(target):
    out = np.zeros(32)
    with pytest.raises(gpunb.LaunchError) as info:
        huge_static_shared[1, 32](out)
    assert "shared memory" in str(info.value) and "320000" in str(info.value)
    assert not out.any()


@pytest.mark.parametrize("args", [(), (np.zeros(4),), (np.zeros(4), 1.0, 2.0)])
def test_wrong_argument_count(target, args):
    with pytest.raises(gpunb.LaunchError) as info:
        simple[1, 32](*args)
    assert "2 arguments" in str(info.value) and str(len(args)) in str(info.value)


@pytest.mark.parametrize("bad", ["text", [1.0, 2.0], object()])
def test_wrong_argument_type(target, bad):
    with pytest.raises(gpunb.LaunchError) as info:
        simple[1, 32](np.zeros(4), bad)
    assert "simple" in str(info.value)


def test_declared_signature_rejects_other_types(target):
    @cuda.jit("void(float32[::1], float32)")
    def declared(out, x):
        out[0] = x

    with pytest.raises(gpunb.LaunchError) as info:
        declared[1, 1](np.zeros(2, np.int32), 1.0)
    assert "declared" in str(info.value)


def test_malformed_launch_syntax():
    with pytest.raises(gpunb.LaunchError):
        simple[1]
    with pytest.raises(gpunb.LaunchError):
        simple[1, 2, 3, 4, 5]


def test_error_in_an_indented_definition_points_at_the_right_column():
    class Holder:
        @cuda.jit
        def nested(out):
            out[0] = also_undefined + 1  # noqa: F821

    with pytest.raises(gpunb.CompileError) as info:
        cuda.compile_ptx(Holder.nested, "void(int64[::1])")
    lines, first = inspect.getsourcelines(Holder.nested.py_func)
    source = next(text for text in lines if "also_undefined" in text)
    err = info.value
    assert err.loc.line == first + lines.index(source)
    assert err.loc.col == source.index("also_undefined")
    text = str(err).splitlines()
    k = next(i for i, ln in enumerate(text) if "also_undefined + 1" in ln)
    assert text[k + 1].index("^") - text[k].index("out[0]") == source.strip().index("also_undef")


def test_a_negative_block_size_says_what_sizes_count(target):
    with pytest.raises(gpunb.LaunchError) as info:
        simple[1, -1](np.zeros(4), 1.0)
    assert "at least 1" in str(info.value) and "hint" in str(info.value)


def test_unknown_dtype_string_says_numbas_words():
    from gpunb import CompileError, cuda

    @cuda.jit
    def f(x):
        a = cuda.local.array(4, "int33")
        a[0] = 1
        x[0] = a[0]

    with pytest.raises(CompileError, match="Invalid NumPy dtype specified: 'int33'"):
        f[1, 1](np.zeros(1))


def test_negated_thread_index_is_not_folded_as_a_constant(target):
    # `x = cuda.threadIdx.x; shape[-x]` once reached constant folding with the intrinsic itself
    # (an internal compiler error); it is a runtime index
    @cuda.jit
    def f(ary, out):
        x = cuda.threadIdx.x
        if x == 1:
            out[0] = ary.shape[-x]

    out = np.zeros(1, np.int64)
    f[1, 2](np.zeros((3, 5)), out)
    assert out[0] == 5


def test_an_error_in_a_callee_says_where_it_was_called_from_in_numbas_words():
    @cuda.jit(device=True)
    def dev_func(x):
        return floor(x)  # noqa: F821 - deliberately undefined

    @cuda.jit
    def kernel_func():
        dev_func(1.5)

    with pytest.raises(gpunb.CompileError) as info:
        kernel_func[1, 1]()
    text = str(info.value)
    assert "NameError: name 'floor' is not defined" in text
    assert "During: resolving callee type: type(CUDADispatcher(<function" in text
    assert "called from 'kernel_func'" in text
