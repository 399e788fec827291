"""Helpers shared by the launch-path tests of the jit layer."""

from __future__ import annotations

from gpunb.jit import configuration


def warm_until_native(config, *args) -> None:
    """Launch a configured kernel until it has its native launcher (NATIVE_AFTER + 1 times)."""
    for _ in range(configuration.NATIVE_AFTER + 1):
        config(*args)
