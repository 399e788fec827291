"""The real dispatcher with the cache (CPU target): recompiles exactly what changed, and says why.

These tests launch real kernels (`from gpunb import cuda`), so a stale specialisation shows up
as a wrong number in the output array, not only as a wrong event.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import gpunb
from gpunb import cuda


@pytest.fixture(autouse=True)
def cpu_target(cache_dir):
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


@pytest.fixture
def nb(cells):
    cells.ns["cuda"] = cuda
    return cells


def _run(kernel, n: int = 8, value: float = 1.0) -> np.ndarray:
    out = np.zeros(n, dtype=np.float32)
    kernel[1, n](out, np.float32(value))
    return out


def _event(kernel):
    (info,) = kernel.cache_info()
    return info["event"]


HELPER = """
@cuda.jit(device=True)
def helper(v):
    return v + {inc}
"""

KERNELS = """
@cuda.jit
def uses_helper(out, x):
    i = cuda.threadIdx.x
    out[i] = helper(x) * SCALE

@cuda.jit
def unrelated(out, x):
    i = cuda.threadIdx.x
    out[i] = x - 1.0
"""


def test_redefined_device_function_in_a_later_cell_recompiles_only_its_callers(nb):
    nb.run(HELPER.format(inc="1.0"))
    nb.run("SCALE = 2.0\n" + KERNELS)
    k, other = nb.ns["uses_helper"], nb.ns["unrelated"]
    assert (_run(k) == 4.0).all() and (_run(other) == 0.0).all()
    assert _event(k).kind == "miss" and _event(k).reason == "new"
    first_other = other.cache_info()[0]["key"]

    nb.run(HELPER.format(inc="5.0"))
    cell = nb.last_label
    assert (_run(k) == 12.0).all()
    assert (_run(other) == 0.0).all()
    event = _event(k)
    assert event.kind == "miss"
    assert event.why.startswith("changed: device function `helper`")
    assert cell in event.detail
    assert other.cache_info()[0]["key"] == first_other
    assert _event(other).kind == "miss" and _event(other).reason == "new"  # not recompiled


def test_rebinding_a_global_recompiles_and_an_equal_value_does_not(nb):
    nb.run(HELPER.format(inc="1.0"))
    nb.run("SCALE = 2.0\n" + KERNELS)
    k = nb.ns["uses_helper"]
    assert (_run(k) == 4.0).all()
    spec = k.specializations[next(iter(k.specializations))]
    nb.run("SCALE = 3.0\n")
    assert (_run(k) == 6.0).all()
    assert _event(k).why.startswith("changed: global `SCALE`")
    spec2 = next(iter(k.specializations.values()))
    assert spec2 is not spec
    nb.run("SCALE = 3.0\n")  # a new float object, equal value: same key, nothing rebuilt
    assert (_run(k) == 6.0).all()
    assert next(iter(k.specializations.values())) is spec2


def test_module_attribute_assignment_recompiles(nb, modules):
    mod = modules.write("consts_mod", "FACTOR = 2.0\n")
    nb.ns["consts_mod"] = mod
    nb.run("@cuda.jit\ndef scaled(out, x):\n    out[cuda.threadIdx.x] = x * consts_mod.FACTOR\n")
    k = nb.ns["scaled"]
    assert (_run(k, value=3.0) == 6.0).all()
    mod.FACTOR = 5.0
    assert (_run(k, value=3.0) == 15.0).all()
    assert "consts_mod.FACTOR" in _event(k).why


def test_importlib_reload_of_a_device_function_module_recompiles(nb, modules):
    modules.write("dev_mod", """
        from gpunb import cuda

        @cuda.jit(device=True)
        def bump(v):
            return v + 1.0
    """)
    nb.run("import dev_mod\n"
           "@cuda.jit\ndef k(out, x):\n    out[cuda.threadIdx.x] = dev_mod.bump(x)\n")
    k = nb.ns["k"]
    assert (_run(k) == 2.0).all()
    modules.edit("dev_mod", """
        from gpunb import cuda

        @cuda.jit(device=True)
        def bump(v):
            return v + 10.0
    """)
    importlib.reload(nb.ns["dev_mod"])
    assert (_run(k) == 11.0).all()
    assert _event(k).kind == "miss" and "bump" in _event(k).why


def test_identical_redefinition_is_a_memory_hit_and_a_new_cache_reads_the_disk(nb, cache_dir):
    from gpunb import cache

    text = "@cuda.jit\ndef twice(out, x):\n    out[cuda.threadIdx.x] = x * 2.0\n"
    nb.run(text)
    assert (_run(nb.ns["twice"]) == 2.0).all()
    nb.run("\n# a comment and blank lines do not matter\n\n" + text)
    again = nb.ns["twice"]
    assert (_run(again) == 2.0).all()
    assert _event(again).kind == "hit" and _event(again).source == "memory"
    cache.default_cache().forget_memory()  # what a new process starts with
    nb.run(text)
    third = nb.ns["twice"]
    assert (_run(third) == 2.0).all()
    assert _event(third).kind == "hit" and _event(third).source == "disk"
    assert any(cache_dir.rglob("*.json"))


def test_a_kernel_loaded_from_disk_keeps_its_launch_facts(nb):
    """Barriers, shared memory and error sites travel with the entry (bounds errors name lines;
    boundscheck, unlike debug=True, puts no file path into the code, so the entry is shared)."""
    from gpunb import cache

    text = """
@cuda.jit(boundscheck=True)
def rev(out, x):
    buf = cuda.shared.array(8, dtype=np.float32)
    i = cuda.threadIdx.x
    buf[i] = x + i
    cuda.syncthreads()
    out[i] = buf[7 - i]
    out[i + 8] = 0.0
"""
    nb.ns["np"] = np
    nb.run(text)
    out = np.zeros(16, dtype=np.float32)
    nb.ns["rev"][1, 8](out, np.float32(1.0))
    cache.default_cache().forget_memory()
    nb.run(text)
    k = nb.ns["rev"]
    out[:] = 0
    k[1, 8](out, np.float32(1.0))
    assert _event(k).source == "disk"
    assert out[:8].tolist() == [8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]
    small = np.zeros(8, dtype=np.float32)
    with pytest.raises(IndexError, match="out"):
        k[1, 8](small, np.float32(1.0))


def test_cache_false_and_gpunb_cache_0_write_nothing(nb, cache_dir, monkeypatch):
    nb.run("@cuda.jit(cache=False)\ndef off(out, x):\n    out[cuda.threadIdx.x] = x + 3.0\n")
    k = nb.ns["off"]
    assert (_run(k) == 4.0).all()
    assert _event(k).reason == "disabled"
    monkeypatch.setenv("GPUNB_CACHE", "0")
    nb.run("@cuda.jit\ndef off2(out, x):\n    out[cuda.threadIdx.x] = x + 4.0\n")
    assert (_run(nb.ns["off2"]) == 5.0).all()
    assert _event(nb.ns["off2"]).reason == "disabled"
    assert not list(cache_dir.rglob("*.json")) if cache_dir.exists() else True


def test_disabled_cache_still_notices_a_redefinition(nb, monkeypatch):
    monkeypatch.setenv("GPUNB_CACHE", "0")
    nb.run(HELPER.format(inc="1.0"))
    nb.run("SCALE = 1.0\n" + KERNELS)
    k = nb.ns["uses_helper"]
    assert (_run(k) == 2.0).all()
    nb.run(HELPER.format(inc="2.0"))
    assert (_run(k) == 3.0).all()


def test_factory_closures_get_one_entry_per_captured_value(nb):
    nb.run("""
def make(c):
    @cuda.jit
    def add_c(out, x):
        out[cuda.threadIdx.x] = x + c
    return add_c
""")
    make = nb.ns["make"]
    k1, k2, k1_again = make(1.0), make(2.0), make(1.0)
    assert (_run(k1) == 2.0).all() and (_run(k2) == 3.0).all()
    assert (_run(k1_again) == 2.0).all()
    keys = {k.cache_info()[0]["key"] for k in (k1, k2)}
    assert len(keys) == 2
    assert k1_again.cache_info()[0]["key"] == k1.cache_info()[0]["key"]
    assert _event(k1_again).kind == "hit"


def test_option_change_is_explained(nb):
    text = "@cuda.jit{opts}\ndef f(out, x):\n    out[cuda.threadIdx.x] = x * 0.5\n"
    nb.run(text.format(opts=""))
    _run(nb.ns["f"])
    nb.run(text.format(opts="(fastmath=True)"))
    _run(nb.ns["f"])
    event = _event(nb.ns["f"])
    assert event.kind == "miss" and "option changed: fastmath" in event.detail


def test_explain_names_the_dependencies(nb):
    from gpunb import cache

    nb.run(HELPER.format(inc="1.0"))
    nb.run("SCALE = 2.0\n" + KERNELS)
    k = nb.ns["uses_helper"]
    _run(k)
    text = cache.explain(k)
    assert "helper" in text and "SCALE" in text


def test_fast_path_does_not_recompile_when_nothing_changed(nb):
    nb.run(HELPER.format(inc="1.0"))
    nb.run("SCALE = 2.0\n" + KERNELS)
    k = nb.ns["uses_helper"]
    _run(k)
    spec = next(iter(k.specializations.values()))
    for _ in range(5):
        _run(k)
    assert next(iter(k.specializations.values())) is spec
    assert len([e for e in gpunb.cache.events("uses_helper") if e.kind == "miss"]) >= 1


def test_mutated_global_array_is_frozen_until_invalidate(nb):
    """As numba: a global array is a compile-time constant; gpunb.cache.invalidate() re-reads it."""
    from gpunb import cache

    nb.ns["np"] = np
    nb.run("TABLE = np.array([1.0, 2.0], dtype=np.float32)\n"
           "@cuda.jit\ndef lookup(out, x):\n    out[cuda.threadIdx.x] = TABLE[1] * x\n")
    k = nb.ns["lookup"]
    assert (_run(k) == 2.0).all()
    nb.ns["TABLE"][1] = 7.0
    assert (_run(k) == 2.0).all()  # frozen: an in-place write is not a rebinding
    cache.invalidate()
    assert (_run(k) == 7.0).all()
    assert _event(k).kind == "miss" and "TABLE" in _event(k).why


def test_a_reformatted_helper_records_a_re_checked_hit_and_a_new_cell_records_nothing(nb):
    """After a rebinding whose content is equal the panel must not keep showing the old miss:
    the kept specialisation gets a 'hit (memory, re-checked: unchanged)' event. A cell that
    rebinds nothing the kernel reads (only the epoch moved) is no news and records nothing."""
    from gpunb import cache

    nb.run(HELPER.format(inc="1.0"))
    nb.run("SCALE = 2.0\n" + KERNELS)
    k = nb.ns["uses_helper"]
    assert (_run(k) == 4.0).all() and _event(k).kind == "miss"
    nb.run("@cuda.jit(device=True)\ndef helper(v):  # reformatted, same content\n"
           "    return (v\n            + 1.0)\n")
    assert (_run(k) == 4.0).all()
    event = _event(k)
    assert (event.kind, event.source, event.reason) == ("hit", "memory", "re-checked")
    assert event.outcome == "hit (memory, re-checked)" and "content is unchanged" in event.why
    before = len(cache.events("uses_helper"))
    nb.run("unrelated_name = 1\n")
    assert (_run(k) == 4.0).all()
    assert len(cache.events("uses_helper")) == before


def test_a_hit_after_a_redefinition_says_what_changed(nb, cache_dir, tmp_path):
    """Another process sharing the cache compiled the kernel with the new helper first: the
    redefinition here is a disk hit, and its event still says that `helper` changed (and why
    nothing was compiled), instead of an empty why."""
    import os
    import subprocess
    import sys
    import textwrap

    nb.run(HELPER.format(inc="1.0"))
    nb.run("SCALE = 2.0\n" + KERNELS)
    k = nb.ns["uses_helper"]
    assert (_run(k) == 4.0).all() and _event(k).kind == "miss"
    other = tmp_path / "other_process.py"
    other.write_text("import numpy as np\nimport gpunb\nfrom gpunb import cuda\n"
                     + HELPER.format(inc="5.0") + "SCALE = 2.0\n" + KERNELS + textwrap.dedent("""
        gpunb.set_target("cpu")
        out = np.zeros(8, np.float32)
        uses_helper[1, 8](out, np.float32(1.0))
        assert (out == 12.0).all()
        print(uses_helper.cache_info()[0]["event"].outcome)
    """))
    env = dict(os.environ, GPUNB_CACHE_DIR=str(cache_dir), GPUNB_NOTICES="0")
    ran = subprocess.run([sys.executable, str(other)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0 and ran.stdout.startswith("miss"), ran.stderr
    nb.run(HELPER.format(inc="5.0"))
    assert (_run(k) == 12.0).all()
    event = _event(k)
    assert (event.kind, event.source) == ("hit", "disk")
    assert event.why.startswith("changed: device function `helper`"), event.why
    assert "in the cache already" in event.detail


def test_stats_count_cache_hits_and_misses_per_signature_as_numba(nb, cache_dir):
    """numba-cuda's `dispatcher.stats` (cache_path, cache_hits, cache_misses: Counters by
    argument types, one per lookup) was missing; its caching tests read it."""
    from gpunb import cache

    text = "@cuda.jit\ndef put(out, x):\n    out[cuda.threadIdx.x] = x\n"
    nb.run(text)
    first = nb.ns["put"]
    _run(first)
    _run(first)  # no lookup: the specialisation is reused
    out = np.zeros(2, np.float64)
    first[1, 2](out, 3)  # int64: a second signature
    stats = first.stats
    assert stats.cache_path == str(cache_dir)
    assert sum(stats.cache_hits.values()) == 0 and sum(stats.cache_misses.values()) == 2
    assert len(stats.cache_misses) == 2
    cache.default_cache().forget_memory()  # a new process
    nb.run(text)
    second = nb.ns["put"]
    _run(second)
    assert sum(second.stats.cache_hits.values()) == 1
    assert sum(second.stats.cache_misses.values()) == 0
    nb.run("@cuda.jit(cache=False)\ndef quiet(out, x):\n    out[cuda.threadIdx.x] = x\n")
    _run(nb.ns["quiet"])
    assert nb.ns["quiet"].stats.cache_path is None
    assert sum(nb.ns["quiet"].stats.cache_misses.values()) == 1
