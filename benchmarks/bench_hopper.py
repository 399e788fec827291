"""Hopper kernels written in gpunb's language beside their peers, in one run on an H100.

- GEMM 8192^3, float16 and bfloat16 in, float32 accumulation, C = A @ B^T:
  gpunb.examples.hopper_gemm (TMA + wgmma, warp specialised; launched as a user calls it, with
  the tile width its launch() chooses for the problem) vs cuBLAS (torch.matmul) vs
  Triton's tutorial matmul (tutorials/03-matrix-multiplication, its H100 configurations);
  targets: >= 80 % of cuBLAS and level with Triton.
- Causal attention forward, head dim 128, seq 4096, bfloat16: gpunb.examples.hopper_attention
  vs torch.nn.functional.scaled_dot_product_attention with the flash backend; target >= 50 %.
- Cold compile of the GEMM kernel (types -> PTX -> cubin, empty cache, fresh process, the
  CUDA context excluded); target <= 1 s.

Each library gets the operand layout it is built for (B as (N, K) for gpunb and cuBLAS, as
(K, N) for Triton's tutorial); the arithmetic is the same. TFLOP/s = flops / median device
time (CUDA events around repeated launches). `python -m benchmarks.bench_hopper [--quick]`
prints the table and writes JSON with --json PATH.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.common import REPO, median

FLOPS_GEMM = 2.0


def _events_ms(fn, iters: int, repeats: int) -> float:
    import torch

    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / iters)
    return median(samples)


TUTORIAL_CONFIGS = ((128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4),
                    (128, 64, 32, 4, 4))


def _triton_matmul(choices: tuple = TUTORIAL_CONFIGS):
    """Triton's tutorial matmul (grouped tile order, tl.dot, its CUDA autotune configs; `choices`
    of (BM, BN, BK, stages, warps)). The returned function's .kernel is the autotuner."""
    import triton
    import triton.language as tl

    configs = [triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_stages=s,
                             num_warps=w)
               for bm, bn, bk, s, w in choices]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,  # noqa: N803
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
        pid = tl.program_id(0)
        tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        in_group = GROUP * tiles_n
        first_m = pid // in_group * GROUP
        rows = min(tiles_m - first_m, GROUP)
        pid_m = first_m + (pid % in_group) % rows
        pid_n = (pid % in_group) // rows
        offs_m = (pid_m * BM + tl.arange(0, BM)) % M
        offs_n = (pid_n * BN + tl.arange(0, BN)) % N
        offs_k = tl.arange(0, BK)
        a_ptrs = a_ptr + offs_m[:, None] * sam + offs_k[None, :] * sak
        b_ptrs = b_ptr + offs_k[:, None] * sbk + offs_n[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BK * sak
            b_ptrs += BK * sbk
        c = acc.to(c_ptr.dtype.element_ty)
        rows_c = pid_m * BM + tl.arange(0, BM)
        cols_c = pid_n * BN + tl.arange(0, BN)
        tl.store(c_ptr + rows_c[:, None] * scm + cols_c[None, :] * scn, c,
                 mask=(rows_c[:, None] < M) & (cols_c[None, :] < N))

    def matmul(a, b, c):
        M, K = a.shape  # noqa: N806
        N = b.shape[1]  # noqa: N806

        def grid(meta):
            return (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)

        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                            b.stride(1), c.stride(0), c.stride(1))

    matmul.kernel = matmul_kernel
    return matmul


def gemm(n: int, dtype_name: str, iters: int, repeats: int, variants: tuple = (),
         triton_configs: tuple = TUTORIAL_CONFIGS, rounds: int = 1,
         warm_s: float = 0.0, ptxas_variants: bool = False, modules: tuple = (),
         shuffle: bool = True) -> dict:
    """The GEMM row: every kernel's product checked against cuBLAS's, then `rounds` rounds that each
    time every kernel once (`repeats` x `iters` launches, CUDA events), in an order drawn at
    random for each round (`shuffle`, the default) or rotated from round to round, after
    `warm_s` seconds of cuBLAS launches to bring the clocks to their loaded state; a kernel's
    time is the median of its rounds. A GPU's clock drifts with its temperature and power over a
    run, so kernels timed one after another (the first at the coolest clock) differ by a few
    percent that interleaving spreads over all. A rotated order keeps each kernel behind the
    same one in every round (the example behind cuBLAS), which biased the figures by 1-4 %
    (RESULTS.md, eighth session); `shuffle` draws each round's order at random, seeded by the
    round. `modules`: other GEMM modules with hopper_gemm's descriptors() and launch() (e.g.
    benchmarks.hopper_gemm_wide), timed as variants; linked like them."""
    import torch

    import gpunb
    from gpunb.examples import hopper_gemm

    gpunb.set_target("cuda")
    dtype = getattr(torch, dtype_name)
    torch.manual_seed(0)
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    bt = torch.randn(n, n, device="cuda", dtype=dtype)  # B^T: (N, K)
    b_kn = bt.t().contiguous()  # the same B as (K, N), Triton's layout
    flops = FLOPS_GEMM * n ** 3
    out = {"figure": f"GEMM {n}^3 {dtype_name}, f32 accumulate", "rounds": rounds}
    c_ref = torch.matmul(a, bt.t())
    kernels = {"cublas": lambda: torch.matmul(a, bt.t())}
    c = torch.empty(n, n, device="cuda", dtype=dtype)
    descs = hopper_gemm.descriptors(a, bt, c)  # for the width launch() would choose
    out["gpunb_width"] = descs[1].box[0] * hopper_gemm.CLUSTER
    kernels["gpunb"] = lambda: hopper_gemm.launch(c, a, bt, descs)
    products = {"gpunb": c}
    kernels["gpunb"]()  # the example is built as gpunb builds it, whatever the variants' linker
    from benchmarks.hopper_sass import link_with_toolkit_ptxas

    with link_with_toolkit_ptxas() if ptxas_variants else contextlib.nullcontext() as ptxas:
        for spec in variants:  # hopper_gemm_variants' kernels, timed the same way
            kernels[spec], products[spec], label = _variant(spec, a, bt, c_ref)
            kernels[spec]()  # compiled here: by the toolkit's ptxas under --ptxas-variants
            out.setdefault("variants", []).append({"variant": spec, "label": label})
        for name in modules:
            kernels[name], products[name] = _module(name, a, bt, c_ref)
            kernels[name]()
            out.setdefault("variants", []).append({"variant": name, "label": name})
    out["variants_linked_by"] = ptxas or "the driver's JIT"
    try:
        matmul = _triton_matmul(triton_configs)
        c_t = torch.empty(n, n, device="cuda", dtype=dtype)
        matmul(a, b_kn, c_t)  # autotunes (when given several configurations) and compiles
        kernels["triton"] = lambda: matmul(a, b_kn, c_t)
        products["triton"] = c_t
        out["triton_config"] = str(getattr(matmul.kernel, "best_config", ""))
    except Exception as exc:  # noqa: BLE001 - a missing or failing peer is reported, not faked
        out["triton_error"] = f"{type(exc).__name__}: {exc}"[:300]
    times = _interleaved_ms(kernels, iters, repeats, rounds, warm_s, shuffle)
    errors = {}
    for who, product in products.items():
        product.zero_()
        kernels[who]()  # the product of one launch on a zeroed output
        torch.cuda.synchronize()
        errors[who] = float((product.float() - c_ref.float()).abs().max())
    for who in ("gpunb", "cublas", "triton"):
        if who in times:
            out[f"{who}_ms"] = median(times[who])
            out[f"{who}_rounds_ms"] = times[who]
            out[f"{who}_tflops"] = flops / (out[f"{who}_ms"] * 1e-3) / 1e12
        if who in errors:
            out[f"{who}_max_err"] = errors[who]
    for var in out.get("variants", ()):
        ms = median(times[var["variant"]])
        var.update(ms=ms, rounds_ms=times[var["variant"]], tflops=flops / (ms * 1e-3) / 1e12,
                   max_err=errors[var["variant"]])
    out["ref_max"] = float(c_ref.float().abs().max())
    return out


def _interleaved_ms(kernels: dict, iters: int, repeats: int, rounds: int,
                    warm_s: float, shuffle: bool = False) -> dict:
    """{name: [ms per launch, one per round]}: round r times the kernels in the order rotated
    by r (or, with `shuffle`, in an order drawn by random.Random(r)), each as the median of
    `repeats` samples of `iters` launches."""
    import torch

    for fn in kernels.values():  # compiled and launched once before any timing
        fn()
    torch.cuda.synchronize()
    warm_until = time.perf_counter() + warm_s
    while time.perf_counter() < warm_until:
        kernels["cublas"]()
        torch.cuda.synchronize()
    names = list(kernels)
    times: dict = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        if shuffle:
            random.Random(r).shuffle(order)
        for name in order:
            times[name].append(_events_ms(kernels[name], iters, repeats))
    return times


def _variant(spec: str, a, bt, c_ref) -> tuple:
    """(launch, its output, its label) of a hopper_gemm_variants kernel."""
    import torch

    from benchmarks import hopper_gemm_variants as hv

    config = hv.parse(spec)
    kernel = hv.make_gemm(config)
    c = torch.zeros_like(c_ref)
    descs = hv.descriptors(a, bt, c, config)
    return (lambda: hv.launch(kernel, c, a, bt, descs)), c, config.label


def _module(name: str, a, bt, c_ref) -> tuple:
    """(launch, its output) of a GEMM module with hopper_gemm's descriptors() and launch()."""
    import importlib

    import torch

    module = importlib.import_module(name)
    c = torch.zeros_like(c_ref)
    descs = module.descriptors(a, bt, c)
    return (lambda: module.launch(c, a, bt, descs)), c


def attention(batch: int, heads: int, seq: int, iters: int, repeats: int) -> dict:
    import torch
    import torch.nn.functional as F  # noqa: N812

    import gpunb
    from gpunb.examples import hopper_attention as ha

    gpunb.set_target("cuda")
    torch.manual_seed(0)
    q, k, v = (torch.randn(batch, heads, seq, ha.D, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    flops = 4.0 * batch * heads * seq * seq * ha.D / 2  # causal: half the square
    out = {"figure": f"causal attention fwd b{batch} h{heads} s{seq} d{ha.D} bf16"}
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out["sdpa_ms"] = _events_ms(
            lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), iters, repeats)
    q2, k2, v2 = (x.reshape(-1, ha.D) for x in (q, k, v))
    o = torch.empty_like(q2)
    descs = ha.descriptors(q2, k2, v2)
    out["gpunb_ms"] = _events_ms(lambda: ha.launch(o, q2, k2, v2, seq, descs), iters, repeats)
    out["gpunb_max_err"] = float((o.reshape(ref.shape).float() - ref.float()).abs().max())
    for who in ("gpunb", "sdpa"):
        out[f"{who}_tflops"] = flops / (out[f"{who}_ms"] * 1e-3) / 1e12
    return out


_COMPILE_TASK = """
import time, numpy as np
import gpunb
from gpunb import cuda
from gpunb.examples import hopper_gemm
gpunb.set_target("cuda")
a = cuda.to_device(np.ones((256, 256), np.float16))
b = cuda.to_device(np.ones((256, 256), np.float16))
c = cuda.device_array((256, 256), np.float16)
descs = hopper_gemm.descriptors(a, b, c, width=WIDTH)
cuda.synchronize()
t0 = time.perf_counter()
hopper_gemm.launch(c, a, b, descs)
cuda.synchronize()
first = time.perf_counter() - t0
t0 = time.perf_counter()
hopper_gemm.launch(c, a, b, descs)
cuda.synchronize()
print(first, time.perf_counter() - t0, float(c.copy_to_host()[0, 0]))
"""


def compile_time(width: int = 256, runs: int = 5) -> dict:
    """The GEMM kernel's cold compile + first launch, in a fresh process with an empty cache:
    the 128 x 256 kernel, or (width=320) the planned kernel holding both tile widths' code.
    `runs` processes; the median is the figure (a shared host's CPU speed drifts by a third
    from run to run: the device host's compile stages measured 0.88-1.40 s in five runs)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, GPUNB_CACHE_DIR=cache, PYTHONPATH=str(REPO) + os.pathsep +
                   os.environ.get("PYTHONPATH", ""))
        samples = []
        for _ in range(runs):  # a new cache each time: all are cold
            for entry in os.listdir(cache):
                subprocess.run(["rm", "-rf", os.path.join(cache, entry)], check=True)
            task = _COMPILE_TASK.replace("WIDTH", str(width))
            done = subprocess.run([sys.executable, "-c", task], env=env, text=True,
                                  capture_output=True, timeout=300)
            if done.returncode:
                return {"figure": f"cold compile, wgmma GEMM ({width})",
                        "error": done.stderr[-500:]}
            first, again, value = (float(x) for x in done.stdout.split())
            samples.append(first - again)
    return {"figure": f"cold compile + first launch, wgmma GEMM {width}-wide (context excluded)",
            "seconds": statistics.median(samples), "min_s": min(samples),
            "samples": [round(x, 3) for x in samples], "check": value}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--only", choices=("gemm", "attention", "compile"))
    parser.add_argument("--n", type=int, default=None,
                        help="GEMM: M = N = K (default 8192, 2048 --quick)")
    parser.add_argument("--triton", action="append", default=[], metavar="BMxBNxBK:S:W",
                        help="time Triton's tutorial kernel at these configurations only "
                             "(default: its four H100 autotune configurations)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="GEMM: rounds that each time every kernel once, in random "
                             "order (--rotate: rotated); the median of rounds is reported "
                             "(default 5, 1 --quick)")
    parser.add_argument("--warm", type=float, default=None, metavar="SECONDS",
                        help="GEMM: seconds of cuBLAS launches before timing (default 2, 0 "
                             "--quick)")
    parser.add_argument("--ptxas-variants", action="store_true",
                        help="diagnostic: link the --variant and --module kernels with the "
                             "toolkit's ptxas instead of the driver's JIT (the example stays "
                             "on the JIT)")
    parser.add_argument("--module", action="append", default=[],
                        help="also time a GEMM module with hopper_gemm's descriptors() and "
                             "launch(), e.g. benchmarks.hopper_gemm_wide (repeatable; linked "
                             "by the toolkit's ptxas under --ptxas-variants)")
    parser.add_argument("--rotate", dest="shuffle", action="store_false",
                        help="GEMM: time each round's kernels in a rotated order (each kernel "
                             "always behind the same one, as before the eighth session) "
                             "instead of the default random order seeded by the round")
    parser.add_argument("--shuffle", dest="shuffle", action="store_true",
                        help="GEMM: the default - each round's kernels in a random order "
                             "(seeded by the round), so that no kernel always follows the same "
                             "one (RESULTS.md, eighth session: the rotated order is biased)")
    parser.set_defaults(shuffle=True)
    parser.add_argument("--variant", action="append", default=[],
                        help="also time a hopper_gemm_variants kernel, e.g. s3,tma or "
                             "tma2,l256 (repeatable; see that module's parse)")
    args = parser.parse_args(argv)
    from benchmarks import hopper_gemm_variants as hv

    for spec in args.variant:
        try:
            hv.parse(spec)  # a bad spec fails here, before the GPU is touched
        except ValueError as err:
            raise SystemExit(f"--variant {spec!r}: {err}") from None
    triton_configs = tuple(_triton_config(spec) for spec in args.triton) or TUTORIAL_CONFIGS
    n, seq = (2048, 1024) if args.quick else (8192, 4096)
    n = args.n or n
    iters, repeats = (3, 3) if args.quick else (10, 5)
    rounds = args.rounds or (1 if args.quick else 5)
    warm_s = args.warm if args.warm is not None else (0.0 if args.quick else 2.0)
    results = []
    started = time.time()
    if args.only in (None, "compile"):
        results += [compile_time(256), compile_time(320)]
    if args.only in (None, "gemm"):
        for dtype in ("float16", "bfloat16"):
            results.append(gemm(n, dtype, iters, repeats, tuple(args.variant), triton_configs,
                                rounds, warm_s, args.ptxas_variants, tuple(args.module),
                                args.shuffle))
            print(json.dumps(results[-1]), flush=True)
    if args.only in (None, "attention"):
        results.append(attention(4, 16, seq, iters, repeats))
    for row in results:
        if "cublas_tflops" not in row:  # the GEMM rows were printed as they came
            print(json.dumps(row))
    _table(results)
    print(f"benchmark wall time {time.time() - started:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


def _triton_config(spec: str) -> tuple:
    """'128x256x64:3:8' -> (128, 256, 64, 3, 8)."""
    try:
        tile, stages, warps = spec.split(":")
        bm, bn, bk = (int(v) for v in tile.split("x"))
        return bm, bn, bk, int(stages), int(warps)
    except ValueError:
        raise SystemExit(f"--triton {spec!r} is not BMxBNxBK:stages:warps, e.g. "
                         "128x256x64:3:8") from None


def _table(results: list) -> None:
    print("| figure | gpunb | peer | ratio |")
    print("|---|---|---|---|")
    for row in results:
        if "seconds" in row:
            print(f"| {row['figure']} | {row['seconds']:.3f} s median (min {row['min_s']:.3f}, "
                  f"{len(row['samples'])} runs) | target <= 1 s | |")
        elif "cublas_tflops" in row:
            _gemm_rows(row)
        elif "sdpa_tflops" in row:
            ratio = row["gpunb_tflops"] / row["sdpa_tflops"]
            print(f"| {row['figure']} | {row['gpunb_tflops']:.0f} TFLOP/s | SDPA flash "
                  f"{row['sdpa_tflops']:.0f} TFLOP/s | {ratio:.0%} |")


def _gemm_rows(row: dict) -> None:
    """The GEMM figure's lines: the example and each variant beside cuBLAS and Triton."""
    peers = [f"cuBLAS {row['cublas_tflops']:.0f}"]
    triton = row.get("triton_tflops")
    if triton:
        peers.append(f"Triton {triton:.0f}")
    kernels = [("", row["gpunb_tflops"], row.get("gpunb_max_err"))]
    kernels += [(f"variant {var['variant']} ({var['label']})", var["tflops"], var["max_err"])
                for var in row.get("variants", ())]
    for name, tflops, err in kernels:
        ratio = f"{tflops / row['cublas_tflops']:.0%} of cuBLAS"
        if triton:
            ratio += f", {tflops / triton:.0%} of Triton"
        print(f"| {name or row['figure']} | {tflops:.0f} TFLOP/s | "
              f"{', '.join(peers) if not name else f'max err {err:.3g}'} | {ratio} |")
    print(f"| (gpunb's tiles 128 x {row.get('gpunb_width')}, launch()'s choice; max err vs "
          f"cuBLAS: gpunb {row.get('gpunb_max_err')}, Triton {row.get('triton_max_err')}; "
          f"{row['rounds']} interleaved rounds) | | | |")


if __name__ == "__main__":
    sys.exit(main())
