"""`%%gpukernel --graph NAME`: the cell's launches and copies are captured into a graph bound to
NAME (nothing runs), shown as its node table; NAME.replay() runs them. On the CPU target here."""

from __future__ import annotations

import pytest
from nbhelpers import run_cell

from gpunb.notebook.options import OptionError, parse_kernel_options

CELL = """%%gpukernel --graph steps
def bump(x, by):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += by

for _ in range(3):
    bump[1, 8](d, 2.0)
"""


def test_a_graph_cell_captures_binds_and_shows_the_graph(shell, capsys):
    run_cell(shell, "import numpy as np\nfrom gpunb import cuda\n"
                    "d = cuda.to_device(np.zeros(8, np.float32))")
    result = run_cell(shell, CELL)
    assert result.error_in_exec is None
    text = capsys.readouterr().out
    assert "gpunb graph on the cpu target: 3 launches, 0 copies" in text
    assert "bump" in text and "x: float32[::1] (8,), by: float64" in text
    assert run_cell(shell, "d.copy_to_host().tolist()").result == [0.0] * 8  # nothing ran
    run_cell(shell, "steps.replay()")
    assert run_cell(shell, "d.copy_to_host().tolist()").result == [6.0] * 8


def test_an_error_in_a_graph_cell_names_its_line_and_binds_nothing(shell, capsys):
    run_cell(shell, "import numpy as np\nfrom gpunb import cuda\n"
                    "d = cuda.to_device(np.zeros(8, np.float32))")
    result = run_cell(shell, "%%gpukernel --graph broken\nd.copy_to_host()\n")
    assert result.error_in_exec is not None
    text = capsys.readouterr().out
    assert "GraphError" in text and "without a destination" in text
    assert f"Cell In[{result.execution_count}], line 2" in text
    assert "broken" not in shell.user_ns


def test_graph_option_parsing():
    assert parse_kernel_options("--graph").graph == "graph"
    assert parse_kernel_options("--graph g1 --target cpu").graph == "g1"
    assert parse_kernel_options("").graph is None
    with pytest.raises(OptionError, match="expected a Python name"):
        parse_kernel_options("--graph 1g")
    with pytest.raises(OptionError, match="cannot go together"):
        parse_kernel_options("--graph g --sanitize memcheck")
