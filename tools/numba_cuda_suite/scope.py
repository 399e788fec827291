"""Which upstream cudapy tests measure gpunb: in scope, out of scope (numba internals), or in
scope but needing a real GPU. One line per file or test pattern; see README.md for the rules.

`FILES` gives a whole file's verdict; `TESTS` (fnmatch patterns on pytest node ids, first match
wins) overrides it for single tests or classes. A file not listed is in scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

IN, OUT, GPU = "in", "out", "gpu"


@dataclass(frozen=True, slots=True)
class Verdict:
    scope: str  # IN, OUT or GPU
    reason: str


FILES: dict[str, tuple[str, str]] = {
    # numba's compiler internals: IR, passes, analyses, type system, typing registries
    "test_analysis.py": (OUT, "numba IR dead-branch pruning (numba internals)"),
    "test_byteflow.py": (OUT, "numba bytecode flow analysis (numba internals)"),
    "test_copy_propagate.py": (OUT, "numba IR copy propagation (numba internals)"),
    "test_ir.py": (OUT, "numba IR classes (numba internals)"),
    "test_ir_utils.py": (OUT, "numba IR utilities (numba internals)"),
    "test_typeconv.py": (OUT, "numba type-conversion rules and cast graph (numba internals)"),
    "test_typeinfer.py": (OUT, "numba type inference and unification (numba internals)"),
    "test_gufunc_scheduling.py": (OUT, "numba's GUFuncEngine scheduling class (numba internals)"),
    "test_tracing.py": (OUT, "numba's event tracing of its compiler (numba internals)"),
    "test_launch_config_sensitive.py": (OUT, "launchconfig rewrite registry (extension API)"),
    # numba's extension API
    "test_extending.py": (OUT, "numba extension API (@overload, @intrinsic, models)"),
    "test_extending_types.py": (OUT, "numba extension API (typing templates, lowering registry)"),
    "test_overload.py": (OUT, "numba extension API (@overload with targets)"),
    "test_numba_interop.py": (OUT, "numba.extending.overload used from kernels (extension API)"),
    # numba's own generated text, debug dumps and caching machinery
    "test_debug.py": (OUT, "numba's NUMBA_DUMP_* debug output"),
    "test_debuginfo.py": (OUT, "DWARF/LLVM debug metadata emitted by numba"),
    "test_debuginfo_types.py": (OUT, "DWARF/LLVM debug metadata emitted by numba"),
    "test_optimization.py": (OUT, "effect of opt= on numba's PTX text"),
    "test_inline.py": (OUT, "numba's inlining decisions, read from its LLVM IR"),
    "test_lineinfo.py": (OUT, "line-info directives in numba's LLVM/PTX text"),
    "test_minmax.py": (OUT, "numba's instruction selection for min/max, read from PTX"),
    "test_caching.py": (OUT, "numba's on-disk cache (index files, locators, launch-config keys)"),
    # in scope, but the semantics need a CUDA device
    "test_ipc.py": (GPU, "CUDA IPC handles between processes"),
    "test_multigpu.py": (GPU, "several devices and contexts"),
    "test_multiprocessing.py": (GPU, "fork after the CUDA driver was initialised"),
    "test_cupy_bfloat16_interop.py": (GPU, "CuPy arrays (device memory) as kernel arguments"),
    "test_cuda_array_interface.py": (GPU, "__cuda_array_interface__ describes device memory; the "
                                          "CPU target's arrays do not export it"),
}

TESTS: list[tuple[str, str, str]] = [
    # tests numba-cuda itself skips on its simulator for being about numba's internals
    ("test_array_alignment.py::*::test_array_alignment_*", OUT,
     "reads alignment from numba's LLVM globals (_cudapy_smem_*, _cudapy_lmem)"),
    ("test_cache_hints.py::*::test_loads*", GPU, "asserts cache-hint PTX from inspect_asm()"),
    ("test_cache_hints.py::*::test_stores*", GPU, "asserts cache-hint PTX from inspect_asm()"),
    ("test_casting.py::*::test_*_ptx", OUT, "numba's instruction selection for fp16 casts (PTX)"),
    ("test_casting.py::*::test_native_cast", OUT, "numba's instruction selection (PTX text)"),
    ("test_compiler.py::*::test_*_with_debug", OUT, "DWARF sections in numba's PTX"),
    ("test_compiler.py::*::test_*_with_line_info", OUT, "line-info directives in numba's PTX"),
    ("test_compiler.py::*::test_compile_all_lineinfo", OUT, "line-info directives in PTX"),
    ("test_compiler.py::*::test_compile_all_debug", OUT, "DWARF sections in PTX"),
    ("test_compiler.py::*::test_compile_to_ltoir", OUT, "numba's LTO-IR output (nvJitLink)"),
    ("test_compiler.py::*::test_c_abi_no_env_global", OUT, "numba's environment global in PTX"),
    ("test_compiler.py::*::test_numba_abi_has_env_global", OUT, "numba's environment global"),
    ("test_compiler.py::*::test_functioncompiler_locals", OUT, "numba's FunctionCompiler locals"),
    ("test_compiler.py::*::test_compile_all_with_external_functions", GPU,
     "links CUDA C/PTX/LTO-IR files (needs the CUDA toolchain and device)"),
    ("test_constmem.py::*::test_const_array", GPU, "asserts ld.const in PTX from inspect_asm()"),
    ("test_constmem.py::*::test_const_array_2d", GPU, "asserts ld.const in PTX from inspect_asm()"),
    ("test_constmem.py::*::test_const_array_3d", GPU, "asserts ld.const in PTX from inspect_asm()"),
    ("test_const_string.py::TestConstStringCodegen::*", OUT, "numba's NVVM module construction"),
    ("test_cooperative_groups.py::*::test_false_cooperative_doesnt_link_cudadevrt", OUT,
     "numba's link step (cudadevrt)"),
    ("test_cooperative_groups.py::*::test_external_cooperative_func", GPU,
     "links a CUDA C source (declare_device link=)"),
    ("test_cuda_array_interface.py::*::test_from_dtype_caching_distiguish_custom_dtypes", OUT,
     "numba's Record type identity (aligned flag) for dtypes of identical layout"),
    ("test_cuda_array_interface.py::*::test_negative_strided_copy_to_host", OUT,
     "asserts a numba limitation (negative-stride D->H copy raises)"),
    ("test_cuda_array_interface.py::*::test_ownership", OUT, "numba's memory manager internals"),
    ("test_cuda_array_interface.py::*::test_*_sync_disabled", OUT,
     "numba config CUDA_ARRAY_INTERFACE_SYNC"),
    ("test_array.py::*::test_array_like_2d_view_transpose_device", OUT,
     "asserts numba's non-NumPy strides for .T of a view (numba issue #4974)"),
    ("test_transpose.py::*::test_transpose_view", OUT,
     "asserts numba's non-NumPy strides for .T of a view (numba issue #4974)"),
    ("test_datetime.py::*::test_datetime_cupy_inputs", GPU, "CuPy arrays"),
    ("test_device_func.py::*::test_cpu_dispatcher*", OUT,
     "numba CPU @jit functions called from kernels (numba interop)"),
    ("test_device_func.py::*::test_inspect_llvm", OUT, "numba's compile_device/fndesc internals"),
    ("test_device_func.py::*::test_inspect_asm", OUT, "numba's compile_device/fndesc internals"),
    ("test_device_func.py::*::test_link_*", GPU, "links CUDA C sources (declare_device link=)"),
    ("test_device_func.py::*::test_include_cuda_header", GPU, "links CUDA C with CUDA headers"),
    ("test_device_func.py::*::test_call_*declared*", GPU, "links CUDA C (declare_device link=)"),
    ("test_device_func.py::*::test_declared_in_called_function*", GPU,
     "links CUDA C (declare_device link=)"),
    ("test_device_func.py::TestDeclareDeviceCABI::*", GPU, "links CUDA C (declare_device link=)"),
    ("test_dispatcher.py::*::test_launch_config_available_during_compile", OUT,
     "numba.cuda.launchconfig (extension API)"),
    ("test_dispatcher.py::*::test_capture_compile_config", OUT, "numba.cuda.launchconfig"),
    ("test_dispatcher.py::*::test_dispatcher_mark_launch_config_sensitive", OUT,
     "numba.cuda.launchconfig"),
    ("test_dispatcher.py::*::test_launch_config_args_are_thread_local", OUT,
     "numba.cuda.launchconfig"),
    ("test_dispatcher.py::TestLaunchBounds::test_launch_bounds_*", GPU,
     "asserts a driver launch error and .maxntid from inspect_asm()"),
    ("test_enums.py::*::test_return_from_device_func", OUT, "numba CPU @njit called from kernel"),
    ("test_enums.py::*::test_int_enum_no_conversion", OUT, "numba's typing context (descriptor)"),
    ("test_localmem.py::*::test_n*_dtype", OUT, "reads numba's type annotations of an overload"),
    ("test_localmem.py::*::test_string_dtype", OUT, "reads numba's type annotations"),
    ("test_sm_creation.py::*::test_n*_dtype", OUT, "reads numba's type annotations"),
    ("test_sm_creation.py::*::test_string_dtype", OUT, "reads numba's type annotations"),
    ("test_vectorize.py::*::test_no_transfer_for_device_data", OUT,
     "patches numba's driver object to count copies"),
    ("test_errors.py::*::test_lto_without_nvjitlink_error", OUT, "numba's nvJitLink detection"),
    ("test_fastmath.py::*::test_divf_exception", IN, "fastmath with debug=True"),
    ("test_fastmath.py::*::test_device_fastmath_propagation", IN, "fastmath of device functions"),
    ("test_fastmath.py::*", GPU, "asserts approximate PTX instructions from inspect_asm()"),
    ("test_flow_control.py::TestCFGraph::*", OUT, "numba's CFGraph class (numba internals)"),
    ("test_flow_control.py::TestRealCodeDomFront::*", OUT, "numba's CFG analysis of bytecode"),
    ("test_inspect.py::*::test_monotyped", OUT, "FileCheck of numba's LLVM/PTX"),
    ("test_inspect.py::*::test_polytyped", OUT, "FileCheck of numba's LLVM/PTX"),
    ("test_inspect.py::*::test_inspect_lto_asm", OUT, "numba's LTO (nvJitLink) PTX"),
    ("test_intrinsics.py::*::test_*_ptx", OUT, "numba's fp16 PTX through LTO (inspect_lto_ptx)"),
    ("test_intrinsics.py::*::test_selp", OUT, "counts branches in numba's PTX"),
    ("test_localmem.py::*::test_local_array", GPU, "asserts .local in PTX from inspect_asm()"),
    ("test_localmem.py::*::test_type_with_struct_data_model", OUT, "extension API data model"),
    ("test_localmem.py::*::test_struct_model_type_arr", OUT, "extension API data model"),
    ("test_multithreads.py::*::test_invalid_context_error_*", GPU, "CUDA contexts"),
    ("test_operator.py::*::test_*_ptx", OUT, "numba's fp16 PTX through LTO (inspect_lto_ptx)"),
    ("test_sm.py::*::test_issue_953_sm_linkage_conflict", IN, "shared arrays in two functions"),
    ("test_sm.py::*::struct_model_type*", OUT, "extension API data model"),
    ("test_sm_creation.py::*::test_type_with_struct_data_model", OUT, "extension API data model"),
    ("test_ssa.py::*::test_issue3976", OUT, "uses @overload (extension API)"),
    ("test_ssa.py::*::test_issue5219", OUT, "uses @overload (extension API)"),
    ("test_ssa.py::TestSSA::test_undefined_var", OUT, "numba's uninitialised-variable warning"),
    ("test_make_function_to_jit_function.py::*::test_with_overload", OUT, "@overload"),
    ("test_make_function_to_jit_function.py::*::test_basic_apply_like_case", OUT, "@overload"),
    ("test_sync.py::*::test_threadfence*_codegen", GPU, "asserts membar in PTX from inspect_asm()"),
    ("test_warning.py::*::test_float16_warn_if_lto_missing", OUT, "numba's nvJitLink detection"),
    ("test_warning.py::*::test_*warn_on_host_array", GPU,
     "warns about host<->device copies, which the CPU target does not make"),
    ("test_warning.py::*::test_*efficient_launch_configuration", GPU,
     "low-occupancy warning: needs the device's SM count"),
    ("test_warning.py::*::test_*_with_config", OUT, "numba config OPT"),
    ("test_warp_ops.py::*::test_*_const_mode_val", OUT, "numba's LLVM intrinsic calls (LLVM text)"),
]

DEFAULT = Verdict(IN, "kernel language / host API")


def classify(nodeid: str) -> Verdict:
    """The verdict for a node id such as `test_array.py::TestCudaArray::test_gpu_array_strided`."""
    for pattern, verdict, reason in TESTS:
        if fnmatchcase(nodeid, pattern):
            return Verdict(verdict, reason)
    file = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    if file in FILES:
        return Verdict(*FILES[file])
    return DEFAULT
