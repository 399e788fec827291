"""Host objects: a lowered CPU-target module -> optimised machine code (and its IR and assembly).

Kept apart from target.py (the lowering hooks): this is the build step, the same for both
execution modes, with the module-text rewrites LLVM's API cannot express (presplitcoroutine on a
coroutine body, fast-math flags, loop metadata) and the host helpers bfloat16 needs.
"""

from __future__ import annotations

import functools

from gpunb.backends.cpu.target import _llvm, host_target_machine

NO_VECTORIZE = "gpunb.no_vectorize"
# the exact thread loop of a region whose checks wg_hoist proves for most blocks: it runs for
# ragged or failing blocks only, so LLVM spends no time vectorising or unrolling it
COLD_LOOP = "gpunb.cold_loop"
_HINTS = {NO_VECTORIZE: ['!{!"llvm.loop.vectorize.enable", i1 false}'],
          COLD_LOOP: ['!{!"llvm.loop.vectorize.enable", i1 false}',
                      '!{!"llvm.loop.unroll.disable"}']}


def _loop_hints(module_text: str) -> str:
    """Loops marked NO_VECTORIZE (wg_lower: thread loops whose memory accesses sit under a
    per-thread condition) get `llvm.loop.vectorize.enable false`: the masked loads and stores
    LLVM would vectorise them with are slower than the scalar loop on x86 (measured: a guarded
    4M-element load 11x, saxpy's tail guard 7x on the 2-core AMD EPYC development machine).
    COLD_LOOP ones are neither vectorised nor unrolled (compile time).
    llvmlite cannot write the self-referencing loop id, so it is written into the text here."""
    import re

    for marker_name, hints in _HINTS.items():
        marker = re.compile(r'^(!\d+) = !\{ ?!"' + re.escape(marker_name) + r'" ?\}$', re.M)
        if not marker.search(module_text):
            continue
        top = max(int(n) for n in re.findall(r"^!(\d+) = ", module_text, re.M)) + 1
        ids = ", ".join(f"!{top + k}" for k in range(len(hints)))
        module_text = marker.sub(lambda m, ids=ids: f"{m.group(1)} = distinct !{{{m.group(1)}, "
                                 f"{ids}}}", module_text)
        module_text += "".join(f"\n!{top + k} = {h}" for k, h in enumerate(hints)) + "\n"
    return module_text


def _probe_stack(module_text: str) -> str:
    """Every function probes its stack frame page by page as it grows it (x86-64, AArch64): a
    frame larger than the guard page below a thread's stack (large local arrays) then faults on
    that page - a stack overflow the guard reports - instead of landing in whatever memory lies
    beyond it. Costs nothing for frames under a page. llvmlite cannot write string attributes,
    so they are written into the text here."""
    import platform
    import re

    if platform.machine().lower() not in ("x86_64", "amd64", "aarch64", "arm64"):
        return module_text
    return re.sub(r'^(define [^\n]*?@(?:"[^"]*"|[\w.$]+)\([^\n]*?\))',
                  r'\1 "probe-stack"="inline-asm"', module_text, flags=re.M)


def emit_object(module_text: str, body_symbol: str, coroutine: bool, *, opt: bool = True,
                fastmath: bool = False, widen_loops: bool = True) -> tuple[bytes, str]:
    """Optimise and compile for the host. Returns (object file, optimised IR). Without
    `widen_loops`, loops are neither unrolled nor vectorised (code that walks lists of
    threads, runtime_lib.py's: it compiles in less than half the time, and runs as fast).

    The assembly is not made here: host_assembly makes it from the optimised IR when someone
    asks (inspect_asm), so a compile pays for one code generation, not two (measured: the
    second was ~16 % of a CPU-target compile)."""
    import re

    llvm = _llvm()
    if coroutine:
        pattern = re.compile(r'(define internal ptr @"' + re.escape(body_symbol) + r'"\([^\n]*\))')
        module_text = pattern.sub(r"\1 presplitcoroutine", module_text, count=1)
    if fastmath:
        module_text = re.sub(r"= (fadd|fsub|fmul|fdiv|frem) ", r"= \1 fast ", module_text)
    module_text = _loop_hints(module_text)
    module_text = _probe_stack(module_text)
    if "bfloat" in module_text:  # x86 calls these for -> bfloat16 (GCC 12's libgcc lacks them)
        from gpunb.compiler.lowfloat import host_helpers_ir

        module_text += "\n" + host_helpers_ir()
    mod = llvm.parse_assembly(module_text)
    mod.verify()
    tm = host_target_machine()
    pto = llvm.create_pipeline_tuning_options(speed_level=3 if opt else (1 if coroutine else 0))
    if not widen_loops:
        pto.loop_unrolling = pto.loop_vectorization = pto.slp_vectorization = False
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    # the IR the object is made from: code generation below rewrites the module in place
    # (CodeGenPrepare), so the text is taken first
    optimised = str(mod)
    return tm.emit_object(mod), optimised


@functools.lru_cache(maxsize=32)
def host_assembly(optimised_ir: str) -> str:
    """The host assembly of an optimised module (emit_object's IR): the code generation that
    made the object, run again on a module parsed from that IR, writing text."""
    from gpunb.backends.llvm_lock import LLVM_LOCK

    with LLVM_LOCK:  # LLVM's global context, as for a compile
        asm = host_target_machine().emit_assembly(_llvm().parse_assembly(optimised_ir))
    return _without_line_tables(asm)


def _without_line_tables(asm: str) -> str:
    """The assembly as a reader wants it: without the line table of code-site ids
    (codesites.py), whose `.loc` numbers are not source lines, nor the debug sections."""
    kept, skipping = [], False
    for line in asm.splitlines(keepends=True):
        word = line.split(None, 1)[0] if line.strip() else ""
        if word == ".section":
            skipping = ".debug_" in line
        numbered_file = word == ".file" and len(line.split()) > 2  # the table's, not the unit's
        if skipping or numbered_file or word in (".loc", ".cfi_sections"):
            continue
        kept.append(line)
    return "".join(kept)
