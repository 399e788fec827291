"""Which target runs kernels: "cuda" or "cpu", from the request, GPUNB_TARGET and the hardware.

`auto` means cuda when a usable GPU exists, else cpu, with a one-line notice (once per process) so a
user on a laptop knows why their kernels run on the host. The decision for the process-wide
request is cached and recomputed only when the request changes.
"""

from __future__ import annotations

from gpunb.foundation import config

_TARGETS = ("auto", "cpu", "cuda")


class _Choice:
    """The process-wide request's target, decided once per request, and whether the CPU
    fallback notice was shown."""

    def __init__(self):
        self.request: str | None = None
        self.target: str | None = None
        self.notice_shown = False


_choice = _Choice()

NOTICE = "gpunb: no usable CUDA GPU found; running kernels on the CPU target"


def active_target(requested: str | None = None) -> str:
    """'cuda' or 'cpu' for a request of 'cuda', 'cpu', 'auto' or None (None: gpunb.set_target /
    GPUNB_TARGET). Asking for 'cuda' explicitly never falls back: the CUDA launch path then
    reports what is missing."""
    if requested is None:
        requested = config.requested_target()
        choice = _choice
        if requested == choice.request and choice.target is not None:
            return choice.target
        target = _resolve(requested)
        choice.request, choice.target = requested, target
        return target
    if requested not in _TARGETS:
        raise ValueError(f"target {requested!r}: expected one of {', '.join(_TARGETS)}")
    return _resolve(requested)


def _resolve(requested: str) -> str:
    if requested != "auto":
        return requested
    from gpunb.backends.cuda import driver

    if driver.is_available():
        return "cuda"
    _notify_fallback()
    return "cpu"


def _notify_fallback() -> None:
    if _choice.notice_shown or not config.notices_enabled():
        return
    _choice.notice_shown = True
    from gpunb.foundation.events import notify

    notify(NOTICE, "target")


def reset() -> None:
    """Forget the cached decision and the notice (for tests)."""
    global _choice
    _choice = _Choice()
