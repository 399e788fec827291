"""Snapshot of a cell's launches for a replay in a child process (`--ncu`, `--sanitize`).

At each launch (before it runs) the kernel's binary and metadata and the launch's inputs are
written to a directory: device arrays copied to the host as .npy, scalars as JSON. The child
(`python -m gpunb.profiling.replay DIR`) reloads them and launches the same code through the
driver, so Nsight Compute or compute-sanitizer can run it while the notebook's own process and
GPU context are never touched. Identical launches (same kernel, configuration and argument
types) are snapshotted once; at most `limit` launches are kept.
"""

from __future__ import annotations

import json
import numbers
import os
import tempfile
from pathlib import Path

import numpy as np

MANIFEST = "manifest.json"


class SnapshotError(ValueError):
    """A launch that cannot be replayed (an argument kind the snapshot cannot copy)."""


class Snapshot:
    """A directory of replayable launches; `add(event)` is called with each LAUNCH_BEFORE."""

    def __init__(self, directory: str | os.PathLike | None = None, limit: int = 16):
        self.path = Path(directory or tempfile.mkdtemp(prefix="gpunb-replay-"))
        self.path.mkdir(parents=True, exist_ok=True)
        self.limit = limit
        self.launches: list = []
        self.skipped: list = []  # one-line reasons
        self._seen: set = set()
        self._binaries: dict = {}  # id(artifact) -> file name
        # the specialisations and artifacts keyed above by id(), kept alive: a freed one's id
        # may be reused by the next kernel's, which would then be skipped as already seen or
        # replayed with the freed one's binary
        self._kept: list = []

    def add(self, event) -> None:
        spec = event.specialization
        key = (id(spec), str(event.grid), str(event.block), int(event.shared_bytes or 0))
        if key in self._seen:
            return
        if len(self.launches) >= self.limit:
            self.skipped.append(f"{event.kernel}: more than {self.limit} distinct launches")
            return
        self._seen.add(key)
        self._kept.append(spec)
        index = len(self.launches)
        try:
            args = [self._argument(index, k, value) for k, value in enumerate(event.args)]
        except SnapshotError as exc:
            self.skipped.append(f"{event.kernel}: {exc}")
            return
        self.launches.append({
            "kernel": event.kernel, "target": spec.target, "artifact": self._binary(spec),
            "grid": _dims(event.grid), "block": _dims(event.block),
            "shared_bytes": int(event.shared_bytes or 0), "args": args})
        self.write_manifest()

    def _binary(self, spec) -> str:
        artifact = spec.artifact
        name = self._binaries.get(id(artifact))
        if name is None:
            name = f"kernel{len(self._binaries)}"
            (self.path / f"{name}.bin").write_bytes(artifact.binary)
            (self.path / f"{name}.json").write_text(json.dumps(artifact.to_json_dict()))
            self._binaries[id(artifact)] = name
            self._kept.append(artifact)
        return name

    def _argument(self, launch: int, k: int, value) -> dict:
        if isinstance(value, (bool, np.bool_)):
            return {"kind": "scalar", "dtype": "bool", "value": bool(value)}
        if isinstance(value, np.generic) and value.shape == ():
            return _scalar(value.item(), value.dtype.str)
        if isinstance(value, numbers.Number) and not isinstance(value, np.ndarray):
            return _scalar(value, type(value).__name__)
        host = _host_copy(value)
        if host is None:
            raise SnapshotError(f"argument {k + 1} ({type(value).__name__}) cannot be "
                                "snapshotted for a replay (arrays and numbers can)")
        name = f"launch{launch}_arg{k}.npy"
        np.save(self.path / name, host, allow_pickle=False)
        return {"kind": "array", "file": name, "device": _on_device(value)}

    def write_manifest(self) -> None:
        (self.path / MANIFEST).write_text(json.dumps({"launches": self.launches}, indent=1))


def _scalar(value, dtype: str) -> dict:
    if isinstance(value, complex):
        return {"kind": "scalar", "dtype": dtype, "value": [value.real, value.imag]}
    return {"kind": "scalar", "dtype": dtype, "value": value}


def _dims(value) -> list:
    return [int(value)] if isinstance(value, int) else [int(v) for v in value]


def _on_device(value) -> bool:
    return hasattr(value, "__cuda_array_interface__")


def _host_copy(value):
    """A numpy copy of an array argument as it is before the launch (None: not an array)."""
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            return None
        return np.array(value, copy=True)
    inner = getattr(value, "_array", None)  # the CPU target's HostDeviceArray
    if isinstance(inner, np.ndarray):
        return np.array(inner, copy=True)
    if hasattr(value, "copy_to_host"):
        return value.copy_to_host()
    if hasattr(value, "__cuda_array_interface__"):  # CuPy, PyTorch, numba arrays
        from gpunb.runtime.memory import as_cuda_array

        return as_cuda_array(value).copy_to_host()
    return None


def load_manifest(path: str | os.PathLike) -> list:
    return json.loads((Path(path) / MANIFEST).read_text())["launches"]
