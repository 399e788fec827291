"""%%gpuprofile and %%gpukernel --sanitize in a real IPython shell (CPU target)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from nbhelpers import run_cell

SAXPY = """%%gpukernel
def saxpy(out, x, y, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]
"""


def _setup(shell):
    run_cell(shell, SAXPY)
    run_cell(shell, "import numpy as np\nv = np.ones(256, np.float32)\nw = np.zeros(256, "
                    "np.float32)\ncalls = []")


def test_repeat_and_warmup_record_only_the_repeated_runs(shell, capsys):
    _setup(shell)
    capsys.readouterr()
    run_cell(shell, "%%gpuprofile --repeat 3 --warmup 2\ncalls.append(1)\n"
                    "for _ in range(2):\n    saxpy[1, 256](w, v, v, 1.0)")
    text = capsys.readouterr().out
    assert "host timings (CPU target)" in text
    assert shell.user_ns["calls"] == [1] * 5  # 2 warm-up runs + 3 recorded runs
    import gpunb

    prof = gpunb.last_profile()
    assert len(prof.launches) == 6 and (prof.repeat, prof.warmup) == (3, 2)
    assert prof.launches[0].bytes == 12 * 256 and prof.launches[0].timing == "host"
    assert "cell" in prof.launches[0].defined_at.lower()
    row = next(line for line in text.splitlines() if line.startswith("saxpy"))
    assert row.split()[1] == "6"


@pytest.mark.parametrize(("line", "message"), [
    ("--repeat 0", "--repeat 0: the cell must run at least once"),
    ("--warmup -1", "--warmup -1: expected 0 or more"),
    ("--frobnicate", "unrecognized arguments: --frobnicate"),
    ("--repeat x", "invalid int value"),
])
def test_bad_options_are_one_usage_error_and_the_cell_does_not_run(shell, line, message):
    _setup(shell)
    with pytest.raises(UsageError, match=message):
        shell.run_cell_magic("gpuprofile", line, "calls.append(1)")
    assert shell.user_ns["calls"] == []


def test_a_cell_without_launches_says_so(shell, capsys):
    _setup(shell)
    capsys.readouterr()
    run_cell(shell, "%%gpuprofile\nx = 1 + 1")
    assert "no kernel launches were recorded" in capsys.readouterr().out
    assert shell.user_ns["x"] == 2


def test_ncu_on_the_cpu_target_is_a_labelled_reduced_mode(shell, capsys):
    _setup(shell)
    capsys.readouterr()
    run_cell(shell, "%%gpuprofile --ncu\nsaxpy[1, 256](w, v, v, 2.0)")
    text = capsys.readouterr().out
    assert "--ncu: Nsight Compute measures GPU launches; these ran on the CPU target" in text
    assert float(shell.user_ns["w"][0]) == 3.0  # the cell's own result is unaffected


def test_gpukernel_sanitize_runs_the_cell_and_reports_in_one_line(shell, capsys):
    _setup(shell)
    capsys.readouterr()
    run_cell(shell, "%%gpukernel --sanitize memcheck\nsaxpy[1, 256](w, v, v, 4.0)")
    text = capsys.readouterr().out
    assert "compute-sanitizer memcheck:" in text and "CPU target" in text
    assert float(shell.user_ns["w"][0]) == 5.0


@pytest.mark.parametrize(("tool", "counterpart"), [
    ("memcheck", "every access is bounds-checked"),
    ("racecheck", "--racecheck (cuda.jit(racecheck=True)) finds data races"),
    ("synccheck", "a divergent syncthreads"),
    ("initcheck", "reads of shared memory no thread wrote"),
])
def test_sanitize_on_the_cpu_target_names_the_cpu_targets_own_check(shell, capsys, tool,
                                                                     counterpart):
    """Every tool said "the CPU target, which checks bounds itself", also racecheck, whose
    CPU counterpart (--racecheck) is not on by default."""
    _setup(shell)
    capsys.readouterr()
    run_cell(shell, f"%%gpukernel --sanitize {tool}\nsaxpy[1, 256](w, v, v, 4.0)")
    text = capsys.readouterr().out
    assert f"compute-sanitizer {tool}:" in text and counterpart in text, text


def test_a_failed_cell_under_sanitize_on_the_cpu_claims_no_replay(shell, capsys):
    """The report said "the findings come from the replay in a child process" where nothing was
    replayed (the CPU target)."""
    result = run_cell(shell, "%%gpukernel --sanitize memcheck\ndef past(o):\n    o[5] = 1\n"
                             "import numpy as np\nbuf = np.zeros(1)\npast[1, 1](buf)")
    assert type(result.error_in_exec).__name__ == "KernelIndexError"
    text = capsys.readouterr().out
    assert "every access is bounds-checked" in text and "replay in a child process" not in text


def test_gpukernel_sanitize_rejects_unknown_tools(shell):
    with pytest.raises(UsageError, match="invalid choice: 'leakcheck'"):
        shell.run_cell_magic("gpukernel", "--sanitize leakcheck", "pass")


def test_host_error_in_a_gpuprofile_cell_shows_the_cell_not_the_magic(shell, capsys):
    import re

    result = run_cell(shell, "%%gpuprofile\nx = 1\nraise ValueError('boom')\n")
    count = result.execution_count
    assert isinstance(result.error_in_exec, ValueError)
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert f"Cell In[{count}], line 3" in text and "raise ValueError('boom')" in text
    # no frames of the magic, the profiler or cellexec between the cell and its error
    assert "gpunb/notebook" not in text and "run_cell_magic" not in text


def test_a_syntax_error_in_a_gpuprofile_cell_names_gpuprofile(shell, capsys):
    result = run_cell(shell, "%%gpuprofile\ndef f(:\n    pass\n")
    assert type(result.error_in_exec).__name__ == "CompileError"
    text = capsys.readouterr().out
    assert "%%gpuprofile cells are Python" in text and "%%gpukernel" not in text
