"""README.md's Python snippets use only names they define or import, so that each pastes into a
fresh notebook and runs: within one `##` section a snippet may use what the section's earlier
snippets defined, and a section that links to another one (`](#writing-kernels)`) builds on that
section's snippets too. "In a notebook" runs after `%load_ext gpunb`, which binds `cuda` and
`gpunb`. Checked with ruff's undefined-name rule (F821), without running anything; the notebook
section itself runs in tests/notebook/test_readme_notebook.py."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_SECTION = "In a notebook"


def sections() -> dict[str, tuple[str, list[str]]]:
    """`##` title -> (its text, its ```python blocks in order)."""
    text = (REPO / "README.md").read_text()
    found = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title, _, body = part.partition("\n")
        found[title.strip()] = (body, re.findall(r"```python\n(.*?)```", body, re.S))
    return found


def _anchor(title: str) -> str:
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def programs() -> list[tuple[str, str]]:
    """(title, the section's snippets in order, after those of the sections it links to)."""
    all_sections = sections()
    anchors = {_anchor(title): title for title in all_sections}
    out = []
    for title, (_, blocks) in all_sections.items():
        if not blocks:
            continue
        prelude = _linked_snippets(title, all_sections, anchors, {title})
        if title == NOTEBOOK_SECTION:
            blocks = [b for b in blocks if not b.lstrip().startswith("%")]
            prelude.append("import gpunb\nfrom gpunb import cuda\n")
        out.append((title, "\n".join(prelude + blocks)))
    return out


def _linked_snippets(title: str, all_sections: dict, anchors: dict, seen: set) -> list[str]:
    """The snippets of the sections `title` links to, each after those its own links need."""
    out = []
    for anchor in re.findall(r"\]\(#([\w\-]+)\)", all_sections[title][0]):
        linked = anchors.get(anchor)
        if linked is None or linked in seen:
            continue
        seen.add(linked)
        out.extend(_linked_snippets(linked, all_sections, anchors, seen))
        out.extend(all_sections[linked][1])
    return out


@pytest.mark.parametrize("title, program", programs(), ids=[t for t, _ in programs()])
def test_readme_snippets_use_only_names_they_define(title, program, tmp_path):
    path = tmp_path / "snippet.py"
    path.write_text(re.sub(r"^%.*$", "", program, flags=re.M))
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated",
                           "--select", "F821", "--output-format", "concise", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"README section '{title}':\n{done.stdout}{done.stderr}"
