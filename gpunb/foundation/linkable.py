"""Foreign code linked into kernels: numba-cuda's LinkableCode kinds (`cuda.CUSource`,
`cuda.PTXSource`, `cuda.Cubin`, `cuda.Fatbin`, `cuda.Object`, `cuda.Archive`, `cuda.LTOIR`) and
files named by path (the kind from the extension: .cu .ptx .cubin .fatbin .o .a .ltoir).

Plain data: the CUDA backend compiles .cu with NVRTC and links everything with the driver's
linker (or nvJitLink for LTO-IR). Each item has a content key - kind, name and a digest of its
bytes - so an edited source changes the cache keys of the kernels that link it.
"""

from __future__ import annotations

import io
import os

try:  # hashlib.blake2b without loading OpenSSL (benchmarks/library_costs.py: 2.5-8 ms)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b


class LinkableCode:
    """Code to link, held in memory (`data`: str for sources, bytes for binaries)."""

    kind = "?"
    default_name = "<unnamed>"

    def __init__(self, data, name: str | None = None, setup_callback=None,
                 teardown_callback=None, nrt: bool = False):
        if setup_callback is not None and not callable(setup_callback):
            raise TypeError("setup_callback must be callable")
        if teardown_callback is not None and not callable(teardown_callback):
            raise TypeError("teardown_callback must be callable")
        if setup_callback is not None or teardown_callback is not None:
            raise NotImplementedError("gpunb does not run module setup/teardown callbacks of "
                                      "linked code")
        if nrt:
            raise NotImplementedError("gpunb has no NRT (numba's runtime) to link")
        self._data = data
        self._name = name
        self.nrt = False
        self.setup_callback = self.teardown_callback = None

    @property
    def name(self) -> str:
        return self._name or self.default_name

    @property
    def data(self):
        if isinstance(self._data, (io.StringIO, io.BytesIO)):
            return self._data.getvalue()
        return self._data

    def data_bytes(self) -> bytes:
        data = self.data
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)

    @property
    def _gpunb_content_key(self) -> str:
        digest = blake2b(self.data_bytes(), digest_size=16).hexdigest()
        return f"{self.kind}:{self.name}:{digest}"

    def __str__(self) -> str:  # what cache keys read for link=[...] (see cache/keys.py)
        return self._gpunb_content_key

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    @staticmethod
    def from_path(path: str) -> LinkableCode:
        """The code in a file; its kind from the extension (ValueError for others)."""
        root, extension = os.path.splitext(path)
        cls = kind_for_extension(extension)
        mode = "r" if cls in (CUSource, PTXSource) else "rb"
        try:
            with open(path, mode) as f:
                data = f.read()
        except OSError as exc:
            raise FileNotFoundError(f"cannot read the code to link {path!r}: {exc.strerror}") \
                from None
        item = cls(data, name=os.path.basename(root))
        item.path = os.path.abspath(path)
        return item

    @classmethod
    def from_path_or_obj(cls, path_or_obj) -> LinkableCode:
        if isinstance(path_or_obj, (str, os.PathLike)):
            return cls.from_path(os.fspath(path_or_obj))
        if isinstance(path_or_obj, LinkableCode):
            return path_or_obj
        raise TypeError(f"cannot link {type(path_or_obj).__name__} {path_or_obj!r}: pass a path "
                        "(.cu .ptx .cubin .fatbin .o .a .ltoir) or a cuda.CUSource / PTXSource "
                        "/ Cubin / Fatbin / Object / Archive / LTOIR")


class PTXSource(LinkableCode):
    """PTX source code in memory."""

    kind = "ptx"
    default_name = "<unnamed-ptx>"


class CUSource(LinkableCode):
    """CUDA C/C++ source code in memory (compiled with NVRTC when linked)."""

    kind = "cu"
    default_name = "<unnamed-cu>"


class Fatbin(LinkableCode):
    """An ELF fatbin in memory."""

    kind = "fatbin"
    default_name = "<unnamed-fatbin>"


class Cubin(LinkableCode):
    """An ELF cubin in memory."""

    kind = "cubin"
    default_name = "<unnamed-cubin>"


class Archive(LinkableCode):
    """An archive of objects in memory."""

    kind = "a"
    default_name = "<unnamed-archive>"


class Object(LinkableCode):
    """An object file in memory."""

    kind = "o"
    default_name = "<unnamed-object>"


class LTOIR(LinkableCode):
    """LTO-IR (from NVRTC -dlto or nvcc -dlto) in memory."""

    kind = "ltoir"
    default_name = "<unnamed-ltoir>"


_EXTENSIONS = {".cu": CUSource, ".ptx": PTXSource, ".fatbin": Fatbin, ".cubin": Cubin,
               ".a": Archive, ".o": Object, ".ltoir": LTOIR}


def kind_for_extension(extension: str) -> type:
    found = _EXTENSIONS.get(extension)
    if found is None:
        raise ValueError(f"Unknown extension: {extension} (gpunb links "
                         f"{', '.join(_EXTENSIONS)})")
    return found


def link_items(link) -> tuple:
    """numba's `link=` value - one path or item, or a list/tuple/set of them - as a tuple of
    LinkableCode, in a stable order (a set's order is not)."""
    if link is None:
        return ()
    if isinstance(link, (str, os.PathLike, LinkableCode)):
        link = [link]
    try:
        items = [LinkableCode.from_path_or_obj(x) for x in link]
    except TypeError as exc:
        if "cannot link" in str(exc):
            raise
        raise TypeError(f"link= takes a path, a LinkableCode or a list of them, not "
                        f"{type(link).__name__}") from None
    if isinstance(link, (set, frozenset)):
        items.sort(key=lambda item: item._gpunb_content_key)
    unique = []
    for item in items:
        if all(item._gpunb_content_key != u._gpunb_content_key for u in unique):
            unique.append(item)
    return tuple(unique)


__all__ = ["LTOIR", "Archive", "CUSource", "Cubin", "Fatbin", "LinkableCode", "Object",
           "PTXSource", "kind_for_extension", "link_items"]
