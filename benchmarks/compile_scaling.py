"""How a compile's stages grow with kernel size: a work that is quadratic in the kernel shows here.

    python -m benchmarks.compile_scaling                 # 100, 200, 400, 800 statements
    python -m benchmarks.compile_scaling 50 100 --cpu    # the CPU target's stages

One process; a generated kernel of N statements (a mix of arithmetic with array reads, ifs
joining two assignments, short range() loops and new local variables, as hand-written kernels
have them) is compiled to PTX (or for the CPU target) after a small warm-up kernel, so imports
are not counted. Prints the process CPU time of each stage's best of three compiles (the types
stage alone, then the whole compile for LLVM and the code stage) and the ratio to the previous
size: ~2 for each doubling is linear.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path

SIGNATURE = "void(float32[::1], float32[::1])"


def kernel_source(n: int) -> str:
    lines = ["from gpunb import cuda", "", "", "def k(out, x):", "    i = cuda.grid(1)",
             "    acc = x[i]", "    t = 0.0"]
    for j in range(n):
        kind = j % 4
        if kind == 0:
            lines.append(f"    acc = acc * 1.0001 + x[(i + {j}) % x.size]")
        elif kind == 1:
            lines += [f"    if acc > {j}.0:", "        t += acc", "    else:", "        t -= 1.0"]
        elif kind == 2:
            lines += ["    for r in range(3):", f"        acc += x[(i + r + {j}) % x.size] * 0.5"]
        else:
            lines += [f"    v{j} = acc - t", f"    acc = v{j} * 0.25 + t"]
    lines.append("    out[i] = acc + t")
    return "\n".join(lines) + "\n"


def load(n: int, folder: str):
    path = Path(folder) / f"scaling_{n}.py"
    path.write_text(kernel_source(n))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.k


def best_ms(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        fn()
        best = min(best, (time.process_time() - started) * 1e3)
    return best


def main(argv: list[str]) -> int:
    from gpunb import backends
    from gpunb.backends.pipeline import compile as run_compile
    from gpunb.foundation import types as t
    from gpunb.foundation.events import Stage

    target = "cpu" if "--cpu" in argv else "cuda"
    sizes = [int(a) for a in argv if a.isdigit()] or [100, 200, 400, 800]
    backend = backends.get(target)
    arr = t.Array(t.float32, 1, "C")
    arch = (8, 0) if target == "cuda" else None
    code_stage = backend.stages[2]
    previous = None
    with tempfile.TemporaryDirectory() as folder:
        def compile_to(n: int, stage):
            fn = load(n, folder)
            return lambda: run_compile(fn, (arr, arr), {}, backend, stop_after=stage, arch=arch)

        compile_to(4, code_stage)()  # imports, LLVM's library: not part of any figure
        print(f"{'statements':>10} {'types ms':>9} {'+LLVM ms':>9} {f'+{code_stage} ms':>14}"
              "   (ratios to the previous size)")
        for n in sizes:
            row = [best_ms(compile_to(n, s)) for s in (Stage.TYPES, Stage.LLVM, code_stage)]
            ratios = "" if previous is None else "   x" + " x".join(
                f"{a / b:.2f}" for a, b in zip(row, previous, strict=True))
            print(f"{n:>10} {row[0]:>9.0f} {row[1]:>9.0f} {row[2]:>14.0f}{ratios}", flush=True)
            previous = row
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
