"""Which declared signature of a GPU function a launch's argument types call: numba's choice
(the best conversion rating; two best of equal rating are ambiguous), or a clear refusal."""

from __future__ import annotations

from gpunb.foundation import types as t
from gpunb.foundation.errors import NoMatchingSignatureError


def match_declared(name: str, declared: tuple, argtypes: tuple) -> tuple:
    """The argument types to compile for: those of the declared signature numba would pick."""
    chosen = best_declared(name, declared, argtypes)
    if chosen is None and any(_is_unaligned_array(a) for a in argtypes):
        # numba types every numpy array as aligned (its typeof ignores the flag), so a declared
        # float64[:] takes a view at an odd offset; gpunb compiles that signature with this
        # argument unaligned, its loads and stores only as wide as is safe
        chosen = best_declared(name, declared, tuple(_as_aligned(a) for a in argtypes))
        if chosen is not None:
            return tuple(_unaligned_like(d, given) for d, given in zip(chosen, argtypes,
                                                                       strict=True))
    if chosen is not None:
        return chosen
    hint = f"declared: {', '.join(str(s) for s in declared)}"
    if any(isinstance(a, t.Array) and a.readonly for a in argtypes):
        hint += "; a read-only numpy array matches no declared signature (as in numba): " \
                "pass a writeable copy, e.g. np.array(ary)"
    raise NoMatchingSignatureError(
        f"No matching definition for argument type(s) {', '.join(map(str, argtypes))}: no "
        f"declared signature of '{name}' accepts them", hint=hint)


def best_declared(name: str, declared: tuple, argtypes: tuple) -> tuple | None:
    """The declared signature's argument types numba would pick for these, None if none."""
    from gpunb.compiler.promotion import rating

    # numba's choice: the best conversion rating (exact, then safe, then unsafe); two best of
    # equal rating are ambiguous. (int64, float64) picks (float64, float64) over
    # (float32, float32)
    rated = sorted((r, k) for k, s in enumerate(declared)
                   if len(s.args) == len(argtypes)
                   and (r := rating(argtypes, tuple(s.args))) is not None)
    if len(rated) > 1 and rated[0][0] == rated[1][0] and rated[0][0] != (0, 0, 0):
        best = [declared[k] for r, k in rated if r == rated[0][0]]
        raise NoMatchingSignatureError(
            f"Ambiguous overloading for <function {name}> ({', '.join(map(str, argtypes))}):\n"
            + "\n".join(f"({', '.join(map(str, s.args))}) -> none" for s in best[:2]),
            hint="pass arguments of one declared signature's exact types, e.g. np.float32(x)")
    return tuple(declared[rated[0][1]].args) if rated else None


def _is_unaligned_array(ty) -> bool:
    return isinstance(ty, t.Array) and not ty.aligned


def _as_aligned(ty):
    return t.Array(ty.dtype, ty.ndim, ty.layout, ty.readonly) if _is_unaligned_array(ty) else ty


def _unaligned_like(declared, given):
    """The declared type, unaligned where the argument given is an unaligned array."""
    if _is_unaligned_array(given) and isinstance(declared, t.Array):
        return t.Array(declared.dtype, declared.ndim, declared.layout, declared.readonly, False)
    return declared
