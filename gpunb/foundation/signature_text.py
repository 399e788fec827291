"""Read back the argument types of a compiled kernel's signature text.

A KernelArtifact keeps its signature as text (`str(Type)` of each argument, the cache's key), and
the CPU target's tools (racecheck, access maps, fault messages, the debugger) read the argument
arrays of a launch from its packed parameters by those types. `types.parse_signature` evaluates
numba's spelling, which covers the common scalars and arrays but not everything `str(Type)`
writes: `bool`, `readonly float64[::1]`, `Record(x: float32 @0; size=4, align=4)`,
`NamedTuple(a: int64)`, `datetime64[s][::1]`. This parser reads that grammar directly, so a
kernel with such a parameter keeps every argument's name and memory in those tools.
"""

from __future__ import annotations

import ast
import re

from gpunb.foundation import types as t

_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_UNIT = re.compile(r"\[([A-Za-z]*)\]")
_CHARS = re.compile(r"\[(char|unichr) x (\d+)\]")
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_RECORD_TAIL = re.compile(r"; size=(\d+), align=(\d+)\)")


def argument_types(text: str, names: dict | None = None) -> tuple:
    """The argument types of a signature's text, e.g. `void(bool, readonly float32[::1])`;
    a TypeError when it cannot be read."""
    try:
        args = tuple(t.parse_signature(text, names).args)
        if all(isinstance(a, t.Type) for a in args):  # `(int64, float64)` evaluates to a
            return args  # Python tuple of types: read below as a Tuple type
    except TypeError:
        pass
    reader = _Reader(text, dict(t.TYPE_NAMES, bool=t.boolean, **(names or {})))
    try:
        reader.type()  # the return type
        reader.expect("(")
        args = reader.items(")")
    except (IndexError, KeyError, ValueError, SyntaxError) as exc:
        raise TypeError(f"cannot read signature {text!r}: {exc}") from None
    if reader.pos != len(text):
        raise TypeError(f"cannot read signature {text!r}: text after the arguments")
    return tuple(args)


class _Reader:
    """A recursive-descent reader of `str(Type)` text."""

    def __init__(self, text: str, names: dict):
        self.text, self.pos, self.names = text, 0, names

    def peek(self, word: str) -> bool:
        return self.text.startswith(word, self.pos)

    def expect(self, word: str) -> None:
        if not self.peek(word):
            raise ValueError(f"expected {word!r} at column {self.pos}")
        self.pos += len(word)

    def items(self, close: str) -> list:
        """Types separated by ', ' up to `close` (consumed)."""
        out = []
        while not self.peek(close):
            out.append(self.type())
            if self.peek(", "):
                self.pos += 2
            elif self.peek(","):  # a 1-tuple: `(int64,)`
                self.pos += 1
        self.expect(close)
        return out

    def type(self) -> t.Type:
        readonly = unaligned = False
        if self.peek("unaligned "):
            self.pos, unaligned = self.pos + len("unaligned "), True
        if self.peek("readonly "):
            self.pos, readonly = self.pos + len("readonly "), True
        base = self.base()
        if isinstance(base, t.Record) and readonly and not self.peek("["):
            return base.as_readonly()
        return self.suffixes(base, readonly, unaligned)

    def base(self) -> t.Type:
        if self.peek("Record("):
            return self.record()
        if self.peek("NamedTuple("):
            self.pos += len("NamedTuple(")
            names, items = [], []
            while not self.peek(")"):
                names.append(self.match(_NAME))
                self.expect(": ")
                items.append(self.type())
                if self.peek(", "):
                    self.pos += 2
            self.expect(")")
            return t.Tuple(tuple(items), tuple(names))
        if self.peek("("):
            self.pos += 1
            return t.Tuple(tuple(self.items(")")))
        chars = _CHARS.match(self.text, self.pos)
        if chars is not None:
            self.pos = chars.end()
            return t.CharSeq("S" if chars[1] == "char" else "U", int(chars[2]))
        name = self.match(_NAME)
        if name in ("datetime64", "timedelta64") and self.peek("["):
            unit = self.match(_UNIT)[1:-1]
            return t.DateTime("M" if name == "datetime64" else "m", unit)
        value = self.names[name]
        if callable(value) and not isinstance(value, t.Type) and self.peek("("):
            return value(*self.call_arguments())  # TensorMap(...): its own constructor
        return value

    def record(self) -> t.Record:
        self.pos += len("Record(")
        fields = []
        while not self.peek(";"):
            name = self.match(_FIELD_NAME)
            name = ast.literal_eval(name) if name[0] in "'\"" else name
            self.expect(": ")
            ftype = self.type()
            self.expect(" @")
            offset = int(self.match(re.compile(r"\d+")))
            fields.append((name, ftype, offset))
            if self.peek(", "):
                self.pos += 2
        tail = _RECORD_TAIL.match(self.text, self.pos)
        if tail is None:
            raise ValueError(f"expected '; size=N, align=N)' at column {self.pos}")
        self.pos = tail.end()
        return t.Record(tuple(fields), int(tail[1]), int(tail[2]))

    def call_arguments(self) -> tuple:
        """The balanced parenthesised text after a constructor's name, evaluated as Python."""
        depth, start = 0, self.pos
        while True:
            ch = self.text[self.pos]
            depth += (ch in "([") - (ch in ")]")
            self.pos += 1
            if depth == 0:
                break
        value = eval(f"({self.text[start + 1:self.pos - 1]},)",  # noqa: S307 - types only
                     {"__builtins__": {}}, self.names)
        return tuple(value)

    def suffixes(self, base: t.Type, readonly: bool, unaligned: bool) -> t.Type:
        """`[::1]`, `[:, :]` make an array; `[3]` a record's sub-array field."""
        ty = base
        while self.peek("["):
            close = self.text.index("]", self.pos)
            inner = self.text[self.pos + 1:close]
            self.pos = close + 1
            if ":" not in inner:
                ty = t.InlineArray(ty, tuple(int(n) for n in inner.split(",")))
                continue
            dims = [d.strip() for d in inner.split(",")]
            layout = "C" if dims[-1] == "::1" else "F" if dims[0] == "::1" and len(dims) > 1 \
                else "A"
            ty = t.Array(ty, len(dims), layout, readonly, not unaligned)
        return ty

    def match(self, pattern: re.Pattern) -> str:
        found = pattern.match(self.text, self.pos)
        if found is None:
            raise ValueError(f"unexpected text at column {self.pos}")
        self.pos = found.end()
        return found[0]
