"""Terminal IPython (InteractiveShell): fast %load_ext, text views, errors without internals."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from nbhelpers import run_cell

SAXPY = """%%gpukernel --show ptx
def scale(x, a):
    return x * a

def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = scale(x[i], a) + y[i]
"""


def test_load_ext_loads_no_compiler_or_driver():
    """What keeps %load_ext fast (its time is a benchmark figure, not a test): no compiler,
    driver, widget or lexer module is imported until a kernel needs it."""
    code = textwrap.dedent("""
        import sys
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        import numpy  # a notebook that uses gpunb has numpy loaded already
        before = set(sys.modules)
        ip.run_line_magic("load_ext", "gpunb")
        heavy = [m for m in set(sys.modules) - before
                 if m.split(".")[0] in ("llvmlite", "ipywidgets", "cuda", "pygments")
                 or m.startswith(("gpunb.compiler.lower", "gpunb.backends.cuda.driver"))]
        print(heavy)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == "[]", f"heavy modules imported by %load_ext: {out}"


def test_magics_are_registered(shell):
    assert "gpukernel" in shell.magics_manager.magics["cell"]
    assert "gpuprofile" in shell.magics_manager.magics["cell"]
    assert {"gpucache", "gpuinfo"} <= set(shell.magics_manager.magics["line"])


def test_gpukernel_show_prints_ptx_text_after_first_launch(shell, capsys):
    run_cell(shell, SAXPY)
    assert capsys.readouterr().out == ""  # not compiled yet: nothing to show
    shell.user_ns.update(np=np)
    result = run_cell(shell, "out = np.zeros(300, np.float32)\n"
                             "x = np.arange(300, dtype=np.float32)\n"
                             "saxpy[2, 256](out, x, x, 3.0)\nout[:3].tolist()")
    assert result.result == [0.0, 4.0, 8.0]
    text = capsys.readouterr().out
    assert "saxpy" in text and "---- PTX ----" in text and ".visible .entry saxpy" in text
    assert "<" + "div" not in text  # plain text, no HTML in a terminal


def test_compile_error_is_rendered_without_internal_frames(shell, capsys):
    run_cell(shell, "import numpy as np\nout = np.zeros(4, np.float32)")
    result = run_cell(shell, "%%gpukernel\ndef bad(out):\n    out[0] = missing_name\n"
                             "bad[1, 1](out)")
    count = result.execution_count
    assert result.error_in_exec is not None
    text = capsys.readouterr().out
    assert "CompileError" in text and "missing_name" in text
    assert f"Cell In[{count}], line 3" in text and "^" in text
    assert f"from Cell In[{count}], line 4: bad[1, 1](out)" in text  # the launching line
    assert "Traceback" not in text and "gpunb/compiler" not in text


def test_launch_error_names_the_user_line(shell, capsys):
    run_cell(shell, SAXPY)
    count = run_cell(shell, "import numpy as np\nout = np.zeros(4, np.float32)\n"
                            "saxpy[1, 4](out, out)").execution_count
    text = capsys.readouterr().out
    assert "LaunchError" in text and "saxpy" in text
    assert f"Cell In[{count}], line 3" in text and "Traceback" not in text


def test_gpucache_status_is_a_text_table(shell, capsys):
    count = run_cell(shell, SAXPY).execution_count
    run_cell(shell, "import numpy as np\nv = np.ones(64, np.float32)\nsaxpy[1, 64](v, v, v, 1.0)")
    capsys.readouterr()
    run_cell(shell, "%gpucache status")
    text = capsys.readouterr().out
    header = text.splitlines()[0]
    assert header.split()[:3] == ["function", "signature", "target"]
    assert "saxpy" in text and "float32" in text and f"Cell In[{count}], line 5" in text
    assert "cache on" in text
    # `scale` is a device function of the %%gpukernel cell: compiled into saxpy, not "unused"
    (scale,) = [line for line in text.splitlines() if line.startswith("scale ")]
    assert "(device function: compiled into saxpy)" in scale, scale


def test_gpucache_status_names_a_failed_compile_until_one_succeeds(shell, capsys):
    run_cell(shell, "%%gpukernel\ndef fill(v):\n    v[0] = helper(2.0)\n")
    count = run_cell(shell, "import numpy as np\nv = np.zeros(4, np.float32)\n"
                            "fill[1, 1](v)").execution_count
    capsys.readouterr()
    run_cell(shell, "%gpucache status")
    text = capsys.readouterr().out
    (row,) = [line for line in text.splitlines() if line.startswith("fill ")]
    # the launch's error, not "(not compiled: ...)": which types, what failed, where
    assert "void(float32[::1])" in row and " failed " in row
    assert "CompileError: " in row and "helper" in row and f"(Cell In[{count - 1}], line 3)" in row
    run_cell(shell, "%%gpukernel\ndef helper(x):\n    return x * 2\n")
    run_cell(shell, "fill[1, 1](v)\nprint(v[0])")
    assert "4.0" in capsys.readouterr().out
    run_cell(shell, "%gpucache status")
    (row,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("fill ")]
    assert " failed " not in row and "miss" in row  # the failure is gone once it compiled


def _status_rows(shell, capsys, name: str) -> list[str]:
    capsys.readouterr()
    run_cell(shell, "%gpucache status")
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith(name + " ")]


@pytest.mark.parametrize("launch, kind, says", [
    ("fill[1, 1](v, v)", "LaunchError", "takes 1 argument (v) but 2 were given"),
    ("fill[1, 1]('text')", "LaunchError", "cannot pass argument 1 ('v')"),
    ("fill[1, 1, 0, 0, 9](v)", "LaunchError", "launch configuration of 'fill' must be"),
    ("fill[1, 1](v=v)", "LaunchError", "launched with keyword argument(s) v"),
])
def test_gpucache_status_names_a_launch_that_failed_before_compiling(shell, capsys, launch,
                                                                     kind, says):
    run_cell(shell, "%%gpukernel\ndef fill(v):\n    v[0] = 1.0\n")
    count = run_cell(shell, f"import numpy as np\nv = np.zeros(4, np.float32)\n{launch}"
                     ).execution_count
    (row,) = _status_rows(shell, capsys, "fill")
    # not "(not compiled: ...)": the launch, what failed and the user's line
    assert " launch failed " in row and f"{kind}: " in row and says in row, row
    assert f"(Cell In[{count}], line 3)" in row and "never launched" not in row
    run_cell(shell, "%gpucache explain fill")  # the cache saw nothing: the failure is the news
    explained = capsys.readouterr().out
    assert "failed since its last successful launch:\n    launch failed for " in explained
    assert f"{kind}: " in explained and says in explained
    run_cell(shell, "fill[1, 1](v)\nprint(v[0])")
    assert "1.0" in capsys.readouterr().out
    run_cell(shell, "%gpucache explain fill")
    assert "failed since" not in capsys.readouterr().out
    rows = _status_rows(shell, capsys, "fill")
    assert not any("failed" in r for r in rows) and any("float32[::1]" in r for r in rows)


def test_gpucache_status_names_a_launch_failure_with_its_argument_types(shell, capsys):
    """A declared signature that no argument matches: the row carries the launch's types; a
    device function launched: the row says so (not "compiled into the kernels...")."""
    run_cell(shell, "from gpunb import cuda\nimport numpy as np\n"
                    "@cuda.jit('void(float32[::1])')\ndef only32(v):\n    v[0] = 1.0\n"
                    "@cuda.jit(device=True)\ndef helper(x):\n    return x\n")
    count = run_cell(shell, "w = np.zeros(4, np.int64)\nonly32[1, 1](w)").execution_count
    rows = [r for r in _status_rows(shell, capsys, "only32") if "launch failed" in r]
    assert len(rows) == 1 and "void(int64[::1])" in rows[0]
    assert "NoMatchingSignatureError: No matching definition" in rows[0]
    assert f"(Cell In[{count}], line 2)" in rows[0]
    run_cell(shell, "helper[1, 1](w)")
    (row,) = _status_rows(shell, capsys, "helper")
    assert "launch failed" in row and "NotAKernelError" in row and "device function" in row


def test_gpucache_status_names_a_launch_that_failed_after_compiling(shell, capsys):
    """An out-of-bounds index found by the CPU target fails the launch of compiled code; the
    next good launch (through the native launcher, which steps aside once) clears it."""
    defined = run_cell(shell, "%%gpukernel\ndef poke(v, i):\n    v[i] = 1.0\n").execution_count
    run_cell(shell, "import numpy as np\nv = np.zeros(4, np.float32)\n"
                    "for _ in range(4):\n    poke[1, 1](v, 0)\n")  # a native launcher now
    count = run_cell(shell, "poke[1, 1](v, 99)").execution_count
    rows = _status_rows(shell, capsys, "poke")
    (failed,) = [r for r in rows if "launch failed" in r]
    assert "void(float32[::1], int64)" in failed and "KernelIndexError" in failed
    # where in the kernel, and the launch
    assert f"(Cell In[{defined}], line 3; launched at Cell In[{count}], line 1)" in failed
    assert any(" miss" in r or " hit" in r for r in rows if r is not failed)
    run_cell(shell, "poke[1, 1](v, 1)")
    assert not any("failed" in r for r in _status_rows(shell, capsys, "poke"))


def test_gpucache_usage_errors(shell, capsys):
    run_cell(shell, "%gpucache frobnicate")
    assert "usage: %gpucache" in capsys.readouterr().err
    run_cell(shell, "%gpucache explain nothing_here")
    assert "'nothing_here' is not a GPU function" in capsys.readouterr().err


def test_gpucache_off_and_on_set_the_config(shell, capsys, monkeypatch):
    from gpunb.foundation import config

    monkeypatch.setattr(config, "_process_cache", None)  # the magics' override ends with the test
    monkeypatch.setenv("GPUNB_CACHE", "1")
    run_cell(shell, "%gpucache off")
    assert config.cache_enabled() is False and os.environ["GPUNB_CACHE"] == "1"
    run_cell(shell, "%gpucache on")
    assert config.cache_enabled() is True
    monkeypatch.setenv("GPUNB_CACHE", "0")  # the magic's setting wins over the variable
    assert config.cache_enabled() is True
    run_cell(shell, "%gpucache dir")
    assert capsys.readouterr().out.strip().splitlines()[-1] == config.cache_dir()


def test_gpuinfo_text(shell, capsys):
    run_cell(shell, "%gpuinfo")
    text = capsys.readouterr().out
    assert "target in use: cpu" in text and "llvmlite" in text and "ptxas" in text
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="%gpuinfo takes no arguments; got --all"):
        shell.run_line_magic("gpuinfo", "--all")  # was ignored


def test_post_run_cell_bumps_the_cache_epoch(shell):
    from gpunb.notebook import hooks_for

    hooks = hooks_for(shell)
    before = hooks.epochs_bumped
    run_cell(shell, "1 + 1")
    run_cell(shell, "2 + 2")
    try:
        from gpunb.cache import epoch  # noqa: F401
    except ImportError:
        pytest.skip("the cache layer (gpunb.cache.epoch) is not in this build")
    assert hooks.epochs_bumped == before + 2


def test_gpuprofile_counts_launches(shell, capsys):
    run_cell(shell, SAXPY)
    run_cell(shell, "import numpy as np\nv = np.ones(64, np.float32)")
    capsys.readouterr()
    run_cell(shell, "%%gpuprofile\nfor _ in range(4):\n    saxpy[1, 64](v, v, v, 1.0)")
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("saxpy"))
    assert row.split()[1:3] == ["4", "1"]  # four launches, the first one compiled


@pytest.mark.slow
def test_inspector_and_explorer_text(shell):
    run_cell(shell, SAXPY)
    run_cell(shell, "import numpy as np\nv = np.ones(64, np.float32)\nsaxpy[1, 64](v, v, v, 1.0)")
    from gpunb.jit.report import KernelReport
    from gpunb.notebook import inspector_for, launch_explorer

    report = shell.user_ns["saxpy"].inspect()  # plain jit-level data, shown as text here
    text = repr(report)
    assert isinstance(report, KernelReport)
    assert text.startswith("saxpy ") and "registers=" in text and "line map:" in text
    from IPython.display import display
    from IPython.utils.capture import capture_output

    with capture_output() as captured:  # %load_ext registered the inspector for reports
        display(report)
    (shown,) = [output.data for output in captured.outputs]  # no widget outside a kernel
    assert shown["text/plain"] == text and "<details" in shown["text/html"]
    insp = inspector_for(shell.user_ns["saxpy"])
    assert insp.mapped_lines and insp.select_line(insp.mapped_lines[-1])
    explorer = launch_explorer(shell.user_ns["saxpy"], 10_000)
    table = repr(explorer)
    assert "occupancy" in table and "limited by" in table
    assert any(line.startswith("▶ ") for line in table.splitlines())


def test_options_reach_the_gpu_functions(shell):
    run_cell(shell, "%%gpukernel --target cpu --arch sm_80 --fastmath --lineinfo --debug "
                    "--max-registers 32 --no-cache\ndef k(v):\n    v[0] = 1.0\n")
    k = shell.user_ns["k"]
    assert k.requested_target == "cpu" and k.inspection_arch == "sm_80"
    assert k.options == {"fastmath": True, "lineinfo": True, "debug": True,
                         "max_registers": 32, "cache": False}
    run_cell(shell, "import numpy as np\nv = np.zeros(1, np.float32)\nk[1, 1](v)")
    assert shell.user_ns["v"][0] == 1.0
    report = k.inspect()
    assert report.arch == "sm_80" and ".target sm_80" in report.ptx


def test_gpu_functions_from_earlier_cells_and_imported_modules(shell, tmp_path, monkeypatch):
    (tmp_path / "gpu_helpers.py").write_text(
        "from gpunb import cuda\n\n\n@cuda.jit(device=True)\ndef triple(x):\n    return 3 * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    run_cell(shell, "%%gpukernel\ndef plus_one(x):\n    return x + 1\n")
    result = run_cell(shell, "%%gpukernel\nfrom gpu_helpers import triple\nimport numpy as np\n\n"
                             "def apply(v):\n    i = cuda.grid(1)\n    if i < v.size:\n"
                             "        v[i] = triple(plus_one(v[i]))\n\n"
                             "v = np.arange(4, dtype=np.float32)\napply[1, 32](v)\nv.tolist()")
    assert result.error_in_exec is None
    assert result.result == [3.0, 6.0, 9.0, 12.0]


def test_host_error_in_a_gpukernel_cell_shows_the_cell_not_the_magic(shell, capsys):
    result = run_cell(shell, "%%gpukernel\ndef fine(v):\n    v[0] = 1.0\n\nratio = 1 / 0\n")
    count = result.execution_count
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert f"Cell In[{count}], line 5" in text  # the cell's own line, as IPython names cells
    assert "ratio = 1 / 0" in text
    assert "gpukernel-cell" not in text  # not the synthetic filename
    assert "gpunb/notebook" not in text and "cellexec" not in text  # no magic internals


def test_cuda_target_without_a_gpu_is_a_rendered_error_with_a_hint(cpu_env):
    # a subprocess whose driver sees no device, so this holds on GPU machines too
    code = textwrap.dedent("""
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        ip.run_cell("%load_ext gpunb", store_history=True)
        ip.run_cell("import numpy as np\\nv = np.zeros(4, np.float32)", store_history=True)
        r = ip.run_cell("%%gpukernel --target cuda\\ndef k(v):\\n    v[0] = 1.0\\n\\nk[1, 1](v)",
                        store_history=True)
        print("ERROR", type(r.error_in_exec).__name__)
    """)
    import os

    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", NO_COLOR="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env).stdout
    assert "ERROR CudaUnavailableError" in out
    assert "hint: without a GPU, run kernels on the CPU target" in out
    assert "from Cell In[3], line 5: k[1, 1](v)" in out
    assert "Traceback" not in out and "gpunb/runtime" not in out


def test_unsupported_numpy_in_a_fused_function_points_at_its_line(shell, capsys):
    run_cell(shell, "import numpy as np\nimport gpunb\nx = np.ones(8, np.float32)")
    count = run_cell(shell, "@gpunb.fuse\ndef ordered(v):\n    return np.sort(v) + 1\n\n"
                            "ordered(x)").execution_count
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    # a typed gpunb error (no traceback) at the line and column that used np.sort, with a caret
    assert "FuseError: gpunb.fuse: np.sort is not supported" in text
    assert f"Cell In[{count}], line 3, column 12:" in text
    assert "    return np.sort(v) + 1\n           ^~~~~~~~~~\n" in text
    assert "hint: " in text and "Traceback" not in text
    assert f"from Cell In[{count}], line 5: ordered(x)" in text  # the call, set apart
    assert "gpunb/fusion" not in text  # the tracer's frames are not the user's story


def test_python_error_in_a_fused_function_shows_the_users_frames_only(shell, capsys):
    """An ordinary Python error in the fused function's body (a misspelt name): the call line
    and the function's line, with Python's own message, and no frame of gpunb's tracer."""
    run_cell(shell, "import numpy as np\nimport gpunb\nx = np.ones(8, np.float32)")
    count = run_cell(shell, "@gpunb.fuse\ndef shifted(v):\n    return np.sin(v) + offst\n\n"
                            "shifted(x)").execution_count
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert "NameError: name 'offst' is not defined" in text
    assert text.count(f"Cell In[{count}], line ") == 2  # the call, then the function's line
    assert "return np.sin(v) + offst" in text and "shifted(x)" in text
    assert "gpunb/fusion" not in text and "_plan_for" not in text and "trace(" not in text


def test_python_error_in_gpukernel_cell_starts_at_the_cell_line(shell, capsys):
    run_cell(shell, "%%gpukernel\ndef k(out):\n    out[0] = 1.0\n\nvalue = 1\n"
                    "value + undefined_name")
    shown = capsys.readouterr()
    text = re.sub(r"\x1b\[[0-9;]*m", "", shown.out + shown.err)
    assert "NameError" in text and "undefined_name" in text
    assert "run_cell_magic" not in text  # not the cell as IPython rewrote it
    assert "value + undefined_name" in text  # the cell's own line
    # an error in an ordinary cell is shown the way IPython always shows it
    run_cell(shell, "1 / 0")
    plain = re.sub(r"\x1b\[[0-9;]*m", "", "".join(capsys.readouterr()))
    assert "ZeroDivisionError" in plain and "1 / 0" in plain


def test_load_ext_binds_gpunb_for_notebook_helpers(shell):
    result = run_cell(shell, "gpunb.notebook.launch_explorer.__name__")
    assert result.result == "launch_explorer"


def test_misspelt_names_in_kernels_get_did_you_mean(shell, capsys):
    run_cell(shell, "%%gpukernel\ndef k(out):\n    i = cuda.gird(1)\n    out[i] = 1.0\n")
    shell.user_ns.update(np=np)
    run_cell(shell, "k[1, 4](np.zeros(4, np.float32))")
    text = "".join(capsys.readouterr())
    assert "did you mean 'grid'?" in text


def test_did_you_mean_offers_names_gpu_code_can_use(shell, capsys):
    """A misspelt builtin the kernel language has gets its name; an undefined helper is not
    offered `help` (or another builtin no kernel can call)."""
    shell.user_ns.update(np=np)
    run_cell(shell, "%%gpukernel\ndef k(out):\n    for i in rnage(4):\n        out[i] = 1.0\n")
    run_cell(shell, "k[1, 1](np.zeros(4, np.float32))")
    assert "did you mean 'range'?" in "".join(capsys.readouterr())
    run_cell(shell, "%%gpukernel\ndef h(out):\n    out[0] = helper(1.0)\n")
    run_cell(shell, "h[1, 1](np.zeros(4, np.float32))")
    text = "".join(capsys.readouterr())
    assert "name 'helper' is not defined" in text and "did you mean" not in text


@pytest.mark.parametrize("source", ["x = (", "def f():\nreturn 1", "1 +* 2"])
def test_a_plain_syntax_error_shows_no_ipython_frames(shell, capsys, source):
    """A cell that does not parse reads as it does without the extension: the line and a
    caret, not IPython's own frames (interactiveshell.py, compilerop.py)."""
    result = run_cell(shell, source)
    assert isinstance(result.error_before_exec, SyntaxError)
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert "Error" in text and "Cell In[" in text, text
    assert "interactiveshell.py" not in text and "compilerop.py" not in text, text


def test_a_syntax_error_raised_by_running_code_keeps_its_frames(shell, capsys):
    result = run_cell(shell, "def parse(text):\n    return compile(text, 'snippet', 'exec')\n\n"
                             "parse('x = (')")
    assert isinstance(result.error_in_exec, SyntaxError)
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert "parse('x = (')" in text and "snippet" in text, text


@pytest.mark.parametrize("launch, caret_under", [
    ("saxpy[2.5, 256](out, x, x, 1.0)", "saxpy[2.5, 256]"),
    ("saxpy[(1, 1, 1, 1), 256](out, x, x, 1.0)", "saxpy[(1, 1, 1, 1), 256]"),
    ("saxpy(out, x, x, 1.0)", "saxpy(out, x, x, 1.0)"),
])
def test_a_malformed_launch_has_a_caret_under_it(shell, capsys, launch, caret_under):
    """A float grid, a 4-tuple grid and a call without [grid, block]: the error names the cell's
    line and puts a caret under the launch, as every other launch error does."""
    run_cell(shell, SAXPY)
    shell.user_ns.update(np=np, out=np.zeros(8, np.float32), x=np.ones(8, np.float32))
    result = run_cell(shell, f"y = 1\n{launch}")
    assert result.error_in_exec is not None
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    lines = text.splitlines()
    assert f"Cell In[{result.execution_count}], line 2, column 1:" in text, text
    at = next(k for k, line in enumerate(lines) if line.strip() == launch)
    caret = lines[at + 1]
    start = lines[at].index(launch)
    assert caret.index("^") == start and len(caret.strip()) == len(caret_under), (lines[at], caret)


def test_notices_are_plain_output_once_the_extension_is_loaded(shell, capsys):
    """The CPU-target fallback notice goes to stdout in a notebook (a plain line, not the red
    stderr box); without the extension a script still gets it on stderr."""
    from gpunb.foundation import events
    from gpunb.runtime import target

    events.notify(target.NOTICE, "target")
    captured = capsys.readouterr()
    assert captured.out.strip() == target.NOTICE and captured.err == ""
    shell.run_line_magic("unload_ext", "gpunb")
    events.notify(target.NOTICE, "target")
    captured = capsys.readouterr()
    assert captured.err.strip() == target.NOTICE and captured.out == ""
    shell.run_line_magic("load_ext", "gpunb")


def test_gpudebug_after_a_breakpoint_that_never_stops_does_not_replay_it(shell):
    """%gpudebug replayed a launch whose only failure was its --break past the cell's end, and
    said it "ran to its end without error"."""
    from gpunb import DebuggerError

    result = run_cell(shell, "%%gpukernel --break 99\ndef k(o):\n    o[0] = 1\n\n"
                             "import numpy as np\nout = np.zeros(1)\nk[1, 1](out)")
    assert isinstance(result.error_in_exec, DebuggerError)
    assert "a breakpoint there never stops" in str(result.error_in_exec)
    result = run_cell(shell, "%gpudebug")
    assert isinstance(result.error_in_exec, DebuggerError)
    assert "failed in the debugger itself" in str(result.error_in_exec)
    assert "no thread of it failed" in str(result.error_in_exec)


def test_ipython_syntax_in_a_gpukernel_cell_runs_as_in_any_cell(shell, capsys):
    """`%timeit kernel[...](...)` or `!nvidia-smi` in a %%gpukernel cell was a syntax error:
    only %%gpuprofile turned IPython's syntax into Python."""
    result = run_cell(shell, "%%gpukernel\nimport numpy as np\n\ndef fill(o):\n"
                             "    o[cuda.grid(1)] = 7\n\no = np.zeros(32)\n"
                             "%timeit -n 2 -r 1 fill[1, 32](o)\n!echo shell-ok\nfill?\no.sum()")
    assert result.error_in_exec is None and result.error_before_exec is None
    assert result.result == 7 * 32
    text = capsys.readouterr().out
    assert "per loop" in text and "shell-ok" in text


@pytest.mark.parametrize("magic", ["gpukernel", "gpuprofile"])
def test_errors_name_the_cells_own_line_after_leading_blank_lines(shell, capsys, magic):
    """IPython's cleanup of a cell drops its leading blank lines: %%gpuprofile named line 3
    for an error on line 5 of the cell."""
    result = run_cell(shell, f"%%{magic}\n\n\nx = 1  # %timeit in a comment\n"
                             "raise ValueError('on line 5')\n")
    assert isinstance(result.error_in_exec, ValueError)
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert f"Cell In[{result.execution_count}], line 5" in text, text


@pytest.mark.parametrize(("variable", "value", "words"), [
    ("GPUNB_ARCH", "banana", "GPUNB_ARCH='banana': 'banana' is not a GPU architecture"),
    ("GPUNB_TARGET", "gpu", "GPUNB_TARGET='gpu': expected one of auto, cpu, cuda"),
])
def test_gpuinfo_reports_a_bad_setting_instead_of_failing(shell, capsys, monkeypatch, variable,
                                                          value, words):
    """%gpuinfo, where one looks when something is wrong, was a ValueError traceback."""
    monkeypatch.setenv(variable, value)
    result = run_cell(shell, "%gpuinfo")
    assert result.error_in_exec is None
    text = capsys.readouterr().out
    assert "llvmlite" in text and f"note: {words}" in text
