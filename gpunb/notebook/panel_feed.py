"""What the side panel shows about this kernel process's GPU functions, fed by events.

`PanelFeed.start()` subscribes to SPECIALIZED, FAILED and PROFILE (foundation/events.py), so
nothing scans the user's namespace and nothing is compiled to describe a kernel: a new
specialisation becomes record K of comm.py's schema from the artifact its compile (or the cache)
produced - registers, spills, shared memory, theoretical occupancy at a 256-thread block and its
limiting resource on a GPU; on the CPU target those are a GPU's figures and the record says so.
A failed compile or launch becomes a record with its error, replaced when a later compile of the
same signature works and marked gone when a later launch works. A finished profile
(`%%gpuprofile`, `with gpunb.profile()`) becomes record P, linked to the cell it ran in. After
each cell `take()` hands over what the cell produced, with JupyterLab's cell ids (the panel
jumps to the defining cell).
"""

from __future__ import annotations

import threading
import weakref
from collections import deque

from gpunb.foundation.errors import describe_filename
from gpunb.foundation.events import EventKind, KernelEvent, subscribe

cell_ids: dict = {}  # a cell's synthetic filename -> the JupyterLab cell id it ran from
cell_ids_by_count: dict = {}  # execution count -> JupyterLab cell id (%%gpukernel's own files)
DEFAULT_BLOCK = 256
NOT_COMPILED = "(launch failed before compiling)"
CPU_NOTE = ("CPU target: registers, spills, shared memory and occupancy are a GPU's figures "
            "(inspect() shows them for the PTX)")
MAX_PROFILES_PER_CELL = 5  # a loop of profiled blocks sends its last few


def note_cell(filename: str | None, number: int | None, request: dict | None) -> None:
    """Remember which JupyterLab cell (metadata.cellId of the execute request) ran the cell
    compiled as `filename` with execution count `number`."""
    if not request:
        return
    cell_id = (request.get("metadata") or {}).get("cellId")
    if not cell_id:
        return
    if filename:
        cell_ids[filename] = cell_id
    if number is not None:
        cell_ids_by_count[number] = cell_id


class PanelFeed:
    """Records made from events since the last `take()`; thread-safe (kernels compile in any
    thread)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._kernels: dict = {}  # record id -> record K, made since the last take()
        self._failures: dict = {}  # record id -> (weakref to the dispatcher, stage, record)
        self._profiles: deque = deque(maxlen=MAX_PROFILES_PER_CELL)
        self._subscription = None

    def start(self) -> PanelFeed:
        self._subscription = subscribe(
            (EventKind.SPECIALIZED, EventKind.FAILED, EventKind.PROFILE), self._on_event)
        return self

    def stop(self) -> None:
        if self._subscription is not None:
            self._subscription.unsubscribe()
            self._subscription = None

    def _on_event(self, event) -> None:
        if not isinstance(event, KernelEvent):  # a Profile: read (and built) after the cell
            with self._lock:
                self._profiles.append(event)
            return
        if event.kind is EventKind.SPECIALIZED:
            record = kernel_record(event)
        else:
            record = failure_record(event)
        with self._lock:
            self._kernels[record["id"]] = record
            if event.kind is EventKind.FAILED:
                self._failures[record["id"]] = (weakref.ref(event.dispatcher), event.stage,
                                                record)
            else:
                self._failures.pop(record["id"], None)  # the compile works now

    def take(self, cell_number: int | None = None) -> tuple[list[dict], list[dict]]:
        """(kernel records, profile records) made since the last call; failures that are gone
        (a later launch worked) come back marked so; profiles link to `cell_number`."""
        with self._lock:
            kernels, self._kernels = self._kernels, {}
            profiles = list(self._profiles)
            self._profiles.clear()
            for record_id, (ref, stage, record) in list(self._failures.items()):
                if record_id not in kernels and not _still_failing(ref(), stage, record):
                    del self._failures[record_id]
                    kernels[record_id] = {**record, "cache": "failure gone", "problem": "",
                                          "why": "a later launch of it worked, or it was "
                                                 "redefined"}
        for record in kernels.values():
            record["cell_id"] = _cell_id(record)
        return list(kernels.values()), [profile_record(p, cell_number) for p in profiles]


def _still_failing(dispatcher, stage: str, record: dict) -> bool:
    if dispatcher is None:
        return False
    if stage == "launch":
        return getattr(dispatcher, "failed_launch", None) is not None
    from gpunb.foundation import types as t

    return any(str(t.Signature(t.void, argtypes)) == record["signature"]
               for (_, argtypes) in list(getattr(dispatcher, "failed_compiles", {})))


def _cell_id(record: dict) -> str | None:
    return cell_ids.get(record.get("file")) or cell_ids_by_count.get(record.get("cell"))


def _record(dispatcher, signature: str, target: str) -> dict:
    """Record K's fields that do not need compiled code."""
    code = dispatcher.py_func.__code__
    filename, line = code.co_filename, code.co_firstlineno
    label = describe_filename(filename)
    cell = None
    if label.startswith("Cell In[") and label[8:-1].isdigit():
        cell = int(label[8:-1])
    return {"id": f"{dispatcher.__name__} {signature} {target} {filename}:{line}",
            "name": dispatcher.__name__, "signature": signature, "target": target,
            "arch": "", "registers": None, "local_bytes": None, "shared_bytes": None,
            "occupancy": None, "limiter": "", "block": DEFAULT_BLOCK, "cache": "", "why": "",
            "compile_ms": 0.0, "defined_at": f"{label}, line {line}", "cell": cell,
            "cell_id": None, "file": filename, "line": line}


def kernel_record(event: KernelEvent) -> dict:
    """Record K of a new specialisation, from its artifact (no compile)."""
    spec = event.specialization
    record = _record(event.dispatcher, event.signature, event.target)
    cache = spec.cache_event
    record.update(cache=cache.outcome if cache is not None else "",
                  why=cache.why if cache is not None else "",
                  compile_ms=float(spec.compile_ms or 0.0))
    if event.target != "cuda":
        record["note"] = CPU_NOTE
        return record
    artifact = spec.artifact
    usage = artifact.resources
    record.update(arch=artifact.arch, registers=int(usage.registers),
                  local_bytes=int(usage.local_bytes), shared_bytes=int(usage.shared_bytes))
    try:
        from gpunb.backends.cuda import occupancy

        occ = occupancy.occupancy(artifact.arch, DEFAULT_BLOCK, usage.registers,
                                  usage.shared_bytes)
        record.update(occupancy=round(occ.occupancy_fraction, 4), limiter=occ.limiter)
    except Exception as exc:  # noqa: BLE001 - an arch the calculator does not know: say so
        record["problem"] = f"occupancy unknown: {type(exc).__name__}: {exc}"
    return record


def failure_record(event: KernelEvent) -> dict:
    """Record K of a failed compile or launch: the error as `why` and `problem`."""
    record = _record(event.dispatcher, event.signature or NOT_COMPILED, event.target)
    outcome = "compile failed" if event.stage == "compile" else "launch failed"
    record.update(cache=outcome, why=event.error, problem=event.error)
    return record


def profile_record(profile, cell_number: int | None) -> dict:
    """Record P of comm.py's schema for a finished profile, linked to the cell it ran in."""
    from gpunb.profiling.view import CPU_OCCUPANCY, plural

    kernels = []
    cpu_only = {k for k in profile.kernels()
                if all(r.target == "cpu" for r in profile.launches if r.kernel == k)}
    defined = {r.kernel: r.defined_at for r in profile.launches}
    for summary in profile.summary():
        occ = summary.occupancy
        kernels.append({
            "kernel": summary.kernel, "launches": summary.launches,
            "p50_ms": summary.p50_ms, "min_ms": summary.min_ms, "max_ms": summary.max_ms,
            "total_ms": summary.total_ms, "achieved_gbps": summary.achieved_gbps,
            "pct_of_peak": summary.pct_of_peak, "gflops": summary.gflops,
            "occupancy": occ.fraction if occ is not None else None,
            "occupancy_note": (occ.limiter if occ is not None else
                               CPU_OCCUPANCY if summary.kernel in cpu_only else ""),
            "defined_at": defined.get(summary.kernel, "")})
    where = f"Cell In[{cell_number}]" if cell_number is not None else "profile"
    return {"title": f"{where}: {plural(len(profile.launches), 'launch')}",
            "target": ",".join(sorted({r.target for r in profile.launches})),
            "timing": profile.timing, "note": "; ".join(profile.notes),
            "kernels": kernels, "cell": cell_number,
            "cell_id": cell_ids_by_count.get(cell_number)}
