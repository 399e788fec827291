"""Runs CPU-target kernels: loads host objects into MCJIT, splits blocks over host threads.

The generated runner (runner.py) claims ranges of a launch's blocks until none are left; the
native pool (pool.py) runs it on several host threads at once, with the GIL released (ctypes),
so blocks run in parallel on the host's cores. Errors recorded by
generated code (bounds checks, divergent barriers, debug raises) come back in a Status and are
raised here.
"""

from __future__ import annotations

import ctypes
import itertools
import sys
import threading

from gpunb.backends.cpu import abi
from gpunb.foundation import config
from gpunb.foundation.artifact import KernelArtifact
from gpunb.foundation.errors import LaunchError, SourceLocation

_RUNNER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)  # (launch, guard record)
# like a large GPU (132 SMs x 2048 threads): the most threads a grid-sync kernel may have here
MAX_COOPERATIVE_THREADS = 1 << 18
PRINT_BUFFER_BYTES = 4 << 20
# launches of at most this many threads run on the launching thread alone (a pool round trip
# costs tens of microseconds, more than such a launch takes)
SMALL_LAUNCH_THREADS = 4096
# claims of blocks per host thread and launch (runner.py: each claim is an atomic add)
CLAIMS = 16
_native_pool_failed = False
# helpers LLVM calls instead of emitting code on x86 hosts (float64 -> float16 has no instruction);
# MCJIT resolves them in the process, so the library that has them must be loaded globally: an
# unresolved one is a call to address 0 (a segfault) rather than an error
RUNTIME_HELPERS = ("__truncdfhf2", "__truncsfhf2", "__extendhfsf2", "__extendhfdf2")
_helpers_loaded = False
_capture = threading.local()  # access_map(): the logs of this thread's recording launches
_launches = threading.local()  # _thread_slots()
_serials = itertools.count(1)


class capture_accesses:
    """`with capture_accesses() as logs:` recording launches append their AccessLog to `logs`
    instead of raising RaceError (the log lists the races)."""

    def __enter__(self) -> list:
        self.previous = getattr(_capture, "logs", None)
        _capture.logs = []
        return _capture.logs

    def __exit__(self, *exc) -> None:
        _capture.logs = self.previous


class KernelIndexError(LaunchError, IndexError):
    """An out-of-bounds array access found by the CPU target's bounds checking."""


class LoadedCpuKernel:
    """A CPU-target kernel loaded into this process, ready to launch."""

    def __init__(self, artifact: KernelArtifact):
        import llvmlite.binding as llvm

        from gpunb.backends.cpu.target import host_target_machine
        from gpunb.backends.llvm_lock import LLVM_LOCK

        self.artifact = artifact
        _check_runtime_helpers(artifact)
        from gpunb.backends.cpu.runtime_lib import link

        with LLVM_LOCK:  # loads from several threads at once share LLVM's global context
            # the schedulers it calls (once per process; from the artifact where it has them)
            link(artifact.binary, artifact.name, artifact.runtime_objects)
            # MCJIT takes ownership of its target machine and frees it with the engine: never
            # hand it the shared, cached one (a later compile would use a freed machine)
            tm = host_target_machine.__wrapped__()
            self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
            self.engine.add_object_file(llvm.ObjectFileRef.from_data(artifact.binary))
            self.engine.finalize_object()
            address = self.engine.get_function_address(artifact.symbol)
        if not address:
            raise LaunchError(f"CPU kernel '{artifact.name}': entry {artifact.symbol} not found")
        self.runner = _RUNNER(address)
        self.address = address
        self._plans: dict = {}  # (grid, block, dynamic shared bytes) -> _LaunchPlan

    def _text_base(self) -> int:
        """Where the object's text section was loaded: the entry's address less its offset
        there (faults.py reads the line table by offsets)."""
        from gpunb.backends.cpu.codesites import symbol_offset

        offset = symbol_offset(self.artifact.binary, self.artifact.symbol)
        return self.address - offset if offset is not None else self.address

    def launch(self, grid: tuple, block: tuple, dynamic_shared: int, params_address: int) -> None:
        plan = self._plans.get((grid, block, dynamic_shared))
        if plan is None:
            plan = self._plans[(grid, block, dynamic_shared)] = _LaunchPlan(
                self, grid, block, dynamic_shared)
        launch, launch_address, status, status_address = _thread_slots()
        ctypes.memmove(launch_address, plan.template, _LAUNCH_BYTES)
        # zeroes but rec_shared, the block's shared bytes (ldmatrix/stmatrix's check that a
        # row is shared, the recorder's shared offsets): as cheap as a memset
        ctypes.memmove(status_address, plan.status_template, _STATUS_BYTES)
        launch.status = status_address
        launch.params = params_address
        launch.serial = next(_serials)
        prints = records = None
        workers = plan.workers
        if plan.special:
            prints, records = self._buffers(status)
        if workers == 0:  # as many host threads as the process may use now
            workers = min(config.cpu_threads(), plan.n_blocks)
            launch.chunk = max(1, plan.n_blocks // (workers * CLAIMS))
        guard = _guard_instance or _guard()
        if guard is None:  # no guard in this process: the runner alone, unstoppable as before
            self.runner(launch_address, None)
        else:
            if _monitor.asleep:
                _monitor.launch_started()
            try:
                if workers == 1 or not _run_on_pool(guard.job_address, launch_address, workers):
                    guard.job(launch_address)
            except KeyboardInterrupt:
                # Python's handler (which ours calls) raises as soon as the native call
                # returns: the launch stopped for it, and says so below; another Ctrl-C stands
                if launch.cancel == abi.CANCEL_NONE:
                    raise
        if prints is not None:
            _flush_prints(prints, min(status.print_len, PRINT_BUFFER_BYTES),
                          status.print_len > PRINT_BUFFER_BYTES)
        if status.code != abi.ERROR_NONE:
            if records is not None and _found_at_the_end(status):
                # a TMA load nobody waited for: a read of its tile names the line that read
                # too early, which says more than the load's own line
                self._check_accesses(records, status, grid, block, dynamic_shared,
                                     params_address)
            raise self.error_from_status(status, params_address)
        if launch.cancel != abi.CANCEL_NONE:
            from gpunb.backends.cpu.stops import stopped_error

            raise stopped_error(self.artifact, launch.cancel)
        if records is not None:
            self._check_accesses(records, status, grid, block, dynamic_shared, params_address)

    def _buffers(self, status: abi.Status) -> tuple:
        """The print buffer and access records a launch of this kernel writes into, if any."""
        prints = records = None
        if self.artifact.prints:
            prints = ctypes.create_string_buffer(PRINT_BUFFER_BYTES)
            status.print_buf = ctypes.addressof(prints)
            status.print_cap = PRINT_BUFFER_BYTES
        if self.artifact.access_sites:
            import numpy as np

            from gpunb.backends.cpu.accesses import RECORD_DTYPE

            cap = config.record_limit()
            records = np.empty(max(cap, 1), RECORD_DTYPE)
            status.rec_buf = records.ctypes.data
            status.rec_cap = cap
        return prints, records

    def _check_accesses(self, records, status, grid, block, dynamic_shared: int,
                        params_address: int) -> None:
        """Hand the log to a capturing access_map(), or raise the first data race."""
        from gpunb.backends.cpu import accesses

        art = self.artifact
        log = accesses.AccessLog(
            records=records[:min(status.rec_len, status.rec_cap)].copy(),
            sites=art.access_sites, grid=tuple(grid), block=tuple(block),
            arguments=tuple(accesses.decode_arguments(art.signature, params_address)),
            shared=tuple(accesses.shared_arrays(art.shared_layout, dynamic_shared)),
            truncated=status.rec_len > status.rec_cap, kernel=art.name,
            cluster=tuple(art.cluster_dims or ()), shared_stride=_shared_stride(status))
        logs = getattr(_capture, "logs", None)
        if logs is not None:
            logs.append(log)
            return
        pending = accesses.find_pending_read(log)
        if pending is not None:
            raise accesses.pending_read_error(log, pending)
        from gpunb.backends.cpu import async_races

        race = accesses.find_race(log)
        if race is not None:
            raise async_races.race_report(log, race)
        unfenced = async_races.find_missing_fence(log)
        if unfenced is not None:
            raise async_races.missing_fence_error(log, unfenced)
        unset = accesses.find_uninitialised_read(log)
        if unset is not None:
            raise accesses.initcheck_error(log, unset)
        if log.truncated:
            import warnings

            warnings.warn(f"racecheck of '{art.name}': only the first {status.rec_cap} memory "
                          f"accesses of {status.rec_len} were checked (GPUNB_RECORD_LIMIT); "
                          "launch a smaller grid to check them all", stacklevel=2)

    def error_from_status(self, status: abi.Status, params_address: int = 0) -> LaunchError:
        art = self.artifact
        if status.code == abi.ERROR_FAULT:
            from gpunb.backends.cpu.faults import fault_error

            return fault_error(art, status, self._text_base(), params_address)
        if status.code == abi.ERROR_INDEX:
            site = art.error_sites[status.site]
            filename, line, col, what, func = site[:5]
            axis = f" along axis {status.axis}" if status.axis else ""
            unsigned = len(site) > 5 and site[5]  # an unsigned index: its i64 bits as uint64
            index = status.index + (1 << 64) if unsigned and status.index < 0 else status.index
            return KernelIndexError(
                f"index {index} is out of bounds for '{what}' with extent "
                f"{status.extent}{axis} (thread {tuple(status.tid)}, block {tuple(status.ctaid)})",
                SourceLocation(filename, line, col), function=func if func else art.name,
                hint="check the index against the array's shape before the access")
        if status.code == abi.ERROR_RAISE:
            from gpunb.foundation.kernel_errors import kernel_exception

            return kernel_exception(art, status.site, status.tid, status.ctaid)
        if status.code == abi.ERROR_BARRIER:
            first = art.barrier_sites[status.site] if status.site >= 0 else None
            if first is not None and first[3].startswith("cluster."):
                return _cluster_deadlock(art, status)
            second = art.barrier_sites[status.site2] if status.site2 >= 0 else None
            where = f"{first[3]} at line {first[1]}" if first else "a barrier"
            if second is not None:
                msg = (f"threads of one block wait at different barriers: {where} and "
                       f"{second[3]} at line {second[1]}; on a GPU this deadlocks or is undefined")
            else:
                msg = (f"{where} is not reached by all threads of the block "
                       f"({status.count} of {status.total} live threads wait there); "
                       "on a GPU this deadlocks")
            loc = SourceLocation(first[0], first[1], first[2]) if first else None
            return LaunchError(msg, loc, function=art.name,
                               hint="every thread of a block must reach the same barriers; "
                                    "move the barrier out of the divergent branch")
        if status.code == abi.ERROR_WARP_MASK:
            return _warp_mask_error(art, status)
        if status.code == abi.ERROR_NO_MEMORY:
            return LaunchError(f"CPU kernel '{art.name}': the host memory for this launch "
                               "(shared memory, thread contexts, per-thread variables) could not "
                               "be allocated", function=art.name,
                               hint="launch fewer threads per block or less shared memory")
        if status.code == abi.ERROR_ASYNC:
            from gpunb.backends.cpu.async_errors import async_error

            return async_error(art, status)
        return LaunchError(f"CPU kernel '{art.name}' failed with status {status.code}")


def _found_at_the_end(status: abi.Status) -> bool:
    """An error found when every thread had finished (a TMA load still in flight), which the
    access log of the same run may explain better."""
    from gpunb.backends.cpu.async_state import Reason

    return status.code == abi.ERROR_ASYNC and status.count == Reason.TMA_UNAWAITED


class LoadedDebugKernel(LoadedCpuKernel):
    """A debug variant (backends/cpu/debug_lower.py), loaded: each launch hands its code a
    DebugControl and runs its blocks one after another on one host thread (the debugger reads
    the running block's threads). Plain kernels load as LoadedCpuKernel and pay nothing."""

    _launching = threading.local()  # the control of the launch this host thread is starting

    def launch(self, grid: tuple, block: tuple, dynamic_shared: int, params_address: int,
               debug=None) -> None:
        """Run the grid under `debug` (a debug_abi.ControlBlock); without one nothing stops."""
        from gpunb.backends.cpu.debug_abi import ControlBlock

        self._launching.control = debug if debug is not None else ControlBlock(self.artifact)
        try:
            super().launch(grid, block, dynamic_shared, params_address)
        finally:
            self._launching.control = None

    def _buffers(self, status: abi.Status) -> tuple:
        """The plain kernel's buffers, and the launch's DebugControl in its Status (its
        launch plan is `special`, so every launch comes here)."""
        status.debug = ctypes.addressof(self._launching.control.control)
        return super()._buffers(status)


def _cluster_deadlock(art: KernelArtifact, status: abi.Status) -> LaunchError:
    """A cluster barrier some live threads of the cluster never arrive at (the scheduler's
    report, cluster_schedule.diagnose)."""
    filename, line, col, what = art.barrier_sites[status.site]
    instead = ""
    if status.site2 >= 0:
        other = art.barrier_sites[status.site2]
        instead = f"; a thread that has not arrived waits at {other[3]} at line {other[1]}"
    return LaunchError(
        f"{what} at line {line} is not reached by all threads of the cluster ({status.count} "
        f"of {status.total} live threads arrived{instead}); on a GPU this deadlocks",
        SourceLocation(filename, line, col), function=art.name,
        hint="every thread of every block of the cluster must arrive at the cluster barrier "
             "(a thread that exits counts as arrived); move it out of the divergent branch")


def _lanes(mask: int) -> str:
    """0x0000ffff -> "0-15"; runs of lanes as ranges."""
    lanes = [k for k in range(32) if mask >> k & 1]
    runs, start = [], None
    for k, lane in enumerate(lanes):
        if start is None:
            start = lane
        if k + 1 == len(lanes) or lanes[k + 1] != lane + 1:
            runs.append(str(start) if start == lane else f"{start}-{lane}")
            start = None
    return ", ".join(runs)


def _warp_mask_error(art: KernelArtifact, status: abi.Status) -> LaunchError:
    from gpunb.foundation.errors import WarpMaskError

    filename, line, col, what = art.barrier_sites[status.site]
    mask = status.mask & 0xFFFFFFFF
    who = f"lane {status.lane} (thread {tuple(status.tid)}, block {tuple(status.ctaid)})"
    if status.count == 1:
        msg = (f"{what} called by {who} with mask {mask:#010x}, which does not include the "
               "calling lane")
        hint = ("a lane must name itself in the mask: 0xffffffff for the whole warp, or a "
                "mask computed before the branch (cuda.ballot_sync(0xffffffff, condition))")
    else:
        fate = "had exited" if status.count == 0 else "wait elsewhere"
        msg = (f"{what} at line {line}, reached by {who}: its mask names lanes {_lanes(mask)}, "
               f"which {fate} instead of arriving; on a GPU this is undefined behaviour")
        hint = ("let every lane named in the mask reach this call: lanes with no data take "
                "part with a neutral value (0 for a sum); or compute the mask of the lanes that "
                "take part before the branch, cuda.ballot_sync(0xffffffff, condition) - not "
                "cuda.activemask(), which names the lanes that happen to be converged")
    return WarpMaskError(msg, SourceLocation(filename, line, col), function=art.name, hint=hint)


def _check_runtime_helpers(artifact: KernelArtifact) -> None:
    """Load libgcc_s (GCC >= 12 has the float16 conversions) once; a kernel that calls a helper
    the process still cannot resolve gets a LaunchError instead of a crash."""
    global _helpers_loaded
    import llvmlite.binding as llvm

    if not _helpers_loaded:
        _load_gcc_s(llvm)
        _helpers_loaded = True
    for name in RUNTIME_HELPERS:  # an undefined symbol's name is in the object's string table
        if name.encode() in artifact.binary and not llvm.address_of_symbol(name):
            raise LaunchError(f"CPU kernel '{artifact.name}' needs {name} (a float16 conversion "
                              "helper), which this process cannot resolve",
                              function=artifact.name,
                              hint="install libgcc_s from GCC 12 or newer, or convert through "
                                   "float32 (float16(float32(x)))")


# the name the dynamic linker knows libgcc_s by, where it is standard; ctypes.util.find_library
# finds the same name by running `ldconfig -p` (and importing subprocess, locale and tempfile
# first): ~10-25 ms of every CPU-target process's first kernel load, a disk hit's included
_GCC_S_SONAMES = {"linux": "libgcc_s.so.1"}


def _load_gcc_s(llvm) -> None:
    """libgcc_s into the process (its symbols visible to the kernels' objects), when present."""
    soname = _GCC_S_SONAMES.get(sys.platform)
    if soname is not None:
        try:
            llvm.load_library_permanently(soname)
            return
        except RuntimeError:
            pass  # not where the dynamic linker looks: ask as before
    import ctypes.util

    library = ctypes.util.find_library("gcc_s")
    if library:
        try:
            llvm.load_library_permanently(library)
        except RuntimeError:
            pass


def _flush_prints(buffer, used: int, truncated: bool) -> None:
    """Write kernel print() records to sys.stdout in (block, thread) order, a log per thread."""
    import struct
    import sys

    raw = buffer.raw[:used]
    records = []
    pos = 0
    while pos + 12 <= len(raw):
        block, thread, n = struct.unpack_from("<iii", raw, pos)
        records.append((block, thread, len(records), raw[pos + 12:pos + 12 + n]))
        pos += 12 + n
    records.sort()
    sys.stdout.write(b"".join(r[3] for r in records).decode("utf-8", "replace"))
    if truncated:
        sys.stdout.write(f"[gpunb: kernel print output truncated at {PRINT_BUFFER_BYTES} bytes]\n")
    sys.stdout.flush()


def _align16(n: int) -> int:
    return (n + 15) // 16 * 16


class _LaunchPlan:
    """What launches of one configuration share: the Launch they start from (a template copied
    in per launch) and how many host threads run them (0: ask config.cpu_threads each time)."""

    __slots__ = ("n_blocks", "shared", "special", "status_template", "template", "workers")

    def __init__(self, kernel: LoadedCpuKernel, grid: tuple, block: tuple, dynamic_shared: int):
        art = kernel.artifact
        n_blocks = self.n_blocks = grid[0] * grid[1] * grid[2]
        self.shared = _align16(dynamic_shared) + art.resources.shared_bytes
        # prints, access records, the debug variant's control: set in the Status per launch
        self.special = bool(art.prints or art.access_sites or art.debug_area)
        threads = n_blocks * block[0] * block[1] * block[2]
        if art.cooperative or art.access_sites:
            if threads > MAX_COOPERATIVE_THREADS:
                raise LaunchError(
                    f"cooperative kernel '{art.name}': a grid of {n_blocks} blocks "
                    f"({threads} threads) cannot be co-resident on the CPU target",
                    function=art.name,
                    hint=f"use at most kernel.max_cooperative_grid_blocks(blockdim) blocks "
                         f"({MAX_COOPERATIVE_THREADS} threads in all) and a grid-stride loop")
            # grid sync: every block of the grid is scheduled together; a recording launch
            # runs on this thread alone (its log is in launch order)
            self.workers = 1
        elif threads <= SMALL_LAUNCH_THREADS:
            self.workers = 1  # waking the pool costs more than such a launch takes
        elif art.debug_area:  # the debugger reads the running block's threads: one at a time
            self.workers = 1
        else:
            self.workers = 0
        launch = abi.Launch()
        launch.grid[:] = grid
        launch.block[:] = block
        launch.block_begin, launch.block_end = 0, n_blocks
        # one host thread: one claim of every block (several: a few claims per thread and
        # launch, set per launch - late threads still find work, a claim covers many blocks)
        launch.chunk = n_blocks
        launch.shared_bytes = self.shared
        launch.dyn_shared = dynamic_shared
        launch.runner = kernel.address
        self.template = bytes(launch)
        status = abi.Status()
        status.rec_shared = self.shared
        if art.cluster_dims and art.access_sites:  # the recorder's shared offsets (abi.py)
            cx, cy, cz = art.cluster_dims
            status.rec_cluster = cx | cy << 8 | cz << 16
        self.status_template = bytes(status)


_LAUNCH_BYTES = ctypes.sizeof(abi.Launch)
_STATUS_BYTES = ctypes.sizeof(abi.Status)


def _thread_slots() -> tuple:
    """This Python thread's (Launch, its address, Status, its address), reused by its launches:
    the SIGINT handler may still write the cancel word of a Launch whose launch has just ended,
    so a Launch lives as long as its thread."""
    try:
        return _launches.slots
    except AttributeError:
        launch, status = abi.Launch(), abi.Status()
        _launches.slots = (launch, ctypes.addressof(launch), status, ctypes.addressof(status))
        return _launches.slots


class _NoMonitor:
    asleep = False


_monitor = _NoMonitor()  # the guard's LaunchMonitor once there is a guard


def _guard():
    """The process's guard (and its monitor), made at the first launch."""
    global _guard_instance, _monitor
    guard = _guard_instance
    if guard is not None:
        return guard
    from gpunb.backends.cpu.guard import host_guard
    from gpunb.backends.cpu.monitor import LaunchMonitor

    guard = host_guard()
    if guard is not None:
        _monitor = LaunchMonitor(guard)
        _guard_instance = guard
    return guard


_guard_instance = None


def _run_on_pool(runner_address: int, launch_address: int, workers: int) -> bool:
    """The launch on the native pool (pool.py); False when it cannot take it (in use by
    another launch, or pthreads are not to be had here): the caller runs it alone."""
    global _native_pool_failed
    if _native_pool_failed:
        return False
    from gpunb.backends.cpu.pool import host_pool

    try:
        pool = host_pool()
    except (OSError, RuntimeError):  # no pthreads in this process: one host thread
        _native_pool_failed = True
        return False
    return pool.run(runner_address, launch_address, workers)


def _shared_stride(status: abi.Status) -> int:
    """Bytes between two blocks' shared memories in a group (the runner's layout), from the
    launch's shared bytes per block."""
    from gpunb.backends.cpu.launch_memory import SHARED_ALIGN

    return (int(status.rec_shared) + SHARED_ALIGN - 1) // SHARED_ALIGN * SHARED_ALIGN
