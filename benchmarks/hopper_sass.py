"""The Hopper GEMM's machine code as this GPU's driver builds it: whether ptxas kept its wgmma
chain asynchronous. When ptxas cannot pipeline the wgmma of a loop it serialises them (each
HGMMA waited for before the next is issued: `WARPGROUP.DEPBAR.LE gsb0, 0x0` after every one)
and says why in its info log ("wgmma.mma_async instructions are serialized due to ...").

The driver's JIT and the toolkit's ptxas need not agree, so both build the same PTX here:

    python -m benchmarks.hopper_sass [--variant tma2 ...] [--out DIR]

prints, per kernel and per compiler, the HGMMA count, the waits for zero groups in flight and
ptxas's performance notes; --out keeps the PTX, the logs and the SASS.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import tempfile


def _kernels(variants: list) -> list:
    """[(name, dispatcher, launch)] of the example and the variants, each launched once on
    float16 inputs of 256 x 512 x 192 so that the launch's own specialisation is compiled."""
    import torch

    from benchmarks import hopper_gemm_variants as hv
    from gpunb.examples import hopper_gemm, hopper_gemm_wide

    a = torch.randn(256, 192, device="cuda", dtype=torch.float16)
    b = torch.randn(512, 192, device="cuda", dtype=torch.float16)
    c = torch.empty(256, 512, device="cuda", dtype=torch.float16)
    out = []
    for width, kernel in ((256, hopper_gemm.gemm), (320, hopper_gemm_wide.gemm)):
        hopper_gemm.launch(c, a, b, width=width)  # launch() picks one by the shape: both here
        out.append((f"example 128x{width}", kernel))
    for spec in variants:
        config = hv.parse(spec)
        kernel = hv.make_gemm(config)
        hv.launch(kernel, c, a, b, hv.descriptors(a, b, c, config))
        out.append((spec, kernel))
    torch.cuda.synchronize()
    return out


def _summary(sass: str, log: str) -> str:
    hgmma = len(re.findall(r"\bHGMMA\.", sass))
    drained = len(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x0", sass))
    notes = sorted({line.strip() for line in log.splitlines()
                    if "serialized" in line or "Performance" in line or "nvJitLink" in line})
    return f"HGMMA {hgmma}, waits for 0 in flight {drained}; " + ("; ".join(notes) or "no notes")


def _disassemble(cubin: bytes, tool: str | None) -> str:
    if tool is None:
        return ""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
    try:
        args = [tool, "-sass", f.name] if tool.endswith("cuobjdump") else [tool, "-c", f.name]
        return subprocess.run(args, capture_output=True, text=True, timeout=120).stdout
    finally:
        os.unlink(f.name)


def _nvjitlink(ptx: str) -> tuple:
    """(cubin, log) of nvJitLink (its own ptxas, the version of its wheel) for the same PTX."""
    from cuda.bindings import nvjitlink

    from gpunb.backends.cuda.linker import link_offline

    major, minor = re.search(r"^\.target\s+sm_(\d+)(\d)", ptx, re.M).groups()
    cubin, log = link_offline(ptx, [], (int(major), int(minor)), verbose=True)
    return cubin, f"nvJitLink {'.'.join(map(str, nvjitlink.version()))}\n{log}"


def _toolkit(ptx: str, ptxas: str) -> tuple:
    """(cubin, log) of the toolkit's ptxas -v for the same PTX (its .target's architecture)."""
    arch = re.search(r"^\.target\s+(sm_\w+)", ptx, re.M).group(1)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        done = subprocess.run([ptxas, f"-arch={arch}", "-v", src, "-o", dst],
                              capture_output=True, text=True, timeout=300)
        if done.returncode:
            return b"", done.stderr
        with open(dst, "rb") as f:
            return f.read(), done.stdout + done.stderr


@contextlib.contextmanager
def link_with_toolkit_ptxas():
    """For bench_hopper --ptxas-variants (a diagnostic, this process only): kernels compiled
    inside the block are linked by the toolkit's ptxas instead of the driver's JIT, with the
    cache off so that no driver-built cubin is reused. Yields ptxas's path."""
    from gpunb.backends.cuda import modules
    from gpunb.backends.cuda.toolchain import find_tool
    from gpunb.foundation import config

    ptxas = find_tool("ptxas")
    if ptxas is None:
        raise SystemExit("--ptxas-variants: no ptxas found (CUDA_HOME, PATH)")
    config.set_cache_enabled(False)

    def link(ptx, arch=None, **_flags):
        cubin, log = _toolkit(ptx, ptxas)
        if not cubin:
            raise RuntimeError(f"ptxas failed: {log[-500:]}")
        return cubin, log

    driver_link = modules.link_ptx
    modules.link_ptx = link
    try:
        yield ptxas
    finally:
        modules.link_ptx = driver_link
        config.set_cache_enabled(None)


def main(argv=None) -> None:
    import gpunb
    from gpunb.backends.cuda import modules
    from gpunb.backends.cuda.toolchain import find_tool

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    gpunb.set_target("cuda")
    disassembler = find_tool("cuobjdump") or find_tool("nvdisasm")
    ptxas = find_tool("ptxas")
    for name, kernel in _kernels(args.variant):
        artifact = next(reversed(kernel.specializations.values())).artifact
        builds = {"driver JIT": modules.link_ptx(artifact.ptx, artifact.arch)}
        if ptxas:
            builds["toolkit ptxas"] = _toolkit(artifact.ptx, ptxas)
        try:
            builds["nvJitLink"] = _nvjitlink(artifact.ptx)
        except Exception as exc:  # noqa: BLE001 - absent or failing: said, not hidden
            print(f"{name} [nvJitLink]: {type(exc).__name__}: {exc}")
        for who, (cubin, log) in builds.items():
            sass = _disassemble(cubin, disassembler)
            print(f"{name} [{who}]: {_summary(sass, log)}", flush=True)
            if args.out:
                stem = os.path.join(args.out, f"{name.replace(',', '_')}_{who.split()[0]}")
                for suffix, text in ((".log", log), (".sass", sass), (".ptx", artifact.ptx)):
                    with open(stem + suffix, "w") as f:
                        f.write(text)


if __name__ == "__main__":
    main()
