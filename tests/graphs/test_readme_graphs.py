"""README.md's "Kernels inside programs" snippets run as written, in order, on the CPU target
(torch.compile with the aot_eager backend here: inductor's C++ build of the same graph takes a
minute on a CI machine and tests PyTorch, not gpunb)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def snippets() -> list[str]:
    text = README.read_text()
    section = text.split("## Kernels inside programs: graphs and PyTorch\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def run(code: str, namespace: dict) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # (a name that is no file: gpunb reads the kernels' source from the exec'd text)
        exec(compile(code, f"<README.md snippet {hash(code)}>", "exec"), namespace)  # noqa: S102
    return out.getvalue()


def test_the_graph_snippets_print_what_they_say(cpu):
    graph_code, copies_code, torch_code = snippets()
    namespace: dict = {}
    printed = run(graph_code, namespace)
    assert printed.startswith("[199. 199. 199.]\n")
    assert "gpunb graph on the cpu target: 100 launches, 0 copies" in printed
    assert run(copies_code, namespace) == "[10. 10. 10.]\n"


def test_the_torch_snippet_runs(cpu, monkeypatch):
    torch = pytest.importorskip("torch")
    compile_as_given = torch.compile

    def compile_eagerly(*args, **kwargs):
        kwargs.setdefault("backend", "aot_eager")
        return compile_as_given(*args, **kwargs)

    monkeypatch.setattr(torch, "compile", compile_eagerly)
    *_, torch_code = snippets()
    namespace: dict = {}
    run("import numpy as np\nfrom gpunb import cuda\n", namespace)
    printed = run(torch_code, namespace)
    x, bias = namespace["x"], namespace["bias"]
    expected = torch.nn.functional.gelu(2 * x + bias.repeat(64), approximate="tanh").sum()
    assert printed.startswith("tensor(") and abs(float(printed[7:].split(")")[0].split(",")[0])
                                                 - float(expected)) < 1e-2
