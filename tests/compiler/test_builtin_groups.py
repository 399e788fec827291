"""The builtin table is loaded per key group (a small kernel imports few builtin modules); the
groups together must be exactly the table assembled from every module, as before the split."""

from __future__ import annotations

import subprocess
import sys

from gpunb.compiler import builtins
from gpunb.compiler.builtins import (
    async_copy,
    atomics,
    bf16funcs,
    cache_hints,
    complexfuncs,
    cuda_intrinsics,
    fp8funcs,
    groups,
    inline_ptx,
    mathfuncs,
    operator_funcs,
    pointers,
    printing,
    pybuiltins,
    reductions,
    tensorcore_mma,
    tensorcore_wmma,
    tma,
    ufunc_math,
    ufuncs,
    vectors,
    warp,
    wgmma,
)


def _eager_table() -> dict:
    """Every module's entries in one dict, in the historical order of assembly."""
    table: dict = {}
    for part in (cuda_intrinsics.BUILTINS, atomics.BUILTINS, mathfuncs.BUILTINS,
                 ufunc_math.BUILTINS, pybuiltins.BUILTINS, warp.BUILTINS, groups.BUILTINS,
                 complexfuncs.BUILTINS,
                 operator_funcs.BUILTINS, cache_hints.BUILTINS, reductions.BUILTINS,
                 bf16funcs.BUILTINS, fp8funcs.BUILTINS, vectors.BUILTINS, pointers.BUILTINS,
                 tensorcore_wmma.BUILTINS, tensorcore_mma.BUILTINS, inline_ptx.BUILTINS):
        table.update(part)
    table["builtins.print"] = printing.Print()
    table.update(ufuncs.wrap(table))
    for part in (async_copy.BUILTINS, tma.BUILTINS, wgmma.BUILTINS):  # the Hopper language
        table.update(part)
    return table


def _same(a, b) -> bool:
    if isinstance(a, ufuncs.NumpyUfunc):  # made anew by each wrap(): compare what they wrap
        return type(b) is ufuncs.NumpyUfunc and a.ufunc is b.ufunc and a.scalar is b.scalar
    if isinstance(a, printing.Print):
        return type(b) is printing.Print
    return a is b


def test_every_key_belongs_to_a_group():
    eager = _eager_table()
    assert eager, "no builtins at all"
    orphans = [k for k in eager if builtins._group_of(k) is None]
    assert orphans == []


def test_groups_equal_the_whole_table():
    eager = _eager_table()
    lazy = builtins._table()
    assert set(lazy) == set(eager)
    different = [k for k in eager if not _same(eager[k], lazy[k])]
    assert different == []


def test_lookup_finds_each_entry():
    eager = _eager_table()
    for key in ("cuda.grid", "cuda.atomic.add", "math.sin", "numpy.sin", "builtins.len",
                "builtins.print", "operator.add", "cmath.exp", "cuda.fp16.hadd"):
        assert key in eager
        assert _same(eager[key], builtins._lookup(key)), key
    assert builtins._lookup("cuda.no_such_thing") is None
    assert builtins._lookup("nowhere.sin") is None


def test_small_kernel_loads_only_its_group():
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from gpunb import cuda\n"
        "from gpunb.backends import pipeline, get\n"
        "from gpunb.foundation.events import Stage\n"
        "from gpunb.foundation import types as t\n"
        "def k(out, x):\n"
        "    i = cuda.grid(1)\n"
        "    if i < out.size:\n"
        "        out[i] = x[i] * 2\n"
        "arr = t.Array(t.float32, 1, 'C')\n"
        "pipeline.compile(k, (arr, arr), {}, get('cuda'), stop_after=Stage.TYPES)\n"
        "loaded = sorted(m.rsplit('.', 1)[1] for m in sys.modules\n"
        "                if m.startswith('gpunb.compiler.builtins.'))\n"
        "print(' '.join(loaded))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert "cuda_intrinsics" in out
    for heavy in ("ufuncs", "bf16funcs", "reductions", "complexfuncs"):
        assert heavy not in out, out
