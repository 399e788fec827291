"""The product of a compilation: everything a launch needs, and nothing that needs the compiler.

A cache hit on disk rebuilds a KernelArtifact from JSON + binary blobs, so every launch fact
(cooperative launch, shared memory, parameter layout) must live here, never in compiler state.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace


@dataclass(frozen=True, slots=True)
class ResourceUsage:
    """Per-kernel resources as reported by ptxas / the driver (CUDA) or computed (CPU)."""

    registers: int = 0
    shared_bytes: int = 0  # static shared memory per block
    local_bytes: int = 0
    const_bytes: int = 0
    max_threads_per_block: int = 1024


@dataclass(frozen=True, slots=True)
class KernelArtifact:
    """A compiled kernel for one target and one argument signature."""

    name: str  # the Python function's name
    symbol: str  # the entry symbol in the binary
    target: str  # "cuda" or "cpu"
    arch: str  # "sm_90" or the host CPU name
    signature: str  # e.g. "void(float32[::1], float32)"
    param_slots: tuple  # see compiler/abi.py
    binary: bytes  # cubin (cuda) or host object file (cpu)
    ptx: str = ""  # PTX text (cuda; on cpu the PTX the cuda target would produce, if asked)
    llvm_ir: str = ""  # optimised LLVM IR
    # host assembly (cpu) of entries cached before it was made on request from llvm_ir
    # (CpuBackend.assembly); new compiles leave it empty
    asm: str = ""
    cooperative: bool = False  # needs cuLaunchCooperativeKernel (grid sync)
    uses_barriers: bool = False  # the kernel calls syncthreads (or a block group sync)
    cpu_mode: str = ""  # cpu: "workgroup" (threads as loops) or "coroutine"
    cpu_mode_reason: str = ""  # cpu: why coroutines, when they are used
    uses_dynamic_shared: bool = False
    # the compile-time cluster shape (x, y, z) of cluster_dims=; () for none (1x1x1 clusters):
    # a launch's grid must be a multiple of it on every target
    cluster_dims: tuple = ()
    resources: ResourceUsage = field(default_factory=ResourceUsage)
    line_map: tuple = ()  # ((source_line, (ptx_line, ...)), ...) from .loc directives
    source_file: str = ""
    first_line: int = 0
    printf_formats: tuple = ()  # cpu printf: format strings by id
    prints: bool = False  # the kernel calls print()
    error_sites: tuple = ()  # cpu bounds checks: (file, line, col, what) by site id
    barrier_sites: tuple = ()  # cpu barriers: (file, line, col, what) by site id
    # debug raise/assert: (exception class, message, file, line, col, function) by site id;
    # non-empty means the launcher must check the kernel's exception record after each launch
    raise_sites: tuple = ()
    # cpu access recording (racecheck, access maps): (file, line, col, array, kind, function)
    # by site id (kind "read", "write" or "atomic"); non-empty means the kernel records
    access_sites: tuple = ()
    # cpu static shared arrays: (byte offset after the dynamic area, elements, dtype) each
    shared_layout: tuple = ()
    # warnings the compile emitted ((category name, message, file, line), ...): a cache hit
    # emits them again, as the compile it stands for would have
    compile_warnings: tuple = ()
    # cpu: (file, line, col, function, "statement" | "def") by code-site id, the "lines" of the
    # host object's line table (backends/cpu/codesites.py): where a fault was in the source
    code_sites: tuple = ()
    # the CPU target's debug variant (backends/cpu/debug_lower.py): line sites (file, line, col,
    # body) by site id, the bodies (kernel and inlined calls) with their variables' layouts,
    # and the bytes of one thread's debug area; 0 means a plain kernel
    debug_sites: tuple = ()
    debug_frames: tuple = ()
    debug_area: int = 0
    # foreign code to link (foundation.linkable items): needed by the link stage only, so not
    # stored (the cache stores the linked binary)
    links: tuple = ()
    # False: kept in memory only, never on disk - a GPU build that lost setmaxnreg because no
    # usable ptxas was found (backends/cuda/whole_program.py): a later process that has one
    # builds it right instead of reusing it
    disk_cache: bool = True
    # cpu coroutine kernels: ((symbol, host object), ...) of the runtime code the binary calls
    # (backends/cpu/runtime_lib.py), so that a disk hit in a new process loads it instead of
    # compiling it (~110-190 ms); the entry's trust checks cover it as they cover the binary
    runtime_objects: tuple = ()

    def to_json_dict(self) -> dict:
        """Everything but the binary, as JSON-ready data (the cache stores the binary apart)."""
        from binascii import b2a_base64  # not at import: gpunb's startup is measured

        data = asdict(replace(self, binary=b"", links=(), runtime_objects=()))
        data.pop("binary")
        data.pop("links")
        data["runtime_objects"] = [[name, b2a_base64(obj, newline=False).decode("ascii")]
                                   for name, obj in self.runtime_objects]
        return data

    @classmethod
    def from_json_dict(cls, data: dict, binary: bytes) -> KernelArtifact:
        from binascii import a2b_base64

        data = dict(data)
        data["resources"] = ResourceUsage(**data["resources"])
        data["param_slots"] = tuple(data["param_slots"])
        data["cluster_dims"] = tuple(data.get("cluster_dims", ()))
        data["runtime_objects"] = tuple((name, a2b_base64(obj))
                                        for name, obj in data.get("runtime_objects", ()))
        data["line_map"] = tuple((line, tuple(ptx)) for line, ptx in data["line_map"])
        for name in ("printf_formats", "error_sites", "barrier_sites", "raise_sites",
                     "access_sites", "shared_layout", "compile_warnings", "code_sites",
                     "debug_sites", "debug_frames"):
            data[name] = tuple(tuple(x) if isinstance(x, list) else x
                               for x in data.get(name, ()))
        return cls(binary=binary, **data)
