"""Run one corpus case on the CPU target and say what was reported, as data.

`python -m tests.correctness.run_case NAME buggy|fixed` prints one JSON line; the tests run the
out-of-bounds cases this way, in a child process, to prove the process survives them.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

HEADER = "from gpunb import cuda; from numpy import float32, int32"
KINDS = {"RaceError": "race", "KernelIndexError": "oob", "WarpMaskError": "warp",
         "KernelValueError": "value", "InitcheckError": "init"}


def case_named(name: str):
    from tests.correctness.corpus import CASES

    return next(c for c in CASES if c.name == name)


def run(case, which: str = "buggy") -> dict | None:
    """None when nothing was reported; else {kind, line, lines (all lines named), message}."""
    import gpunb
    from gpunb.foundation.errors import LaunchError
    from tests.correctness.corpus import make_args

    gpunb.set_target("cpu")
    text = HEADER + (case.source if which == "buggy" else case.fixed)
    directory = tempfile.mkdtemp(prefix="gpunb-corpus-")
    path = os.path.join(directory, f"{case.name}_{which}.py")
    with open(path, "w") as f:
        f.write(text)
    namespace: dict = {"__name__": f"corpus_{case.name}"}
    exec(compile(text, path, "exec"), namespace)  # noqa: S102 - the corpus is our own source
    kernel = gpunb.cuda.jit(racecheck=True)(namespace["kernel"])
    try:
        kernel[case.grid, case.block](*make_args(case.args))
    except LaunchError as exc:
        kind = KINDS.get(type(exc).__name__, "barrier")
        lines = {exc.loc.line} if exc.loc is not None else set()
        lines |= {a[1] for a in getattr(exc, "accesses", ())}
        if kind == "barrier":
            import re

            lines |= {int(m) for m in re.findall(r"at line (\d+)", exc.message)}
        return {"kind": kind, "line": exc.loc.line if exc.loc else None,
                "lines": sorted(lines), "message": exc.message}
    return None


if __name__ == "__main__":
    print(json.dumps(run(case_named(sys.argv[1]), sys.argv[2])))
