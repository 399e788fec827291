"""Which upstream cudapy tests measure gpunb, counted the strict way: everything a user of
numba-cuda can call is in scope. One line per file or test pattern, each with its reason.

- **in**: the kernel language, the host API, every decorator and compile option (inline=,
  forceinline=, lineinfo=, debug=, opt=, cache=, launch_bounds=, link=), numba CPU functions
  called from kernels, the warnings and errors users see, `inspect_llvm()` / `compile_ptx()`
  output where the test reads what a user option put there.
- **gpu**: in scope, but what the test does needs a CUDA device: IPC, several devices or
  contexts, CuPy arrays, foreign device memory, linking CUDA C. Skipped and counted apart on the
  CPU target; run with `--target cuda` on a GPU. (PTX from `inspect_asm()` / `compile_ptx()`
  needs no GPU: gpunb compiles it on every target.)
- **out**: only what no numba-cuda user calls: numba's compiler internals (its IR, bytecode
  analysis, passes, typing registries, target context, code library), numba's compiler-extension
  API below @overload (@intrinsic/data models/typing templates/launchconfig: they plug code
  into numba's own compiler, whose types and LLVM lowering gpunb does not have; @overload,
  register_jitable, overload_method and overload_attribute are in scope: gpunb.cuda.extending),
  numba's config
  variables that gpunb does not read, the layout of numba's own cache files, and tests that
  assert a numba limitation (gpunb not having it fails them).

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


_INTERNALS = "numba's compiler internals, reachable through no user API"
_EXTENSION = "numba's compiler-extension API (numba types, data models, LLVM lowering)"

FILES: dict[str, tuple[str, str]] = {
    # numba's compiler internals: IR, passes, analyses, type system, typing registries
    "test_analysis.py": (OUT, f"numba IR dead-branch pruning ({_INTERNALS})"),
    "test_byteflow.py": (OUT, f"numba bytecode flow analysis ({_INTERNALS})"),
    "test_copy_propagate.py": (OUT, f"numba IR copy propagation ({_INTERNALS})"),
    "test_ir.py": (OUT, f"numba IR classes ({_INTERNALS})"),
    "test_ir_utils.py": (OUT, f"numba IR utilities ({_INTERNALS})"),
    "test_typeconv.py": (OUT, f"numba's cast graph ({_INTERNALS})"),
    "test_typeinfer.py": (OUT, f"numba's type unification ({_INTERNALS})"),
    "test_gufunc_scheduling.py": (OUT, f"numba's GUFuncEngine class ({_INTERNALS})"),
    "test_tracing.py": (OUT, "numba's event tracing of its own compiler stages (numba.core."
                             "event)"),
    # numba's compiler-extension API
    "test_launch_config_sensitive.py": (OUT, f"launchconfig ({_EXTENSION})"),
    # its module defines a numba type with a data model at import (IntervalType: typeof_impl,
    # register_model, lower_builtin, AttributeTemplate), so none of its tests can be collected;
    # its @overload / register_jitable / overload_method tests (8) pass run without that
    # prelude (RESULTS.md, branch extending8)
    "test_extending.py": (OUT, f"a numba data-model type at import; @intrinsic ({_EXTENSION})"),
    "test_extending_types.py": (OUT, f"typing templates, lowering registry ({_EXTENSION})"),
    # numba's debug dumps are switched by numba config variables and print numba's own IR
    "test_debug.py": (OUT, "NUMBA_DUMP_* config variables printing numba's bytecode/IR/CFG"),
    # in scope, but what the tests do needs a CUDA device
    "test_minmax.py": (OUT, "asserts numba-cuda's max.f64/min.f64 instructions, which drop a "
                            "NaN operand: numba's CPU target and Python give max(nan, 1.0) = nan, "
                            "and gpunb does as they do"),
    "test_ipc.py": (GPU, "CUDA IPC handles between processes"),
    "test_multigpu.py": (GPU, "several devices and contexts"),
    "test_multiprocessing.py": (GPU, "fork after the CUDA driver was initialised"),
    "test_cupy_bfloat16_interop.py": (GPU, "CuPy arrays (device memory) as kernel arguments"),
    "test_device_array_capture.py": (GPU, "captures foreign (__cuda_array_interface__) GPU "
                                          "arrays; the CPU target's arrays are host memory"),
    "test_cuda_array_interface.py": (GPU, "__cuda_array_interface__ describes device memory; the "
                                          "CPU target's arrays do not export it"),
}

_FILECHECK = "FileCheck patterns over numba's own LLVM/PTX text (its value names, metadata layout)"
_PYCACHE = "counts numba's index/data files in __pycache__ (numba's cache file layout)"
_LIMITATION = "asserts a numba limitation that gpunb does not have"

TESTS: list[tuple[str, str, str]] = [
    # cache=True: behaviour is in scope, numba's file layout is not
    ("test_caching.py::CUDACachingTest::test_caching", OUT, _PYCACHE),
    ("test_caching.py::CUDACachingTest::test_many_locals", OUT, _PYCACHE),
    ("test_caching.py::CUDACachingTest::test_closure", OUT, _PYCACHE),
    ("test_caching.py::CUDACachingTest::test_recompile", OUT,
     f"{_LIMITATION} (numba keeps code that read a global after the global changed, until "
     "recompile(); gpunb recompiles: an edit is never ignored)"),
    ("test_caching.py::CUDACachingTest::test_cannot_cache_*", OUT,
     f"{_LIMITATION} (numba cannot pickle linked code or device-array captures)"),
    ("test_caching.py::CUDACooperativeGroupTest::*", OUT, _PYCACHE),
    ("test_caching.py::CUDAAndCPUCachingTest::*", OUT, _PYCACHE),
    ("test_caching.py::LaunchConfig*", OUT, f"launchconfig-sensitive cache keys ({_EXTENSION})"),
    ("test_caching.py::TestCUDACodeLibrary::*", OUT, f"CUDACodeLibrary ({_INTERNALS})"),
    ("test_cffi.py::*", GPU, "links a PTX file (declare_device link=) into a CUDA kernel"),
    ("test_compiler.py::*::test_compile_jitted_subroutine", OUT, f"uses @intrinsic ({_EXTENSION})"),
    # debug=True is in scope; FileCheck patterns over numba's own IR text are numba's naming
    *[(f"test_debuginfo.py::*::test_{name}", OUT, _FILECHECK) for name in (
        "DILocation", "DILocation_versioned_variables", "DISubprogram_def_line_number",
        "DW_LANG", "bool_param_ref_only", "debuginfo_asm", "llvm_dbg_value_loadvar_coverage",
        "llvm_dbg_value_range", "llvm_inliner_flag_conflict", "prologue_line_number",
        "shared_memory_address_class_*", "poly_variant_part")],
    ("test_debuginfo_types.py::*::test_ditypes", OUT, _FILECHECK),
    ("test_alignment.py::*::test_record_alignment_error", OUT,
     f"{_LIMITATION} (numba-cuda refuses a packed record's misaligned float64 field; gpunb "
     "reads and writes it with loads and stores of the alignment the layout guarantees, byte "
     "by byte on a GPU)"),
    ("test_debuginfo.py::*::test_missing_source", OUT,
     f"{_LIMITATION} (numba cannot read the source of a function made by exec and warns that "
     "its line information may be inaccurate; gpunb recovers the exec'd text, accepted only "
     "when it compiles to the function's own code object, so its lines are exact and there "
     "is nothing to warn about)"),
    ("test_debuginfo.py::*::test_environment_override", OUT,
     "numba config variable CUDA_DEBUGINFO_DEFAULT"),
    ("test_debuginfo.py::*::test_no_if_op_bools_declared", OUT,
     f"numba's private _dbg_optnone option ({_INTERNALS})"),
    ("test_inspect.py::*::test_inspect_lto_asm", GPU,
     "links a CUDA C source (declare_device link=) into the kernel"),
    ("test_inspect.py::*::test_monotyped", OUT, _FILECHECK),
    ("test_inspect.py::*::test_polytyped", OUT, _FILECHECK),
    ("test_dispatcher.py::TestLaunchBounds::*", OUT,
     "expects cuda.core's CUDAError class from the driver (numba-cuda's driver binding); gpunb "
     "refuses the launch itself, with LaunchConfigError"),
    ("test_atomics.py::*::test_atomic_add_double_global*", OUT,
     "asserts numba's generic-address atomics in PTX (gpunb's are atom.global)"),
    ("test_atomics.py::*::test_atomic_sub3", OUT,
     "asserts numba-cuda's unchecked arguments of a specialized kernel (a uint32 array read as "
     "int32[:,:]); gpunb refuses the mismatch, as numba's CPU dispatcher does"),
    ("test_casting.py::*::test_*float16*_ptx", OUT,
     "asserts numba's instruction choices for float16 casts in PTX (cvt.rni for float16 -> "
     "int is numba-cuda rounding where int() truncates; gpunb truncates, as Python does)"),
    ("test_constmem.py::*::test_const_array_3d", OUT, "asserts numba's instruction choice "
     "(a vector ld.const.v2 for complex64) in PTX; gpunb's loads are scalar"),
    ("test_operator.py::*::test_mixed_fp16_comparison_promotion_ptx", OUT,
     "asserts numba's setp operand order in PTX (LLVM writes a > b as setp.lt with the operands "
     "swapped)"),
    ("test_array_alignment.py::*::test_array_alignment_*", OUT,
     "reads alignment from numba's own LLVM global names (_cudapy_smem_*, _cudapy_lmem)"),
    ("test_compiler.py::*::test_c_abi_no_env_global", OUT, "numba's environment global in PTX "
     f"({_INTERNALS})"),
    ("test_compiler.py::*::test_numba_abi_has_env_global", OUT, "numba's environment global "
     f"({_INTERNALS})"),
    ("test_compiler.py::*::test_functioncompiler_locals", OUT, f"numba's FunctionCompiler "
     f"({_INTERNALS})"),
    ("test_compiler.py::*::test_compile_all_with_external_functions", GPU,
     "links CUDA C/PTX/LTO-IR files (needs the CUDA toolchain and device)"),
    ("test_const_string.py::TestConstStringCodegen::*", OUT, f"numba's NVVM module construction "
     f"({_INTERNALS})"),
    ("test_cooperative_groups.py::*::test_false_cooperative_doesnt_link_cudadevrt", OUT,
     f"reads numba's code library's link list ({_INTERNALS})"),
    ("test_cooperative_groups.py::*::test_external_cooperative_func", GPU,
     "links a CUDA C source (declare_device link=)"),
    ("test_cuda_array_interface.py::*::test_from_dtype_caching_distiguish_custom_dtypes", OUT,
     "numba's Record type identity: an aligned flag apart for dtypes numpy calls equal (gpunb's "
     "types follow numpy's dtype equality)"),
    ("test_cuda_array_interface.py::*::test_negative_strided_copy_to_host", OUT,
     f"{_LIMITATION} (a negative-stride device-to-host copy raises)"),
    ("test_cuda_array_interface.py::*::test_ownership", OUT, f"numba's memory manager "
     f"({_INTERNALS})"),
    ("test_cuda_array_interface.py::*::test_*_sync_disabled", OUT,
     "numba config variable CUDA_ARRAY_INTERFACE_SYNC"),
    ("test_datetime.py::*::test_datetime_cupy_inputs", GPU, "CuPy arrays"),
    ("test_device_func.py::*::test_link_*", GPU, "links CUDA C sources (declare_device link=)"),
    ("test_device_func.py::*::test_include_cuda_header", GPU, "links CUDA C with CUDA headers"),
    ("test_device_func.py::*::test_call_*declared*", GPU, "links CUDA C (declare_device link=)"),
    ("test_device_func.py::*::test_declared_in_called_function*", GPU,
     "links CUDA C (declare_device link=)"),
    ("test_device_func.py::TestDeclareDeviceCABI::*", GPU, "links CUDA C (declare_device link=)"),
    ("test_dispatcher.py::*::test_launch_config_available_during_compile", OUT,
     f"launchconfig and the private _compile_for_args ({_EXTENSION})"),
    ("test_dispatcher.py::*::test_capture_compile_config", OUT, f"launchconfig ({_EXTENSION})"),
    ("test_dispatcher.py::*::test_dispatcher_mark_launch_config_sensitive", OUT,
     f"launchconfig ({_EXTENSION})"),
    ("test_dispatcher.py::*::test_launch_config_args_are_thread_local", OUT,
     f"launchconfig ({_EXTENSION})"),
    ("test_dispatcher.py::*::test_dispatcher_cpointer_arguments", GPU, "passes device pointers "
     "read from __cuda_array_interface__, which the CPU target's arrays do not export"),
    ("test_enums.py::*::test_int_enum_no_conversion", OUT, f"numba's typing context "
     f"({_INTERNALS})"),
    ("test_localmem.py::*::test_n*_dtype", OUT, f"reads numba's typemap of an overload "
     f"({_INTERNALS})"),
    ("test_localmem.py::*::test_string_dtype", OUT, f"reads numba's typemap ({_INTERNALS})"),
    ("test_sm_creation.py::*::test_n*_dtype", OUT, f"reads numba's typemap ({_INTERNALS})"),
    ("test_sm_creation.py::*::test_string_dtype", OUT, f"reads numba's typemap ({_INTERNALS})"),
    ("test_vectorize.py::*::test_no_transfer_for_device_data", OUT,
     f"patches numba's driver object to count copies ({_INTERNALS})"),
    ("test_errors.py::*::test_lto_without_nvjitlink_error", OUT,
     "numba's nvJitLink detection (numba-cuda packaging)"),
    ("test_flow_control.py::TestCFGraph::*", OUT, f"numba's CFGraph class ({_INTERNALS})"),
    ("test_flow_control.py::TestRealCodeDomFront::*", OUT, f"numba's CFG analysis of bytecode "
     f"({_INTERNALS})"),
    ("test_localmem.py::*::test_type_with_struct_data_model", OUT, f"data model ({_EXTENSION})"),
    ("test_localmem.py::*::test_struct_model_type_arr", OUT, f"data model ({_EXTENSION})"),
    ("test_multithreads.py::*::test_invalid_context_error_*", GPU, "CUDA contexts"),
    ("test_sm.py::*::test_issue_953_sm_linkage_conflict", IN, "shared arrays in two functions"),
    ("test_sm.py::*::struct_model_type*", OUT, f"data model ({_EXTENSION})"),
    ("test_sm_creation.py::*::test_type_with_struct_data_model", OUT,
     f"data model ({_EXTENSION})"),
    ("test_overload.py::*::test_overload_attribute_target", OUT, f"a numba type of its own "
     f"(make_dummy_type: typeof_impl, data model) as a kernel argument ({_EXTENSION})"),
    ("test_ssa.py::TestSSA::test_undefined_var", OUT,
     "numba config variable ALWAYS_WARN_UNINIT_VAR"),
    ("test_warning.py::*::test_float16_warn_if_lto_missing", OUT,
     "numba's nvJitLink detection (numba-cuda packaging)"),
    ("test_warning.py::*::test_*warn_on_host_array", GPU,
     "warns about host<->device copies, which the CPU target does not make"),
    ("test_warning.py::*::test_*_with_config", OUT, "numba config variables OPT and "
     "CUDA_DEBUGINFO_DEFAULT"),
    ("test_warp_ops.py::*::test_*_const_mode_val", OUT, "numba's LLVM intrinsic calls for a "
     "constant mode (LLVM text of numba's lowering)"),
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
