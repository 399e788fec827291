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


_debug_paths: dict = {}


def debug_source_path(filename: str) -> str:
    """The path PTX line info names for `filename`: itself when it is a file on disk; for a
    notebook cell (text only in linecache) a copy of the text under the cache directory, named by
    its content (`<cache>/sources/<sha1>.py`), so Nsight Compute and nvdisasm can show the
    source of a cell's kernel. Falls back to `filename` when the text or the folder is missing."""
    import linecache
    import os

    from gpunb.foundation import config

    memo = (filename, os.environ.get("GPUNB_CACHE_DIR", ""))
    found = _debug_paths.get(memo)
    if found is not None:
        return found

    path = filename
    if not os.path.isfile(filename):
        text = "".join(linecache.getlines(filename))
        if text:
            import hashlib  # only here: loading OpenSSL costs a file-backed kernel ~3 ms

            digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:20]
            folder = os.path.join(config.cache_dir(), "sources")
            candidate = os.path.join(folder, f"{digest}.py")
            anchor = config.cache_dir_anchor()  # a missing home is never created
            try:
                if anchor is not None and not os.path.isdir(anchor):
                    raise OSError("no home directory")
                if not os.path.isfile(candidate):
                    os.makedirs(folder, mode=0o700, exist_ok=True)
                    partial = f"{candidate}.{os.getpid()}.tmp"
                    with open(partial, "w", encoding="utf-8") as handle:
                        handle.write(text)
                    os.replace(partial, candidate)
                path = candidate
            except OSError:
                path = filename
    _debug_paths[memo] = path
    return path


def debug_path_origin(path: str) -> str | None:
    """The filename whose text `debug_source_path` copied to `path` (a cell's synthetic
    filename), or None when this process made no such copy."""
    for (filename, _), copy in list(_debug_paths.items()):
        if copy == path and copy != filename:
            return filename
    return None
