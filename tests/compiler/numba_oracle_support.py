"""numba as a typing oracle: one kernel body run by gpunb (CPU target, one thread; libm's math, as
numba's) and by numba's own CPU JIT (`@njit(error_model='numpy')`, numba.cuda's error model),
compared result by result.

Each result is a variable assigned once at the top level of the body (`_r0 = ...`). numba returns
the results as a tuple and its type annotations give each one's type; gpunb stores each into a
1-element array of numba's dtype and `inspect_types()` gives its type. A difference in type, or in
value (bit for bit; NaN equals NaN), or in whether the code compiles at all, is a mismatch.
"""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import os
import re
import shutil
import tempfile
import textwrap
from dataclasses import dataclass, field

import numpy as np

_workdir = tempfile.mkdtemp(prefix="gpunb-numba-oracle-")
atexit.register(shutil.rmtree, _workdir, ignore_errors=True)
_counter = itertools.count()

HEADER = "import cmath\nimport math\n\nimport numba\nimport numpy as np\n\nfrom gpunb import cuda\n"


@dataclass
class Outcome:
    """What one side did: refused to compile (`refused` holds why), failed at run time
    (`crashed`), or produced `types` (numba's spelling) and `values` of the results."""

    types: list = field(default_factory=list)
    values: list = field(default_factory=list)
    refused: str | None = None
    crashed: str | None = None


@dataclass
class Case:
    """A kernel body, its scalar parameters (name -> value; numpy scalars carry their type) and
    the names of the result variables it assigns."""

    body: str
    params: dict
    results: tuple

    def source(self) -> str:
        """The module both sides compile: the same body as a gpunb kernel and a numba function."""
        names = ", ".join(self.params)
        outs = ", ".join(f"out{i}" for i in range(len(self.results)))
        body = textwrap.indent(textwrap.dedent(self.body).strip("\n"), "    ")
        stores = "".join(f"\n    out{i}[0] = {r}" for i, r in enumerate(self.results))
        returned = ", ".join(self.results)
        params = f"{outs}, {names}" if names else outs
        return (f"{HEADER}\n\n@cuda.jit(target=\"cpu\")\ndef kernel({params}):\n"
                f"{body}{stores}\n\n\n@numba.njit(error_model=\"numpy\")\n"
                f"def reference({names}):\n{body}\n    return ({returned},)\n")


def load(source: str):
    """Import source from a file: gpunb reads kernels with inspect.getsource."""
    name = f"oracle_case_{next(_counter)}"
    path = os.path.join(_workdir, f"{name}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def type_name(numba_type) -> str:
    """numba's type as gpunb spells it: literals as their type, tuples as `(a, b)`."""
    from numba.core import types

    ty = types.unliteral(numba_type)
    if isinstance(ty, types.BaseTuple):
        return "(" + ", ".join(type_name(t) for t in ty.types) + ")"
    return str(ty)


def run_numba(module, case: Case) -> Outcome:
    from numba.core.errors import NumbaError, TypingError

    fn = module.reference
    try:
        values = fn(*case.params.values())
    except TypingError as exc:
        return Outcome(refused=_first_line(exc))
    except NumbaError as exc:  # lowering failures: numba cannot say either way
        return Outcome(crashed=f"{type(exc).__name__}: {_first_line(exc)}")
    except Exception as exc:  # noqa: BLE001 - a run-time exception (0.0 ** -1 raises)
        return Outcome(crashed=f"{type(exc).__name__}: {exc}")
    typemap = fn.overloads[fn.signatures[0]].type_annotation.typemap
    return Outcome(types=[type_name(typemap[r]) for r in case.results], values=list(values))


def run_gpunb(module, case: Case, dtypes: list) -> Outcome:
    """Launch the kernel once (one thread); each result lands in an array of `dtypes[i]`."""
    import warnings

    import gpunb

    outs = [np.zeros(1, dtype=d) for d in dtypes]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # float -> int conversions of nan and the like
            module.kernel[1, 1](*outs, *case.params.values())
    except gpunb.CompileError as exc:
        return Outcome(refused=_first_line(exc))
    except Exception as exc:  # noqa: BLE001 - reported as a mismatch, with the exception
        return Outcome(crashed=f"{type(exc).__name__}: {exc}")
    variables = gpunb_variable_types(module.kernel.inspect_types())
    return Outcome(types=[variables.get(r, "?") for r in case.results],
                   values=[o[0] for o in outs])


def gpunb_variable_types(text: str) -> dict:
    """`name: type` lines of the `variables:` section of gpunb's inspect_types()."""
    section = text.split("variables:", 1)[1].split("\n\n", 1)[0]
    return dict(re.findall(r"^\s+([\w.$]+): (.+)$", section, re.M))


def dtype_of(type_text: str):
    """The numpy dtype of a scalar type named as numba names it."""
    return np.dtype("bool" if type_text == "bool" else type_text)


def same_bits(expected: np.ndarray, got, dtype) -> bool:
    """Bit-exact equality in `dtype`; any NaN equals any NaN (payloads differ between libms)."""
    a = expected
    b = np.array([got], dtype=dtype)
    if dtype.kind in "fc":
        parts = (a.real, b.real), (a.imag, b.imag)
        for x, y in parts:
            if np.isnan(x[0]) and np.isnan(y[0]):
                continue
            if x.tobytes() != y.tobytes():
                return False
        return True
    return a.tobytes() == b.tobytes()


def as_numba_value(value, dtype):
    """numba's Python result value held exactly in its numba dtype (ints wrap, floats exact)."""
    if dtype.kind in "iu":
        bits = dtype.itemsize * 8
        v = int(value) & ((1 << bits) - 1)
        if dtype.kind == "i" and v >= 1 << (bits - 1):
            v -= 1 << bits
        return np.array([v], dtype=dtype)
    return np.array([value], dtype=dtype)


def compare(case: Case, ref: Outcome | None = None) -> tuple:
    """(verdict, report): verdict is 'match', 'both refuse', 'numba crashed' (a run-time
    exception numba raises and a GPU thread cannot: skip) or 'mismatch'. `ref`: numba's outcome
    when it is known already."""
    module = load(case.source())
    ref = ref or run_numba(module, case)
    if ref.crashed is not None:
        return "numba crashed", ref.crashed
    if ref.refused is not None:
        # complex128 outputs take any number: gpunb must refuse the code, not the store
        got = run_gpunb(module, case, ["complex128"] * len(case.results))
        if got.refused is not None:
            return "both refuse", ref.refused
        return "mismatch", report(case, ref, got, note="numba refuses this code; gpunb accepts it")
    dtypes = [dtype_of(t) if not t.startswith("(") else np.dtype("float64") for t in ref.types]
    got = run_gpunb(module, case, dtypes)
    if got.refused is not None or got.crashed is not None:
        return "mismatch", report(case, ref, got, note="numba accepts this code; gpunb does not")
    bad = [i for i, (rt, gt) in enumerate(zip(ref.types, got.types, strict=True))
           if rt != gt or not same_bits(as_numba_value(ref.values[i], dtypes[i]), got.values[i],
                                        dtypes[i])]
    if bad:
        return "mismatch", report(case, ref, got, rows=bad)
    return "match", ""


def report(case: Case, ref: Outcome, got: Outcome, note: str = "", rows=None) -> str:
    lines = [note] if note else []
    if ref.refused:
        lines.append(f"numba: {ref.refused}")
    if got.refused or got.crashed:
        lines.append(f"gpunb: {got.refused or got.crashed}")
    for i in rows or []:
        lines.append(f"{case.results[i]}: numba {ref.types[i]} {ref.values[i]!r}  |  "
                     f"gpunb {got.types[i]} {got.values[i]!r}")
    params = ", ".join(f"{k}={_show(v)}" for k, v in case.params.items())
    lines.append(f"arguments: {params}")
    lines.append(case.source())
    return "\n".join(lines)


def _show(value) -> str:
    if isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, np.ndarray):
        return f"np.array({value.tolist()!r})"
    return f"np.{type(value).__name__}({value.item()!r})"


def _first_line(exc) -> str:
    text = str(exc)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # numba's TypingError starts with the pipeline stage; the reason is on a later line
    useful = [ln for ln in lines if not ln.startswith("Failed in ")]
    return (useful or lines or [type(exc).__name__])[0].strip()[:300]


__all__ = ["Case", "Outcome", "compare", "load", "run_gpunb", "run_numba", "same_bits"]
