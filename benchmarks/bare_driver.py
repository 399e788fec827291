"""The anchors: the CUDA driver through cuda.bindings alone, with no JIT layer in between.

Launch overhead of a bare cuLaunchKernel and the bandwidth of a device-to-device cuMemcpyDtoD are
the floors that gpunb, numba-cuda and CuPy are compared with. Everything uses the device's
primary context, which gpunb, numba-cuda and CuPy share, so all run in one process.
"""

from __future__ import annotations

import ctypes

# scale3(float* out, const float* x, float a): out[i] = x[i] * a, written by hand so that the
# anchor owes nothing to any of the compilers being measured (checked with ptxas -arch=sm_90)
SCALE3_PTX = """\
.version 7.0
.target sm_70
.address_size 64

.visible .entry scale3(
    .param .u64 scale3_out,
    .param .u64 scale3_x,
    .param .f32 scale3_a
)
{
    .reg .b32 %r<5>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [scale3_out];
    ld.param.u64 %rd2, [scale3_x];
    ld.param.f32 %f1, [scale3_a];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.s32 %rd5, %r4, 4;
    add.s64 %rd6, %rd4, %rd5;
    ld.global.f32 %f2, [%rd6];
    mul.f32 %f3, %f2, %f1;
    add.s64 %rd7, %rd3, %rd5;
    st.global.f32 [%rd7], %f3;
    ret;
}
"""


def driver():
    from cuda.bindings import driver as cu

    return cu


def check(result):
    """cuda.bindings returns (CUresult, *values): raise on an error, return the values."""
    err, *values = result
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver error {err!r}")
    return values[0] if len(values) == 1 else tuple(values)


def ensure_context() -> None:
    """Make device 0's primary context current (the one numba-cuda, CuPy and gpunb use)."""
    cu = driver()
    check(cu.cuInit(0))
    device = check(cu.cuDeviceGet(0))
    context = check(cu.cuDevicePrimaryCtxRetain(device))
    check(cu.cuCtxSetCurrent(context))


def device_name() -> str:
    cu = driver()
    ensure_context()
    raw = check(cu.cuDeviceGetName(256, check(cu.cuDeviceGet(0))))
    return bytes(raw).split(b"\0", 1)[0].decode()


class Scale3:
    """The hand-written PTX kernel, loaded once, launched with a prebuilt void*[3]."""

    def __init__(self, out_ptr: int, x_ptr: int, a: float):
        cu = driver()
        ensure_context()
        self.module = check(cu.cuModuleLoadData(SCALE3_PTX.encode() + b"\0"))
        self.function = check(cu.cuModuleGetFunction(self.module, b"scale3"))
        self._values = (ctypes.c_uint64(out_ptr), ctypes.c_uint64(x_ptr), ctypes.c_float(a))
        self._pointers = (ctypes.c_void_p * 3)(*(ctypes.addressof(v) for v in self._values))
        self.params = ctypes.addressof(self._pointers)

    def launch_checked(self, blocks: int, threads: int) -> None:
        check(driver().cuLaunchKernel(self.function, blocks, 1, 1, threads, 1, 1, 0, 0,
                                      self.params, 0))
        synchronize()

    def launch(self, blocks: int, threads: int) -> None:
        # exactly what a launch costs at its floor: one call, no argument conversion
        driver().cuLaunchKernel(self.function, blocks, 1, 1, threads, 1, 1, 0, 0, self.params, 0)


def synchronize() -> None:
    check(driver().cuCtxSynchronize())


class DeviceBuffer:
    """cuMemAlloc'd bytes, freed by close()."""

    def __init__(self, nbytes: int):
        ensure_context()
        self.nbytes = nbytes
        self.ptr = int(check(driver().cuMemAlloc(nbytes)))

    def close(self) -> None:
        check(driver().cuMemFree(self.ptr))


def copy_ms(dst: DeviceBuffer, src: DeviceBuffer, copies: int, repeats: int) -> list[float]:
    """Milliseconds per cuMemcpyDtoD of src into dst, timed with events, one sample per repeat."""
    cu = driver()
    start, end = check(cu.cuEventCreate(0)), check(cu.cuEventCreate(0))
    check(cu.cuMemcpyDtoD(dst.ptr, src.ptr, src.nbytes))  # warm-up
    samples = []
    for _ in range(repeats):
        check(cu.cuEventRecord(start, 0))
        for _ in range(copies):
            check(cu.cuMemcpyDtoD(dst.ptr, src.ptr, src.nbytes))
        check(cu.cuEventRecord(end, 0))
        check(cu.cuEventSynchronize(end))
        samples.append(float(check(cu.cuEventElapsedTime(start, end))) / copies)
    check(cu.cuEventDestroy(start))
    check(cu.cuEventDestroy(end))
    return samples
