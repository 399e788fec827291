"""Profiles of kernel launches (timings, bytes, flops, occupancy) and replays of them in a child
process under Nsight Compute or compute-sanitizer. Public as `gpunb.profile`,
`gpunb.last_profile` and `gpunb.sanitize` (and `gpunb.profiling.sanitize_launch`); the modules
load on first use."""

from __future__ import annotations


def __getattr__(name: str):
    import importlib

    where = {"profile": "session", "last_profile": "session", "ProfileSession": "session",
             "Profile": "records", "LaunchRecord": "records", "sanitize": "api",
             "sanitize_launch": "api", "SanitizerReport": "sanitizer",
             "NcuReport": "ncu"}.get(name)
    if where is None:
        raise AttributeError(f"module 'gpunb.profiling' has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(f"gpunb.profiling.{where}"), name)
    return value  # kept as a module attribute: the next look-up costs nothing
