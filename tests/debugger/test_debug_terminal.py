"""The pdb-style front end: commands from a scripted stdin, in-process and in a real script
(breakpoint() in a kernel, Ctrl-C pausing a spinning kernel, end of input)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from debug_kernels import line_of, saxpy_like, shared_shift

import gpunb
from gpunb import DebuggerError, DebugQuit
from gpunb.debugger.request import DebugRequest
from gpunb.debugger.session import DebugSession, open_sessions
from gpunb.debugger.terminal import run_in_terminal
from gpunb.jit.debug_launch import debug_twin

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def cpu_target():
    gpunb.set_target("cpu")
    yield
    for session in open_sessions():
        session.abort("test ended")
    gpunb.set_target(None)


def _session(kernel, launch, args, **request) -> DebugSession:
    """A new (not started) session of `kernel`'s debug variant."""
    from gpunb.backends.launch_config import validate_config

    spec, _ = debug_twin(kernel)._specialize_for_args(args, None)
    params, _ = spec.packer.pack(args, spec.argtypes)
    grid, block = validate_config(*launch, spec.program.limits, 0, kernel.__name__)
    return DebugSession(spec.program, grid, block, 0, params, DebugRequest(**request),
                        ("out", "x", "y"))


def _drive(session, commands: str) -> str:
    out = io.StringIO()
    try:
        run_in_terminal(session, stdin=io.StringIO(commands), stdout=out)
    finally:
        out.seek(0)
    return out.getvalue()


def test_commands_step_inspect_and_continue():
    out, x, y = np.zeros(8, np.float32), np.linspace(0, 1, 8, dtype=np.float32), \
        np.ones(8, np.float32)
    line = line_of(saxpy_like, "t = scale")
    session = _session(saxpy_like, (1, 8), (out, x, y), breaks=((None, line),), thread=2)
    text = _drive(session, "p i\nvars\nwhere\ns\nw\nvars\nu\nvars\nd\nr\np t\nl\n"
                           "warp i\nthreads\nbarriers\nthread 5\nc\n")
    scale_line = line_of(saxpy_like.py_func.__globals__["scale"], "scaled = value")
    assert f"thread (2, 0, 0) of block (0, 0, 0), line {line}" in text
    assert "\n(gpunb) 2\n" in text  # p i
    assert "a: float32 = 2.5\ni: int64 = 2\n" in text  # vars, sorted, with numba types
    assert f"> scale, File \"{Path(__file__).parent / 'debug_kernels.py'}\", " \
           f"line {scale_line}" in text  # where, after stepping in
    assert "factor: float32 = 2.5\nvalue: float32 = 0.2857143" in text
    assert "(gpunb) > saxpy_like," in text  # up
    expected_t = np.float64(np.float32(x[2]) * np.float32(2.5)) + 1
    assert f"(gpunb) {float(expected_t)!r}\n" in text  # p t after stepping out
    assert f"{line + 1:4d} ->         out[i] = t + y[i]" in text  # list marks the line
    assert "! (0, 0, 0)               0  exited (last at line" in text  # warp i
    assert "* (2, 0, 0)  at line" in text  # threads marks the focused one
    assert "     2  exited\n     5  not started" in text  # barriers
    assert "thread (5, 0, 0) of block (0, 0, 0): not started" in text
    assert session.state == "finished"
    np.testing.assert_allclose(out, (x * np.float32(2.5) + 1) + 1, rtol=1e-6)


def test_unknown_commands_and_bad_expressions_keep_the_prompt():
    out, x, y = np.zeros(8, np.float32), np.zeros(8, np.float32), np.zeros(8, np.float32)
    line = line_of(saxpy_like, "t = scale")
    session = _session(saxpy_like, (1, 8), (out, x, y), breaks=((None, line),))
    text = _drive(session, "frobnicate\np nosuchname\np (\nthread 99\nb 1\nclear\nc\n")
    assert "*** unknown command 'frobnicate'" in text
    assert "*** NameError" in text
    assert "*** cannot read '('" in text
    assert "*** thread (99, 0, 0) is outside the launch" in text
    assert "*** line 1 of" in text and "has no statement" in text
    assert session.state == "finished"


def test_end_of_input_quits_and_abandons_the_launch():
    out, a = np.zeros(64, np.float32), np.arange(64, dtype=np.float32)
    session = _session(shared_shift, (1, 64), (out, a),
                       breaks=((None, line_of(shared_shift, "tile[i] =")),))
    with pytest.raises(DebugQuit, match="abandoned"):
        _drive(session, "n\n")
    assert session.state == "aborted"


def test_no_input_at_all_is_a_clear_error():
    class NoInput(io.StringIO):
        def readline(self, *args):
            raise OSError("stdin is not available")

    out, a = np.zeros(64, np.float32), np.arange(64, dtype=np.float32)
    session = _session(shared_shift, (1, 64), (out, a),
                       breaks=((None, line_of(shared_shift, "tile[i] =")),))
    with pytest.raises(DebuggerError, match="commands cannot be read here") as info:
        run_in_terminal(session, stdin=NoInput(), stdout=io.StringIO())
    assert "PYTHONBREAKPOINT=0" in info.value.hint
    assert session.state == "aborted"


SCRIPT = textwrap.dedent("""
    import numpy as np
    from gpunb import cuda

    @cuda.jit
    def kernel(flags, out):
        i = cuda.grid(1)
        if i == 2:
            breakpoint()
        count = 0
        while flags[0] == 0 and i == 0:
            count += 1
        out[i] = i * 10

    flags = np.zeros(1, np.int64)
    out = np.zeros(4, np.int64)
    kernel[1, 4](flags, out)
    print("RESULT", out.tolist())
""")


def _script(tmp_path, text: str) -> list[str]:
    path = tmp_path / "script.py"
    path.write_text(text)
    return [sys.executable, str(path)]


def _env() -> dict:
    return dict(os.environ, GPUNB_TARGET="cpu", PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")


def test_breakpoint_in_a_script_reads_commands_from_stdin(tmp_path):
    script = SCRIPT.replace("while flags[0] == 0 and i == 0", "while flags[0] == 1")
    result = subprocess.run(_script(tmp_path, script), input="p i\nn\nn\nn\np count\nc\n",
                            capture_output=True, text=True, env=_env(), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "'kernel' stopped at breakpoint(): thread (2, 0, 0)" in result.stdout
    assert "(gpunb) 2\n" in result.stdout
    assert "RESULT [0, 10, 20, 30]" in result.stdout


def test_ctrl_c_pauses_a_spinning_kernel_and_quit_abandons_it(tmp_path):
    script = SCRIPT.replace("if i == 2:", "if i == 99:").replace(
        "kernel[1, 4](flags, out)\n",
        "flags[0] = 1\nkernel[1, 4](flags, out)  # compiled, and runs to its end\n"
        "flags[0] = 0\nprint('SPINNING', flush=True)\nkernel[1, 4](flags, out)\n")
    proc = subprocess.Popen(_script(tmp_path, script), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env())
    try:
        assert proc.stdout.readline().strip() == "SPINNING"
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate("p count > 0\nq\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "pausing 'kernel' at the next line" in stdout
    # the CPU target's SIGINT handler (guard.py) asks the launch to stop; under the debugger
    # that is a pause at the thread's next line
    assert "'kernel' stopped at an interrupt (Ctrl-C): thread (0, 0, 0)" in stdout
    assert "(gpunb) True" in stdout
    assert "DebugQuit" in stderr and "abandoned" in stderr
    assert "RESULT" not in stdout


def test_the_readme_debugging_snippet_runs_as_written(tmp_path):
    import re

    text = (REPO / "README.md").read_text()
    section = text.split("## Debugging a kernel\n", 1)[1].split("\n## ", 1)[0]
    snippet = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    result = subprocess.run(_script(tmp_path, snippet + "\nprint('OUT', out[36:39])\n"),
                            input="p mean\nc\n", capture_output=True, text=True, env=_env(),
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "stopped at breakpoint(): thread (5, 0, 0) of block (1, 0, 0)" in result.stdout
    assert "(gpunb) 36.5\n" in result.stdout
    assert "OUT [35.5 36.5 37.5]" in result.stdout
