"""Where the `cutlass` language finds CUTLASS's headers and `cute_dsl` finds the CuTe DSL, on hosts laid out
as fake directory trees: $CUTLASS_DIR / $CUTLASS_PATH, the nvidia-cutlass wheel on a path only the job's
PYTHONPATH names (how the H200 kit is installed: `pip --target`), /usr/local/cutlass, and nothing at all
(INFRA_ERROR naming each place and what to install); a DSL installed with `pip --target`, whose .pth
file Python never reads there, still imports."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness.languages import cutlass_pkgs, toolchain
from aka_graph.tools.evaluator.harness.languages.errors import MissingToolchain
from aka_graph.tools.evaluator.harness.languages.solution import read_solution
from aka_graph.tools.evaluator.harness.languages.torch_ext import plan_build


def host_env(tmp_path: Path) -> dict[str, str]:
    """A PATH with a `c++` and a `ninja` (planning checks they exist, never runs them)."""
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    for name in ("c++", "ninja"):
        (tools / name).write_text("#!/bin/sh\nexit 0\n")
        (tools / name).chmod(0o755)
    return {"PATH": str(tools), "HOME": str(tmp_path)}


def cutlass_solution(tmp_path: Path) -> Path:
    kdir = tmp_path / "k"
    kdir.mkdir()
    (kdir / "main.cpp").write_text("#include <cutlass/cutlass.h>\nvoid run() {}\n")
    spec = {"languages": ["cutlass"], "entry_point": "main.cpp::run"}
    (kdir / "solution.json").write_text(json.dumps({"spec": spec, "sources": [{"path": "main.cpp"}]}))
    return kdir


def checkout(root: Path, util: bool = True) -> Path:
    """A CUTLASS checkout: include/cutlass/cutlass.h (+ tools/util/include)."""
    (root / "include" / "cutlass").mkdir(parents=True)
    (root / "include" / "cutlass" / "cutlass.h").write_text("#pragma once\n")
    if util:
        (root / "tools" / "util" / "include").mkdir(parents=True)
    return root


def cutlass_wheel(site: Path) -> Path:
    """What `pip install --target SITE nvidia-cutlass` leaves: the headers in cutlass_library/source."""
    (site / "cutlass_library").mkdir(parents=True)
    (site / "cutlass_library" / "__init__.py").write_text("")
    return checkout(site / "cutlass_library" / "source")


def test_cutlass_dir_and_cutlass_path_name_a_checkout_or_its_include_dir(tmp_path: Path) -> None:
    root = checkout(tmp_path / "cutlass")
    assert cutlass_pkgs.cutlass_include_dirs({"CUTLASS_DIR": str(root)}, (), search_path=[]) == [
        str(root / "include"),
        str(root / "tools" / "util" / "include"),
    ]
    inc = root / "include"
    assert cutlass_pkgs.cutlass_include_dirs({"CUTLASS_PATH": str(inc)}, (), search_path=[]) == [
        str(inc),
        str(root / "tools" / "util" / "include"),
    ]


def test_the_wheel_on_the_jobs_pythonpath_only_is_found(tmp_path: Path) -> None:
    source = cutlass_wheel(tmp_path / "kit-site")
    env = {"PYTHONPATH": os.pathsep.join(["/nonexistent", str(tmp_path / "kit-site")])}
    assert cutlass_pkgs.cutlass_include_dirs(env, (), search_path=[]) == [
        str(source / "include"),
        str(source / "tools" / "util" / "include"),
    ]


def test_a_relative_pythonpath_entry_is_read_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = cutlass_wheel(tmp_path / "job" / "site")
    monkeypatch.chdir(tmp_path / "job")
    assert cutlass_pkgs.cutlass_include_dirs({"PYTHONPATH": "site"}, (), search_path=[])[0] == str(
        source / "include"
    )


def test_the_wheel_on_the_interpreters_path_is_found(tmp_path: Path) -> None:
    source = cutlass_wheel(tmp_path / "site-packages")
    found = cutlass_pkgs.cutlass_include_dirs({}, (), search_path=[str(tmp_path / "site-packages")])
    assert found[0] == str(source / "include")


def test_cutlass_dir_wins_over_the_wheel_and_the_system_dir(tmp_path: Path) -> None:
    mine = checkout(tmp_path / "mine", util=False)
    cutlass_wheel(tmp_path / "site")
    system = checkout(tmp_path / "usr-local-cutlass")
    env = {"CUTLASS_DIR": str(mine), "PYTHONPATH": str(tmp_path / "site")}
    assert cutlass_pkgs.cutlass_include_dirs(env, [str(system)], search_path=[]) == [str(mine / "include")]
    assert cutlass_pkgs.cutlass_include_dirs({}, [str(system)], search_path=[])[0] == str(system / "include")


def test_a_directory_without_cutlass_h_is_not_taken(tmp_path: Path) -> None:
    (tmp_path / "half" / "include" / "cutlass").mkdir(parents=True)
    system = checkout(tmp_path / "system")
    env = {"CUTLASS_DIR": str(tmp_path / "half")}
    assert cutlass_pkgs.cutlass_include_dirs(env, [str(system)], search_path=[])[0] == str(system / "include")


def test_no_headers_anywhere_is_an_infra_error_naming_every_place_and_the_fix(tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    with pytest.raises(MissingToolchain) as err:
        cutlass_pkgs.cutlass_include_dirs({"CUTLASS_DIR": str(empty)}, [str(tmp_path / "usr-local")], [])
    message = str(err.value)
    assert err.value.status == "INFRA_ERROR"
    assert f"$CUTLASS_DIR={empty}" in message and "$CUTLASS_PATH (unset)" in message
    assert "cutlass_library / nvidia_cutlass_dsl packages on the job's Python path" in message
    assert str(tmp_path / "usr-local") in message
    assert "pip install nvidia-cutlass " in message and "CUTLASS_DIR" in message


def test_a_cutlass_solution_plans_with_the_wheel_the_jobs_pythonpath_names(tmp_path: Path) -> None:
    """The H200 case: the kit (nvidia-cutlass included) is installed with pip --target and named by the
    PYTHONPATH the job runs with; the build plan puts its headers on the include path."""
    source = cutlass_wheel(tmp_path / "kit-site")
    kdir = cutlass_solution(tmp_path)
    env = {**host_env(tmp_path), "PYTHONPATH": str(tmp_path / "kit-site")}
    plan = plan_build(
        read_solution(kdir, native=False),
        tmp_path / "w",
        env=env,
        device_type="cpu",
        torch_cuda=None,
        cuda_home=None,
    )
    assert str(source / "include") in plan.include_dirs
    assert str(source / "tools" / "util" / "include") in plan.include_dirs


@pytest.fixture
def clean_cutlass_import(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """sys.path and sys.modules as they were: a fake `cutlass` package must not leak into other tests."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [m for m in sys.modules if m == "cutlass" or m.startswith("cutlass.")]:
        del sys.modules[name]


@pytest.mark.parametrize("subdir", ["dsl_packages", "python_packages"])  # 4.4+ and 4.3 wheel layouts
def test_a_cute_dsl_installed_with_pip_target_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_cutlass_import: None, subdir: str
) -> None:
    if toolchain.module_available("cutlass.cute"):
        pytest.skip("a CuTe DSL is installed here")
    pkg = tmp_path / "site" / "nvidia_cutlass_dsl" / subdir / "cutlass" / "cute"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("FAKE = True\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    toolchain.require_python_framework("cute_dsl")  # raises MissingToolchain unless the path was added
    assert str(tmp_path / "site" / "nvidia_cutlass_dsl" / subdir) in sys.path
    import cutlass.cute  # type: ignore[import-not-found]

    assert cutlass.cute.FAKE


def test_without_a_cute_dsl_the_infra_error_names_the_wheels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_cutlass_import: None
) -> None:
    if toolchain.module_available("cutlass.cute"):
        pytest.skip("a CuTe DSL is installed here")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    with pytest.raises(MissingToolchain) as err:
        toolchain.require_python_framework("cute_dsl")
    assert "pip install nvidia-cutlass-dsl" in str(err.value) and "[cu13]" in str(err.value)
