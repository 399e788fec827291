"""`python -m gpunb.profiling.replay DIR`: relaunch a Snapshot's launches in this process.

This is the child that Nsight Compute or compute-sanitizer runs: it loads each launch's kernel
binary (relinked from its PTX with line information on the GPU, so reports name source lines),
copies the saved inputs to the device, launches through the driver and synchronises. With
`--save-outputs` it writes every array as it is after its launch (the round-trip tests read
them). Exit status: 0 when every launch ran, 3 when one failed (one line says which and why).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np


def _artifact(directory: Path, name: str, lineinfo: bool):
    from gpunb.foundation.artifact import KernelArtifact

    data = json.loads((directory / f"{name}.json").read_text())
    artifact = KernelArtifact.from_json_dict(data, (directory / f"{name}.bin").read_bytes())
    if artifact.target == "cuda" and lineinfo and artifact.ptx:
        from gpunb.backends.cuda import modules

        cubin, _ = modules.build_cubin(artifact.ptx, artifact.arch, lineinfo=True)
        artifact = dataclasses.replace(artifact, binary=cubin)
        # the parent maps SASS offsets in ncu's report to lines with this cubin's line table
        (directory / f"{name}@{artifact.symbol}.lineinfo.cubin").write_bytes(cubin)
    return artifact


def _argument(directory: Path, spec: dict, target: str):
    if spec["kind"] == "scalar":
        value = spec["value"]
        if isinstance(value, list):
            value = complex(*value)
        dtype = spec["dtype"]
        if dtype in ("int", "float", "complex", "bool"):
            return {"int": int, "float": float, "complex": complex, "bool": bool}[dtype](value)
        return np.dtype(dtype).type(value)
    host = np.load(directory / spec["file"], allow_pickle=False)
    if target == "cuda" and not spec.get("device", True):
        return host  # a host array: the packer copies it in and out, as in the live launch
    from gpunb.runtime.memory import to_device

    return to_device(host, target=target)


def replay_launch(directory: Path, index: int, launch: dict, lineinfo: bool, programs: dict):
    """Launch one snapshotted launch; returns its arguments (after the launch)."""
    from gpunb import backends
    from gpunb.foundation.signature_text import argument_types
    from gpunb.foundation.tensor_types import SIGNATURE_NAMES
    from gpunb.runtime.packing import ArgPacker

    target = launch["target"]
    name = launch["artifact"]
    if name not in programs:
        artifact = _artifact(directory, name, lineinfo)
        programs[name] = (artifact, backends.get(target).load(artifact))
    artifact, program = programs[name]
    argtypes = argument_types(artifact.signature, SIGNATURE_NAMES)
    args = [_argument(directory, a, target) for a in launch["args"]]
    packer = ArgPacker(artifact.param_slots, target, launch["kernel"])
    params, writeback = packer.pack(tuple(args), argtypes)
    program.launch(tuple(launch["grid"]), tuple(launch["block"]), launch["shared_bytes"], 0,
                   params)
    for fn in writeback:
        fn()
    if target == "cuda":
        from gpunb.backends.cuda import driver

        driver.synchronize()
    return args


def _host(value):
    if isinstance(value, np.ndarray):
        return value
    inner = getattr(value, "_array", None)
    if isinstance(inner, np.ndarray):
        return inner
    if hasattr(value, "copy_to_host"):
        return value.copy_to_host()
    return None


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpunb.profiling.replay")
    parser.add_argument("directory")
    parser.add_argument("--no-lineinfo", dest="lineinfo", action="store_false")
    parser.add_argument("--save-outputs", action="store_true")
    opts = parser.parse_args(argv)
    from gpunb.profiling.snapshot import load_manifest

    directory = Path(opts.directory)
    launches = load_manifest(directory)
    programs: dict = {}
    status = 0
    for index, launch in enumerate(launches):
        try:
            args = replay_launch(directory, index, launch, opts.lineinfo, programs)
        except Exception as exc:  # noqa: BLE001 - reported to the parent as one line
            first = str(exc).strip().splitlines()
            print(f"gpunb replay: launch {index} ({launch['kernel']}) failed: "
                  f"{type(exc).__name__}: {first[0] if first else ''}", file=sys.stderr)
            status = 3
            if launch["target"] == "cuda":
                break  # the context is likely unusable after a kernel fault
            continue
        if opts.save_outputs:
            for k, value in enumerate(args):
                host = _host(value)
                if host is not None:
                    np.save(directory / f"out_launch{index}_arg{k}.npy", host)
    print(f"gpunb replay: {len(launches)} launch(es) replayed", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
