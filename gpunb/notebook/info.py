"""`%gpuinfo`: devices, arch, SMs, memory, driver and toolchain versions, and the target in use.

Every probe is guarded: on a machine without a GPU (or without ptxas) the report says so and
still shows what the CPU target will do, because that is what a learner there needs to know.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

from gpunb.foundation.arch import parse_arch
from gpunb.notebook import render


@dataclass(slots=True)
class GpuInfo:
    target: str
    requested: str
    devices: list = field(default_factory=list)  # one dict per device
    driver: str = ""
    toolchain: dict = field(default_factory=dict)  # tool -> version or "not found"
    notes: list = field(default_factory=list)

    def text(self) -> str:
        out = [f"target in use: {self.target} (requested: {self.requested})"]
        if self.driver:
            out.append(f"CUDA driver: {self.driver}")
        if not self.devices:
            out.append("devices: none (kernels run on the CPU target)")
        for dev in self.devices:
            out.append("device " + ", ".join(f"{k}={v}" for k, v in dev.items()))
        out.extend(f"{tool}: {version}" for tool, version in self.toolchain.items())
        out.extend(f"note: {n}" for n in self.notes)
        return "\n".join(out)

    def _repr_html_(self) -> str:
        rows = [("target in use", f"{self.target} (requested: {self.requested})")]
        if self.driver:
            rows.append(("CUDA driver", self.driver))
        body = render.table(("", ""), rows)
        if self.devices:
            keys = list(self.devices[0])
            body += render.table(keys, [[d.get(k, "") for k in keys] for d in self.devices])
        else:
            body += '<div class="muted">no CUDA device: kernels run on the CPU target</div>'
        body += render.table(("tool", "version"), self.toolchain.items())
        body += "".join(f'<div class="muted">{render.esc(n)}</div>' for n in self.notes)
        return render.wrap(body)

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(self.text())


def gather() -> GpuInfo:
    from gpunb.foundation import config

    # %gpuinfo is where a person looks when something is wrong: a bad setting is a note here
    # (the error launches and compiles raise), not a traceback instead of the report
    problems = []
    try:
        requested = config.requested_target()
    except ValueError as exc:
        requested = "auto"
        problems.append(f"{exc}; kernels cannot launch until it is fixed")
    info = GpuInfo(target="cpu", requested=requested)
    available = _probe_devices(info)
    info.target = "cuda" if requested == "cuda" or (requested == "auto" and available) else "cpu"
    info.toolchain = toolchain_versions()
    if not available:
        try:
            arch = parse_arch(config.default_arch()).name
            info.notes.append(f"inspector PTX/SASS use {arch} (GPUNB_ARCH)")
        except ValueError as exc:
            problems.append(f"{exc}; PTX/SASS cannot be made until it is fixed")
    info.notes.extend(problems)
    return info


def _probe_devices(info: GpuInfo) -> bool:
    try:
        from gpunb.backends.cuda import driver

        if not driver.is_available():
            return False
        version = _call(driver, "driver_version", "")
        info.driver = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
        for index in range(int(_call(driver, "device_count", 1))):
            dev = driver.get_device(index) if hasattr(driver, "get_device") else \
                driver.current_device()
            info.devices.append(_describe_device(index, dev))
        return True
    except Exception as exc:  # noqa: BLE001 - no bindings, no driver: report, do not fail
        info.notes.append(f"CUDA not usable: {type(exc).__name__}: {exc}")
        return False


def _call(module, name: str, default):
    fn = getattr(module, name, None)
    return fn() if callable(fn) else (fn if fn is not None else default)


def _describe_device(index: int, dev) -> dict:
    cc = tuple(getattr(dev, "compute_capability", (0, 0)))
    out = {"id": index, "name": getattr(dev, "name", "?"), "arch": f"sm_{cc[0]}{cc[1]}"}
    for attr, label in (("multiprocessor_count", "SMs"), ("total_memory", "memory")):
        value = getattr(dev, attr, None)
        if value is not None:
            out[label] = f"{value / 2**30:.1f} GiB" if attr == "total_memory" else value
    return out


def toolchain_versions() -> dict:
    out: dict = {}
    try:
        import llvmlite
        import llvmlite.binding as llvm

        llvm_version = ".".join(map(str, llvm.llvm_version_info))
        out["llvmlite"] = f"{llvmlite.__version__} (LLVM {llvm_version})"
    except Exception as exc:  # noqa: BLE001
        out["llvmlite"] = f"unavailable ({exc})"
    from gpunb.backends.cuda.toolchain import find_tool

    for tool in ("ptxas", "nvdisasm"):
        path = find_tool(tool)
        out[tool] = _tool_version(path) if path else "not found (pip install gpunb[cuda])"
    return out


def _tool_version(path: str) -> str:
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{path} ({exc})"
    last = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return last[-1].strip() if last else path
