"""Running a %%gpukernel body: defs wrapped, source readable, line numbers the cell's own."""

import inspect
import linecache

import pytest

from gpunb.foundation.errors import CompileError
from gpunb.foundation.sources import cell_label
from gpunb.notebook.cellexec import WRAP_NAME, cell_filename, run_cell

BODY = '''def scale(x, a):
    return x * a

@staticmethod
def decorated(x):
    return x

n = 3
total = n * 2
def later(x):
    return x + n
total + 1
'''


def wrapped(func):
    wrapped.seen.append(func)
    return ("gpu", func)


def test_defs_are_wrapped_and_host_code_runs():
    wrapped.seen = []
    ns: dict = {}
    result = run_cell(BODY, "--show ptx", ns, wrapped, 7)
    assert list(result.functions) == ["scale", "decorated", "later"]
    assert ns["scale"][0] == "gpu" and ns["later"][0] == "gpu"
    assert ns["total"] == 6 and result.value == 7  # last expression is returned, not lost
    assert WRAP_NAME not in ns  # the helper name does not leak into the user's namespace


def test_source_is_readable_with_cell_line_numbers():
    wrapped.seen = []
    ns: dict = {}
    result = run_cell(BODY, "", ns, wrapped, 12)
    scale = ns["scale"][1]
    lines, first = inspect.getsourcelines(scale)
    assert first == 2  # line 1 of the cell is the %%gpukernel line
    assert lines[0].startswith("def scale")
    assert linecache.getline(result.filename, 1).startswith("# %%gpukernel")
    assert cell_label(result.filename) == "Cell In[12]"


def test_plain_python_mode_keeps_functions():
    ns: dict = {}
    run_cell("def f():\n    return 5\nf()\n", "", ns, None, 3, magic="gpuprofile")
    assert ns["f"]() == 5


def test_syntax_error_points_at_the_cell_line():
    with pytest.raises(CompileError) as info:
        run_cell("x = 1\ny = (2 +\n", "", {}, wrapped, 4)
    text = str(info.value)
    assert "Cell In[4], line 3" in text and "syntax error" in text


def test_async_def_is_rejected_with_location():
    with pytest.raises(CompileError) as info:
        run_cell("async def f():\n    pass\n", "", {}, wrapped, 5)
    assert "async functions cannot be GPU functions" in str(info.value)
    assert "Cell In[5], line 2" in str(info.value)


def test_filename_is_stable_per_text_and_count():
    assert cell_filename("a", 1) == cell_filename("a", 1)
    assert cell_filename("a", 1) != cell_filename("a", 2)
    assert cell_filename("a", 1) != cell_filename("b", 1)
