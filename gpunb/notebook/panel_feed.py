"""What the side panel shows about this notebook's kernels: one record per specialisation.

After each cell, the kernels in the user's namespace whose specialisations are new since the last
cell become `kernels` messages (record K of the schema in comm.py): registers, spills, shared
memory, theoretical occupancy with its limiting resource, the cache outcome and where the kernel
was defined (with the JupyterLab cell id, so the panel can jump there). Resources come from the
driver on a GPU and from ptxas on the CPU target (one PTX compile per new specialisation, done only
while a panel is listening).
"""

from __future__ import annotations

import weakref

from gpunb.foundation.errors import describe_filename

# specialisation -> its record id (a specialisation is described once), while it lives
_seen: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_failures_sent: dict = {}  # record id -> the failure record sent to the panel
cell_ids: dict = {}  # a cell's synthetic filename -> the JupyterLab cell id it ran from
cell_ids_by_count: dict = {}  # execution count -> JupyterLab cell id (%%gpukernel's own files)
DEFAULT_BLOCK = 256


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


def new_kernel_records(namespace: dict) -> list[dict]:
    """Records for the kernels in `namespace` compiled since the last call."""
    out = []
    for dispatcher in _dispatchers(namespace):
        for spec in list(dispatcher.specializations.values()):
            if spec in _seen:
                continue
            try:
                record = kernel_record(dispatcher, spec)
            except Exception as exc:  # noqa: BLE001 - one kernel's record must not hide the rest
                record = _basic_record(dispatcher, spec)
                record["problem"] = f"{type(exc).__name__}: {exc}"
            _seen[spec] = record["id"]
            out.append(record)
    return _with_failures(namespace, out)


def _with_failures(namespace: dict, records: list[dict]) -> list[dict]:
    """`records` plus a record per failed compile or launch not sent yet (cache "compile
    failed" / "launch failed", the error as `why` and `problem`), and, for a failure sent
    earlier that is gone (a later compile or launch worked), a record saying so - unless a new
    specialisation's record replaces it (same id)."""
    from gpunb.notebook.cache_panel import failure_rows

    current = {}
    for dispatcher in _dispatchers(namespace, device=True):
        for row in failure_rows(dispatcher.__name__, dispatcher):
            _, signature, target, outcome, why = row[:5]
            record = _record(dispatcher, signature, target)
            record.update(cache=outcome, why=why, problem=why)
            current[record["id"]] = record
    out = {r["id"]: r for r in records}
    for record_id in [i for i in _failures_sent if i not in current]:
        gone = _failures_sent.pop(record_id)
        if record_id not in out:
            out[record_id] = {**gone, "cache": "failure gone",
                              "why": "a later launch of it worked, or it was redefined",
                              "problem": ""}
    for record_id, record in current.items():
        sent = _failures_sent.get(record_id)
        if sent is None or sent["why"] != record["why"]:
            _failures_sent[record_id] = record
            out[record_id] = record
    return list(out.values())


def _dispatchers(namespace: dict, device: bool = False) -> list:
    """The GPU functions in a namespace: kernels, and device functions too when `device`."""
    found = {}
    for value in list(namespace.values()):
        if getattr(value, "__gpunb_function__", False) and hasattr(value, "specializations") \
                and (device or not getattr(value, "device", True)):
            found[id(value)] = value
    return list(found.values())


def _record(dispatcher, signature: str, target: str) -> dict:
    """Record K's fields that do not need a compiled specialisation."""
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
            "cell_id": cell_ids.get(filename) or cell_ids_by_count.get(cell),
            "file": filename, "line": line}


def _basic_record(dispatcher, spec) -> dict:
    record = _record(dispatcher, str(spec.artifact.signature), spec.target)
    event = spec.cache_event
    record.update(cache=event.outcome if event is not None else "",
                  why=event.why if event is not None else "",
                  compile_ms=float(spec.compile_ms or 0.0))
    return record


def kernel_record(dispatcher, spec) -> dict:
    """Record K for one specialisation (resources for the GPU's arch, else GPUNB_ARCH's)."""
    from gpunb import backends
    from gpunb.backends.cuda import occupancy
    from gpunb.jit import inspection

    record = _basic_record(dispatcher, spec)
    major, minor = backends.get("cuda").default_arch()[:2]  # (sm_90a's tables are sm_90's)
    arch = f"sm_{major}{minor}"
    on_gpu = spec.target == "cuda"
    usage = inspection.resources_for(dispatcher, spec, None if on_gpu else arch)
    registers = int(usage.get("registers") or 0)
    shared = int(usage.get("shared_bytes") or 0)
    record.update(arch=arch, registers=registers, local_bytes=int(usage.get("local_bytes") or 0),
                  shared_bytes=shared)
    occ = occupancy.occupancy(arch, DEFAULT_BLOCK, registers, shared)
    record.update(occupancy=round(occ.occupancy_fraction, 4), limiter=occ.limiter)
    return record
