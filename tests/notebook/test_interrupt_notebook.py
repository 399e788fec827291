"""Interrupting a runaway kernel where people run them: terminal IPython and a Jupyter kernel.

Terminal IPython runs under a pseudo-terminal (pexpect) and gets a real Ctrl-C; the notebook
runs through nbclient, whose interrupt (on a cell's timeout) is the Jupyter kernel manager's,
the one Kernel > Interrupt and the stop button send. Both must stop the launch within a second
or so, say what happened, and keep every variable: the next cell launches again.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

SPIN = """%%gpukernel
def spin(o):
    while o[0] >= 0:
        o[1] += 1

def add_one(o):
    i = cuda.grid(1)
    if i < o.size:
        o[i] += 1

import numpy as np
o = np.zeros(2, np.int64)
spin[1, 1](np.array([-1, 0], np.int64))
kept = 42
"""


def test_ctrl_c_in_terminal_ipython(cpu_env):
    pexpect = pytest.importorskip("pexpect")
    # the kernels in a module of their own (a terminal cell magic would end at a blank line)
    (cpu_env / "spin_kernels.py").write_text("from gpunb import cuda\n\n" + "\n".join(
        "@cuda.jit\n" + part if part.startswith("def ") else part
        for part in SPIN.removeprefix("%%gpukernel\n").split("\n\n")))
    child = pexpect.spawn(sys.executable, ["-m", "IPython", "--simple-prompt", "--no-banner",
                                           "--colors=NoColor"], cwd=str(cpu_env),
                          env=dict(os.environ), encoding="utf-8", timeout=240)
    try:
        child.expect(r"In \[1\]: ")
        child.sendline("%load_ext gpunb")
        child.expect(r"In \[2\]: ")
        child.sendline("from spin_kernels import *")
        child.expect(r"In \[3\]: ")
        child.sendline("spin[1, 32](o)")
        time.sleep(1.5)  # spinning now
        sent = time.monotonic()
        child.sendintr()
        child.expect("KeyboardInterrupt", timeout=30)
        child.expect(r"In \[4\]: ")
        assert time.monotonic() - sent < 5  # < 1 s to stop; the rest is IPython's traceback
        shown = child.before
        assert "kernel 'spin' interrupted" in shown and "abandoned" in shown
        child.sendline("x = np.zeros(64); add_one[1, 64](x); print('next', x.sum(), kept)")
        child.expect(r"next 64\.0 42")
        child.expect(r"In \[5\]: ")
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


def test_interrupting_a_notebook_cell(cpu_env):
    """nbclient interrupts the cell that runs past its timeout; the notebook goes on."""
    import nbformat
    from nbclient import NotebookClient

    cells = ["%load_ext gpunb", SPIN, "import time\nstart = time.monotonic()\nspin[4, 64](o)",
             "print('stopped after', round(time.monotonic() - start, 1))\n"
             "x = np.zeros(64)\nadd_one[1, 64](x)\nprint('next', x.sum(), kept)"]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    client = NotebookClient(nb, kernel_name="python3", allow_errors=True,
                            interrupt_on_timeout=True,
                            timeout_func=lambda cell: 3 if "spin[4, 64]" in cell.source else 240,
                            resources={"metadata": {"path": str(cpu_env)}})
    client.execute()
    errors = [o for o in nb.cells[2].outputs if o["output_type"] == "error"]
    assert errors and errors[0]["ename"] == "KeyboardInterrupt", nb.cells[2].outputs
    assert "kernel 'spin' interrupted" in errors[0]["evalue"]
    assert "abandoned" in errors[0]["evalue"]
    shown = "\n".join(errors[0]["traceback"])  # the message and the cell's line, no launcher
    assert "spin[4, 64](o)" in shown and "gpunb/" not in shown, shown
    text = "".join(o.get("text", "") for o in nb.cells[3].outputs)
    assert "next 64.0 42" in text, nb.cells[3].outputs
    stopped = float(text.split("stopped after")[1].split()[0])
    assert stopped < 3 + 1.0 + 1.0  # the timeout, the second the issue allows, polling slack


def test_gpukernel_timeout_option(shell, capsys):
    from nbhelpers import run_cell

    result = run_cell(shell, SPIN)
    assert result.success
    result = run_cell(shell, "%%gpukernel --timeout 0.5\nspin[1, 32](o)")
    assert not result.success
    import gpunb

    assert isinstance(result.error_in_exec, gpunb.LaunchTimeoutError)
    assert "ran longer than 0.5 s" in str(result.error_in_exec)
    result = run_cell(shell, "x = np.zeros(8); add_one[1, 8](x); x.sum()")
    assert result.result == 8.0


def test_gpukernel_timeout_option_is_checked():
    from gpunb.notebook.options import OptionError, parse_kernel_options

    assert parse_kernel_options("--timeout 2.5").timeout == 2.5
    assert parse_kernel_options("").timeout is None
    for bad in ("--timeout -1", "--timeout nan", "--timeout soon"):
        with pytest.raises(OptionError):
            parse_kernel_options(bad)


def test_an_interrupted_launch_shows_the_message_and_the_cell_line_not_the_launcher(shell,
                                                                                   capsys):
    """Ctrl-C stopping a CPU-target launch showed every frame from the launch call down to
    executor.py; a stopped launch is gpunb's message, shown as its errors are."""
    import os
    import re
    import signal
    import threading

    from nbhelpers import run_cell

    assert run_cell(shell, SPIN).success
    capsys.readouterr()
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        result = run_cell(shell, "o = np.zeros(2, np.int64)\nspin[4, 32](o)")
    finally:
        timer.cancel()
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert "KeyboardInterrupt: kernel 'spin' interrupted" in text
    assert f"from Cell In[{result.execution_count}], line 2: spin[4, 32](o)" in text
    assert "gpunb/" not in text and "executor.py" not in text, text
    assert run_cell(shell, "x = np.zeros(8); add_one[1, 8](x); x.sum()").result == 8.0


def test_an_interrupted_compile_says_so_and_the_next_launch_compiles(shell, capsys):
    """Ctrl-C while a kernel compiled showed a KeyboardInterrupt through the compiler, the
    cache's store and contextlib; now one message, and nothing half-made is kept."""
    import re
    import signal

    from nbhelpers import run_cell

    import gpunb

    def ctrl_c(event):  # Ctrl-C arriving while the compile runs
        sub.unsubscribe()
        os.kill(os.getpid(), signal.SIGINT)

    assert run_cell(shell, "%%gpukernel\ndef twice(o):\n    o[cuda.grid(1)] *= 2\n").success
    sub = gpunb.events.subscribe("stage_started", ctrl_c)
    capsys.readouterr()
    result = run_cell(shell, "import numpy as np\nv = np.ones(4)\ntwice[1, 4](v)")
    sub.unsubscribe()
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert "compiling 'twice' was interrupted" in text and "nothing of it is kept" in text
    assert "gpunb/" not in text, text
    result = run_cell(shell, "twice[1, 4](v)\nv.tolist()")
    assert result.result == [2.0, 2.0, 2.0, 2.0]
