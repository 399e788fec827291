"""Ways a cache could serve stale or wrong code, with the real dispatcher (CPU target).

Each scenario changes something a kernel depends on and checks three things: the numbers are
right, the miss names the change, and a launch with nothing changed is served without a compile.
A "new process" is simulated by forgetting the memory cache and running the cells again (new
function objects), so the next lookup reads the disk entry written earlier.
"""

from __future__ import annotations

import importlib
import math
import os
import sys
import time

import numpy as np
import pytest
from cache_support import Cells

import gpunb
from gpunb import cache, cuda


@pytest.fixture(autouse=True)
def cpu_target(cache_dir):
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _cells() -> Cells:
    made = Cells()
    made.ns.update(cuda=cuda, np=np)
    return made


@pytest.fixture
def nb():
    return _cells()


def _run(kernel, dtype=np.float32, value: float = 1.0) -> list:
    out = np.zeros(4, dtype=dtype)
    kernel[1, 4](out, dtype(value))
    return out.tolist()


def _event(kernel, dtype=np.float32):
    (info,) = [i for i in kernel.cache_info() if np.dtype(dtype).name in i["signature"]]
    return info["event"]


def _unchanged_launch_is_served(kernel, expected: list, dtype=np.float32) -> None:
    specs = dict(kernel.specializations)
    assert _run(kernel, dtype) == expected
    assert kernel.specializations == specs  # the same specialisation objects: nothing rebuilt


def _new_process(text: str) -> dict:
    cache.default_cache().forget_memory()
    return _cells().run(text)


# ---- keys must describe the code compiled now -------------------------------------------------

TABLE_KERNEL = """
TABLE = np.array([1.0, 2.0])

@cuda.jit
def lookup(out, x):
    out[cuda.threadIdx.x] = TABLE[1] * x
"""


def test_in_place_write_then_a_new_signature_keys_the_values_it_compiled(nb):
    """A digest memoised before `TABLE[1] = 7` keyed the float64 code compiled after it, so a
    later process whose TABLE held 2.0 got a disk hit that multiplied by 7."""
    nb.run(TABLE_KERNEL)
    k = nb.ns["lookup"]
    assert _run(k) == [2.0] * 4
    nb.ns["TABLE"][1] = 7.0  # in place: the float32 code keeps 2.0, as numba's would
    assert _run(k, np.float64) == [7.0] * 4  # compiled now: it freezes 7.0
    assert _run(k) == [2.0] * 4
    cache.invalidate()  # what a notebook's next cell does: re-read, and the float32 code follows
    assert _run(k) == [7.0] * 4
    assert _event(k).why.startswith("changed: global `TABLE`")
    assert "[1.0, 2.0] -> array float64 [1.0, 7.0]" in _event(k).why

    ns = _new_process(TABLE_KERNEL)
    assert _run(ns["lookup"], np.float64) == [2.0] * 4
    assert _event(ns["lookup"], np.float64).kind == "miss"
    ns2 = _new_process(TABLE_KERNEL.replace("[1.0, 2.0]", "[1.0, 7.0]"))
    assert _run(ns2["lookup"], np.float64) == [7.0] * 4
    assert _event(ns2["lookup"], np.float64).source == "disk"  # the entry written above


MUTUAL = """
@cuda.jit(device=True)
def a(x, y=None):
    if y is None:  # pruned when y is a number: the compiled call graph has no cycle
        return b(x)
    return x + {inc}

@cuda.jit(device=True)
def b(x):
    return a(x, 1.0) * 2.0

@cuda.jit
def via_a(out, x):
    out[cuda.threadIdx.x] = a(x)

@cuda.jit
def via_b(out, x):
    out[cuda.threadIdx.x] = b(x)
"""


def test_a_call_cycle_is_keyed_by_content_whichever_kernel_comes_first(nb):
    """`b`'s digest computed inside `a`'s named `a` only by name and was memoised, so `via_b`'s
    key left out `a`'s body: a process with `a` edited got the old code from disk."""
    nb.run(MUTUAL.format(inc="100.0"))
    assert _run(nb.ns["via_a"]) == [202.0] * 4
    assert _run(nb.ns["via_b"]) == [202.0] * 4
    cache.default_cache().forget_memory()
    nb.run(MUTUAL.format(inc="300.0"))
    assert _run(nb.ns["via_a"]) == [602.0] * 4
    assert _run(nb.ns["via_b"]) == [602.0] * 4
    event = _event(nb.ns["via_b"])
    assert event.kind == "miss" and "device function `a`" in event.why
    _unchanged_launch_is_served(nb.ns["via_b"], [602.0] * 4)


def test_a_callees_jit_options_are_named_when_they_change(nb):
    nb.run("""
@cuda.jit(device=True)
def half(v):
    return v * 0.5

@cuda.jit
def k(out, x):
    out[cuda.threadIdx.x] = half(x)
""")
    k = nb.ns["k"]
    assert _run(k) == [0.5] * 4
    nb.run("@cuda.jit(device=True, fastmath=True)\ndef half(v):\n    return v * 0.5\n")
    assert _run(k) == [0.5] * 4
    event = _event(k)
    assert event.kind == "miss"
    assert event.why.startswith("changed: options of device function `half`")
    assert "jit() -> jit(fastmath=True)" in event.why
    nb.run("@cuda.jit('float32(int32)', device=True, fastmath=True)\n"
           "def half(v):\n    return v * 0.5\n")
    assert _run(k, value=3.0) == [1.5] * 4  # 3.0 -> int32 3 -> 1.5
    assert _run(k, value=3.75) == [1.5] * 4  # the declared int32 truncates
    assert "'float32(int32)'" in _event(k).why
    _unchanged_launch_is_served(k, [0.5] * 4)


def test_two_live_kernels_of_one_name_are_explained_against_their_own_code(nb):
    """`k_old = k`, then `k` redefined in a later cell: both stay live. When a helper changes,
    each recompile says the helper changed (not "source of `k`", which is the other function's
    latest entry of that name), and explain() tells each one's own last event."""
    nb.run("@cuda.jit(device=True)\ndef helper(v):\n    return v * 10\n\n"
           "@cuda.jit\ndef k(out, x):\n    out[cuda.threadIdx.x] = helper(x)\n")
    k_old = nb.ns["k"]
    assert _run(k_old) == [10.0] * 4
    nb.run("@cuda.jit\ndef k(out, x):\n    out[cuda.threadIdx.x] = -helper(x)\n")
    k_new = nb.ns["k"]
    assert _run(k_new) == [-10.0] * 4
    nb.run("@cuda.jit(device=True)\ndef helper(v):\n    return v + 100\n")
    helper_cell = nb.last_label
    assert _run(k_old) == [101.0] * 4
    assert _run(k_new) == [-101.0] * 4
    for kernel in (k_old, k_new):
        event = _event(kernel)
        assert event.kind == "miss"
        assert event.why == f"changed: device function `helper` defined at {helper_cell}, line 1"
    explained = str(cache.explain(k_old))
    assert f"key {_event(k_old).key}" in explained
    assert "next launch recompiles" not in explained
    _unchanged_launch_is_served(k_old, [101.0] * 4)
    _unchanged_launch_is_served(k_new, [-101.0] * 4)


# ---- gpunb.fuse: a plan is a trace, and the trace froze what the function read -----------------

FUSED = """
SCALE = 2.0

def helper(v):
    return v * SCALE

@gpunb.fuse
def direct(x):
    return x * SCALE + 1

@gpunb.fuse
def through_helper(x):
    return helper(x) + 1
"""


def test_fused_functions_retrace_when_a_global_or_a_helper_changes(nb):
    """Plans were memoised per argument signature for ever: SCALE = 3.0 or a redefined helper
    kept the first trace's numbers."""
    nb.ns["gpunb"] = gpunb
    nb.run(FUSED)
    x = np.arange(4, dtype=np.float32)
    direct, through = nb.ns["direct"], nb.ns["through_helper"]
    assert direct(x).tolist() == (x * 2 + 1).tolist()
    assert through(x).tolist() == (x * 2 + 1).tolist()
    plan = next(iter(direct._plans.values()))
    nb.run("SCALE = 2.0\n")  # rebound to an equal value: the same content, the same plan
    assert direct(x).tolist() == (x * 2 + 1).tolist()
    assert next(iter(direct._plans.values())) is plan
    nb.run("SCALE = 3.0\n")
    assert direct(x).tolist() == (x * 3 + 1).tolist()
    assert through(x).tolist() == (x * 3 + 1).tolist()  # read by the helper, not the function
    nb.run("def helper(v):\n    return v * 10.0\n")
    assert through(x).tolist() == (x * 10 + 1).tolist()
    assert direct(x).tolist() == (x * 3 + 1).tolist()
    plan = next(iter(through._plans.values()))
    assert through(x).tolist() == (x * 10 + 1).tolist()
    assert next(iter(through._plans.values())) is plan  # unchanged: no new trace


def test_a_fused_function_retraces_when_a_fused_function_it_calls_is_redefined(nb):
    """A fused function called while tracing is inlined: its body is part of the caller's
    content, so redefining it in a later cell must drop the caller's plans."""
    nb.ns["gpunb"] = gpunb
    nb.run("@gpunb.fuse\ndef inner(x):\n    return x + 1\n\n"
           "@gpunb.fuse\ndef outer(x):\n    return inner(x) * 2\n")
    x = np.arange(3, dtype=np.float32)
    assert nb.ns["outer"](x).tolist() == [2.0, 4.0, 6.0]
    nb.run("@gpunb.fuse\ndef inner(x):\n    return x + 100\n")
    assert nb.ns["outer"](x).tolist() == [200.0, 202.0, 204.0]


def test_a_fused_lambda_retraces_in_a_new_epoch(nb):
    """No source to fingerprint: its plans last one epoch (a notebook cell), never for ever."""
    nb.ns["gpunb"] = gpunb
    nb.run("K = 2.0\nf = gpunb.fuse(lambda x: x * K)\n")
    x = np.arange(3, dtype=np.float32)
    assert nb.ns["f"](x).tolist() == [0.0, 2.0, 4.0]
    nb.run("K = 5.0\n")
    cache.invalidate()  # what the notebook's post-cell hook does
    assert nb.ns["f"](x).tolist() == [0.0, 5.0, 10.0]


def test_a_global_record_array_with_out_of_order_fields(nb):
    """The dtype was encoded by `descr`, which numpy refuses for out-of-order fields: the
    fingerprint raised and the kernel could not compile at all."""
    layout = {"names": ["a", "b"], "formats": ["f4", "f4"], "itemsize": 8}
    table = np.zeros(2, np.dtype({**layout, "offsets": [4, 0]}))
    table["a"], table["b"] = 5.0, 7.0
    nb.ns["T"] = table
    nb.run("@cuda.jit\ndef field_a(out, x):\n    out[cuda.threadIdx.x] = T[1].a * x\n")
    k = nb.ns["field_a"]
    assert _run(k) == [5.0] * 4
    nb.ns["T"] = table.view(np.dtype({**layout, "offsets": [0, 4]}))  # same bytes, a <-> b
    assert _run(k) == [7.0] * 4
    assert _event(k).why.startswith("changed: global `T`")
    _unchanged_launch_is_served(k, [7.0] * 4)


# ---- what a kernel reads, and how it can change in a live process ------------------------------

HELPERS = """
from gpunb import cuda

@cuda.jit(device=True)
def helper(v):
    return v + {inc}

@cuda.jit(device=True)
def other(v):
    return v + 50.0
"""


@pytest.fixture
def package(modules):
    """package(name, {module: text}) writes a package under the `modules` folder."""
    written: list[str] = []

    def write(name: str, files: dict) -> None:
        (modules.path / name).mkdir()
        for module, text in files.items():
            (modules.path / name / f"{module}.py").write_text(text)
        importlib.invalidate_caches()
        written.extend([name, *(f"{name}.{m}" for m in files)])

    yield write
    for module in written:
        sys.modules.pop(module, None)


def test_a_submodule_attribute_and_a_rebound_submodule(nb, package):
    package("consts_pkg", {"__init__": "from . import sub\n", "sub": "CONST = 2.0\n"})
    nb.run("import consts_pkg\n"
           "@cuda.jit\ndef k(out, x):\n    out[cuda.threadIdx.x] = x * consts_pkg.sub.CONST\n")
    k, pkg = nb.ns["k"], nb.ns["consts_pkg"]
    assert _run(k) == [2.0] * 4
    pkg.sub.CONST = 3.0
    assert _run(k) == [3.0] * 4
    assert _event(k).why.startswith("changed: global `consts_pkg.sub.CONST`")
    assert _event(k).why.endswith("2.0 -> 3.0")
    _unchanged_launch_is_served(k, [3.0] * 4)
    replacement = type(pkg)("replacement")
    replacement.CONST = 4.0
    pkg.sub = replacement
    assert _run(k) == [4.0] * 4
    assert "consts_pkg.sub.CONST" in _event(k).why


def test_monkeypatched_helper_reload_and_a_from_import_alias(nb, modules):
    modules.write("helpers_mod", HELPERS.format(inc="1.0"))
    nb.run("import helpers_mod\nfrom helpers_mod import helper as h\n"
           "@cuda.jit\ndef by_attr(out, x):\n    out[cuda.threadIdx.x] = helpers_mod.helper(x)\n"
           "@cuda.jit\ndef by_alias(out, x):\n    out[cuda.threadIdx.x] = h(x)\n")
    by_attr, by_alias, mod = nb.ns["by_attr"], nb.ns["by_alias"], nb.ns["helpers_mod"]
    assert _run(by_attr) == _run(by_alias) == [2.0] * 4
    mod.helper = mod.other
    assert _run(by_attr) == [51.0] * 4
    assert _event(by_attr).why.startswith("changed: device function `helpers_mod.helper`")
    modules.edit("helpers_mod", HELPERS.format(inc="10.0"))
    importlib.reload(mod)
    assert _run(by_attr) == [11.0] * 4
    assert "`helpers_mod.helper`" in _event(by_attr).why
    _unchanged_launch_is_served(by_attr, [11.0] * 4)
    # Python's meaning: `h` is still the function imported before the reload, old code and all
    assert _run(by_alias) == [2.0] * 4
    assert _run(by_alias, np.float64) == [2.0] * 4  # a new compile of the old function


def test_a_helper_re_exported_by_a_package(nb, modules, package):
    package("export_pkg", {"impl": HELPERS.format(inc="1.0"),
                           "__init__": "from .impl import helper\n"})
    nb.run("import export_pkg\n"
           "@cuda.jit\ndef k(out, x):\n    out[cuda.threadIdx.x] = export_pkg.helper(x)\n")
    k = nb.ns["k"]
    assert _run(k) == [2.0] * 4
    modules.edit("export_pkg/impl", HELPERS.format(inc="7.0"))
    importlib.reload(nb.ns["export_pkg"].impl)
    importlib.reload(nb.ns["export_pkg"])
    assert _run(k) == [8.0] * 4
    assert _event(k).why.startswith("changed: device function `export_pkg.helper`")


def test_factories_over_captured_device_functions(nb):
    nb.run("""
@cuda.jit(device=True)
def plus1(v):
    return v + 1.0

@cuda.jit(device=True)
def plus2(v):
    return v + 2.0

def make(f):
    @cuda.jit
    def apply(out, x):
        out[cuda.threadIdx.x] = f(x)
    return apply
""")
    one, two = nb.ns["make"](nb.ns["plus1"]), nb.ns["make"](nb.ns["plus2"])
    assert _run(one) == [2.0] * 4 and _run(two) == [3.0] * 4
    assert one.cache_info()[0]["key"] != two.cache_info()[0]["key"]
    nb.run("@cuda.jit(device=True)\ndef plus2(v):\n    return v + 20.0\n")
    assert _run(two) == [3.0] * 4  # the closure holds the old plus2: Python's meaning
    again = nb.ns["make"](nb.ns["plus2"])
    assert _run(again) == [21.0] * 4


def test_dtype_global_default_value_and_a_deleted_global(nb):
    nb.run("""
DT = np.float32
OFFSET = (1.0, 2.0)

@cuda.jit(device=True)
def add(v, k=1.0):
    return v + k

@cuda.jit
def k(out, x):
    buf = cuda.local.array(2, DT)
    buf[0] = x + OFFSET[1] + 0.5
    out[cuda.threadIdx.x] = add(buf[0])
""")
    k = nb.ns["k"]
    assert _run(k) == [4.5] * 4
    nb.run("DT = np.int32\n")  # the local array truncates 3.5 to 3
    assert _run(k) == [4.0] * 4
    assert _event(k).why.startswith("changed: global `DT`")
    nb.run("@cuda.jit(device=True)\ndef add(v, k=5.0):\n    return v + k\n")
    assert _run(k) == [8.0] * 4
    assert "default value of `k`" in _event(k).why and "1.0 -> 5.0" in _event(k).why
    nb.run("OFFSET = (1.0, 4.0)\n")
    assert _run(k) == [10.0] * 4
    assert "(1.0, 2.0) -> (1.0, 4.0)" in _event(k).why
    _unchanged_launch_is_served(k, [10.0] * 4)
    nb.run("del OFFSET\n")
    with pytest.raises(gpunb.CompileError, match="name 'OFFSET' is not defined"):
        _run(k)


def test_a_self_call_has_one_digest_at_any_depth(nb):
    """Pruned self-recursion: the digest of `f` must not depend on who fingerprinted it first,
    or the same kernel gets another key in the next process (a needless miss)."""
    from gpunb.cache.fingerprint import collect

    text = """
@cuda.jit(device=True)
def f(x, y=None):
    if y is None:
        return f(x, 1.0) + 1.0
    return x

@cuda.jit
def k(out, x):
    out[cuda.threadIdx.x] = f(x)
"""
    nb.run(text)
    assert _run(nb.ns["k"]) == [2.0] * 4
    via_kernel = collect(nb.ns["k"]).digest  # f first met one level down
    nb.run(text)
    alone = collect(nb.ns["f"]).digest  # f first met at the top
    assert collect(nb.ns["k"]).digest == via_kernel
    nb.run(text)
    collect(nb.ns["k"])
    assert collect(nb.ns["f"]).digest == alone


def test_nan_and_minus_nan_globals_have_their_own_keys(nb):
    """Both print 'nan', so they shared a key: a process with X = -nan got the code frozen with
    +nan from disk, and math.copysign(y, X) came out positive."""
    text = "import math\nX = {x}\n@cuda.jit\ndef sign(out, y):\n" \
           "    out[cuda.threadIdx.x] = math.copysign(y, X)\n"
    nb.run(text.format(x="float('nan')"))
    assert _run(nb.ns["sign"], np.float64) == [1.0] * 4
    ns = _new_process(text.format(x="-float('nan')"))
    assert _run(ns["sign"], np.float64) == [-1.0] * 4
    assert _event(ns["sign"], np.float64).kind == "miss"


ENUM_KERNEL = """
import enum

class Color(enum.Enum):
    {members}

@cuda.jit
def is_green(out, c):
    out[cuda.threadIdx.x] = c == Color.GREEN
"""


def _is_green(kernel, member) -> list:
    out = np.zeros(4, dtype=np.int64)
    kernel[1, 4](out, member)
    return out.tolist()


def test_an_enum_whose_members_were_reordered_gets_its_own_key(nb):
    """A plain Enum member is compiled in as its position in the class, but every member was
    keyed as `object:Color`: after `Color` was redefined with GREEN first (a cell run again,
    or another process's definition), `c == Color.GREEN` was a hit on the code comparing with
    position 1, and GREEN came out 0 and RED 1."""
    nb.run(ENUM_KERNEL.format(members="RED = 1\n    GREEN = 2"))
    k = nb.ns["is_green"]
    assert _is_green(k, nb.ns["Color"].GREEN) == [1] * 4
    nb.run("class Color(enum.Enum):\n    GREEN = 2\n    RED = 1\n")  # the same live kernel
    assert _is_green(k, nb.ns["Color"].GREEN) == [1] * 4
    assert _is_green(k, nb.ns["Color"].RED) == [0] * 4
    assert k.cache_info()[-1]["event"].why.endswith(
        "Color.GREEN = 2 of (RED, GREEN) -> Color.GREEN = 2 of (GREEN, RED)")
    ns = _new_process(ENUM_KERNEL.format(members="BLUE = 3\n    GREEN = 2\n    RED = 1"))
    assert _is_green(ns["is_green"], ns["Color"].GREEN) == [1] * 4
    assert _is_green(ns["is_green"], ns["Color"].BLUE) == [0] * 4
    assert ns["is_green"].cache_info()[-1]["event"].kind == "miss"
    ns = _new_process(ENUM_KERNEL.format(members="GREEN = 2\n    RED = 1"))  # as compiled above
    assert _is_green(ns["is_green"], ns["Color"].GREEN) == [1] * 4
    assert ns["is_green"].cache_info()[-1]["event"].outcome == "hit (disk)"


def test_kernels_of_one_name_in_two_modules_are_told_apart(nb, package):
    """`k` of one module was explained against the last entry of any `k`: the first launch of
    kern_pkg.b.k said 'changed: source of `k`' (it is new), and after kern_pkg.helpers was edited
    and kern_pkg.a reloaded, a.k's recompile blamed its own source, not the edited helper."""
    package("kern_pkg", {
        "__init__": "",
        "helpers": HELPERS.format(inc="1.0"),
        "a": "from gpunb import cuda\nfrom .helpers import helper\n\n@cuda.jit\n"
             "def k(out, x):\n    out[cuda.threadIdx.x] = helper(x)\n",
        "b": "from gpunb import cuda\n\n@cuda.jit\ndef k(out, x):\n"
             "    out[cuda.threadIdx.x] = x - 1.0\n"})
    nb.run("import kern_pkg.a, kern_pkg.b, kern_pkg.helpers\n")
    pkg = nb.ns["kern_pkg"]
    assert _run(pkg.a.k) == [2.0] * 4
    assert _run(pkg.b.k) == [0.0] * 4
    assert _event(pkg.b.k).outcome == "miss (new)"
    helpers = pkg.helpers.__file__
    with open(helpers, "w") as file:
        file.write(HELPERS.format(inc="10.0"))
    later = time.time_ns() + 2_000_000_000
    os.utime(helpers, ns=(later, later))
    importlib.reload(pkg.helpers)
    importlib.reload(pkg.a)
    assert _run(pkg.a.k) == [11.0] * 4
    assert _event(pkg.a.k).why.startswith("changed: device function `helper`"), \
        _event(pkg.a.k).why


NUMBA_DTYPE_KERNEL = """
import numba

DT = numba.{dtype}

@cuda.jit
def widen(out, x):
    a = cuda.local.array(1, DT)
    a[0] = x
    out[cuda.threadIdx.x] = a[0] + DT(x)
"""


def test_numba_type_objects_are_keyed_by_name(nb):
    """numba's own types read as globals (`DT = numba.float32` as a dtype and a cast) were keyed
    as `object:numba.core.types.scalars.Float`, so float32 and float64 shared a key: after
    `DT = numba.float64` the launch was 'hit (memory, re-checked)' on the float32 code, and a
    process with DT = numba.float64 got the float32 code from disk."""
    pytest.importorskip("numba")
    nb.run(NUMBA_DTYPE_KERNEL.format(dtype="float32"))
    k = nb.ns["widen"]
    in_float32 = float(np.float32(0.1)) * 2
    assert _run(k, np.float64, 0.1) == [in_float32] * 4
    nb.run("DT = numba.float64\n")
    assert _run(k, np.float64, 0.1) == [0.2] * 4
    assert _event(k, np.float64).why == \
        "changed: global `DT` defined at module __main__: numba float32 -> numba float64"
    ns = _new_process(NUMBA_DTYPE_KERNEL.format(dtype="float32"))
    assert _run(ns["widen"], np.float64, 0.1) == [in_float32] * 4
    ns = _new_process(NUMBA_DTYPE_KERNEL.format(dtype="float64"))
    assert _run(ns["widen"], np.float64, 0.1) == [0.2] * 4


def test_an_enum_member_looked_up_by_name_follows_the_class(nb):
    """`Color['GREEN']` reads the class itself, which was keyed by its name alone: after
    GREEN's value changed the launch was 'hit (memory, re-checked)' on the old value (and a
    process with the new class got the old code from disk)."""
    text = ("import enum\nclass Color(enum.IntEnum):\n    RED = 1\n    GREEN = {green}\n"
            "    LIME = {green}\n"
            "@cuda.jit\ndef green(out, x):\n    out[cuda.threadIdx.x] = Color['LIME'] + x\n")
    nb.run(text.format(green=2))
    k = nb.ns["green"]
    assert _run(k) == [3.0] * 4
    nb.run("class Color(enum.IntEnum):\n    RED = 1\n    GREEN = 5\n    LIME = 5\n")
    assert _run(k) == [6.0] * 4
    assert _event(k).why.startswith("changed: global `Color`")
    assert _event(k).why.endswith("Color(RED=1, GREEN=2) -> Color(RED=1, GREEN=5)")
    ns = _new_process(text.format(green=7))
    assert _run(ns["green"]) == [8.0] * 4


PROPERTY_KERNEL = """
import math

class Params:
    def __init__(self):
        self.n = 1.5

    @property
    def scale(self):
        return self.n * 2

P = Params()

@cuda.jit
def scaled(out, x):
    out[cuda.threadIdx.x] = math.copysign(x, P.scale) * abs(P.scale)
"""


def test_a_property_answering_new_equal_objects_keeps_the_fast_path(nb, modules):
    """A property (or a module's __getattr__) answers each read with a new float: checked by
    identity, every launch re-fingerprinted the kernel (378 us instead of 5) and recorded a
    'hit (memory, re-checked)' event. An equal value now passes; a changed one (-0.0 after 0.0
    included, which compare equal) still recompiles."""
    nb.run(PROPERTY_KERNEL)
    lazy = modules.write("lazy_consts", "def __getattr__(name):\n"
                                        "    if name == 'OFFSET':\n"
                                        "        return 0.5 + 0.25\n"
                                        "    raise AttributeError(name)\n")
    nb.ns["lazy_consts"] = lazy
    nb.run("@cuda.jit\ndef shifted(out, x):\n"
           "    out[cuda.threadIdx.x] = x + lazy_consts.OFFSET\n")
    k, shifted = nb.ns["scaled"], nb.ns["shifted"]
    assert _run(k) == [3.0] * 4
    assert _run(shifted) == [1.75] * 4
    before = len(cache.events())
    _unchanged_launch_is_served(k, [3.0] * 4)
    _unchanged_launch_is_served(shifted, [1.75] * 4)
    assert len(cache.events()) == before  # no re-check recorded: nothing was re-checked
    nb.ns["P"].n = 2.0
    assert _run(k) == [4.0] * 4
    assert _event(k).why.endswith("3.0 -> 4.0")
    nb.ns["P"].n = 0.0
    assert _run(k) == [0.0] * 4
    nb.ns["P"].n = -0.0
    assert _run(k, value=2.0) == [-0.0] * 4
    assert math.copysign(1.0, _run(k, value=2.0)[0]) == -1.0


def test_clearing_a_modules_kernel_keeps_a_kernel_of_its_name_elsewhere(nb, package):
    """`%gpucache clear mymod.k` (gpunb.cache.clear(kernel)) removed the entries of every
    function named k, another module's and the notebook's too: their next process compiled
    them again. Given the GPU function, only its module's go; given a name, every k's."""
    package("clear_pkg", {
        "__init__": "",
        "a": "from gpunb import cuda\n\n@cuda.jit\ndef k(out, x):\n"
             "    out[cuda.threadIdx.x] = x + 1.0\n",
        "b": "from gpunb import cuda\n\n@cuda.jit\ndef k(out, x):\n"
             "    out[cuda.threadIdx.x] = x - 1.0\n"})
    nb.run("import clear_pkg.a, clear_pkg.b\n"
           "@cuda.jit\ndef k(out, x):\n    out[cuda.threadIdx.x] = x * 5.0\n")
    pkg, mine = nb.ns["clear_pkg"], nb.ns["k"]
    assert _run(pkg.a.k) == [2.0] * 4 and _run(pkg.b.k) == [0.0] * 4 and _run(mine) == [5.0] * 4
    assert cache.clear(pkg.b.k) == 1
    cache.default_cache().forget_memory()  # a new process: the modules and the cell again
    importlib.reload(pkg.a)
    importlib.reload(pkg.b)
    mine = nb.run("@cuda.jit\ndef k(out, x):\n    out[cuda.threadIdx.x] = x * 5.0\n")["k"]
    for kernel, expected in ((pkg.a.k, [2.0] * 4), (pkg.b.k, [0.0] * 4), (mine, [5.0] * 4)):
        assert _run(kernel) == expected
    assert _event(pkg.a.k).outcome == "hit (disk)"
    assert _event(mine).outcome == "hit (disk)"
    assert _event(pkg.b.k).kind == "miss"
    assert cache.clear("k") == 3  # by name: every k


def test_turning_the_cache_off_recompiles_nothing_that_did_not_change(nb):
    """`%gpucache off` (set_enabled(False)) made every live kernel compile again at its next
    launch after a cell, though nothing had changed: keys made with the cache off left out the
    toolchain, so none matched a specialisation's key. A real change still recompiles, and
    nothing is stored while the cache is off."""
    nb.run("N = 2.0\n@cuda.jit\ndef scale(out, x):\n    out[cuda.threadIdx.x] = x * N\n")
    k = nb.ns["scale"]
    assert _run(k) == [2.0] * 4
    cache.set_enabled(False)
    try:
        nb.run("unrelated = 1\n")
        cache.invalidate()  # a cell ended
        _unchanged_launch_is_served(k, [2.0] * 4)
        nb.run("N = 3.0\n")
        assert _run(k) == [3.0] * 4
        assert _event(k).outcome == "miss (disabled)"
    finally:
        cache.set_enabled(None)
    assert len(cache.default_cache().disk.entries()) == 1  # only the compile made while on


NOTEBOOK_KERNEL = """
@cuda.jit
def k(out, x):
    out[cuda.threadIdx.x] = x * {factor}
"""


def test_kernels_of_one_name_in_two_notebooks_are_told_apart(nb, monkeypatch):
    """Every notebook defines its kernels in __main__: the first `k` of b.ipynb (another kernel
    process, the same disk cache) was explained as 'changed: source of `k`' against a.ipynb's
    `k`; it is new. A restarted a.ipynb still reads its `k` against its own last one."""
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/u/a.ipynb")
    ns = _new_process(NOTEBOOK_KERNEL.format(factor="2.0"))
    assert _run(ns["k"]) == [2.0] * 4
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/u/b.ipynb")
    ns = _new_process(NOTEBOOK_KERNEL.format(factor="3.0"))
    assert _run(ns["k"]) == [3.0] * 4
    assert _event(ns["k"]).outcome == "miss (new)", _event(ns["k"]).why
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/u/a.ipynb")
    ns = _new_process(NOTEBOOK_KERNEL.format(factor="5.0"))
    assert _run(ns["k"]) == [10.0 / 2] * 4
    assert _event(ns["k"]).why.startswith("changed: source of `k`"), _event(ns["k"]).why
