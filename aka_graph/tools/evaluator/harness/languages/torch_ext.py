"""Building a C++/CUDA candidate (cuda_cpp, cutlass, cudnn, cublas) into a torch extension.

As SOL-ExecBench builds them: every C/C++/CUDA source of the solution compiled by
`torch.utils.cpp_extension.load` (ninja; nvcc for `.cu`) with the solution's `compile_options`, the
source directory and CUTLASS's include dirs on the include path, and the entry point bound by the
solution's own `PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)`. A solution without one gets the entry point
bound for it (the documented `kernel.cu::run` form), appended to a staged copy of its entry file.

What makes the verdict trustworthy: a fresh directory for every build (no binary from an earlier
evaluation can ever be loaded), the build in its own subprocess whose environment alone carries the
build variables (the worker's and the coordinator's `os.environ` are never touched), a build-time limit
that kills the whole compiler process group, and compiler output trimmed to the first errors with file
and line. A host without the tools the language needs is `MissingToolchain` (INFRA_ERROR).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import toolchain
from .diagnostics import trim
from .errors import CompileError
from .solution import CPP_SUFFIXES, HEADER_SUFFIXES, SolutionSpec, stage_sources

EXT_NAME = "aka_candidate_ext"
DEFAULT_BUILD_TIMEOUT_S = 240.0
BINDING = (
    "\n\n// Bound by aka_graph's evaluator (the solution declares no PYBIND11_MODULE).\n"
    "#include <torch/csrc/utils/pybind.h>\n"
    'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{ m.def("{symbol}", &{symbol}); }}\n'
)
_CUTLASS_INCLUDE = re.compile(r'#\s*include\s*[<"](cutlass|cute)/')
_CUDNN_INCLUDE = re.compile(r'#\s*include\s*[<"]cudnn')


@dataclass
class BuildPlan:
    """Everything the build subprocess is told (job.json) plus the variables set on it alone."""

    name: str
    sources: list[str]
    cflags: list[str]
    cuda_cflags: list[str]
    ld_flags: list[str]
    include_dirs: list[str]
    build_directory: str
    with_cuda: bool
    symbol: str
    env: dict[str, str] = field(default_factory=dict)

    def job(self) -> dict[str, object]:
        data = asdict(self)
        data.pop("env")
        return data


def _texts(src_dir: Path) -> dict[Path, str]:
    return {
        p: p.read_text(errors="replace")
        for p in sorted(src_dir.rglob("*"))
        if p.is_file() and p.suffix in CPP_SUFFIXES + HEADER_SUFFIXES
    }


def needs_cutlass(spec: SolutionSpec, texts: Mapping[Path, str]) -> bool:
    return (
        "cutlass" in spec.languages
        or any(d.lower().startswith("cutlass") for d in spec.dependencies)
        or any(_CUTLASS_INCLUDE.search(t) for t in texts.values())
    )


def needs_cudnn(spec: SolutionSpec, texts: Mapping[Path, str]) -> bool:
    return (
        "cudnn" in spec.languages
        or any(d.lower() == "cudnn" for d in spec.dependencies)
        or any(_CUDNN_INCLUDE.search(t) for t in texts.values())
    )


def bind_entry_point(spec: SolutionSpec, src_dir: Path, texts: Mapping[Path, str]) -> None:
    """Add the PYBIND11_MODULE the solution lacks: appended to the staged entry file (same translation
    unit, so even a `static` entry point binds; line numbers of the user's code are unchanged)."""
    if any("PYBIND11_MODULE" in t for t in texts.values()):
        return
    entry = src_dir / spec.entry_file
    if not entry.is_file():
        raise CompileError(f"the entry file {spec.entry_file} is not among the sources")
    snippet = BINDING.format(symbol=spec.symbol)
    if entry.suffix in HEADER_SUFFIXES:  # a header entry point: bind it from a file of its own
        (src_dir / "aka_binding.cpp").write_text(f'#include "{spec.entry_file}"' + snippet)
    else:
        entry.write_text(entry.read_text(errors="replace") + snippet)


def plan_build(
    spec: SolutionSpec,
    work: Path,
    *,
    env: Mapping[str, str],
    device_type: str,
    torch_cuda: str | None,
    cuda_home: str | None,
    arch_list: str | None = None,
) -> BuildPlan:
    """Stage the sources into `work/src`, check the toolchain, and decide flags and paths."""
    src_dir = stage_sources(spec, work / "src")
    texts = _texts(src_dir)
    bind_entry_point(spec, src_dir, texts)
    texts = _texts(src_dir)
    sources = sorted(str(p) for p in texts if p.suffix in CPP_SUFFIXES)
    if not sources:
        raise CompileError(f"no C/C++/CUDA source ({', '.join(CPP_SUFFIXES)}) among the solution's files")
    has_cu = any(s.endswith(".cu") for s in sources)
    with_cuda = has_cu or (device_type == "cuda" and torch_cuda is not None)
    tc = toolchain.require_cxx_toolchain(env)
    if with_cuda:
        toolchain.require_cuda(tc, env, torch_cuda, cuda_home)
    includes = [str(src_dir)]
    entry_parent = (src_dir / spec.entry_file).parent
    if entry_parent != src_dir:
        includes.append(str(entry_parent))
    ld_flags = list(spec.compile_options.ld_flags)
    if needs_cutlass(spec, texts):
        includes += toolchain.cutlass_include_dirs(env)
    if needs_cudnn(spec, texts):
        inc, libs = toolchain.cudnn_dirs(env)
        includes += inc
        for lib in libs:
            alias = toolchain.link_alias(Path(lib), "cudnn", work / "lib") if "-lcudnn" in ld_flags else None
            ld_flags += [f"-L{alias or lib}", f"-Wl,-rpath,{lib}"]
    extra: dict[str, str] = {
        "TORCH_EXTENSIONS_DIR": str(work),
        "MAX_JOBS": env.get("MAX_JOBS") or str(max(1, min(8, os.cpu_count() or 1))),
    }
    if with_cuda and arch_list and not env.get("TORCH_CUDA_ARCH_LIST"):
        extra["TORCH_CUDA_ARCH_LIST"] = arch_list
    if tc.cuda_home and not env.get("CUDA_HOME"):
        extra["CUDA_HOME"] = tc.cuda_home
    if tc.path_prepend:
        extra["PATH"] = os.pathsep.join([*tc.path_prepend, env.get("PATH", os.defpath)])
    return BuildPlan(
        name=EXT_NAME,
        sources=sources,
        cflags=list(spec.compile_options.cflags),
        cuda_cflags=list(spec.compile_options.cuda_cflags),
        ld_flags=ld_flags,
        include_dirs=includes,
        build_directory=str(work / "out"),
        with_cuda=with_cuda,
        symbol=spec.symbol,
        env=extra,
    )


def _adopt_orphans() -> None:
    """PR_SET_CHILD_SUBREAPER on this process: compilers orphaned by a killed build are re-parented
    here, where `_reap` collects them, instead of to the trusted parent, whose stray-process check
    would take a dead compiler for the candidate's own process."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(36, 1, 0, 0, 0)


def _session_members(sid: int) -> list[int]:
    """Processes of the build's session (the builder is its leader, `start_new_session`). Not its process
    group: ninja gives every command a group of its own (`setpgid`), so a kill of the builder's group
    left the compilers running (seen in CI: `/bin/sh -c c++ ...`, `c++`, `cc1plus`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _kill_session(sid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, signal.SIGKILL)
    for pid in _session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _reap(sid: int, attempts: int = 200) -> None:
    """Kill, until none is left, every process of the stopped build's session, reaping the orphans we
    adopted; killed again on every pass (a process forked while a kill went through can miss it)."""
    import time

    for _ in range(attempts):
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        if not _session_members(sid):
            return
        _kill_session(sid)
        time.sleep(0.05)


def build_pythonpath(pythonpath: str) -> str:
    """The build subprocess's PYTHONPATH: it runs in the build directory, so a relative entry (a job's
    `PYTHONPATH=.`) would point there; entries are made absolute, and the directory holding the harness
    package comes first so `-m <harness>.languages.ext_main` imports wherever the caller ran from (the
    profile job failed with "No module named 'harness'" on the H200)."""
    package = (__package__ or "harness.languages").split(".")  # this module's package, languages last
    root = str(Path(__file__).resolve().parents[len(package)])  # the directory its top package is in
    entries = [os.path.abspath(e) for e in pythonpath.split(os.pathsep) if e]
    return os.pathsep.join(dict.fromkeys([root, *entries]))


def run_build(plan: BuildPlan, work: Path, base_env: Mapping[str, str], timeout_s: float) -> Path:
    """Run the build subprocess; the shared object's path, or CompileError with the first errors."""
    _adopt_orphans()
    job_path = work / "job.json"
    job_path.write_text(json.dumps(plan.job()))
    log_path = work / "build.log"
    env = {**base_env, **plan.env}
    package = __package__ or "harness.languages"
    env["PYTHONPATH"] = build_pythonpath(env.get("PYTHONPATH", ""))
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", f"{package}.ext_main", str(job_path)],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_session(proc.pid)
            proc.wait()
            _reap(proc.pid)
            tail = trim(log_path.read_text(errors="replace"), (str(work / "src"),))
            raise CompileError(
                f"the build took longer than the {timeout_s:.0f} s build-time limit and was stopped "
                f"(fewer template instantiations or smaller files build faster); output so far:\n{tail}"
            ) from None
    result_path = work / "result.json"
    result = json.loads(result_path.read_text()) if result_path.is_file() else {}
    if code == 0 and result.get("so"):
        return Path(result["so"])
    log = log_path.read_text(errors="replace")
    if result.get("error"):
        raise CompileError(str(result["error"]))
    raise CompileError("build failed:\n" + trim(log, (str(work / "src"),)))


def build_extension(
    spec: SolutionSpec,
    build_root: Path | None = None,
    *,
    timeout_s: float = DEFAULT_BUILD_TIMEOUT_S,
    device_type: str = "cpu",
    arch_list: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """Build `spec` in a new directory under `build_root` (default: $TORCH_EXTENSIONS_DIR, which the
    harness makes fresh per evaluation) and return the extension's path."""
    import torch
    from torch.utils import cpp_extension

    base_env = dict(os.environ if env is None else env)
    root = Path(build_root or base_env.get("TORCH_EXTENSIONS_DIR") or tempfile.gettempdir())
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build_", dir=root))  # fresh, whatever `root` already holds
    plan = plan_build(
        spec,
        work,
        env=base_env,
        device_type=device_type,
        torch_cuda=torch.version.cuda,
        cuda_home=cpp_extension.CUDA_HOME,
        arch_list=arch_list,
    )
    return run_build(plan, work, base_env, timeout_s)
