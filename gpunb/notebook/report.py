"""Everything the inspector shows about one kernel specialisation, gathered once as plain data.

Each section (types, LLVM, PTX, SASS, resources) is fetched through the Dispatcher's inspection
API; a section that cannot be produced (no nvdisasm, a compile error) carries its message instead
of failing the whole inspector, because a learner should still see the parts that work.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

from gpunb.foundation.errors import GpunbError

_SASS_LINE = re.compile(r'//## File "(?P<file>[^"]*)", line (?P<line>\d+)')


@dataclass(frozen=True, slots=True)
class KernelReport:
    """One specialisation of one kernel: its code at every stage and how they map to each other."""

    name: str
    signature: str
    target: str  # where the kernel runs ("cpu" or "cuda")
    arch: str  # the PTX/SASS arch shown
    source: str
    source_file: str
    first_line: int
    types: str
    llvm_ir: str
    ptx: str
    sass: str
    line_map: dict  # python line -> [ptx line, ...] (1-based)
    sass_map: dict  # python line -> [sass line, ...] (1-based)
    resources: dict
    problems: dict = field(default_factory=dict)  # section -> why it is missing
    cache: str = ""  # the cache's decision for this specialisation: "miss (new)", "hit (disk)"
    compile_ms: float = 0.0

    @property
    def source_lines(self) -> range:
        return range(self.first_line, self.first_line + len(self.source.splitlines()))

    def ptx_to_source(self) -> dict:
        """ptx line -> python line (the inverse of line_map; the last mapping wins)."""
        return _invert(self.line_map)

    def sass_to_source(self) -> dict:
        return _invert(self.sass_map)


def _invert(mapping: dict) -> dict:
    out: dict = {}
    for src, targets in mapping.items():
        for target in targets:
            out[target] = src
    return out


def _section(problems: dict, name: str, produce, default=""):
    """Run one inspection step; record a readable reason instead of raising."""
    try:
        return produce()
    except GpunbError as exc:
        problems[name] = str(exc)
    except Exception as exc:  # noqa: BLE001 - one broken tab must not hide the others
        problems[name] = f"{type(exc).__name__}: {exc}"
    return default


def build_report(dispatcher, signature=None, arch: str | None = None) -> KernelReport:
    """Gather a KernelReport; compiles the kernel for `signature` if it was never launched.

    `arch` (sm_XX) asks for PTX/SASS of another architecture than the default inspection arch;
    the compile for it goes through the compiler's public stages, as the dispatcher's would.
    """
    spec = pick_specialization(dispatcher, signature)
    argtypes = spec.argtypes
    problems: dict = {}
    source, first_line, source_file = _source_of(dispatcher)
    types = _section(problems, "types", lambda: dispatcher.inspect_types(argtypes))
    llvm_ir = spec.artifact.llvm_ir or ""
    if arch is None:
        ptx = _section(problems, "ptx", lambda: dispatcher.inspect_ptx(argtypes))
        line_map = _section(problems, "ptx", lambda: dispatcher.line_map(argtypes), {})
        sass = _section(problems, "sass", lambda: dispatcher.inspect_sass(argtypes))
        resources = _section(problems, "resources", lambda: dispatcher.resource_usage(argtypes),
                             {})
        shown_arch = _ptx_arch(ptx)
    else:
        ptx, line_map, sass, resources = _for_arch(dispatcher, argtypes, arch, problems)
        shown_arch = arch
    if not llvm_ir:
        llvm_ir = _section(problems, "llvm", lambda: dispatcher.inspect_llvm(argtypes))
    return KernelReport(
        name=dispatcher.__name__, signature=str(spec.artifact.signature), target=spec.target,
        arch=shown_arch, source=source, source_file=source_file, first_line=first_line,
        types=types, llvm_ir=llvm_ir, ptx=ptx, sass=sass,
        line_map={int(k): list(v) for k, v in (line_map or {}).items()},
        sass_map=sass_line_map(sass, source_file), resources=dict(resources or {}),
        problems=problems, cache=_cache_text(spec), compile_ms=float(spec.compile_ms or 0.0))


def _cache_text(spec) -> str:
    return spec.cache_event.outcome if spec.cache_event is not None else ""


def pick_specialization(dispatcher, signature=None):
    """The specialisation to show: the given signature's, else the most recently compiled one."""
    if signature is not None:
        return dispatcher.compile(signature)
    if dispatcher.specializations:
        return next(reversed(dispatcher.specializations.values()))
    if dispatcher.declared_signatures:
        return dispatcher.compile(dispatcher.declared_signatures[0])
    from gpunb.foundation.errors import CompileError

    raise CompileError(f"'{dispatcher.__name__}' has not been compiled yet",
                       hint="launch it once, or pass argument types, e.g. "
                            "kernel.inspect('void(float32[:], float32)')")


def _source_of(dispatcher) -> tuple[str, int, str]:
    func = dispatcher.py_func
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError):
        return "# source not available", 1, func.__code__.co_filename
    return "".join(lines), max(first, 1), func.__code__.co_filename


def _ptx_arch(ptx: str) -> str:
    m = re.search(r"^\.target\s+(sm_\w+)", ptx or "", re.M)
    return m.group(1) if m else ""


def _for_arch(dispatcher, argtypes: tuple, arch: str, problems: dict):
    """PTX, line map, SASS and ptxas resources for an explicitly chosen arch."""
    from gpunb.notebook.options import parse_arch

    def build():
        from gpunb.backends.build import build_ptx
        from gpunb.compiler.guard import compile_guard
        from gpunb.compiler.pipeline import infer_kernel

        options = dict(dispatcher.options)
        with compile_guard(dispatcher.py_func):
            typed = infer_kernel(dispatcher.py_func, argtypes, options,
                                 device=dispatcher.device)
            return build_ptx(typed, options, parse_arch(arch))

    artifact = _section(problems, "ptx", build, None)
    if artifact is None:
        return "", {}, "", {}
    from gpunb.backends.cuda import sass as sass_tools

    sass = _section(problems, "sass", lambda: sass_tools.disassemble(artifact))
    usage = _section(problems, "resources", lambda: sass_tools.ptxas_resources(artifact), None)
    resources = {} if usage is None else {
        "registers": usage.registers, "shared_bytes": usage.shared_bytes,
        "local_bytes": usage.local_bytes, "const_bytes": usage.const_bytes,
        "max_threads_per_block": usage.max_threads_per_block}
    line_map = {line: list(ptx) for line, ptx in artifact.line_map}
    return artifact.ptx, line_map, sass, resources


def sass_line_map(sass: str, source_file: str) -> dict:
    """python line -> [sass line, ...] from nvdisasm -g's `//## File "...", line N` markers."""
    out: dict = {}
    current = None
    for number, text in enumerate((sass or "").splitlines(), start=1):
        m = _SASS_LINE.search(text)
        if m:
            same_file = not source_file or m.group("file") == source_file
            current = int(m.group("line")) if same_file else None
            continue
        if current is not None and "/*" in text and "*/" in text:
            out.setdefault(current, []).append(number)
    return out
