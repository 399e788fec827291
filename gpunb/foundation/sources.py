"""Registry-free helpers naming notebook cells: a cell's synthetic filename -> `Cell In[N]`.

IPython compiles each cell under a synthetic filename (e.g. `/tmp/ipykernel_123/456.py`); the
notebook layer records which execution count each filename belongs to so errors and provenance can
say `Cell In[7]`. This module holds only a dict; it imports nothing heavy.
"""

from __future__ import annotations

_cell_labels: dict[str, str] = {}


def register_cell(filename: str, execution_count: int | None) -> None:
    """Remember that `filename` holds the text of notebook cell `execution_count`."""
    label = f"Cell In[{execution_count}]" if execution_count is not None else "Cell In[ ]"
    _cell_labels[filename] = label


def cell_label(filename: str) -> str | None:
    """`Cell In[N]` for a registered cell filename, else None."""
    return _cell_labels.get(filename)


def is_cell(filename: str) -> bool:
    return filename in _cell_labels or filename.startswith("<ipython-input-")
