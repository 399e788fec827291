"""One launch each of the 8192^3 GEMMs that bench_hopper compares, for Nsight Compute to
profile side by side: gpunb.examples.hopper_gemm, any hopper_gemm_variants kernels, Triton's
tutorial matmul at one configuration (no autotuning, so its launches are only the one) and
cuBLAS (torch.matmul). Each is launched once after its compile, nothing else runs a GEMM.

    ncu --clock-control none -k 'regex:^(gemm|matmul_kernel|nvjet|sm90|cutlass)' \\
        --section SpeedOfLight --section WarpStateStats \\
        python -m benchmarks.profile_hopper [--dtype bfloat16] [--variant tma2 ...] [--module M ...]

L2 traffic: `--metrics l1tex__m_xbar2l1tex_read_sectors.sum,lts__t_sectors_srcunit_tex_op_read.sum,
lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum` gives the sectors the SMs
received, those the L2 slices read, and those Hopper's L2 request coalescer merged between
them (requests of several SMs for one sector): the two GEMMs differ in the last (RESULTS.md,
fifth session).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib


def main(argv=None) -> None:
    import torch

    import gpunb
    from benchmarks import hopper_gemm_variants as hv
    from benchmarks.bench_hopper import _triton_matmul
    from gpunb.examples import hopper_gemm

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--dtype", default="float16")
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--module", action="append", default=[],
                        help="also launch a GEMM module with hopper_gemm's descriptors() and "
                             "launch() (bench_hopper's --module), e.g. benchmarks.gemm6.lanes")
    parser.add_argument("--no-triton", action="store_true")
    parser.add_argument("--ptxas-variants", action="store_true",
                        help="link the variants with the toolkit's ptxas (bench_hopper's flag)")
    args = parser.parse_args(argv)
    gpunb.set_target("cuda")
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    a = torch.randn(args.n, args.n, device="cuda", dtype=dtype)
    bt = torch.randn(args.n, args.n, device="cuda", dtype=dtype)
    c = torch.empty(args.n, args.n, device="cuda", dtype=dtype)
    hopper_gemm.launch(c, a, bt)
    from benchmarks.hopper_sass import link_with_toolkit_ptxas

    with link_with_toolkit_ptxas() if args.ptxas_variants else contextlib.nullcontext():
        for spec in args.variant:
            config = hv.parse(spec)
            hv.launch(hv.make_gemm(config), c, a, bt, hv.descriptors(a, bt, c, config))
        for name in args.module:
            module = importlib.import_module(name)
            module.launch(c, a, bt, module.descriptors(a, bt, c))
    if not args.no_triton:
        _triton_matmul(((128, 256, 64, 3, 8),))(a, bt.t().contiguous(), c)
    torch.matmul(a, bt.t())
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
