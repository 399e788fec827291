"""@overload in notebook cells: a kernel cell calling an overloaded function, the overload's
cell run again with another body (the kernel recompiles), and overloads written inside a
%%gpukernel cell (where every def, the stub too, becomes a GPU function)."""

from __future__ import annotations

from nbhelpers import run_cell

OVERLOAD_CELL = """
from gpunb.cuda import types
from gpunb.cuda.extending import overload

def bumped(x):
    raise NotImplementedError

@overload(bumped)
def ol_bumped(x):
    if isinstance(x, types.Integer):
        return lambda x: x + STEP
"""


def test_rerunning_an_overload_cell_recompiles_the_kernel(shell):
    run_cell(shell, "import numpy as np\nSTEP = 1\nout = np.zeros(1, np.int64)")
    assert run_cell(shell, OVERLOAD_CELL).success
    assert run_cell(shell, "%%gpukernel\ndef kernel(out):\n    out[0] = bumped(41)\n").success
    assert run_cell(shell, "kernel[1, 1](out)").success
    assert shell.user_ns["out"][0] == 42
    assert run_cell(shell, OVERLOAD_CELL.replace("x + STEP", "x + 2 * STEP")).success
    assert run_cell(shell, "kernel[1, 1](out)").success
    assert shell.user_ns["out"][0] == 43


def test_overloads_defined_in_a_gpukernel_cell(shell):
    run_cell(shell, "import numpy as np\nout = np.zeros(1, np.int64)\n"
                    "from gpunb.cuda.extending import overload")
    cell = ("%%gpukernel\n"
            "def twice(x):\n"
            "    raise NotImplementedError\n\n"
            "@overload(twice)\n"
            "def ol_twice(x):\n"
            "    return lambda x: 2 * x\n\n"
            "def kernel(out):\n"
            "    out[0] = twice(21)\n")
    result = run_cell(shell, cell)
    assert result.success, result.error_in_exec
    assert run_cell(shell, "kernel[1, 1](out)").success
    assert shell.user_ns["out"][0] == 42
