"""Fingerprints: what enters a function's content digest, what does not, and the watch list."""

from __future__ import annotations

import importlib
import textwrap

import numpy as np
import pytest
from cache_support import jit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpunb.cache import collect, invalidate, still_valid
from gpunb.cache.encode import MISSING

KERNEL = """
def kern(out, x, a):
    i = 0
    while i < out.size:
        out[i] = helper(x[i]) * a + SCALE
        i += 1
"""

HELPER = """
def helper(v):
    return v * 2.0 + OFFSET
"""


def define(cells, *texts):
    for text in texts:
        cells.run(text)
    ns = cells.ns
    for name in ("helper", "kern"):
        if name in ns and not hasattr(ns[name], "__gpunb_function__"):
            ns[name] = jit(ns[name])
    return ns


# ---- normalised source -----------------------------------------------------------------------

def test_comments_blank_lines_docstring_and_formatting_do_not_count(cells):
    ns = define(cells, "SCALE = 1.0\nOFFSET = 0.5\n", HELPER, KERNEL)
    before = collect(ns["kern"]).digest
    cells.run('''


def kern(out, x, a):   # the same kernel, reformatted
    """Now with a docstring."""
    i = 0   # start

    while (i < out.size):
        out[i] = (helper(x[i]) * a) + SCALE      # comment
        i += 1
''')
    ns["kern"] = jit(ns["kern"])
    assert collect(ns["kern"]).digest == before


def test_a_real_edit_counts(cells):
    ns = define(cells, "SCALE = 1.0\nOFFSET = 0.5\n", HELPER, KERNEL)
    before = collect(ns["kern"]).digest
    cells.run(KERNEL.replace("* a +", "* a -"))
    ns["kern"] = jit(ns["kern"])
    assert collect(ns["kern"]).digest != before


FIXTURES = [HealthCheck.function_scoped_fixture]  # the cells fixture is reused on purpose
_BODY = ["i = 0", "while i < out.size:", "    out[i] = x[i] * a + SCALE", "    i += 1"]


@st.composite
def reformatted(draw):
    """The kernel above with random comments, blank lines, indentation width and docstring."""
    unit = draw(st.sampled_from([2, 3, 4, 8]))
    lines = ["def kern(out, x, a):" + draw(st.sampled_from(["", "  # c", " #"]))]
    if draw(st.booleans()):
        lines.append(" " * unit + '"""doc ' + draw(st.text("abc xyz", max_size=8)) + '"""')
    for body in _BODY:
        for _ in range(draw(st.integers(0, 2))):
            lines.append(draw(st.sampled_from(["", " " * unit + "# note", "#x"])))
        depth = 2 if body.startswith("    ") else 1
        comment = draw(st.sampled_from(["", "  # why", "\t# tab"]))
        lines.append(" " * (unit * depth) + body.strip() + comment)
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURES)
@given(text=reformatted())
def test_hypothesis_reformatting_keeps_the_digest(cells, text):
    cells.ns["SCALE"] = 1.0
    cells.run(_canonical_kernel())
    base = collect(jit(cells.ns["kern"])).digest
    cells.run(text)
    assert collect(jit(cells.ns["kern"])).digest == base


def _canonical_kernel() -> str:
    return "def kern(out, x, a):\n" + "".join(
        ("        " if b.startswith("    ") else "    ") + b.strip() + "\n" for b in _BODY)


@settings(max_examples=30, deadline=None, suppress_health_check=FIXTURES)
@given(constant=st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: v != 1.0))
def test_hypothesis_changing_a_literal_changes_the_digest(cells, constant):
    cells.ns["SCALE"] = 1.0
    cells.run(_canonical_kernel())
    base = collect(jit(cells.ns["kern"])).digest
    cells.run(_canonical_kernel().replace("SCALE", repr(constant)))
    assert collect(jit(cells.ns["kern"])).digest != base


# ---- globals -----------------------------------------------------------------------------------

def test_globals_read_count_and_globals_not_read_do_not(cells):
    ns = define(cells, "SCALE = 1.0\nOFFSET = 0.5\nUNUSED = 7\n", HELPER, KERNEL)
    fp = collect(ns["kern"])
    ns["UNUSED"] = 8
    assert still_valid(fp.watch)
    assert collect(ns["kern"]).digest == fp.digest
    ns["SCALE"] = 2.0
    assert not still_valid(fp.watch)
    assert collect(ns["kern"]).digest != fp.digest
    ns["SCALE"] = 1.0  # back to an equal value: the same content again
    assert collect(ns["kern"]).digest == fp.digest


def test_value_types_are_distinguished(cells):
    cells.ns["OFFSET"] = 0.5
    define(cells, HELPER, KERNEL)
    digests = set()
    for value in (1, 1.0, True, np.float32(1), np.float64(1), np.int32(1), (1,), (1.0,), None,
                  -0.0, 0.0, 1 + 0j):
        cells.ns["SCALE"] = value
        digests.add(collect(cells.ns["kern"]).digest)
    assert len(digests) == 12


def test_numpy_arrays_by_dtype_shape_and_content(cells):
    cells.run("def kern(out):\n    out[0] = TABLE[1]\n")
    kern = jit(cells.ns["kern"])
    cells.ns["TABLE"] = np.arange(4, dtype=np.float32)
    base = collect(kern).digest
    cells.ns["TABLE"] = np.arange(4, dtype=np.float32)  # a new, equal array: same content
    assert collect(kern).digest == base
    for other in (np.arange(4, dtype=np.float64), np.arange(4, dtype=np.float32).reshape(2, 2),
                  np.array([0, 9, 2, 3], dtype=np.float32)):
        cells.ns["TABLE"] = other
        assert collect(kern).digest != base
    # mutated in place: invisible to identity checks, seen once the epoch moves on
    table = cells.ns["TABLE"] = np.arange(4, dtype=np.float32)
    fp = collect(kern)
    table[1] = 42
    assert still_valid(fp.watch)
    invalidate()
    assert not still_valid(fp.watch)
    assert collect(kern).digest != fp.digest


def test_modules_classes_builtins_and_dtypes_by_name(cells):
    cells.run("import math\nimport numpy as np\n"
              "def kern(out):\n    out[0] = math.sqrt(np.float32(2.0)) + abs(-1) + len(out)\n")
    kern = jit(cells.ns["kern"])
    fp = collect(kern)
    names = {d.name: d for d in fp.dependencies}
    assert {"math.sqrt", "np.float32", "abs", "len"} <= set(names)
    assert names["math.sqrt"].defined_at == "module math"
    # library attributes are not watched; the global names are
    watched = {entry[1] for entry in fp.watch}
    assert {"math", "np", "abs", "len"} <= watched and "sqrt" not in watched
    assert collect(kern).digest == fp.digest


def test_builtins_shadowed_later_are_seen(cells):
    cells.run("def kern(out):\n    out[0] = abs(-1)\n")
    kern = jit(cells.ns["kern"])
    fp = collect(kern)
    assert still_valid(fp.watch)
    cells.run("def abs(v):\n    return v\n")
    assert not still_valid(fp.watch)
    assert collect(kern).digest != fp.digest


def test_local_names_are_not_globals(cells):
    cells.run("N = 3\ndef kern(out):\n    N = 5\n    s = sum([k for k in range(N)])\n"
              "    out[0] = N + s\n")
    fp = collect(jit(cells.ns["kern"]))
    names = {d.name for d in fp.dependencies}
    assert "N" not in names and "k" not in names and "s" not in names
    assert {"sum", "range"} <= names


INNER_FUNCTIONS = """
v = np.arange(10.0)
w = 1.0
h = 2.0
G = 3.0
def kern(out, a):
    def f(v, d=G):
        w = v * d
        def h(u):
            return u
        return h(w)
    g = lambda w: w + OFFSET
    out[0] = g(f(a[0]))
"""


def test_names_of_inner_functions_are_not_globals(cells):
    """An inner function's parameters and variables are its own: notebook globals with the same
    names (`v`, `w`, `h`) are not read, so changing them must not change the key; the globals the
    inner functions do read (a default `G`, `OFFSET`) still count."""
    cells.ns["np"] = np
    cells.run("OFFSET = 0.5\n" + INNER_FUNCTIONS)
    fp = collect(jit(cells.ns["kern"]))
    names = {d.name for d in fp.dependencies}
    assert not names & {"v", "w", "h", "a", "u", "d"}
    assert {"G", "OFFSET"} <= names
    cells.ns["v"] = np.zeros(3)
    assert still_valid(fp.watch)


def test_attribute_chains_through_objects_are_resolved(cells):
    cells.run("class Config:\n    BLOCK = 128\n\ndef kern(out):\n    out[0] = Config.BLOCK\n")
    kern = jit(cells.ns["kern"])
    fp = collect(kern)
    dep = next(d for d in fp.dependencies if d.name == "Config.BLOCK")
    assert dep.value == "128"
    cells.ns["Config"].BLOCK = 256  # a class attribute assigned: watched through the class
    assert not still_valid(fp.watch)
    assert collect(kern).digest != fp.digest


def test_unknown_objects_are_encoded_without_repr(cells):
    class Opaque:
        def __repr__(self):
            return f"<Opaque at {id(self):x}>"

    cells.run("def kern(out):\n    out[0] = THING.value\n")
    kern = jit(cells.ns["kern"])
    cells.ns["THING"] = Opaque()
    cells.ns["THING"].value = 1
    first = collect(kern).digest
    cells.ns["THING"] = Opaque()  # another instance, another repr, same content read
    cells.ns["THING"].value = 1
    assert collect(kern).digest == first


# ---- GPU functions, defaults, closures ---------------------------------------------------------

def test_transitive_helper_change_and_watch(cells):
    ns = define(cells, "SCALE = 1.0\nOFFSET = 0.5\n", HELPER, KERNEL)
    fp = collect(ns["kern"])
    helper_dep = next(d for d in fp.dependencies if d.name == "helper")
    assert helper_dep.kind == "gpu function"
    assert helper_dep.defined_at.startswith("Cell In[")
    nested = next(d for d in fp.dependencies if d.name == "OFFSET")
    assert nested.via == ("helper",)
    ns["OFFSET"] = 0.25  # read by the helper only
    assert not still_valid(fp.watch)
    assert collect(ns["kern"]).digest != fp.digest


def test_three_levels_deep(cells):
    cells.run("def c(v):\n    return v + DEEP\n")
    cells.ns["c"] = jit(cells.ns["c"])
    cells.run("def b(v):\n    return c(v) * 2\n")
    cells.ns["b"] = jit(cells.ns["b"])
    cells.run("def a(out):\n    out[0] = b(1.0)\n")
    kern = jit(cells.ns["a"])
    cells.ns["DEEP"] = 1
    fp = collect(kern)
    assert any(d.name == "DEEP" and d.via == ("b", "c") for d in fp.dependencies)
    cells.ns["DEEP"] = 2
    assert not still_valid(fp.watch)
    assert collect(kern).digest != fp.digest


def test_dependency_tree_puts_what_each_callee_reads_under_it(cells, modules):
    """`from mod import f, g` and `mod.g`: each callee's reads are listed under it, "via" the name
    the kernel calls it by (explain()'s tree once showed f's globals under `mod.g`)."""
    mod = modules.write("treemod", """
        from cache_support import jit
        A = 2.0
        B = 3.0
        @jit
        def inner(x):
            return x * B
        @jit
        def f(x):
            return inner(x) * A
        @jit
        def g(x):
            return x + B
    """)
    cells.ns.update(f=mod.f, g=mod.g, treemod=mod)
    cells.run("def kern(out):\n    out[0] = f(1.0) + g(2.0) + treemod.g(1.0)\n")
    tree = [(depth, d.name, d.via) for depth, d in collect(jit(cells.ns["kern"])).dependency_tree()]
    assert tree == [(0, "f", ()), (1, "A", ("f",)), (1, "inner", ("f",)),
                    (2, "B", ("f", "inner")),
                    (0, "g", ()), (1, "B", ("g",)),
                    (0, "treemod.g", ()), (1, "B", ("treemod.g",))]


def test_recursion_does_not_loop(cells):
    cells.run("def f(v):\n    return g(v)\n\ndef g(v):\n    return f(v)\n")
    cells.ns["f"], cells.ns["g"] = jit(cells.ns["f"]), jit(cells.ns["g"])
    assert collect(cells.ns["f"]).digest


def test_default_values_count(cells):
    cells.run("def kern(out, a=2.0):\n    out[0] = a\n")
    first = collect(jit(cells.ns["kern"]))
    assert any(d.kind == "default" and d.name == "a" and d.value == "2.0"
               for d in first.dependencies)
    cells.run("def kern(out, a=3.0):\n    out[0] = a\n")
    assert collect(jit(cells.ns["kern"])).digest != first.digest
    cells.run("def kern(out, *, a=2.0):\n    out[0] = a\n")  # keyword-only: another signature
    assert collect(jit(cells.ns["kern"])).digest != first.digest


def test_annotations_count(cells):
    from gpunb.foundation import types as t

    cells.ns.update(float32=t.float32, float64=t.float64)
    cells.run("def kern(out: float32[:]):\n    out[0] = 1\n")
    first = collect(jit(cells.ns["kern"])).digest
    cells.run("def kern(out: float64[:]):\n    out[0] = 1\n")
    assert collect(jit(cells.ns["kern"])).digest != first


def test_callee_options_count(cells):
    cells.run("def helper(v):\n    return v\n\ndef kern(out):\n    out[0] = helper(1.0)\n")
    py_helper, kern = cells.ns["helper"], jit(cells.ns["kern"])
    cells.ns["helper"] = jit(py_helper)
    first = collect(kern).digest
    cells.ns["helper"] = jit(py_helper, fastmath=True)
    assert collect(kern).digest != first


def test_closure_factory_one_key_per_captured_value(modules):
    mod = modules.write("factory_mod", """
        from cache_support import jit

        def make(k):
            @jit
            def kern(out):
                out[0] = k
            return kern
    """)
    one, two, one_again = mod.make(1), mod.make(2), mod.make(1)
    fp1, fp2, fp1b = collect(one), collect(two), collect(one_again)
    assert fp1.digest != fp2.digest
    assert fp1.digest == fp1b.digest
    dep = next(d for d in fp1.dependencies if d.name == "k")
    assert dep.kind == "closure" and dep.value == "1"


def test_closure_cell_rebinding_is_watched(modules):
    mod = modules.write("cell_mod", """
        from cache_support import jit

        def make():
            k = 1
            @jit
            def kern(out):
                out[0] = k
            def set_k(v):
                nonlocal k
                k = v
            return kern, set_k
    """)
    kern, set_k = mod.make()
    fp = collect(kern)
    set_k(5)
    assert not still_valid(fp.watch)
    assert collect(kern).digest != fp.digest


def test_closure_capturing_a_gpu_function(modules):
    mod = modules.write("closure_gpu_mod", """
        from cache_support import jit

        def make(op):
            @jit
            def kern(out):
                out[0] = op(1.0)
            return kern

        @jit
        def double(v):
            return v * 2

        @jit
        def triple(v):
            return v * 3
    """)
    a, b = collect(mod.make(mod.double)), collect(mod.make(mod.triple))
    assert a.digest != b.digest
    assert any(d.kind == "gpu function" and d.name == "op" for d in a.dependencies)


# ---- modules -----------------------------------------------------------------------------------

def test_module_attribute_chain_and_reload(modules):
    modules.write("helpers_b", """
        from cache_support import jit

        N = 1

        @jit
        def helper(v):
            return v + 1
    """)
    kern_mod = modules.write("kernels_a", """
        import helpers_b
        from cache_support import jit

        @jit
        def kern(out):
            out[0] = helpers_b.helper(2.0) + helpers_b.N
    """)
    fp = collect(kern_mod.kern)
    assert {"helpers_b.helper", "helpers_b.N"} <= {d.name for d in fp.dependencies}
    dep = next(d for d in fp.dependencies if d.name == "helpers_b.helper")
    assert dep.defined_at.endswith('helpers_b.py", line 6')
    # edit the file: the running module is unchanged until it is reloaded
    modules.edit("helpers_b", """
        from cache_support import jit

        N = 1

        @jit
        def helper(v):
            return v + 2
    """)
    assert still_valid(fp.watch)
    importlib.reload(importlib.import_module("helpers_b"))
    assert not still_valid(fp.watch)
    after = collect(kern_mod.kern)
    assert after.digest != fp.digest
    # assigning a module attribute is a rebinding too
    import helpers_b

    helpers_b.N = 2
    assert not still_valid(after.watch)
    assert collect(kern_mod.kern).digest != after.digest


def test_helper_reexported_through_a_second_module(modules):
    modules.write("reexp_b", """
        from cache_support import jit

        @jit
        def helper(v):
            return v + 1
    """)
    modules.write("reexp_c", "from reexp_b import helper  # re-exported\n")
    kern_mod = modules.write("reexp_a", """
        import reexp_c
        from cache_support import jit

        @jit
        def kern(out):
            out[0] = reexp_c.helper(2.0)
    """)
    fp = collect(kern_mod.kern)
    modules.edit("reexp_b", """
        from cache_support import jit

        @jit
        def helper(v):
            return v + 3
    """)
    importlib.reload(importlib.import_module("reexp_b"))
    # Python semantics: reexp_c.helper is still the old function until reexp_c is re-executed
    assert still_valid(fp.watch)
    assert collect(kern_mod.kern).digest == fp.digest
    importlib.reload(importlib.import_module("reexp_c"))
    assert not still_valid(fp.watch)
    assert collect(kern_mod.kern).digest != fp.digest


def test_same_function_in_two_directories_has_the_same_digest(tmp_path, monkeypatch):
    text = textwrap.dedent("""
        from cache_support import jit
        LIMIT = 4

        @jit
        def kern(out):
            if out.size > LIMIT:
                out[0] = 1.0
    """)
    digests, files = [], []
    for i, prefix in enumerate(("", "\n\n\n# moved down\n")):
        folder = tmp_path / f"dir{i}"
        folder.mkdir()
        (folder / f"same_kern_{i}.py").write_text(prefix + text)
        monkeypatch.syspath_prepend(str(folder))
        mod = importlib.import_module(f"same_kern_{i}")
        fp = collect(mod.kern)
        digests.append(fp.digest)
        files.append((fp.filename, fp.first_line))
    assert digests[0] == digests[1]
    assert files[0] != files[1]


def test_epoch_invalidates_and_memo_returns_the_same_object(cells):
    ns = define(cells, "SCALE = 1.0\nOFFSET = 0.5\n", HELPER, KERNEL)
    fp = collect(ns["kern"])
    assert collect(ns["kern"]) is fp  # memoised while the watch list holds
    invalidate()
    assert not still_valid(fp.watch)
    again = collect(ns["kern"])
    assert again is not fp and again.digest == fp.digest and still_valid(again.watch)


def test_swapped_code_object_is_seen(cells):
    """IPython's autoreload swaps __code__ in place; the epoch bump after the cell catches it."""
    cells.run("def kern(out):\n    out[0] = 1\n")
    kern = jit(cells.ns["kern"])
    fp = collect(kern)
    cells.run("def other(out):\n    out[0] = 2\n")
    kern.py_func.__code__ = cells.ns["other"].__code__
    assert collect(kern).digest != fp.digest


def test_missing_names_are_watched(cells):
    cells.run("def kern(out):\n    out[0] = LATER\n")
    kern = jit(cells.ns["kern"])
    fp = collect(kern)
    assert ("LATER" in [e[1] for e in fp.watch]) and any(e[2] is MISSING for e in fp.watch)
    cells.ns["LATER"] = 1
    assert not still_valid(fp.watch)


def test_source_unavailable_is_a_compile_error():
    import ast

    from gpunb.foundation.errors import CompileError

    ns: dict = {}
    # compiled from a syntax tree: no file, no linecache entry, no text for gpunb to record
    exec(compile(ast.parse("def f(x):\n    return x\n"), "<tree>", "exec"), ns)  # noqa: S102
    with pytest.raises(CompileError, match="cannot read the source of 'f'"):
        collect(jit(ns["f"]))


def test_exec_strings_are_fingerprinted_by_their_text():
    first, second, again = {}, {}, {}
    exec("def f(x):\n    return x + 1\n", first)  # noqa: S102 - its text is recorded
    exec("def f(x):\n    return x + 2\n", second)  # noqa: S102
    exec("def f(x):\n    return x + 1\n", again)  # noqa: S102
    digests = [collect(jit(ns["f"])).digest for ns in (first, second, again)]
    assert digests[0] != digests[1] and digests[0] == digests[2]


def test_real_dispatcher_objects_are_gpu_functions(modules):
    mod = modules.write("real_disp_mod", """
        from gpunb import cuda

        @cuda.jit(device=True)
        def scale(x):
            return x * 2.0

        @cuda.jit(fastmath=True)
        def kern(out, x):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = scale(x[i])
    """)
    fp = collect(mod.kern)
    assert any(d.kind == "gpu function" and d.name == "scale" for d in fp.dependencies)
    assert any(d.name == "cuda.grid" for d in fp.dependencies)


def test_callee_declared_signatures_count(cells):
    cells.run("def helper(v):\n    return v\n\ndef kern(out):\n    out[0] = helper(1.0)\n")
    py_helper, kern = cells.ns["helper"], jit(cells.ns["kern"])
    cells.ns["helper"] = jit(py_helper)
    first = collect(kern).digest
    declared = jit(py_helper)
    declared.declared_signatures = ("float32(float32)",)
    cells.ns["helper"] = declared
    assert collect(kern).digest != first
