"""The ninth H200 session's GEMM work (issue 24): `uniform`, the 128 x 320 kernel as it was
before its tile plan (every tile 320 wide; bench_hopper's `--module benchmarks.gemm7.uniform`,
the control), and `clocks`, the SM clock and power each GEMM runs at. The mixed-width plan
itself moved into gpunb.examples (hopper_gemm_plan); its benchmark module is in the history:
git show 3f9100a:benchmarks/gemm7/mixed.py."""
