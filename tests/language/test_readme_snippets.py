"""README's kernel-language snippets (Extending the kernel language; Tensor cores; Asynchronous
copies, TMA and wgmma), each pasted alone into a fresh namespace as a newcomer would paste it
into a fresh notebook: they run as written on the CPU target (and, marked `gpu`, on the
device)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
SECTIONS = {
    "extending": "## Extending the kernel language: `@overload`, `register_jitable`, methods "
                 "and attributes\n",
    "tensor cores": "## Tensor cores\n",
    "async copies": "## Asynchronous copies, TMA and wgmma (Ampere and Hopper)\n",
    # the watchdog stopping a spinning kernel, a fault told as KernelFaultError (CPU target)
    "stopping": "## Stopping a runaway kernel, and kernels that crash\n",
}


def _snippets(heading: str) -> list[str]:
    section = README.read_text().split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


CASES = [(name, i) for name, heading in SECTIONS.items()
         for i in range(len(_snippets(heading)))]


def _run(name: str, index: int, target: str) -> None:
    import gpunb

    snippet = _snippets(SECTIONS[name])[index]
    gpunb.set_target(target)
    try:
        exec(compile(snippet, f"README.md ({name}, snippet {index + 1})", "exec"),  # noqa: S102
             {"__name__": "__main__"})
    finally:
        gpunb.set_target(None)


def test_the_sections_hold_the_snippets_they_teach():
    names = {name: " ".join(_snippets(heading)) for name, heading in SECTIONS.items()}
    for call in ("wmma.mma_sync", "cuda.mma_sync", "cuda.ldmatrix", "cuda.inline_ptx"):
        assert call in names["tensor cores"], call
    for call in ("cuda.cp_async.copy", "cuda.tma.load", "cuda.mbarrier.wait",
                 "cluster.map_shared_rank", "max_active_clusters"):
        assert call in names["async copies"], call
    for text in ("GPUNB_LAUNCH_TIMEOUT", "LaunchTimeoutError", "KernelFaultError"):
        assert text in names["stopping"], text


@pytest.mark.parametrize("name, index", CASES, ids=[f"{n}-{i + 1}" for n, i in CASES])
def test_a_snippet_runs_as_pasted_on_the_cpu_target(name, index):
    _run(name, index, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("name, index", CASES, ids=[f"{n}-{i + 1}" for n, i in CASES])
def test_a_snippet_runs_as_pasted_on_the_gpu(name, index):
    _run(name, index, "cuda")
