"""README's "PyTorch operators" snippet pasted alone into a fresh namespace, as a newcomer pastes
it into a fresh notebook: it runs as written on the CPU target (it once used `cuda.grid` without
importing `cuda`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

README = Path(__file__).resolve().parents[2] / "README.md"
HEADING = "### PyTorch operators: `gpunb.torch.custom_op`\n"


@pytest.mark.slow
def test_the_readme_pytorch_snippet_runs_as_pasted(capsys):
    import gpunb  # records exec'd text, so the kernel's source is found

    section = README.read_text().split(HEADING, 1)[1].split("\n## ", 1)[0]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, re.S)
    gpunb.set_target("cpu")
    try:
        exec(compile(snippet, "README.md (PyTorch operators)", "exec"),  # noqa: S102
             {"__name__": "__main__"})
    finally:
        gpunb.set_target(None)
    assert capsys.readouterr().out.startswith("tensor(")
