"""Kernels without a source file: exec'd strings and `python -c`, their errors, and cache keys.

The text is recorded by the audit hook that `import gpunb` installs (foundation.exec_sources)
and used only when compiling it gives the function's own code object (compiler.source_recovery).
"""

from __future__ import annotations
import __future__

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gpunb import CompileError, cuda
from gpunb.foundation import exec_sources

KERNEL = """
def scale(out, x):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * FACTOR
"""


def exec_kernel(text: str, **names):
    ns = {"cuda": cuda, **names}
    exec(textwrap.dedent(text), ns)
    return ns


def launch(fn, n: int = 8):
    out, x = np.zeros(n), np.arange(n, dtype=np.float64)
    cuda.jit(fn)[1, n](out, x)
    return out


def test_exec_kernel_reads_globals_of_its_namespace(target):
    ns = exec_kernel(KERNEL, FACTOR=3.0)
    np.testing.assert_array_equal(launch(ns["scale"]), np.arange(8) * 3.0)


def test_several_bodies_under_one_name_each_compile_their_own(target):
    first = exec_kernel(KERNEL, FACTOR=2.0)["scale"]
    second = exec_kernel(KERNEL.replace("x[i] * FACTOR", "x[i] + FACTOR"), FACTOR=2.0)["scale"]
    third = exec_kernel(KERNEL.replace("x[i] * FACTOR", "x[i] - FACTOR"), FACTOR=2.0)["scale"]
    x = np.arange(8.0)
    # newest first: an association by name or by "last exec" would give the wrong body here
    np.testing.assert_array_equal(launch(third), x - 2.0)
    np.testing.assert_array_equal(launch(first), x * 2.0)
    np.testing.assert_array_equal(launch(second), x + 2.0)


def test_same_text_again_after_the_first_died(target):
    """Equal code objects are one key of a WeakKeyDictionary; entries here are by identity, so
    the first function's death does not take the second one's text with it."""
    first = exec_kernel(KERNEL, FACTOR=1.0)
    second = exec_kernel(KERNEL, FACTOR=5.0)
    assert first["scale"].__code__ == second["scale"].__code__
    del first
    gc.collect()
    np.testing.assert_array_equal(launch(second["scale"]), np.arange(8) * 5.0)


def test_entries_die_with_their_code():
    ns = exec_kernel(KERNEL, FACTOR=1.0)
    key = id(ns["scale"].__code__)
    assert exec_sources.recorded(ns["scale"].__code__) is not None
    del ns
    gc.collect()
    assert key not in exec_sources._sources


def test_compile_then_exec_and_inherited_future_flags(target):
    code = compile(textwrap.dedent(KERNEL), "<generated>", "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    ns = {"cuda": cuda, "FACTOR": 4.0}
    exec(code, ns)
    np.testing.assert_array_equal(launch(ns["scale"]), np.arange(8) * 4.0)


def test_a_wrong_association_never_compiles_the_wrong_body():
    """compile A, compile B, exec A: the hook pairs A's code with B's text; verification
    refuses it, so the error says the text is missing instead of running B's body."""
    code_a = compile(textwrap.dedent(KERNEL), "<string>", "exec")
    compile(textwrap.dedent(KERNEL).replace("*", "+"), "<string>", "exec")
    ns = {"cuda": cuda, "FACTOR": 2.0}
    exec(code_a, ns)
    with pytest.raises(CompileError, match="cannot read the source of 'scale'") as info:
        cuda.compile_ptx(ns["scale"], "void(float64[::1], float64[::1])")
    assert "import gpunb before the string is executed" in str(info.value)


def test_errors_point_at_the_line_of_the_string():
    ns = exec_kernel("""
        # a comment, so the def is not on line 1

        def broken(out):
            out[0] = missing_name + 1
        """)
    with pytest.raises(CompileError) as info:
        cuda.compile_ptx(ns["broken"], "void(float64[::1])")
    text = str(info.value)
    assert 'File "<string>", line 5, column 14' in text
    assert "    out[0] = missing_name + 1\n             ^~~~~~~~~~~~" in text


def test_inspect_types_shows_the_string():
    ns = exec_kernel(KERNEL, FACTOR=2.0)
    kernel = cuda.jit(ns["scale"])
    kernel[1, 8](np.zeros(8), np.arange(8.0))
    assert "out[i] = x[i] * FACTOR" in kernel.inspect_types()


def test_cache_keys_follow_the_text():
    from gpunb.cache import cache_key, collect

    tools = {"gpunb": "t", "compiler": "c", "llvm": "l", "libdevice": "d"}

    def key(text: str) -> str:
        fp = collect(cuda.jit(exec_kernel(text, FACTOR=2.0)["scale"]))
        return cache_key(fp, "(float64[::1], float64[::1])", {}, "cpu", "host", tools)

    first = key(KERNEL)
    assert key(KERNEL.replace("*", "+")) != first
    assert key(KERNEL) == first  # the same text exec'd again: the same kernel, the same key
    assert key("# moved down a line\n" + KERNEL) == first


def _python(args: list, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          **kwargs)


PROGRAM = """\
import numpy as np
from gpunb import cuda
@cuda.jit
def add_one(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = i + 1
out = np.zeros(4)
add_one[1, 4](out)
print(out.tolist())
"""


@pytest.mark.parametrize("form", ["-c TEXT", "-Bc TEXT", "-cTEXT"])
def test_python_dash_c(form, tmp_path):
    args = [a.replace("TEXT", PROGRAM) for a in form.split(" ")]
    proc = _python(args, env=_env(tmp_path, GPUNB_TARGET="cpu"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[1.0, 2.0, 3.0, 4.0]"


def test_exec_before_import_gpunb_says_what_to_do(tmp_path):
    program = ("ns = {}\n"
               "exec('def k(out):\\n    out[0] = 1\\n', ns)\n"
               "from gpunb import cuda\n"
               "cuda.compile_ptx(ns['k'], 'void(float64[::1])')\n")
    proc = _python(["-c", program], env=_env(tmp_path))
    assert proc.returncode != 0
    assert "cannot read the source of 'k'" in proc.stderr
    assert "import gpunb before the string is executed" in proc.stderr


def test_stdin_program_says_what_to_do(tmp_path):
    program = "from gpunb import cuda\ndef k(out):\n    out[0] = 1\n" \
              "cuda.compile_ptx(k, 'void(float64[::1])')\n"
    proc = _python(["-"], input=program, env=_env(tmp_path))
    assert proc.returncode != 0
    assert "read from standard input (the interactive prompt, `python -`), which keeps no " \
        "source text" in proc.stderr


def _env(tmp_path, **extra) -> dict:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return {**os.environ, "PYTHONPATH": root, "GPUNB_NOTICES": "0",
            "GPUNB_CACHE_DIR": str(tmp_path), **extra}


def test_exec_in_a_module_under_a_made_up_file_name(tmp_path):
    """exec(compile(text, "gen.py", "exec")) in a script's own globals: linecache reads the
    *script* for "gen.py" through the module's loader; the string's own text must be used."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent('''\
        import numpy as np
        from gpunb import cuda
        exec(compile("""
        @cuda.jit
        def twice(out, x):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = x[i] * 2
        """, "generated_kernels.py", "exec"))
        out = np.zeros(4)
        twice[1, 4](out, np.arange(4.0))
        print(out.tolist())
        '''))
    proc = _python([str(script)], env=_env(tmp_path, GPUNB_TARGET="cpu"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[0.0, 2.0, 4.0, 6.0]"
