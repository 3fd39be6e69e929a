"""Profiling one workload of a kernel through the sandbox: Nsight Compute on NVIDIA, rocprofv3 on AMD.

The job runs `python -m harness profile` (profile_run.py: the kernel built and loaded as an evaluation
loads it, warm-up calls, then the profiled calls between cudaProfilerStart/Stop) under the profiler,
exports the report as CSV, and brings both back. The summary keeps what an engineer reads first: the
top kernels by time, their duration, achieved DRAM bandwidth, memory and compute throughput as % of
peak, achieved occupancy, registers, and the main warp stall reasons.

Production mode (`private=True`): the workload is named by its opaque id only; the summary leaves out
grid and block sizes (they spell the shape) and the raw report stays out of the campaign's files.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aka_graph.tools.evaluator.evaluation import HARNESS_DIR, kernel_inputs, operator_inputs
from aka_graph.tools.evaluator.sandbox.job import Sandbox, SandboxJob

NCU_SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats", "MemoryWorkloadAnalysis")
DURATION = "gpu__time_duration.sum"
DRAM_RATE = "dram__bytes.sum.per_second"
MEMORY_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
COMPUTE_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY_PCT = "sm__warps_active.avg.pct_of_peak_sustained_active"
REGISTERS = "launch__registers_per_thread"
STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"
NCU_METRICS = (DURATION, DRAM_RATE, MEMORY_PCT, COMPUTE_PCT, OCCUPANCY_PCT, REGISTERS)
NCU_REPORT = "profile.ncu-rep"
NCU_CSV = "profile_raw.csv"
ROCPROF_CSV = "kernel_stats.csv"
RUN_JSON = "profile_run.json"

_TIME_UNITS = {
    "nsecond": 1e-3,
    "ns": 1e-3,
    "usecond": 1.0,
    "us": 1.0,
    "msecond": 1e3,
    "ms": 1e3,
    "second": 1e6,
}


@dataclass
class KernelProfile:
    name: str
    calls: int = 0
    duration_us: float | None = None  # mean per call
    dram_gbps: float | None = None
    memory_pct: float | None = None
    compute_pct: float | None = None
    occupancy_pct: float | None = None
    registers: int | None = None
    grid: str | None = None
    block: str | None = None
    stalls: list[tuple[str, float]] = field(default_factory=list)  # reason -> cycles per issued instruction

    @property
    def total_us(self) -> float:
        return (self.duration_us or 0.0) * self.calls


@dataclass
class ProfileSummary:
    tool: str
    workload: str
    kernels: list[KernelProfile]
    private: bool = False
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def render(self, top: int = 5) -> str:
        lines = [
            f"profile ({self.tool}) of workload {self.workload}"
            + (f": {self.message}" if self.message else "")
        ]
        head = (
            f"{'kernel':40} {'calls':>5} {'us':>9} {'GB/s':>8} {'mem%':>6} {'sm%':>6} {'occ%':>6} {'regs':>5}"
        )
        lines.append(head)

        def num(v: float | None, fmt: str) -> str:
            return format(v, fmt) if v is not None else "-"

        for k in self.kernels[:top]:
            lines.append(
                f"{k.name[:40]:40} {k.calls:>5} {num(k.duration_us, '9.2f'):>9} "
                f"{num(k.dram_gbps, '8.0f'):>8} "
                f"{num(k.memory_pct, '6.1f'):>6} {num(k.compute_pct, '6.1f'):>6} "
                f"{num(k.occupancy_pct, '6.1f'):>6} {k.registers if k.registers is not None else '-':>5}"
            )
            if k.stalls:
                lines.append("    stalls: " + ", ".join(f"{r} {v:.2f}" for r, v in k.stalls[:3]))
            if k.grid and not self.private:
                lines.append(f"    grid {k.grid} block {k.block}")
        return "\n".join(lines)


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    text = text.strip().replace(",", "")
    if not text or text.lower() in ("n/a", "nan"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


# a rate's unit read from its parts, whatever ncu's version spells (Tbyte/s, TB/s, Tbyte/second, B/s)
_RATE = re.compile(r"^(?P<prefix>[kKmMgGtTpP]?)(?:byte|B)\s*/\s*(?:s|sec|second)$")
_RATE_PREFIX = {"": 1e-9, "k": 1e-6, "m": 1e-3, "g": 1.0, "t": 1e3, "p": 1e6}


def _micros(value: float, unit: str) -> float | None:
    """A duration in us; an unknown unit gives no figure rather than a wrong one (no unit: as it is)."""
    unit = unit.strip()
    return value * _TIME_UNITS[unit] if unit in _TIME_UNITS else (None if unit else value)


def _gbps(value: float, unit: str) -> float | None:
    """A rate in GB/s (on the H200 a 3.6 TB/s kernel read as 4 GB/s when a spelling missing from a table
    of units counted as GB/s); an unknown unit gives no figure rather than a wrong one."""
    unit = unit.strip()
    rate = _RATE.match(unit)
    return value * _RATE_PREFIX[rate["prefix"].lower()] if rate else (None if unit else value)


def parse_ncu_raw_csv(text: str) -> list[KernelProfile]:
    """`ncu --import REPORT --csv --page raw`: one header row of metric names, one row of units, one row
    per profiled kernel launch (numbers may carry thousands separators). Launches of the same kernel are
    averaged; the result is sorted by total time, longest first."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, units, data = rows[0], rows[1] if len(rows) > 1 else [], rows[2:]
    col = {name: i for i, name in enumerate(header)}
    unit = {name: (units[i] if i < len(units) else "") for name, i in col.items()}
    stall_cols = [n for n in header if n.startswith(STALL_PREFIX) and n.endswith(STALL_SUFFIX)]
    by_name: dict[str, list[list[str]]] = {}
    for row in data:
        if len(row) < len(header):
            continue
        by_name.setdefault(row[col["Kernel Name"]], []).append(row)

    def mean(
        rows_: list[list[str]], name: str, convert: Callable[[float, str], float | None] | None = None
    ) -> float | None:
        if name not in col:
            return None
        values = [_number(r[col[name]]) for r in rows_]
        values = [v for v in values if v is not None]
        if not values:
            return None
        avg = sum(values) / len(values)
        return convert(avg, unit[name]) if convert else avg

    kernels = []
    for name, rows_ in by_name.items():
        stalls = [
            (c.removeprefix(STALL_PREFIX).removesuffix(STALL_SUFFIX), mean(rows_, c) or 0.0)
            for c in stall_cols
        ]
        stalls = sorted(((r, v) for r, v in stalls if v > 0 and r != "selected"), key=lambda x: -x[1])
        regs = mean(rows_, REGISTERS)
        kernels.append(
            KernelProfile(
                name=name,
                calls=len(rows_),
                duration_us=mean(rows_, DURATION, _micros),
                dram_gbps=mean(rows_, DRAM_RATE, _gbps),
                memory_pct=mean(rows_, MEMORY_PCT),
                compute_pct=mean(rows_, COMPUTE_PCT),
                occupancy_pct=mean(rows_, OCCUPANCY_PCT),
                registers=int(regs) if regs is not None else None,
                grid=rows_[0][col["Grid Size"]] if "Grid Size" in col else None,
                block=rows_[0][col["Block Size"]] if "Block Size" in col else None,
                stalls=stalls,
            )
        )
    return sorted(kernels, key=lambda k: -k.total_us)


def parse_rocprof_stats_csv(text: str) -> list[KernelProfile]:
    """rocprofv3 `--kernel-trace --stats` `*_kernel_stats.csv`: Name, Calls, TotalDurationNs, AverageNs,
    Percentage, MinNs, MaxNs, StdDev. Only durations: counters need `--pmc` runs of their own."""
    reader = csv.DictReader(io.StringIO(text))
    kernels = []
    for row in reader:
        calls = int(_number(row.get("Calls")) or 0)
        avg = _number(row.get("AverageNs"))
        kernels.append(
            KernelProfile(
                name=row.get("Name", "?"), calls=calls, duration_us=avg / 1e3 if avg is not None else None
            )
        )
    return sorted(kernels, key=lambda k: -k.total_us)


def harness_argv(python: str, shape_id: str | None, reps: int, device: str = "auto") -> list[str]:
    argv = [python, "-m", "harness", "profile", "--op-dir", "op", "--kernel-dir", "kernel"]
    argv += ["--reps", str(reps), "--device", device, "--out", RUN_JSON]
    return argv + (["--shape-id", shape_id] if shape_id else [])


def ncu_argv(run: list[str], ncu: str = "ncu") -> list[str]:
    """Profile only between cudaProfilerStart/Stop, clocks as the evaluator runs them (not locked to
    base), caches flushed between replays (as the evaluator rotates inputs past L2)."""
    argv = [ncu, "--target-processes", "all", "--profile-from-start", "off", "--clock-control", "none"]
    argv += ["--cache-control", "all", "--force-overwrite", "-o", NCU_REPORT.removesuffix(".ncu-rep")]
    for section in NCU_SECTIONS:
        argv += ["--section", section]
    # one --metrics (ncu refuses a second: "cannot be specified more than once", seen on the H200)
    stalls = f"regex:^{STALL_PREFIX}.*{STALL_SUFFIX.replace('.', '[.]')}$"
    argv += ["--metrics", ",".join([*NCU_METRICS, stalls])]
    return [*argv, *run]


def ncu_export_argv(ncu: str = "ncu") -> list[str]:
    return [ncu, "--import", NCU_REPORT, "--csv", "--page", "raw"]


def rocprof_argv(run: list[str], rocprof: str = "rocprofv3") -> list[str]:
    return [
        rocprof,
        "--kernel-trace",
        "--stats",
        "--output-format",
        "csv",
        "-d",
        "rocprof",
        "-o",
        "profile",
        "--",
        *run,
    ]


PROFILER_DIRS = ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute", "/opt/rocm/bin")


def find_profiler(vendor: str, path: str | None = None) -> str:
    """The profiler's absolute path on this host (a job's PATH is the sandbox's default, which need not
    hold the CUDA or ROCm bin directory), or its bare name for a remote host to resolve."""
    import glob
    import shutil

    name = "rocprofv3" if vendor == "amd" else "ncu"
    found = shutil.which(name, path=path)
    if found:
        return found
    for root in PROFILER_DIRS:
        hits = sorted(glob.glob(f"{root}/{name}") + glob.glob(f"{root}/*/{name}"))
        if hits:
            return hits[-1]
    return name


def job_script(vendor: str, run: list[str], tool: str | None = None) -> str:
    """The shell line the job runs: profile, then export (NVIDIA) or collect (AMD) the CSV."""
    if vendor == "amd":
        collect = f"cp \"$(find rocprof -name '*kernel_stats.csv' | head -n 1)\" {ROCPROF_CSV}"
        return f"{shlex.join(rocprof_argv(run, tool or 'rocprofv3'))} && {collect}"
    ncu = tool or "ncu"
    return f"{shlex.join(ncu_argv(run, ncu))} && {shlex.join(ncu_export_argv(ncu))} > {NCU_CSV}"


@dataclass
class ProfileResult:
    ok: bool
    summary: ProfileSummary | None
    message: str
    files: dict[str, Path]


def _read(synced: dict[str, Path], name: str) -> str | None:
    path = synced.get(name)
    return Path(path).read_text(errors="replace") if path and Path(path).is_file() else None


def profile_kernel(
    sandbox: Sandbox,
    op_dir: Path,
    kernel: Path,
    profiles_dir: Path,
    *,
    shape_id: str | None = None,
    vendor: str = "nvidia",
    private: bool = False,
    reps: int = 3,
    timeout_s: float = 900,
    gpu_index: int | None = None,
    python: str = "python3",
) -> ProfileResult:
    """Profile `kernel` on one workload of `op_dir`; summary (+ raw report unless private) into
    `profiles_dir`."""
    if vendor not in ("nvidia", "amd"):
        raise ValueError(f"vendor {vendor!r}: use nvidia or amd")
    run = harness_argv(python, shape_id, reps)
    tool = find_profiler(vendor) if getattr(sandbox, "name", "local") == "local" else None
    csv_name = ROCPROF_CSV if vendor == "amd" else NCU_CSV
    job = SandboxJob(
        argv=["sh", "-c", job_script(vendor, run, tool)],
        inputs={"harness": HARNESS_DIR, **operator_inputs(op_dir), **kernel_inputs(kernel)},
        sync_back=[RUN_JSON, csv_name] + ([] if vendor == "amd" else [NCU_REPORT]),
        timeout_s=timeout_s,
        env={"PYTHONPATH": "."},
        gpu_index=gpu_index,
        exclusive_gpu=True,
        label="profile",
    )
    work = profiles_dir / ".job"
    result = sandbox.run(job, work)
    run_info = json.loads(_read(result.synced, RUN_JSON) or "{}")
    workload = str(run_info.get("workload") or shape_id or "?")
    if run_info.get("error"):
        err = run_info["error"]
        detail = "details withheld: private shapes" if private else err["message"][:2000]
        return ProfileResult(False, None, f"{err['status']}: {detail}", {})
    text = _read(result.synced, csv_name)
    if result.exit_code != 0 or text is None:
        why = "timed out" if result.timed_out else f"exit {result.exit_code}"
        # ncu reports its own failures (==ERROR== ...) on stdout, the harness's on stderr: both, or neither
        said = "\n".join(s.strip()[-1500:] for s in (result.stdout, result.stderr) if s.strip())
        tail = "" if private else f": {said or 'the job printed nothing'}"
        return ProfileResult(False, None, f"the profiler job failed ({why}){tail}", {})
    kernels = parse_rocprof_stats_csv(text) if vendor == "amd" else parse_ncu_raw_csv(text)
    if private:
        for k in kernels:
            k.grid = k.block = None
    tool = "rocprofv3" if vendor == "amd" else "ncu"
    summary = ProfileSummary(tool, workload, kernels, private, "" if kernels else "no kernel was profiled")
    profiles_dir.mkdir(parents=True, exist_ok=True)
    stem = f"profile_{workload}"
    files = {"summary": profiles_dir / f"{stem}.json", "text": profiles_dir / f"{stem}.txt"}
    files["summary"].write_text(json.dumps(summary.to_json(), indent=2) + "\n")
    files["text"].write_text(summary.render() + "\n")
    if not private:
        for name in (csv_name, NCU_REPORT):
            src = result.synced.get(name)
            if src and Path(src).is_file():
                files[name] = profiles_dir / f"{stem}{''.join(Path(name).suffixes)}"
                files[name].write_bytes(Path(src).read_bytes())
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    return ProfileResult(True, summary, "", files)
