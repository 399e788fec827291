"""What a failed check says: findings (what is wrong, with the hint for that kind of mistake), the
first few wrong elements with the threads that wrote them, and the access map as text.

Feedback never prints a whole expected output: a handful of wrong elements (expected vs got, who
wrote each and what that thread read) is enough to debug, and too little to copy an answer from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SHOWN_ELEMENTS = 5  # wrong elements listed one by one before "... and N more"
SHOWN_READS = 6  # reads listed for the thread that wrote a wrong element


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong with a submission: its kind (a stable name tests and hints key on), what
    was found, and what to do about it."""

    kind: str
    message: str
    hint: str = ""

    def text(self) -> str:
        return self.message + (f"\nhint: {self.hint}" if self.hint else "")


# the hint for each kind of wrong values, matched to what the comparison saw
VALUE_HINTS = {
    "unwritten": "some elements were never written: every element needs a thread that writes "
                 "it (check the guard and the index: every block, every thread up to the size)",
    "outside": "elements the puzzle says to leave alone were written: only write the "
               "elements your launch is responsible for",
    "shifted": "the values are right but one place off: an off-by-one in an index",
    "edge": "only elements near the end are wrong: an off-by-one in the guard or the last "
            "(partial) block or tile",
    "values": "pick one wrong element, find the thread that wrote it (listed) and redo its "
              "arithmetic by hand; gpunb.puzzles.show(name, kernel) draws what every thread "
              "read and wrote",
}


def compare(name: str, expected: np.ndarray, got: np.ndarray, rtol: float = 0.0,
            trace=None, atol: float = 0.0) -> Finding | None:
    """None when `got` equals `expected`, else a Finding naming the first wrong elements of
    output `name` (expected vs got), who wrote each (from `trace`) and the matching hint."""
    expected = np.asarray(expected)
    if expected.shape != got.shape:
        return Finding("values", f"'{name}' has shape {got.shape}, expected {expected.shape}")
    wrong = ~_equal(expected, got, rtol, atol)
    bad = np.argwhere(wrong)
    if not len(bad):
        return None
    lines = [f"'{name}' is wrong at {len(bad)} of {expected.size} elements:"]
    for index in bad[:SHOWN_ELEMENTS]:
        key = tuple(int(k) for k in index)
        lines.append("  " + _element_line(name, key, expected, got, trace))
    if len(bad) > SHOWN_ELEMENTS:
        lines.append(f"  ... and {len(bad) - SHOWN_ELEMENTS} more")
    pattern = value_pattern(expected, got, wrong, rtol, atol)
    return Finding("values", "\n".join(lines), VALUE_HINTS[pattern])


def _equal(expected: np.ndarray, got: np.ndarray, rtol: float,
           atol: float = 0.0) -> np.ndarray:
    """Element-wise equality within the tolerances; NaN equals NaN (an output element the
    puzzle says to leave alone stays NaN)."""
    if rtol or atol:
        return np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    same = got == expected
    if got.dtype.kind == "f":
        same |= np.isnan(got) & np.isnan(expected)
    return same


def _element_line(name: str, key: tuple, expected, got, trace) -> str:
    label = ", ".join(str(k) for k in key)
    value = got[key]
    unwritten = isinstance(value, np.floating) and np.isnan(value)
    text = f"{name}[{label}]: expected {expected[key].item()!r}, got {value.item()!r}"
    if trace is None or trace.array_id(name) < 0:
        return text + (" (never written)" if unwritten else "")
    writer = int(trace.access[name].last_writer[key])
    if writer < 0:
        return text + " (never written)"
    writers = int(trace.access[name].writers[key])
    who = trace.thread_name(writer) + (f" (and {writers - 1} other threads)"
                                       if writers > 1 else "")
    reads = [t for t in trace.touches(writer) if t.kind != "write"]
    shown = ", ".join(f"{t.array}[{', '.join(str(i) for i in t.index)}]"
                      for t in reads[:SHOWN_READS])
    more = f" and {len(reads) - SHOWN_READS} more" if len(reads) > SHOWN_READS else ""
    read_text = f", which read {shown}{more}" if reads else ", which read nothing"
    return f"{text}; written by {who}{read_text}"


def value_pattern(expected: np.ndarray, got: np.ndarray, wrong: np.ndarray,
                  rtol: float, atol: float = 0.0) -> str:
    """Which VALUE_HINTS entry fits: unwritten elements, a one-place shift, only the last
    elements, or plain wrong values."""
    if got.dtype.kind == "f" and np.isnan(got[wrong]).any():
        return "unwritten"
    if expected.dtype.kind == "f" and np.isnan(expected[wrong]).any():
        return "outside"
    flat_e, flat_g = expected.reshape(-1), got.reshape(-1)
    wrong_flat = np.flatnonzero(wrong.reshape(-1))
    if flat_e.size >= 3:  # got[k] == expected[k -/+ 1] nearly everywhere: an index shifted
        for ahead, behind in ((flat_g[1:], flat_e[:-1]), (flat_g[:-1], flat_e[1:])):
            if _equal(behind, ahead, rtol, atol).mean() >= 0.75:
                return "shifted"
    if expected.ndim and wrong_flat.min() >= flat_e.size - max(2, flat_e.size // 8) \
            and len(wrong_flat) < flat_e.size:
        return "edge"
    return "values"


def describe_access(trace, params: tuple, outputs: tuple) -> str:
    """The access map as text: per thread, global reads and writes; per output element, the
    thread that wrote it last; per input element, how many reads (no values)."""
    access = trace.access
    lines = [f"access map ({access.kernel}[{access.grid}, {access.block}], thread ids are "
             "blockIdx * threads per block + threadIdx):",
             f"  global reads per thread:  {_flat(access.global_reads)}",
             f"  global writes per thread: {_flat(access.global_writes)}"]
    for name in params:
        entry = access.arrays.get(name)
        if entry is None or entry.memory != "global":
            continue
        if name in outputs:
            lines.append(f"  {name}: thread that wrote each element last (-1: none):")
            lines.append(_indent(entry.last_writer, 4))
        else:
            lines.append(f"  {name}: reads of each element:")
            lines.append(_indent(entry.reads, 4))
    return "\n".join(lines)


def _flat(values: np.ndarray) -> str:
    with np.printoptions(linewidth=200, threshold=64):
        return str(np.asarray(values))


def _indent(array: np.ndarray, spaces: int = 2) -> str:
    with np.printoptions(linewidth=96, threshold=200):
        return "\n".join(" " * spaces + line for line in str(array).splitlines())
