"""The CPU target's runtime library: the coroutine block schedulers, compiled once per process.

Every coroutine-mode kernel calls a scheduler (runner.emit_scheduler) that is the same for all
of them: it touches the threads only through llvm.coro.resume/done/destroy and the context,
status and guard records by abi.py's offsets. Compiled into each kernel it was ~60 % of a small
kernel's module and ~80 % of its compile time (O3 inlined it into the runner); here each variant
is built, optimised and loaded into MCJIT the first time a process loads a kernel that calls it,
kept for the life of the process, and published in the process's symbol table (llvmlite's
add_symbol), where MCJIT resolves the kernel objects' undefined symbols.

A kernel declares its scheduler as `gpunb_rt_<variant>_<digest>`, the digest being of the
variant's IR text: an object can bind only to a scheduler of the same ABI (record layouts, the
coroutine frame's resume and destroy slots), and one that names another (made by another gpunb)
is refused with a LaunchError before it is loaded - MCJIT would resolve the missing symbol to
address 0. The disk cache would not hand out such an object anyway: its keys hold the digest of
gpunb's compiler sources (this module's generators included) and LLVM's version.

A coroutine kernel's artifact carries the objects of the schedulers it calls (objects_called,
at compile time): a disk hit in a new process loads them as they are (link's `objects`) instead
of compiling them again (~110-190 ms, the first coroutine kernel of each process). They are code
from the same cache entry as the kernel's object, under the same trust checks, and made with it,
so their ABI is the kernel's: the digest check is for names without an object.

A fault in the runtime's code (it reads the runner's records; only the TMA loads it lands
read user memory) is caught by the guard as one in kernel code is, and names the thread the
scheduler resumed last; its address lies outside the kernel's line table, so no line.
"""

from __future__ import annotations

import functools
import re

from gpunb.foundation.errors import LaunchError

# a variant's name says what its scheduler does beyond warp and block barriers: `async` also
# waits on mbarriers and wgmma rendezvous and lands TMA loads (`record`: recording them), `grid`
# (cooperative kernels: a group of every block of the launch) also runs grid.sync(), `cluster`
# (a group of the blocks of one thread-block cluster) also runs the cluster barrier
_PARTS = ("async", "record", "grid", "cluster")
PREFIX = "gpunb_rt_"
# a runtime symbol in an object's string table (names end at a NUL byte there)
_NAME = re.compile(rb"(gpunb_rt_[a-z_]+?_[0-9a-f]{12})\x00")
_loaded: dict = {}  # symbol -> (the MCJIT engine holding its code, the entry's address)
_objects: dict = {}  # variant -> its host object, compiled in this process


def variant_name(async_state: bool, record: bool, grid: bool, cluster: bool = False) -> str:
    """"schedule", "schedule_async_grid", ... (`record` matters only with `async_state`, where
    it changes the landing of TMA copies, and with `cluster`, where it moves the cluster
    barrier's counts: abi.cluster_slots)."""
    wanted = (async_state, record and (async_state or cluster), grid, cluster)
    return "_".join(["schedule"] + [part for part, on in zip(_PARTS, wanted, strict=True) if on])


def _features(variant: str) -> tuple | None:
    """variant_name's arguments back from a name; None for a name it never makes."""
    words = variant.split("_")
    found = tuple(part in words[1:] for part in _PARTS)
    return found if variant_name(*found) == variant else None


@functools.cache
def _variant_ir(variant: str) -> str:
    """The variant's module: its scheduler (runner.emit_scheduler), the helpers it calls."""
    from llvmlite import ir

    from gpunb.backends.cpu.runner import emit_scheduler

    async_state, record, grid, cluster = _features(variant)
    module = ir.Module(name=PREFIX + variant)
    entry = "gpunb_schedule"
    several = grid or cluster  # groups of several blocks
    scheduler = emit_scheduler(module, async_state, record, grid=grid, cluster=cluster,
                               name=entry if several else entry + ".any")
    # the handles array is the scheduler's own: the threads it resumes never touch it (in a
    # kernel LLVM knew this of the runner's malloc; measured: 5 % of a warp-collective launch)
    scheduler.args[0].add_attribute("noalias")
    if not several:
        _one_block_entry(module, scheduler, entry)
    for fn in module.functions:  # as in kernels (backend.one_code_section): a stop or a fault
        if not fn.name.startswith("llvm."):  # longjmps, nothing unwinds
            fn.attributes.add("nounwind")
    return str(module)


def _one_block_entry(module, scheduler, name: str) -> None:
    """The entry of a scheduler whose group is one block (n == per_block: every launch but a
    cooperative one's), specialised for it as the runner's constants specialised it when it was
    inlined into each kernel (measured: 14 % of a block-barrier kernel's launch time)."""
    from llvmlite import ir

    scheduler.linkage = "internal"
    scheduler.attributes.add("alwaysinline")
    fn = ir.Function(module, scheduler.function_type, name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    handles, ctxs, _, per_block, *rest = fn.args
    b.call(scheduler, [handles, ctxs, per_block, per_block, *rest])
    b.ret_void()


def scheduler_symbol(async_state: bool, record: bool, grid: bool,
                     cluster: bool = False) -> str:
    """The name a coroutine kernel calls its scheduler by (building the variant's IR once per
    process, ~10-25 ms, for its digest; compiles need only the name)."""
    return _symbol(variant_name(async_state, record, grid, cluster))


@functools.cache
def _symbol(variant: str) -> str:
    import hashlib

    digest = hashlib.blake2b(_variant_ir(variant).encode(), digest_size=6).hexdigest()
    return f"{PREFIX}{variant}_{digest}"


def called(binary: bytes) -> list:
    """The runtime symbols the object `binary` calls (none for work-group kernels)."""
    if PREFIX.encode() not in binary:
        return []
    return sorted({name.decode() for name in _NAME.findall(binary)})


def objects_called(binary: bytes, kernel: str) -> tuple:
    """((symbol, host object), ...) of the runtime code `binary` calls, compiled once per
    process: what a coroutine kernel's artifact carries for its disk hits."""
    return tuple((name, _object(_checked_variant(name, kernel))) for name in called(binary))


def link(binary: bytes, kernel: str, objects: tuple = ()) -> None:
    """Make every runtime symbol the object `binary` calls resolvable, loading each variant the
    first time - from `objects` ((symbol, host object), ... : the kernel's artifact's) where it
    is there, else compiled here; a symbol of another ABI (an object made by another gpunb,
    without its runtime) is a LaunchError."""
    names = called(binary)
    if not names:
        return
    given = dict(objects)
    for name in names:
        if name in _loaded:
            continue
        if name in given:
            _publish(name, given[name])
        else:
            require(name, kernel)


def require(name: str, kernel: str) -> None:
    """Load the runtime code `name` stands for (once per process), for `kernel`."""
    if name in _loaded:
        return
    _publish(name, _object(_checked_variant(name, kernel)))


def _checked_variant(name: str, kernel: str) -> str:
    """The variant `name` stands for, if this gpunb makes it under that name."""
    variant = name[len(PREFIX):].rpartition("_")[0]
    if _features(variant) is None or _symbol(variant) != name:
        raise LaunchError(
            f"CPU kernel '{kernel}' was compiled by another version of gpunb: it calls "
            f"{name}, which this gpunb's runtime does not have", function=kernel,
            hint="compile the kernel again (gpunb.cache.clear() drops stale entries)")
    return variant


def _object(variant: str) -> bytes:
    """One variant's host object (O3, loops as written: objects.emit_object), compiled once
    per process (threads compiling or loading kernels at once wait for the first)."""
    from gpunb.backends.cpu.objects import emit_object
    from gpunb.backends.llvm_lock import LLVM_LOCK

    with LLVM_LOCK:  # LLVM's global context, and the memo below
        obj = _objects.get(variant)
        if obj is None:
            obj = _objects[variant] = emit_object(_variant_ir(variant), "", coroutine=False,
                                                  widen_loops=False)[0]
        return obj


def _publish(name: str, obj: bytes) -> None:
    """Load one variant's object into MCJIT and publish its entry under `name`."""
    import llvmlite.binding as llvm

    from gpunb.backends.cpu.target import host_target_machine
    from gpunb.backends.llvm_lock import LLVM_LOCK

    with LLVM_LOCK:  # LLVM's global context; and two threads loading kernels load it once
        if name in _loaded:
            return
        # MCJIT owns (and frees) its target machine: never the shared, cached one
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""),
                                            host_target_machine.__wrapped__())
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        address = engine.get_function_address("gpunb_schedule")
        if not address:
            raise LaunchError(f"gpunb's CPU runtime: gpunb_schedule not found in {name}")
        llvm.add_symbol(name, address)
        _loaded[name] = (engine, address)


def loaded() -> dict:
    """symbol -> address of the runtime code this process has loaded (tests, diagnostics)."""
    return {name: address for name, (_, address) in _loaded.items()}
