"""Build paths that need no compiler run: solution.json as SOL-ExecBench reads it, the build plan (flags,
include dirs, environment on the build subprocess only, a fresh directory every time, the binding added
when a solution has none), and a host without a tool or package -> MissingToolchain naming what to install.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness.candidate import import_candidate, read_spec
from aka_graph.tools.evaluator.harness.languages import toolchain
from aka_graph.tools.evaluator.harness.languages.errors import CompileError, MissingToolchain
from aka_graph.tools.evaluator.harness.languages.solution import (
    SOL_DEFAULT_CUDA_CFLAGS,
    SOL_DEFAULT_LD_FLAGS,
    SpecError,
    read_solution,
)
from aka_graph.tools.evaluator.harness.languages.torch_ext import BuildPlan, plan_build
from aka_graph.tools.evaluator.harness.opmodel import OperatorError

MAIN_CPP = "#include <torch/extension.h>\nvoid run(torch::Tensor x, torch::Tensor y) { y.copy_(x); }\n"


def solution(tmp_path: Path, spec: dict, sources: dict[str, str | None], name: str = "k") -> Path:
    """A kernel dir: files for sources with content None are written to disk, others only inlined."""
    kdir = tmp_path / name
    kdir.mkdir()
    listed = []
    for path, content in sources.items():
        if content is None:
            (kdir / path).parent.mkdir(parents=True, exist_ok=True)
            (kdir / path).write_text(MAIN_CPP)
            listed.append({"path": path})
        else:
            listed.append({"path": path, "content": content})
    (kdir / "solution.json").write_text(json.dumps({"name": "t", "spec": spec, "sources": listed}))
    return kdir


def cpp_spec(**kw: object) -> dict:
    return {"languages": ["cuda_cpp"], "entry_point": "main.cpp::run", **kw}


def host_env(tmp_path: Path) -> dict[str, str]:
    """A host whose PATH holds a `c++` and a `ninja` (planning checks that they exist, never runs them:
    these tests do not depend on the machine's toolchain)."""
    tools = tmp_path / "tools"
    if not tools.is_dir():
        tools.mkdir()
        for name in ("c++", "ninja"):
            (tools / name).write_text("#!/bin/sh\nexit 0\n")
            (tools / name).chmod(0o755)
    return {"PATH": str(tools), "HOME": str(tmp_path)}


def plan(tmp_path: Path, kdir: Path, work: str = "w", **kw: object) -> BuildPlan:
    options = {"env": host_env(tmp_path), "device_type": "cpu", "torch_cuda": None, "cuda_home": None, **kw}
    return plan_build(read_solution(kdir, native=False), tmp_path / work, **options)  # type: ignore[arg-type]


def test_compile_options_follow_sol_execbench(tmp_path: Path) -> None:
    none = read_solution(solution(tmp_path, cpp_spec(), {"main.cpp": None}, "a"), native=False)
    assert none.compile_options.cuda_cflags == () and none.compile_options.ld_flags == ()
    empty = read_solution(solution(tmp_path, cpp_spec(compile_options={}), {"main.cpp": None}, "b"), False)
    assert empty.compile_options.cuda_cflags == SOL_DEFAULT_CUDA_CFLAGS
    assert empty.compile_options.ld_flags == SOL_DEFAULT_LD_FLAGS
    given = cpp_spec(
        compile_options={"cflags": ["-O1", "-DX=2"], "cuda_cflags": ["-lineinfo"], "ld_flags": []}
    )
    p = plan(tmp_path, solution(tmp_path, given, {"main.cpp": None}, "c"))
    assert p.cflags == ["-O1", "-DX=2"] and p.cuda_cflags == ["-lineinfo"] and p.ld_flags == []
    assert p.with_cuda is False and p.symbol == "run" and p.sources[0].endswith("src/main.cpp")


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ({"languages": ["cuda_cpp", "triton"], "entry_point": "main.cpp::run"}, "cannot be mixed"),
        ({"languages": ["cutlass"], "entry_point": "kernel.py::run"}, "C/C++/CUDA entry file"),
        ({"languages": ["triton"], "entry_point": "main.cu::run"}, "need a .py entry file"),
        (cpp_spec(binding="tvm_ffi"), "binding 'tvm_ffi' is not supported"),
        (cpp_spec(compile_options={"nvcc": []}), "unknown keys ['nvcc']"),
        ({"languages": ["cuda_cpp"], "entry_point": "main.cpp"}, "must look like"),
    ],
)
def test_inconsistent_solutions_are_the_candidates_error(tmp_path: Path, spec: dict, needle: str) -> None:
    kdir = solution(tmp_path, spec, {"main.cpp": None})
    with pytest.raises(SpecError, match=None) as err:
        read_solution(kdir, native=False)
    assert needle in str(err.value)
    with pytest.raises(OperatorError):  # the worker reports it as COMPILE_ERROR
        read_spec(kdir, native=False)


def test_source_paths_may_not_leave_the_kernel_directory(tmp_path: Path) -> None:
    kdir = solution(tmp_path, cpp_spec(), {"../evil.cpp": "int x;", "main.cpp": None})
    with pytest.raises(SpecError, match="must be relative"):
        read_solution(kdir, native=False)


def test_every_build_gets_a_fresh_directory_and_never_writes_the_kernel_dir(tmp_path: Path) -> None:
    kdir = solution(tmp_path, cpp_spec(), {"main.cpp": None, "kernel.h": "#pragma once\nint helper();\n"})
    before = sorted(p.name for p in kdir.iterdir())
    first, second = plan(tmp_path, kdir, "w1"), plan(tmp_path, kdir, "w2")
    assert first.build_directory != second.build_directory
    assert (tmp_path / "w1" / "src" / "kernel.h").read_text().startswith("#pragma once")  # inlined header
    assert sorted(p.name for p in kdir.iterdir()) == before


def test_build_variables_go_to_the_subprocess_only(tmp_path: Path) -> None:
    before = dict(os.environ)
    p = plan(tmp_path, solution(tmp_path, cpp_spec(), {"main.cpp": None}))
    assert p.env["TORCH_EXTENSIONS_DIR"] == str(tmp_path / "w") and int(p.env["MAX_JOBS"]) >= 1
    assert "TORCH_CUDA_ARCH_LIST" not in p.env  # no CUDA sources on a CPU build
    assert dict(os.environ) == before


def test_a_solution_without_pybind_module_gets_its_entry_point_bound(tmp_path: Path) -> None:
    kdir = solution(tmp_path, cpp_spec(entry_point="main.cpp::forward"), {"main.cpp": None})
    plan(tmp_path, kdir)
    staged = (tmp_path / "w" / "src" / "main.cpp").read_text()
    assert staged.startswith(MAIN_CPP)  # the user's lines keep their numbers
    assert 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward); }' in staged
    assert (kdir / "main.cpp").read_text() == MAIN_CPP


def test_cuda_sources_on_a_cpu_torch_name_what_to_install(tmp_path: Path) -> None:
    kdir = solution(
        tmp_path, {"languages": ["cuda_cpp"], "entry_point": "kernel.cu::run"}, {"kernel.cu": None}
    )
    with pytest.raises(MissingToolchain, match="CPU build"):
        plan(tmp_path, kdir)
    with pytest.raises(MissingToolchain, match=r"nvcc was not found .* install the CUDA 13.0 toolkit"):
        plan(tmp_path, kdir, torch_cuda="13.0", cuda_home=str(tmp_path / "no-cuda"), env=host_env(tmp_path))


def test_missing_compiler_and_ninja_are_infra_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(MissingToolchain, match=r"install g\+\+"):
        toolchain.require_cxx_toolchain({"PATH": str(empty)}, python_bin=empty)
    only_cxx = tmp_path / "cxx"
    only_cxx.mkdir()
    (only_cxx / "c++").write_text("#!/bin/sh\nexit 0\n")
    (only_cxx / "c++").chmod(0o755)
    with pytest.raises(MissingToolchain, match="pip install ninja"):
        toolchain.require_cxx_toolchain({"PATH": str(only_cxx)}, python_bin=empty)
    assert MissingToolchain.status == "INFRA_ERROR" and CompileError.status == "COMPILE_ERROR"


def test_cutlass_headers_from_cutlass_dir_or_an_install_hint(tmp_path: Path) -> None:
    root = tmp_path / "cutlass"
    (root / "include" / "cutlass").mkdir(parents=True)
    (root / "include" / "cutlass" / "cutlass.h").write_text("#pragma once\n")
    (root / "tools" / "util" / "include").mkdir(parents=True)
    dirs = toolchain.cutlass_include_dirs({"CUTLASS_DIR": str(root)}, extra_roots=())
    assert dirs == [str(root / "include"), str(root / "tools" / "util" / "include")]
    if toolchain.module_available("cutlass_library"):
        pytest.skip("the nvidia-cutlass wheel is installed here: no missing-headers case to show")
    with pytest.raises(MissingToolchain, match="pip install nvidia-cutlass"):
        toolchain.cutlass_include_dirs({}, extra_roots=())
    kdir = solution(tmp_path, {"languages": ["cutlass"], "entry_point": "main.cpp::run"}, {"main.cpp": None})
    p = plan(tmp_path, kdir, env={**host_env(tmp_path), "CUTLASS_DIR": str(root)})
    assert str(root / "include") in p.include_dirs


def test_cudnn_link_alias_for_wheels_without_the_unversioned_library(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libcudnn.so.9").write_text("")
    alias = toolchain.link_alias(lib, "cudnn", tmp_path / "build" / "lib")
    assert alias == str(tmp_path / "build" / "lib")
    assert (tmp_path / "build" / "lib" / "libcudnn.so").resolve() == (lib / "libcudnn.so.9").resolve()
    (lib / "libcudnn.so").write_text("")
    assert toolchain.link_alias(lib, "cudnn", tmp_path / "other") is None


@pytest.mark.parametrize(
    ("language", "install"),
    [("cutile", "pip install cuda-tile"), ("cute_dsl", "pip install nvidia-cutlass-dsl")],
)
def test_python_language_without_its_package_is_an_infra_error(
    tmp_path: Path, language: str, install: str
) -> None:
    module = toolchain.PYTHON_FRAMEWORK_MODULES[language][0]
    if toolchain.module_available(module):
        pytest.skip(f"{module} is installed here")
    kdir = tmp_path / "k"
    kdir.mkdir()
    (kdir / "kernel.py").write_text("def run(x, y):\n    y.copy_(x)\n")
    spec = {"languages": [language], "entry_point": "kernel.py::run"}
    (kdir / "solution.json").write_text(json.dumps({"spec": spec, "sources": [{"path": "kernel.py"}]}))
    with pytest.raises(MissingToolchain, match=install):
        import_candidate(read_spec(kdir, native=False))


def test_a_framework_import_failing_on_the_host_names_the_package(tmp_path: Path) -> None:
    if toolchain.module_available("cutlass"):
        pytest.skip("cutlass is installed here")
    kdir = tmp_path / "k"
    kdir.mkdir()
    (kdir / "kernel.py").write_text("import cutlass.cute as cute\n\ndef run(x, y):\n    y.copy_(x)\n")
    with pytest.raises(MissingToolchain, match="nvidia-cutlass-dsl"):
        import_candidate(read_spec(kdir, native=False))
    (kdir / "kernel.py").write_text("import no_such_module_xyz\n\ndef run(x, y):\n    y.copy_(x)\n")
    with pytest.raises(CompileError) as err:
        import_candidate(read_spec(kdir, native=False))
    assert err.value.status == "COMPILE_ERROR"


def test_inlined_python_sources_are_imported_from_a_fresh_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "scratch"))
    kdir = tmp_path / "k"
    kdir.mkdir()
    source = "def run(x, y):\n    y.copy_(x * 3)\n"
    spec = {"languages": ["pytorch"], "entry_point": "kernel.py::run"}
    (kdir / "solution.json").write_text(
        json.dumps({"spec": spec, "sources": [{"path": "kernel.py", "content": source}]})
    )
    fn, dps = import_candidate(read_spec(kdir, native=False))
    assert dps is True and not (kdir / "kernel.py").exists()
    import torch

    y = torch.empty(2)
    fn(torch.ones(2), y)
    assert y.tolist() == [3.0, 3.0]


def test_the_source_policy_reads_inlined_sources(tmp_path: Path) -> None:
    from aka_graph.tools.evaluator.harness.policy import scan_kernel_dir

    kdir = tmp_path / "k"
    kdir.mkdir()
    spec = {"languages": ["pytorch"], "entry_point": "kernel.py::run"}
    bad = "import gc\n\ndef run(x, y):\n    y.copy_(x)\n"
    (kdir / "solution.json").write_text(
        json.dumps({"spec": spec, "sources": [{"path": "kernel.py", "content": bad}]})
    )
    found = scan_kernel_dir(kdir)
    assert found and found[0].startswith("solution.json:kernel.py:1:") and "'gc'" in found[0]


def test_a_missing_framework_is_infra_error_through_the_harness(tmp_path: Path) -> None:
    """End to end: the worker reports MissingToolchain as INFRA_ERROR (never a score), naming the package."""
    from tests.tools.evaluator.harness.test_gates import BATCH1, RMSNORM, run_harness

    if toolchain.module_available("cutlass.cute"):
        pytest.skip("cutlass.cute is installed here")
    kdir = tmp_path / "k"
    kdir.mkdir()
    (kdir / "kernel.py").write_text(
        "def run(hidden_states, weight, output):\n    output.copy_(hidden_states)\n"
    )
    spec = {"languages": ["cute_dsl"], "entry_point": "kernel.py::run"}
    (kdir / "solution.json").write_text(json.dumps({"spec": spec, "sources": [{"path": "kernel.py"}]}))
    res = run_harness(tmp_path / "run", RMSNORM, kdir, shape_ids=[BATCH1], seeds=1)
    assert res["status"] == "INFRA_ERROR" and "pip install nvidia-cutlass-dsl" in res["message"]


def test_the_build_subprocess_finds_the_harness_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job runs with PYTHONPATH=. and the build subprocess in its own build directory: relative entries
    are made absolute and the harness package's root comes first (the profile job's C++ build failed
    with "No module named 'harness'" on the H200)."""
    import subprocess
    import sys

    from aka_graph.tools.evaluator.harness.languages.torch_ext import build_pythonpath

    monkeypatch.chdir(tmp_path)
    path = build_pythonpath(os.pathsep.join([".", "kit", ""]))
    entries = path.split(os.pathsep)
    assert entries[1:] == [str(tmp_path), str(tmp_path / "kit")] and all(os.path.isabs(e) for e in entries)
    elsewhere = tmp_path / "build"
    elsewhere.mkdir()
    # -S: no site packages (an editable install would find the package without any PYTHONPATH)
    probe = "import importlib.util as u; print(u.find_spec('aka_graph').origin)"
    found = subprocess.run([sys.executable, "-S", "-c", probe], cwd=elsewhere, capture_output=True, text=True,
                           env={"PATH": os.environ["PATH"], "PYTHONPATH": path})  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(Path(entries[0]) / "aka_graph" / "__init__.py")
    bare = subprocess.run([sys.executable, "-S", "-c", probe], cwd=elsewhere, capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "PYTHONPATH": "."})  # fmt: skip
    assert bare.returncode != 0  # what the build saw before: no package from the build directory
