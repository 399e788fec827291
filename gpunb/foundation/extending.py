"""The overloads library authors register for kernels (numba's `@overload`, `@overload_method`,
`@overload_attribute`, `register_jitable`): what each one is, and where to find them.

Held here, below the compiler (which resolves calls through them) and the cache (whose keys
include every generator a kernel can reach). The decorators are `gpunb.cuda.extending`'s. A
registration names the function, or the (type, attribute), it implements; running the same
decorator again (a notebook cell run twice) replaces the earlier one instead of piling up.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field

# numba's target names: "cuda" overloads are the kernel language's; "generic" ones serve every
# target (numba's CPU too); "cpu" ones are numba's CPU target's only (njit), never a kernel's
KERNEL_TARGETS = ("cuda", "generic")
TARGETS = ("cuda", "generic", "cpu")


@dataclass(frozen=True, slots=True, eq=False)
class Overload:
    """One registration: `generator(*argument types) -> implementation or None`."""

    kind: str  # "function" | "method" | "attribute"
    key: object  # the function implemented; for a method / attribute: the type it is on
    attr: str  # the method's or attribute's name ("" for a function)
    generator: object  # the user's typing-time function
    target: str  # one of TARGETS
    strict: bool = True  # the typing and implementing signatures must match (numba's check)
    inline: object = "never"  # numba's inline=: "never", "always", or a cost model
    prefer_literal: bool = False  # constants are offered as literal types first
    jit_options: dict = field(default_factory=dict)
    # register_jitable: the function is its own implementation for every argument type (no
    # generator to call); caches fingerprint it as a device function
    implements: object = None

    def describe(self) -> str:
        gen = self.generator
        name = getattr(gen, "__qualname__", None) or getattr(gen, "__name__", repr(gen))
        return f"{name} (target={self.target!r})"

    def options_text(self) -> str:
        """What besides the generator's code shapes the compiled code (part of cache keys)."""
        inline = self.inline if isinstance(self.inline, (str, bool)) else \
            getattr(self.inline, "__qualname__", "cost-model")
        options = ",".join(f"{k}={self.jit_options[k]!r}" for k in sorted(self.jit_options))
        return (f"{self.kind}:{self.attr}:{self.target}:strict={self.strict}:inline={inline}:"
                f"literal={self.prefer_literal}:{options}")


_lock = threading.Lock()
_functions: dict = {}  # id(function) -> (function, [Overload, ...]), in registration order
_members: dict = {}  # (kind, attr) -> [Overload, ...]


def _same_definition(a: Overload, b: Overload) -> bool:
    """The same decorator run again (a cell re-run, a module reloaded): it replaces the old."""
    ga, gb = a.generator, b.generator
    return a.kind == b.kind and a.attr == b.attr and a.target == b.target and \
        a.key is b.key and getattr(ga, "__qualname__", None) == getattr(gb, "__qualname__", 0) \
        and getattr(ga, "__module__", None) == getattr(gb, "__module__", 0)


def _add(entries: list, overload: Overload) -> None:
    for k, old in enumerate(entries):
        if _same_definition(old, overload):
            entries[k] = overload
            return
    entries.append(overload)


def register(overload: Overload) -> None:
    """Record an overload (replacing an earlier run of the same definition)."""
    with _lock:
        if overload.kind == "function":
            func = overload.key
            found = _functions.get(id(func))
            if found is None or found[0] is not func:
                found = _functions[id(func)] = (func, [])
            _add(found[1], overload)
        else:
            _add(_members.setdefault((overload.kind, overload.attr), []), overload)


def function_overloads(func) -> tuple:
    """Every overload registered for `func`, any target: gpunb's in registration order, then
    those registered through numba's own @overload."""
    found = _functions.get(id(func))
    own = tuple(found[1]) if found is not None and found[0] is func else ()
    mine = {id(o.generator) for o in own}  # gpunb's 'generic' ones are numba's too
    return own + tuple(o for o in _numba_overloads(func) if id(o.generator) not in mine)


def has_overloads(func) -> bool:
    found = _functions.get(id(func))
    return (found is not None and found[0] is func) or bool(_numba_overloads(func))


def member_overloads(kind: str, attr: str) -> tuple:
    """The overloads of a method or attribute name, any type, any target."""
    return tuple(_members.get((kind, attr), ()))


def member_names(kind: str) -> list:
    return sorted(attr for (k, attr) in _members if k == kind)


def for_kernels(overloads: tuple) -> list:
    """The overloads kernels may use, numba's order: the target's own ("cuda") before the
    "generic" ones, each in registration order."""
    return [o for o in overloads if o.target == "cuda"] + \
        [o for o in overloads if o.target == "generic"]


# ---- numba's own registrations (numba.extending.overload(..., target='cuda' / 'generic')) -----

_numba_index: dict = {"size": -1, "by_id": {}}
_numba_converted: dict = {}  # id(template) -> (template, Overload): one object per template


def _numba_registry():
    """numba's list of (function, types.Function) typing registrations, when numba is loaded
    (never imported here: a process that registered with numba has it)."""
    templates = sys.modules.get("numba.core.typing.templates")
    registry = getattr(templates, "builtin_registry", None)
    return getattr(registry, "globals", None)


def _numba_overloads(func) -> tuple:
    """Overloads registered through numba's own @overload for kernels' targets ('cuda',
    'generic'), latest first (a notebook cell run again registers its generator again)."""
    registry = _numba_registry()
    if not registry:
        return ()
    if len(registry) != _numba_index["size"]:  # numba's registry only grows
        by_id: dict = {}
        for obj, ftype in list(registry):
            if any(_users_overload(tpl) for tpl in getattr(ftype, "templates", None) or ()):
                by_id.setdefault(id(obj), (obj, []))[1].append(ftype)
        _numba_index.update(size=len(registry), by_id=by_id)
    found = _numba_index["by_id"].get(id(func))
    if found is None or found[0] is not func:
        return ()
    out = []
    for ftype in reversed(found[1]):
        for template in ftype.templates:
            converted = _from_numba_template(func, template)
            if converted is not None:
                out.append(converted)
    return tuple(out)


def _jitable_function(generator):
    """The function numba's own register_jitable wraps (its generator, `ov_wrap`, is numba's
    code and returns `fn` for every type), or None."""
    code = getattr(generator, "__code__", None)
    if code is None or not generator.__qualname__.startswith("register_jitable.") or \
            "fn" not in code.co_freevars:
        return None
    try:
        return generator.__closure__[code.co_freevars.index("fn")].cell_contents
    except (ValueError, TypeError):
        return None


def _users_overload(template) -> bool:
    """An @overload made outside numba's own package: numba implements Python and numpy
    (`float`, `len`, np.*) with overloads of its own, which the kernel language has itself."""
    generator = getattr(template, "_overload_func", None)
    generator = _jitable_function(generator) or generator
    filename = getattr(getattr(generator, "__code__", None), "co_filename", None)
    numba = sys.modules.get("numba")
    package = os.path.dirname(getattr(numba, "__file__", None) or "") + os.sep
    return isinstance(filename, str) and package != os.sep and not filename.startswith(package)


def _from_numba_template(func, template) -> Overload | None:
    memo = _numba_converted.get(id(template))
    if memo is not None and memo[0] is template:
        return memo[1]
    # numba's own @overload leaves the target out: "generic" (every target, kernels too)
    target = (getattr(template, "metadata", None) or {}).get("target", "generic")
    generator = getattr(template, "_overload_func", None)
    if target not in KERNEL_TARGETS or generator is None:
        return None
    inline = getattr(getattr(template, "_inline", None), "_inline", "never")
    jit_options = {k: v for k, v in dict(getattr(template, "_jit_options", {}) or {}).items()
                   if k not in ("no_cpython_wrapper", "nopython", "inline")}
    jitable = _jitable_function(generator)
    overload = Overload("function", func, "", jitable or generator, target,
                        bool(getattr(template, "_strict", True)), inline,
                        bool(getattr(template, "prefer_literal", False)), jit_options,
                        implements=jitable)
    _numba_converted[id(template)] = (template, overload)
    return overload


# ---- @intrinsic ----------------------------------------------------------------------------------

class Intrinsic:
    """numba's @intrinsic: `defn(typingctx, *argument types) -> (signature, codegen)` or None;
    `codegen(context, builder, signature, args)` emits the call's LLVM IR with llvmlite
    (compiler/user_intrinsics.py: scalar and pointer arguments and results)."""

    __gpunb_user_intrinsic__ = True

    def __init__(self, defn, prefer_literal: bool = False):
        import functools

        self._defn = defn
        self.prefer_literal = bool(prefer_literal)
        functools.update_wrapper(self, defn)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"the @intrinsic {self.__name__} works in kernels and device functions "
                        "only (its code is LLVM IR emitted while compiling them)")

    def __repr__(self) -> str:
        return f"<intrinsic {self.__qualname__}>"
