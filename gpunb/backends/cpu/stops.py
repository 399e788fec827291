"""What a CPU-target launch that was told to stop raises: KeyboardInterrupt for Ctrl-C (or a
notebook's interrupt), LaunchTimeoutError for the watchdog. Both say that the launch was
abandoned: its blocks stopped wherever they were, so its output arrays hold a mix of old and
new values, and that the next launch of any kernel works (nothing of this one is left behind)."""

from __future__ import annotations

from gpunb.backends.cpu import abi
from gpunb.foundation.artifact import KernelArtifact
from gpunb.foundation.errors import LaunchTimeoutError, launch_interrupted

ABANDONED = ("the launch was abandoned: its threads stopped wherever they were, so what its "
             "output arrays hold is undefined; the next launch of any kernel works")


def stopped_error(artifact: KernelArtifact, why: int) -> BaseException:
    """The exception for a launch whose cancel word says `why` (abi.CANCEL_*)."""
    name = artifact.name
    if why == abi.CANCEL_TIMEOUT:
        from gpunb.foundation import config

        limit = config.launch_timeout()
        seconds = f"{limit:g} s" if limit is not None else "its time limit"
        return LaunchTimeoutError(
            f"kernel '{name}' ran longer than {seconds} (the watchdog: GPUNB_LAUNCH_TIMEOUT or "
            f"%%gpukernel --timeout); {ABANDONED}",
            hint="look for a loop whose condition never changes (a while loop that no thread "
                 "ends), or raise the limit for kernels that need longer")
    return launch_interrupted(f"kernel '{name}' interrupted (Ctrl-C, SIGINT or the notebook's "
                              f"interrupt); {ABANDONED}")
