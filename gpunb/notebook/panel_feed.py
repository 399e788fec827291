"""What the side panel shows about this notebook's kernels: one record per specialisation.

After each cell, the kernels in the user's namespace whose specialisations are new since the last
cell become `kernels` messages (record K of the schema in comm.py): registers, spills, shared
memory, theoretical occupancy with its limiting resource, the cache outcome and where the kernel
was defined (with the JupyterLab cell id, so the panel can jump there). Resources come from the
driver on a GPU and from ptxas on the CPU target (one PTX compile per new specialisation, done only
while a panel is listening).
"""

from __future__ import annotations

from gpunb.foundation.errors import describe_filename

_seen: dict = {}  # id(specialization) -> record id (a specialisation is described once)
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
            if id(spec) in _seen:
                continue
            try:
                record = kernel_record(dispatcher, spec)
            except Exception as exc:  # noqa: BLE001 - one kernel's record must not hide the rest
                record = _basic_record(dispatcher, spec)
                record["problem"] = f"{type(exc).__name__}: {exc}"
            _seen[id(spec)] = record["id"]
            out.append(record)
    return out


def _dispatchers(namespace: dict) -> list:
    found = {}
    for value in list(namespace.values()):
        if getattr(value, "__gpunb_function__", False) and not getattr(value, "device", True) \
                and hasattr(value, "specializations"):
            found[id(value)] = value
    return list(found.values())


def _basic_record(dispatcher, spec) -> dict:
    code = dispatcher.py_func.__code__
    filename, line = code.co_filename, code.co_firstlineno
    label = describe_filename(filename)
    cell = None
    if label.startswith("Cell In[") and label[8:-1].isdigit():
        cell = int(label[8:-1])
    signature = str(spec.artifact.signature)
    event = spec.cache_event
    return {"id": f"{dispatcher.__name__} {signature} {spec.target} {filename}:{line}",
            "name": dispatcher.__name__, "signature": signature, "target": spec.target,
            "arch": "", "registers": None, "local_bytes": None, "shared_bytes": None,
            "occupancy": None, "limiter": "", "block": DEFAULT_BLOCK,
            "cache": event.outcome if event is not None else "",
            "why": event.why if event is not None else "",
            "compile_ms": float(spec.compile_ms or 0.0),
            "defined_at": f"{label}, line {line}", "cell": cell,
            "cell_id": cell_ids.get(filename) or cell_ids_by_count.get(cell),
            "file": filename, "line": line}


def kernel_record(dispatcher, spec) -> dict:
    """Record K for one specialisation (resources for the GPU's arch, else GPUNB_ARCH's)."""
    from gpunb import backends
    from gpunb.backends.cuda import occupancy
    from gpunb.jit import inspection

    record = _basic_record(dispatcher, spec)
    major, minor = backends.get("cuda").default_arch()
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
