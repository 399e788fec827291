"""Cache keys: every part counts, defaults are canonical, and a changed part names itself."""

from __future__ import annotations

from cache_support import jit

from gpunb.cache import cache_key, collect
from gpunb.cache.keys import effective_options, explain_change, key_parts

TOOLS = {"gpunb": "0.1.0", "compiler": "c1", "llvm": "LLVM 22.1.0", "libdevice": "ld1"}


def _fp(cells, text="def kern(out):\n    out[0] = 1.0\n"):
    cells.run(text)
    return collect(jit(cells.ns["kern"]))


def test_every_part_changes_the_key(cells):
    fp = _fp(cells)
    base = cache_key(fp, "(float32[::1],)", {}, "cuda", "sm_90", TOOLS)
    variants = [
        cache_key(fp, "(float64[::1],)", {}, "cuda", "sm_90", TOOLS),
        cache_key(fp, "(float32[::1],)", {"fastmath": True}, "cuda", "sm_90", TOOLS),
        cache_key(fp, "(float32[::1],)", {"max_registers": 32}, "cuda", "sm_90", TOOLS),
        cache_key(fp, "(float32[::1],)", {}, "cpu", "sm_90", TOOLS),
        cache_key(fp, "(float32[::1],)", {}, "cuda", "sm_80", TOOLS),
        cache_key(fp, "(float32[::1],)", {}, "cuda", "sm_90", dict(TOOLS, llvm="LLVM 23")),
        cache_key(fp, "(float32[::1],)", {}, "cuda", "sm_90", dict(TOOLS, libdevice="ld2")),
        cache_key(fp, "(float32[::1],)", {}, "cuda", "sm_90", dict(TOOLS, compiler="c2")),
        cache_key(_fp(cells, "def kern(out):\n    out[0] = 2.0\n"), "(float32[::1],)", {},
                  "cuda", "sm_90", TOOLS),
    ]
    assert len({base, *variants}) == len(variants) + 1
    assert len(base) == 40 and int(base, 16) >= 0


def test_default_options_and_cache_flag_do_not_change_the_key(cells):
    fp = _fp(cells)
    base = cache_key(fp, "()", {}, "cuda", "sm_90", TOOLS)
    for options in ({"fastmath": False}, {"opt": True, "debug": False}, {"cache": False},
                    {"lineinfo": False, "max_registers": None}):
        assert cache_key(fp, "()", options, "cuda", "sm_90", TOOLS) == base
    assert cache_key(fp, "()", {"opt": False}, "cuda", "sm_90", TOOLS) != base


def test_boundscheck_env_shapes_cpu_keys(cells, monkeypatch):
    fp = _fp(cells)
    # the CPU target checks bounds by default; GPUNB_BOUNDSCHECK=0 and boundscheck=False opt out
    monkeypatch.delenv("GPUNB_BOUNDSCHECK", raising=False)
    base = cache_key(fp, "()", {}, "cpu", "host", TOOLS)
    assert effective_options({}, "cpu") == {"boundscheck": True}
    assert base == cache_key(fp, "()", {"boundscheck": True}, "cpu", "host", TOOLS)
    monkeypatch.setenv("GPUNB_BOUNDSCHECK", "0")
    assert effective_options({}, "cpu") == {"boundscheck": False}
    assert cache_key(fp, "()", {}, "cpu", "host", TOOLS) != base
    assert cache_key(fp, "()", {}, "cpu", "host", TOOLS) == \
        cache_key(fp, "()", {"boundscheck": False}, "cpu", "host", TOOLS)
    monkeypatch.setenv("GPUNB_RACECHECK", "1")
    assert effective_options({}, "cpu") == {"boundscheck": False, "racecheck": True}


def test_debug_builds_key_on_locations(cells):
    """lineinfo/debug binaries embed file and line, so only then are they part of the key."""
    text = "def kern(out):\n    out[0] = 1.0\n"
    a = _fp(cells, text)
    b = _fp(cells, "\n\n" + text)  # the same kernel two lines lower, in another cell
    assert cache_key(a, "()", {}, "cuda", "sm_90", TOOLS) == \
        cache_key(b, "()", {}, "cuda", "sm_90", TOOLS)
    assert cache_key(a, "()", {"lineinfo": True}, "cuda", "sm_90", TOOLS) != \
        cache_key(b, "()", {"lineinfo": True}, "cuda", "sm_90", TOOLS)


def _reasons(old_fp, new_fp, old=None, new=None):
    old = old or {}
    new = new or {}
    old_parts = key_parts(old_fp, "()", old.get("options"), "cuda", old.get("arch", "sm_90"),
                          old.get("tools", TOOLS))
    new_parts = key_parts(new_fp, "()", new.get("options"), "cuda", new.get("arch", "sm_90"),
                          new.get("tools", TOOLS))
    changes = explain_change(old_parts, list(old_fp.dependencies), old_fp.code_digest, new_parts,
                             new_fp)
    return [change.text for change in changes]


def _changes(old_fp, new_fp, new=None):
    """The structured records behind the sentences."""
    old_parts = key_parts(old_fp, "()", None, "cuda", "sm_90", TOOLS)
    new = new or {}
    new_parts = key_parts(new_fp, "()", new.get("options"), "cuda", new.get("arch", "sm_90"),
                          new.get("tools", TOOLS))
    return explain_change(old_parts, list(old_fp.dependencies), old_fp.code_digest, new_parts,
                          new_fp)


def test_reasons_for_options_arch_and_toolchain(cells):
    fp = _fp(cells)
    assert _reasons(fp, fp, new={"options": {"fastmath": True}}) == \
        ["option changed: fastmath False -> True"]
    assert _reasons(fp, fp, new={"arch": "sm_80"}) == ["arch changed: sm_90 -> sm_80"]
    reasons = _reasons(fp, fp, new={"tools": dict(TOOLS, llvm="LLVM 23")})
    assert reasons == ["toolchain changed: llvm LLVM 22.1.0 -> LLVM 23"]
    (option,) = _changes(fp, fp, new={"options": {"fastmath": True}})
    assert (option.reason, option.subject, option.what, option.before, option.after) == \
        ("option changed", "fastmath", "option", "False", "True")
    (tool,) = _changes(fp, fp, new={"tools": dict(TOOLS, llvm="LLVM 23")})
    assert (tool.reason, tool.subject, tool.after) == ("toolchain changed", "llvm", "LLVM 23")


def test_reasons_for_source_helper_global_and_default(cells):
    cells.ns["N"] = 1
    cells.run("def helper(v, k=1):\n    return v + N + k\n")
    cells.ns["helper"] = jit(cells.ns["helper"])
    helper_cell = cells.last_label
    old = _fp(cells, "def kern(out):\n    out[0] = helper(1.0)\n")

    cells.run("def helper(v, k=1):\n    return v - N + k\n")
    cells.ns["helper"] = jit(cells.ns["helper"])
    new_helper_cell = cells.last_label
    new = collect(jit(cells.ns["kern"]))
    (reason,) = _reasons(old, new)
    assert reason == f"changed: device function `helper` defined at {new_helper_cell}, line 1"
    assert new_helper_cell != helper_cell

    cells.ns["N"] = 2
    newer = collect(jit(cells.ns["kern"]))
    (reason,) = _reasons(new, newer)
    assert reason == ("changed: global `N` defined at module __main__ (read via helper): 1 -> 2")
    (change,) = _changes(new, newer)
    assert (change.reason, change.subject, change.what, change.defined_at, change.before,
            change.after) == ("changed", "N", "global", "module __main__", "1", "2")

    source_changed = _fp(cells, "def kern(out):\n    out[0] = helper(2.0)\n")
    (reason,) = _reasons(newer, source_changed)
    assert reason.startswith("changed: source of `kern` defined at Cell In[")

    cells.run("def kern(out, a=1):\n    out[0] = a\n")
    with_default = collect(jit(cells.ns["kern"]))
    cells.run("def kern(out, a=2):\n    out[0] = a\n")
    other_default = collect(jit(cells.ns["kern"]))
    (reason,) = _reasons(with_default, other_default)
    assert reason.startswith("changed: default value of `a` defined at Cell In[")
    assert reason.endswith(": 1 -> 2")


def test_reason_for_a_new_global_read(cells):
    old = _fp(cells)
    cells.ns["EXTRA"] = 3
    new = _fp(cells, "def kern(out):\n    out[0] = 1.0 + EXTRA\n")
    reasons = _reasons(old, new)
    assert reasons[0].startswith("changed: source of `kern`")
    assert "changed: now reads global `EXTRA` defined at module __main__" in reasons
