"""KernelCache through the dispatcher protocol: notebook-style redefinitions, hits and misses."""

from __future__ import annotations

import time

import pytest
from cache_support import SIGNATURE, TOOLCHAIN, MiniDispatcher, fake_artifact, jit

from gpunb import cache
from gpunb.cache import KernelCache, collect


@pytest.fixture
def nb(cells, kernel_cache):
    """Cells whose kernels are MiniDispatchers on one KernelCache."""

    def kernel(name: str, **options) -> MiniDispatcher:
        return MiniDispatcher(cells.ns[name], kernel_cache, **options)

    cells.ns["OFFSET"] = 0.5
    cells.ns["SCALE"] = 1.0
    cells.run("def helper(v):\n    return v * 2.0 + OFFSET\n")
    cells.ns["helper"] = jit(cells.ns["helper"])
    cells.run("def saxpy(out, x):\n    out[0] = helper(x[0]) * SCALE\n")
    cells.run("def other(out, x):\n    out[0] = helper(x[1])\n")
    cells.run("def unrelated(out, x):\n    out[0] = x[0]\n")
    cells.kernel = kernel
    return cells


def test_hit_and_miss_flow_in_one_process(nb, kernel_cache):
    k = nb.kernel("saxpy")
    art = k.launch()
    assert k.compiles == 1 and k.event.kind == "miss" and k.event.reason == "new"
    assert k.event.compile_ms == 1.5 and k.event.entry_bytes > 0
    assert k.launch() is art and k.compiles == 1  # the fast path

    # redefine the helper: recompile, with the helper named as the reason
    nb.run("def helper(v):\n    return v * 3.0 + OFFSET\n")
    nb.ns["helper"] = jit(nb.ns["helper"])
    art2 = k.launch()
    assert k.compiles == 2 and art2.binary.startswith(collect(k).digest.encode())
    assert k.event.why == f"changed: device function `helper` defined at {nb.last_label}, line 1"

    # redefine it identically, reformatted and commented: no recompile
    nb.run("# same helper\ndef helper(v):   # comment\n\n    return (v * 3.0) + OFFSET\n")
    nb.ns["helper"] = jit(nb.ns["helper"])
    assert k.launch() is art2 and k.compiles == 2

    # a global the kernel reads / one it does not
    nb.ns["UNREAD"] = 1
    assert k.launch() is art2 and k.compiles == 2
    nb.ns["SCALE"] = 2.0
    k.launch()
    assert k.compiles == 3
    assert k.event.why == "changed: global `SCALE` defined at module __main__: 1.0 -> 2.0"

    # back to the first definition's values: a memory hit, no compile
    nb.run("def helper(v):\n    return v * 2.0 + OFFSET\n")
    nb.ns["helper"] = jit(nb.ns["helper"])
    nb.ns["SCALE"] = 1.0
    assert k.launch().binary == art.binary and k.compiles == 3
    assert k.event.kind == "hit" and k.event.source == "memory"
    assert k.event.entry_bytes > 0  # %gpucache status showed "0 B" for a memory hit


def test_shared_helper_recompiles_both_and_not_the_unrelated_kernel(nb):
    kernels = {name: nb.kernel(name) for name in ("saxpy", "other", "unrelated")}
    for k in kernels.values():
        k.launch()
    nb.run("def helper(v):\n    return v - OFFSET\n")
    nb.ns["helper"] = jit(nb.ns["helper"])
    for k in kernels.values():
        k.launch()
    assert {n: k.compiles for n, k in kernels.items()} == {"saxpy": 2, "other": 2, "unrelated": 1}
    assert kernels["other"].event.why.startswith("changed: device function `helper`")


def test_default_value_change_recompiles(nb):
    nb.run("def kern(out, x, a=2.0):\n    out[0] = x[0] * a\n")
    k = nb.kernel("kern")
    k.launch()
    nb.run("def kern(out, x, a=3.0):\n    out[0] = x[0] * a\n")
    k2 = nb.kernel("kern")
    k2.launch()
    assert k2.compiles == 1 and k2.event.why.startswith("changed: default value of `a`")


def test_redefined_kernel_identical_content_is_a_memory_hit(nb):
    nb.kernel("saxpy").launch()
    nb.run("def saxpy(out, x):  # redefined, same code\n    out[0] = helper(x[0]) * SCALE\n")
    k = nb.kernel("saxpy")
    k.launch()
    assert k.compiles == 0 and k.event.kind == "hit" and k.event.source == "memory"


def test_new_process_is_a_disk_hit_and_relocates(nb, cache_dir):
    k = nb.kernel("saxpy")
    k.launch()
    fresh = KernelCache(str(cache_dir))  # what a new process starts with
    nb.run("\n\n\ndef saxpy(out, x):\n    out[0] = helper(x[0]) * SCALE\n")  # 3 lines lower
    k2 = MiniDispatcher(nb.ns["saxpy"], fresh)
    art = k2.launch()
    assert k2.compiles == 0 and k2.event.source == "disk"
    fp = collect(k2)
    assert art.source_file == fp.filename and art.first_line == fp.first_line
    assert art.error_sites[0][:2] == (fp.filename, fp.first_line + 1)
    assert art.line_map[0][0] == fp.first_line + 1


def test_a_hit_with_lines_added_inside_the_kernel_moves_its_sites_line_by_line(nb, cache_dir):
    nb.run("def saxpy(out, x):\n    i = 0\n    out[i] = helper(x[i]) * SCALE\n")
    MiniDispatcher(nb.ns["saxpy"], KernelCache(str(cache_dir))).launch()
    # the same code: a comment and blank lines between the statements, the same first line
    nb.run("def saxpy(out, x):\n    # where it starts\n\n    i = 0\n\n"
           "    out[i] = helper(x[i]) * SCALE\n")
    k = MiniDispatcher(nb.ns["saxpy"], KernelCache(str(cache_dir)))
    art = k.launch()
    assert k.compiles == 0 and k.event.source == "disk"
    fp = collect(k)
    # the stored site was `i = 0` (the first line after the def), which is now 3 lines lower
    assert art.error_sites[0][:3] == (fp.filename, fp.first_line + 3, 4)
    assert art.line_map[0][0] == fp.first_line + 3


def test_option_arch_and_toolchain_changes_are_reported(nb, kernel_cache):
    k = nb.kernel("saxpy")
    fp = collect(k)

    def miss(options=None, arch="sm_90", tools=TOOLCHAIN):
        art, pending = kernel_cache.lookup("saxpy", fp, SIGNATURE, options, "cuda", arch, tools)
        assert art is None
        return kernel_cache.store(pending, fake_artifact(fp, "cuda", arch), fp, 3.0)

    assert miss().reason == "new"
    assert miss({"fastmath": True}).why == "option changed: fastmath False -> True"
    assert miss({"fastmath": True}, "sm_80").why == "arch changed: sm_90 -> sm_80"
    ev = miss({"fastmath": True}, "sm_80", dict(TOOLCHAIN, llvm="LLVM next"))
    assert ev.why == "toolchain changed: llvm LLVM test -> LLVM next"
    assert ev.compile_ms == 3.0


def test_cache_disabled_by_env_and_by_option(nb, kernel_cache, cache_dir, monkeypatch):
    monkeypatch.setenv("GPUNB_CACHE", "0")
    k = nb.kernel("saxpy")
    k.launch()
    assert k.event.kind == "miss" and k.event.reason == "disabled" and k.event.entry_bytes == 0
    assert not cache_dir.exists() and not kernel_cache.memory.items
    monkeypatch.setenv("GPUNB_CACHE", "1")
    k2 = nb.kernel("saxpy", cache=False)
    k2.launch()
    assert k2.event.reason == "disabled" and not cache_dir.exists()
    k3 = nb.kernel("saxpy")
    k3.launch()
    assert k3.event.reason == "new" and cache_dir.exists()


def test_cleared_entry_is_new_again(nb, kernel_cache):
    k = nb.kernel("saxpy")
    k.launch()
    assert kernel_cache.clear("saxpy") >= 1
    k2 = nb.kernel("saxpy")
    k2.launch()
    assert k2.compiles == 1 and k2.event.reason == "new"
    assert "removed" in k2.event.detail


def test_store_accepts_the_key_string(nb, kernel_cache):
    fp = collect(jit(nb.ns["saxpy"]))
    art, pending = kernel_cache.lookup("saxpy", fp, SIGNATURE, {}, "cpu", "a", TOOLCHAIN)
    event = kernel_cache.store(pending.key, fake_artifact(fp), fp, 2.0)
    assert event.kind == "miss" and event.key == pending.key


def test_events_log_and_last_event(nb):
    start = time.time()
    k = nb.kernel("saxpy")
    k.launch()
    mine = [e for e in cache.events("saxpy") if e.timestamp >= start]
    assert mine and mine[-1] is k.event
    assert cache.last_event("saxpy") is k.event
    assert k.event.defined_at.startswith("Cell In[")
    assert k.event.entry_bytes > 0 and k.event.outcome == "miss (new)"


def test_real_artifact_round_trips_through_disk(modules, cache_dir):
    """A CPU-target artifact from the real compiler survives JSON + blobs and still runs."""
    import numpy as np

    import gpunb
    from gpunb import backends
    from gpunb.runtime.packing import ArgPacker

    mod = modules.write("roundtrip_mod", """
        from gpunb import cuda

        @cuda.jit(device=True)
        def scale(x):
            return x * 3.0

        @cuda.jit
        def kern(out, x):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = scale(x[i])
    """)
    gpunb.set_target("cpu")
    try:
        x = np.arange(8, dtype=np.float32)
        out = np.zeros_like(x)
        mod.kern[1, 8](out, x)
        spec = next(iter(mod.kern.specializations.values()))
        fp = collect(mod.kern)
        kc = KernelCache(str(cache_dir))
        signature = ", ".join(map(str, spec.argtypes))
        art, pending = kc.lookup("kern", fp, signature, mod.kern.options, "cpu",
                                 cache.host_arch())
        assert art is None
        kc.store(pending, spec.artifact, fp, spec.compile_ms)
        again, hit = KernelCache(str(cache_dir)).lookup("kern", fp, signature, mod.kern.options,
                                                       "cpu", cache.host_arch())
        assert hit.event.source == "disk" and again == spec.artifact
        program = backends.get("cpu").load(again)
        params, _ = ArgPacker(again.param_slots, "cpu", "kern").pack((out, x), spec.argtypes)
        out[:] = 0
        program.launch(1, 8, 0, 0, params)
        np.testing.assert_array_equal(out, x * 3.0)
    finally:
        gpunb.set_target(None)


def test_disabled_cache_writes_nothing_at_all(nb, cache_dir, monkeypatch):
    monkeypatch.setenv("GPUNB_CACHE", "0")
    fp = collect(jit(nb.ns["saxpy"]))
    kc = KernelCache(str(cache_dir))
    art, pending = kc.lookup("saxpy", fp, SIGNATURE, {}, "cpu", "arch")  # real toolchain
    assert kc.store(pending, fake_artifact(fp), fp, 1.0).reason == "disabled"
    assert not cache_dir.exists()
