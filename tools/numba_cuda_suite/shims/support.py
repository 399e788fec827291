"""`numba.cuda.tests.support`: numba's own test helpers (numba.tests.support), except that
override_config patches the config the tests see (shims.config), not real numba's."""

from __future__ import annotations

import contextlib

from numba.tests.support import (  # noqa: F401 - re-exported for the upstream tests
    CheckWarningsMixin,
    MemoryLeakMixin,
    TestCase,
    captured_stderr,
    captured_stdout,
    ignore_internal_warnings,
    import_dynamic,
    linux_only,
    run_in_subprocess,
    skip_unless_cffi,
    temp_directory,
    windows_only,
)

from . import config


@contextlib.contextmanager
def override_config(name: str, value):
    """Set `numba.cuda.config.<name>` for the block; gpunb itself reads none of these."""
    missing = object()
    old = getattr(config, name, missing)
    setattr(config, name, value)
    try:
        yield
    finally:
        if old is missing:
            delattr(config, name)
        else:
            setattr(config, name, old)
