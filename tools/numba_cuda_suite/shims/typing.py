"""`numba.cuda.typing` (and `.templates`): `signature(return_type, *args)` as gpunb's Signature
(tests and the libdevice table build signatures with it); typing templates are Missing."""

from __future__ import annotations

from .missing import Missing

__path__: list = []  # a package: numba.cuda.typing.typeof is imported below it


def signature(return_type, *args):
    return return_type(*args)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return Missing(f"numba.cuda.typing.{name}")
