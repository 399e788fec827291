"""What a profile holds: one LaunchRecord per launch, and the Profile that summarises them.

Records are plain frozen data so that a profile can be kept, compared, turned into JSON (the
notebook pane and the labextension read `to_json()`) or into a pandas DataFrame.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class Occupancy:
    """Theoretical occupancy of a launch: resident warps per SM and the resource that limits it."""

    fraction: float  # active warps / the SM's maximum
    active_warps_per_sm: int
    max_warps_per_sm: int
    limiter: str  # "warps", "blocks", "registers" or "shared_memory"
    arch: str

    def to_json(self) -> dict:
        return {"fraction": self.fraction, "active_warps_per_sm": self.active_warps_per_sm,
                "max_warps_per_sm": self.max_warps_per_sm, "limiter": self.limiter,
                "arch": self.arch}

    def __str__(self) -> str:
        return f"{self.fraction * 100:.0f}% ({self.limiter})"


@dataclass(frozen=True, slots=True)
class LaunchRecord:
    """One kernel launch. Kernels of other libraries (CuPy, PyTorch) seen by CUPTI have
    `source == "other"`, their name, grid, block and time, and None where gpunb cannot know."""

    kernel: str
    defined_at: str  # "cell 7, line 2" / "file.py:12" ("" for other libraries' kernels)
    grid: tuple
    block: tuple
    shared_bytes: int  # static + dynamic
    registers: int | None
    target: str  # "cuda" or "cpu"
    timing: str  # "device" (timed on the GPU) or "host" (the CPU target)
    timer: str  # "cupti", "cuda events" or "host clock"
    time_ms: float | None
    bytes: int | None  # moved to and from global memory (see profiling/counts.py)
    flops: int | None
    achieved_gbps: float | None
    pct_of_peak: float | None  # achieved_gbps against the measured copy bandwidth
    occupancy: Occupancy | None
    cache: object = None  # the CacheEvent of the launch's specialisation (None: other library)
    compiled: bool = False  # this launch made its specialisation (compiled or loaded it)
    start_ns: int | None = None  # device (CUPTI) or host clock, for the timeline
    source: str = "gpunb"  # "gpunb" or "other"
    symbol: str = ""  # the entry symbol in the binary (what ncu and CUPTI call the kernel)
    error: str = ""  # the exception the launch raised, if any
    source_file: str = ""  # the file or cell name lineinfo uses (maps ncu hot lines back)

    @property
    def gflops(self) -> float | None:
        if self.flops is None or not self.time_ms:
            return None
        return self.flops / (self.time_ms * 1e-3) / 1e9

    @property
    def arithmetic_intensity(self) -> float | None:
        if self.flops is None or not self.bytes:
            return None
        return self.flops / self.bytes

    def to_json(self) -> dict:
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "occupancy":
                value = value.to_json() if value is not None else None
            elif f.name == "cache":
                value = value.to_json() if hasattr(value, "to_json") else value
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        out["gflops"] = self.gflops
        return out



@dataclass(frozen=True, slots=True)
class KernelSummary:
    """Per kernel: launches, compiling launches, p50/min/max/total of the timed launches."""

    kernel: str
    launches: int
    compiling: int
    p50_ms: float | None
    min_ms: float | None
    max_ms: float | None
    total_ms: float | None
    achieved_gbps: float | None  # at the p50 launch
    pct_of_peak: float | None
    gflops: float | None
    occupancy: Occupancy | None

    def row(self) -> list:
        def ms(v):
            return "" if v is None else f"{v:.4f}"

        def num(v, fmt="{:.1f}"):
            return "" if v is None else fmt.format(v)

        return [self.kernel, self.launches, self.compiling, ms(self.p50_ms), ms(self.min_ms),
                ms(self.max_ms), ms(self.total_ms), num(self.achieved_gbps),
                num(self.pct_of_peak), num(self.gflops),
                "" if self.occupancy is None else str(self.occupancy)]

    def to_json(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["occupancy"] = self.occupancy.to_json() if self.occupancy else None
        return out


def _built(name: str) -> property:
    """A Profile field that build.py fills when the records are first read."""
    private = "_" + name

    def get(self):
        if self._recording is not None:
            self._materialise()
        return getattr(self, private)

    def put(self, value) -> None:
        if self._recording is not None:
            self._materialise()
        setattr(self, private, value)

    return property(get, put, doc=f"The profile's {name} (made when first read).")


class Profile:
    """Every launch of a `with gpunb.profile()` block or a `%%gpuprofile` cell.

    `launches` are LaunchRecords in launch order (other libraries' kernels after gpunb's when
    CUPTI saw them); `notes` are one-line messages (CUPTI unavailable, ncu missing, ...);
    `peak_gbps` is the copy bandwidth the percentages are against and `peak_gflops` the FP32
    roof, both measured once per process on the device (`peak_source` says how each was
    found); `ncu` and `sanitizer` hold replay results when `--ncu` / `--sanitize` asked for
    them.

    A profile made by a block is filled in when one of these fields is first read: the block
    itself records each launch as it happens and nothing more, and the device synchronisation,
    the CUPTI flush and the records (counts, occupancy, peaks) wait until they are needed.
    """

    launches = _built("launches")
    timer = _built("timer")
    peak_gbps = _built("peak_gbps")
    peak_gflops = _built("peak_gflops")  # FP32 GFLOP/s: measured, or the datasheet's
    peak_source = _built("peak_source")  # {"gbps": "measured: ...", "gflops": "..."}
    peak_tensor_gflops = _built("peak_tensor_gflops")  # FP16 tensor cores (None: no such roof)
    device = _built("device")
    notes = _built("notes")
    sources = _built("sources")  # defined_at file -> its text, for line heat

    def __init__(self, launches: list | None = None, timer: str = "",
                 peak_gbps: float | None = None, peak_gflops: float | None = None,
                 device: str = "", notes: list | None = None, repeat: int = 1, warmup: int = 0,
                 ncu: object = None, sanitizer: object = None, sources: dict | None = None,
                 peak_source: dict | None = None, *, recording=None,
                 peak_tensor_gflops: float | None = None):
        self._recording = recording  # build.Recording until the records are made
        self._launches = list(launches) if launches is not None else []
        self._timer, self._device = timer, device
        self._peak_gbps, self._peak_gflops = peak_gbps, peak_gflops
        self._peak_source = dict(peak_source or {})
        self._peak_tensor_gflops = peak_tensor_gflops
        self._notes = list(notes) if notes is not None else []
        self._sources = dict(sources or {})
        self.repeat, self.warmup = repeat, warmup
        self.ncu = ncu  # NcuReport (profiling/ncu.py)
        self.sanitizer = sanitizer  # SanitizerReport (profiling/sanitizer.py)

    def _materialise(self) -> None:
        recording = self._recording
        if recording is None:
            return
        built = recording.build()  # once per recording, shared by every Profile of it
        for name, value in built.items():
            setattr(self, "_" + name, value)
        self._recording = None

    def summary(self) -> list:
        """One KernelSummary per kernel, in first-launch order."""
        by_kernel: dict = {}
        for record in self.launches:
            by_kernel.setdefault(record.kernel, []).append(record)
        out = []
        for name, records in by_kernel.items():
            timed = [r for r in records if r.time_ms is not None and not r.compiled] or \
                    [r for r in records if r.time_ms is not None]
            times = sorted(r.time_ms for r in timed)
            p50 = statistics.median(times) if times else None
            middle = min(timed, key=lambda r: abs(r.time_ms - p50)) if timed else None
            out.append(KernelSummary(
                name, len(records), sum(r.compiled for r in records), p50,
                times[0] if times else None, times[-1] if times else None,
                sum(times) if times else None,
                middle.achieved_gbps if middle else None, middle.pct_of_peak if middle else None,
                middle.gflops if middle else None, records[-1].occupancy))
        return out

    @property
    def timing(self) -> str:
        """"device" when every launch was timed on the GPU, "host" when on the host clock."""
        kinds = {r.timing for r in self.launches}
        return kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "")

    def kernels(self) -> list:
        return list(dict.fromkeys(r.kernel for r in self.launches))

    def to_json(self) -> str:
        """The whole profile as a JSON string (records, summary, notes, replay results)."""
        return json.dumps(self.to_dict(), default=str)

    def to_dict(self) -> dict:
        return {"timer": self.timer, "timing": self.timing, "peak_gbps": self.peak_gbps,
                "peak_gflops": self.peak_gflops, "peak_source": self.peak_source,
                "peak_tensor_gflops": self.peak_tensor_gflops,
                "device": self.device, "notes": self.notes,
                "repeat": self.repeat, "warmup": self.warmup,
                "launches": [r.to_json() for r in self.launches],
                "summary": [s.to_json() for s in self.summary()],
                "ncu": self.ncu.to_json() if self.ncu is not None else None,
                "sanitizer": self.sanitizer.to_json() if self.sanitizer is not None else None}

    def to_pandas(self):
        """A pandas DataFrame with one row per launch (pandas must be installed)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Profile.to_pandas needs pandas: pip install pandas "
                              "(or use Profile.to_json())") from None
        rows = []
        for record in self.launches:
            row = record.to_json()
            occupancy = row.pop("occupancy")
            row["occupancy"] = occupancy["fraction"] if occupancy else None
            row["occupancy_limiter"] = occupancy["limiter"] if occupancy else None
            cache = row.pop("cache")
            row["cache"] = cache.get("outcome") if isinstance(cache, dict) else cache
            rows.append(row)
        return pd.DataFrame(rows)

    def text(self) -> str:
        from gpunb.profiling.view import profile_text

        return profile_text(self)

    def _repr_html_(self) -> str:
        from gpunb.profiling.view import profile_html

        return profile_html(self)

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(self.text())
