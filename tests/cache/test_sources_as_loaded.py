"""A module's kernels compile from the text the module was imported from (real CPU target).

Edit a module's file after importing it and before the first launch: the kernel still runs the
imported code (as every other function of the module does), one StaleSourceWarning - at the
user's line - says so and names importlib.reload; after the reload the edit is compiled. A file
deleted after the import compiles from the imported text too, and where gpunb has no copy of the
text the error names the module and the file.
"""

from __future__ import annotations

import importlib
import os
import warnings

import numpy as np
import pytest

import gpunb
from gpunb import cuda
from gpunb.foundation.errors import CompileError
from gpunb.foundation.user_warnings import StaleSourceWarning

KERNEL = """
    from gpunb import cuda


    @cuda.jit
    def fill(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = {value}
"""


@pytest.fixture(autouse=True)
def cpu_target(cache_dir):
    gpunb.set_target("cpu")
    yield
    gpunb.set_target(None)


def _launch(kernel) -> list:
    out = np.zeros(4, np.float32)
    kernel[1, 4](out)
    return out.tolist()


def _stale(caught) -> list:
    return [w for w in caught if issubclass(w.category, StaleSourceWarning)]


def test_an_edit_before_the_first_launch_is_not_compiled_until_reload(modules):
    mod = modules.write("edited_first", KERNEL.format(value=1))
    modules.edit("edited_first", KERNEL.format(value=2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _launch(mod.fill) == [1.0] * 4  # the imported text: what the module runs
        assert _launch(mod.fill) == [1.0] * 4
        gpunb.cache.invalidate()  # a new epoch re-checks the module's file: no second warning
        assert _launch(mod.fill) == [1.0] * 4
    (warning,) = _stale(caught)
    text = str(warning.message)
    assert str(modules.path / "edited_first.py") in text and "module 'edited_first'" in text
    assert "importlib.reload(edited_first)" in text and "'fill'" in text
    assert warning.filename == __file__  # the user's line: the launch
    mod = importlib.reload(mod)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _launch(mod.fill) == [2.0] * 4
    assert not _stale(caught)


def test_a_touch_or_an_unchanged_save_is_not_an_edit(modules):
    mod = modules.write("touched_first", KERNEL.format(value=3))
    modules.edit("touched_first", KERNEL.format(value=3))  # same text, newer mtime
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _launch(mod.fill) == [3.0] * 4
    assert not _stale(caught)


def test_a_deleted_file_compiles_from_the_imported_text(modules):
    mod = modules.write("deleted_first", KERNEL.format(value=4))
    os.unlink(modules.path / "deleted_first.py")
    with pytest.warns(StaleSourceWarning, match="deleted or moved after module 'deleted_first'"):
        assert _launch(mod.fill) == [4.0] * 4


def test_errors_show_the_imported_lines(modules):
    broken = """
        from gpunb import cuda


        @cuda.jit
        def fill(out):
            i = cuda.grid(1)
            out[i] = undefined_name
    """
    mod = modules.write("broken_first", broken)
    modules.edit("broken_first", "# a comment line pushes everything down\n" + broken)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleSourceWarning)
        with pytest.raises(CompileError) as info:
            _launch(mod.fill)
    rendered = str(info.value)
    assert "out[i] = undefined_name" in rendered and "broken_first.py" in rendered
    assert ", line 8," in rendered  # the line in the text the module was imported from


def test_without_any_copy_of_the_text_the_error_names_module_and_file(modules):
    mod = modules.write("plain_helpers", """
        def fill(out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = 5
    """)
    os.unlink(modules.path / "plain_helpers.py")
    kernel = cuda.jit(mod.fill)  # made a GPU function after its file went: nothing to keep
    with pytest.raises(CompileError) as info:
        _launch(kernel)
    hint = info.value.hint
    assert "plain_helpers" in hint and str(modules.path / "plain_helpers.py") in hint
    assert "<dynamic-code>" not in str(info.value) and "string" not in hint


def test_a_kernel_made_later_from_an_imported_module_uses_the_imported_text(modules):
    mod = modules.write("later_made", KERNEL.format(value=6) + """

    def plain(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = 7
    """)
    modules.edit("later_made", (KERNEL.format(value=8) + """

    def plain(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = 9
    """))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _launch(cuda.jit(mod.plain)) == [7.0] * 4  # kept when `fill` was made
    assert len(_stale(caught)) == 1


PLAIN = """
    from gpunb import cuda


    def plain(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = {value}
"""


def test_a_function_made_gpu_after_a_reload_compiles_the_reloaded_text(modules):
    """No GPU function is made while the module imports: the text is kept when one is made
    later, and a reload (the file edited) is told apart by which text makes the code."""
    mod = modules.write("plain_reloaded", PLAIN.format(value=1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _launch(cuda.jit(mod.plain)) == [1.0] * 4
        modules.edit("plain_reloaded", PLAIN.format(value=2))
        mod = importlib.reload(mod)
        assert _launch(cuda.jit(mod.plain)) == [2.0] * 4
    assert not _stale(caught)


def test_a_function_made_gpu_from_a_file_edited_since_the_import_says_so(modules):
    mod = modules.write("plain_edited", PLAIN.format(value=3))
    modules.edit("plain_edited", PLAIN.format(value=4))
    with pytest.warns(StaleSourceWarning, match="does not hold the code of 'plain'") as caught:
        kernel = cuda.jit(mod.plain)
    assert caught[0].filename == __file__ and "importlib.reload(plain_edited)" in \
        str(caught[0].message)
    assert _launch(kernel) == [4.0] * 4  # the file as it is: gpunb has no other text


def test_a_module_imported_from_bytecode_alone_says_so(modules):
    """A sourceless module (only its .pyc was shipped): the file was never there to be
    deleted; the hint says the source is needed beside it."""
    import py_compile
    import sys
    import textwrap

    source = modules.path / "shipped_compiled.py"
    source.write_text(textwrap.dedent(KERNEL.format(value=7)))
    py_compile.compile(str(source), cfile=str(modules.path / "shipped_compiled.pyc"))
    source.unlink()
    importlib.invalidate_caches()
    try:
        mod = importlib.import_module("shipped_compiled")
        with pytest.raises(CompileError) as info:
            _launch(mod.fill)
    finally:
        sys.modules.pop("shipped_compiled", None)
    hint = info.value.hint
    assert "shipped_compiled.pyc" in hint and "bytecode" in hint
    assert "ship shipped_compiled.py beside it" in hint
    assert "deleted or moved" not in hint


HELPER_MODULE = """
    from gpunb import cuda

    SCALE = 2.0


    @cuda.jit(device=True)
    def helper(x):
        return x * {body}


    @cuda.jit
    def via_module(out):
        out[0] = helper(1.0)
"""


def test_a_function_from_before_a_reload_says_so_not_that_the_file_changed(modules):
    """`from mod import helper`, then the module is edited and reloaded (importlib.reload, or
    %autoreload, which cannot update GPU functions in place): the old `helper` still compiles
    the code it was defined with, and one warning says that and what to do - not "changed on
    disk after the import; reload", which the module was. A function the reload left as it was
    (via_module) is not warned about, and it calls the module's new helper."""
    mod = modules.write("reloaded_helper", HELPER_MODULE.format(body="SCALE"))
    old_kernel = mod.via_module
    namespace = {"cuda": cuda, "helper": mod.helper}  # a cell's `from reloaded_helper import`
    exec("def mine(out):\n    out[0] = helper(1.0)\n", namespace)  # noqa: S102 - a cell
    mine = cuda.jit(namespace["mine"])
    out = np.zeros(1)
    mine[1, 1](out)
    old_kernel[1, 1](out[:1])
    modules.edit("reloaded_helper", HELPER_MODULE.format(body="SCALE + 100"))
    importlib.reload(mod)
    gpunb.cache.invalidate()  # a notebook cell ended
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old_kernel[1, 1](out)
        assert out[0] == 102.0  # its module's names are the reloaded ones
        mine[1, 1](out)
        assert out[0] == 2.0  # the old helper object: the code it was defined with
    stale = [str(w.message) for w in _stale(caught)]
    assert len(stale) == 1, stale
    assert "'helper' is the one module 'reloaded_helper' defined before it was reloaded" \
        in stale[0]
    assert "from reloaded_helper import helper" in stale[0] and "reloaded_helper.helper" \
        in stale[0]
    assert not any("changed on disk" in text for text in stale)
