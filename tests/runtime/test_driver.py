"""The driver wrapper's modules, linking and occupancy calls (simulated driver), and a check that
the real cuda.bindings accept every argument pattern gpunb passes."""

from __future__ import annotations

import pytest

from gpunb.backends.cuda import driver, modules, occupancy


def test_link_ptx_options_and_logs(fake_cuda):
    option = fake_cuda.CUjit_option
    cubin, log = modules.link_ptx(".version 8.0\n.target sm_90\n", "sm_90", max_registers=64,
                                 lineinfo=True)
    assert cubin == b"CUBIN:.version 8" and "Used 32 registers" in log  # 16 bytes, copied out
    opts = fake_cuda.link_options
    assert opts[option.CU_JIT_TARGET] == fake_cuda.CUjit_target.CU_TARGET_COMPUTE_90
    assert opts[option.CU_JIT_MAX_REGISTERS] == 64
    assert opts[option.CU_JIT_GENERATE_LINE_INFO] == 1
    assert opts[option.CU_JIT_OPTIMIZATION_LEVEL] == 4
    assert option.CU_JIT_GENERATE_DEBUG_INFO not in opts
    assert fake_cuda.linked_data.endswith(b"\0")  # PTX goes in NUL-terminated
    assert any(c[0] == "cuLinkDestroy" for c in fake_cuda.calls)
    modules.link_ptx("x", (8, 0), debug=True)
    assert fake_cuda.link_options[option.CU_JIT_OPTIMIZATION_LEVEL] == 0
    assert fake_cuda.link_options[option.CU_JIT_GENERATE_DEBUG_INFO] == 1
    modules.link_ptx("x")
    assert option.CU_JIT_TARGET_FROM_CUCONTEXT in fake_cuda.link_options


def test_link_errors_carry_the_ptxas_log(fake_cuda):
    with pytest.raises(modules.PtxLinkError, match="could not compile the PTX for sm_90") as info:
        modules.link_ptx("syntax error here", "sm_90")
    assert "line 3; error : syntax error" in str(info.value)
    assert "CUDA_ERROR_INVALID_PTX" in str(info.value)
    assert any(c[0] == "cuLinkDestroy" for c in fake_cuda.calls)  # destroyed on failure too


def test_modules_and_function_attributes(fake_cuda):
    module = modules.load_module(b"cubin bytes")
    function = module.get_function("saxpy")
    assert module.get_function("saxpy") is function
    attrs = function.attributes()
    assert attrs["num_regs"] == 32 and attrs["shared_size_bytes"] == 1024
    assert attrs["max_threads_per_block"] == 1024 and attrs["const_size_bytes"] == 0
    function.set_max_dynamic_shared(100_000)
    function.set_max_dynamic_shared(100_000)  # unchanged: no second driver call
    sets = [c for c in fake_cuda.calls if c[0] == "cuFuncSetAttribute"]
    assert len(sets) == 1 and sets[0][1][2] == 100_000
    assert function.attributes()["max_dynamic_shared_size_bytes"] == 100_000


def test_driver_occupancy_calls(fake_cuda):
    function = modules.load_module(b"x").get_function("k")
    assert occupancy.max_active_blocks_per_sm(function, 256) == 8
    assert occupancy.max_potential_block_size(function) == (264, 1024)
    assert occupancy.max_cooperative_grid_blocks(function, 256) == 8 * 132


@pytest.mark.parametrize("arch,expected", [((9, 0), (9, 0)), ("sm_90", (9, 0)), ("90", (9, 0)),
                                           ("sm_90a", (9, 0)), ("8.6", (8, 6)),
                                           ("compute_120", (12, 0))])
def test_parse_arch(arch, expected):
    assert modules.parse_arch(arch) == expected


def test_binding_signatures_accept_our_arguments():
    """Every call pattern gpunb uses parses in the installed cuda.bindings (a TypeError here means
    a real GPU would fail the same way). Without a driver the calls stop at loading libcuda."""
    if driver.is_available():
        pytest.skip("a real driver would execute these calls; the GPU tests cover them")
    cu = driver.cuda_driver()
    option = cu.CUjit_option
    info = bytearray(64)
    calls = [
        (cu.cuInit, 0), (cu.cuDeviceGetCount,), (cu.cuDeviceGet, 0),
        (cu.cuDevicePrimaryCtxRetain, 0), (cu.cuCtxSetCurrent, cu.CUcontext()),
        (cu.cuDeviceGetAttribute, cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0),
        (cu.cuDeviceGetName, 256, 0), (cu.cuDeviceGetPCIBusId, 64, 0), (cu.cuDeviceTotalMem, 0),
        (cu.cuMemAlloc, 16), (cu.cuMemFree, 1234), (cu.cuMemcpyHtoD, 1234, 5678, 16),
        (cu.cuMemcpyDtoH, 5678, 1234, 16), (cu.cuMemcpyDtoD, 1, 2, 16),
        (cu.cuMemcpyHtoDAsync, 1, 2, 16, 77), (cu.cuMemcpyDtoHAsync, 1, 2, 16, 77),
        (cu.cuMemcpyDtoDAsync, 1, 2, 16, 77), (cu.cuStreamCreate, 0),
        (cu.cuStreamSynchronize, 77), (cu.cuStreamQuery, 77), (cu.cuEventCreate, 2),
        (cu.cuEventRecord, cu.CUevent(), 77), (cu.cuEventElapsedTime, cu.CUevent(), cu.CUevent()),
        (cu.cuStreamWaitEvent, 77, cu.CUevent(), 0), (cu.cuModuleLoadData, b"cubin"),
        (cu.cuModuleGetFunction, cu.CUmodule(), b"k"),
        (cu.cuFuncGetAttribute, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS,
         cu.CUfunction()),
        (cu.cuFuncSetAttribute, cu.CUfunction(),
         cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100),
        (cu.cuLinkCreate, 4, [option.CU_JIT_INFO_LOG_BUFFER,
                              option.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, option.CU_JIT_TARGET,
                              option.CU_JIT_MAX_REGISTERS],
         [info, 64, cu.CUjit_target.CU_TARGET_COMPUTE_90, 32]),
        (cu.cuLinkAddData, cu.CUlinkState(), cu.CUjitInputType.CU_JIT_INPUT_PTX, b"x\0", 2,
         b"kernel.ptx", 0, [], []),
        (cu.cuLinkComplete, cu.CUlinkState()),
        (cu.cuLaunchKernel, cu.CUfunction(), 1, 1, 1, 32, 1, 1, 0, 0, 12345, 0),
        (cu.cuLaunchCooperativeKernel, cu.CUfunction(), 1, 1, 1, 32, 1, 1, 0, 77, 12345),
        (cu.cuOccupancyMaxActiveBlocksPerMultiprocessor, cu.CUfunction(), 256, 0),
        (cu.cuOccupancyMaxPotentialBlockSize, cu.CUfunction(), None, 0, 0),
        (cu.cuMemHostAlloc, 64, 2), (cu.cuMemHostGetDevicePointer, 1234, 0),
        (cu.cuMemHostRegister, 1234, 64, 2), (cu.cuMemHostUnregister, 1234),
    ]
    for fn, *args in calls:
        try:
            fn(*args)
        except TypeError as exc:  # argument parsing happens before the library is loaded
            pytest.fail(f"{fn.__name__}{tuple(args)} rejected: {exc}")
        except Exception:  # noqa: BLE001 - no libcuda here: the call got past argument parsing
            pass


def test_build_cubin_links_plain_ptx_and_says_when_setmaxnreg_is_lost(fake_cuda, monkeypatch):
    """build_cubin: plain PTX goes to the driver's linker; setmaxnreg PTX to ptxas, or, with no
    usable ptxas, to the linker with a warning and False (the cubin lost setmaxnreg: the
    backend keeps it out of the disk cache)."""
    from gpunb.backends.cuda import whole_program
    from gpunb.foundation.errors import PerformanceWarning

    plain = ".version 8.0\n.target sm_90a\n"
    assert modules.build_cubin(plain, "sm_90a") == (b"CUBIN:.version 8", True)
    monkeypatch.setattr(whole_program, "usable_ptxas", lambda release: None)
    with pytest.warns(PerformanceWarning, match="setmaxnreg"):
        cubin, complete = modules.build_cubin(plain + "\tsetmaxnreg.inc.sync.aligned.u32 232;\n",
                                              "sm_90a")
    assert cubin == b"CUBIN:.version 8" and complete is False
