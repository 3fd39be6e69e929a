"""Shared helpers of the command-task tests: the minikern fixture, tiny stdlib-only tasks, a sandbox."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.sandbox.local import LocalSandbox

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "source_tree"
VARIANTS = FIXTURE / "variants"


@pytest.fixture(scope="session")
def sandbox() -> LocalSandbox:
    return LocalSandbox(isolation="auto")


@pytest.fixture
def minikern(tmp_path: Path) -> Path:
    """A private copy of the minikern task (task file + tree), so tests may build in it."""
    dest = tmp_path / "minikern"
    shutil.copytree(
        FIXTURE, dest, ignore=shutil.ignore_patterns("__pycache__", "build", "*.so", "*.egg-info")
    )
    return dest


def write_tiny_task(
    root: Path, *, bench_output: str, build: str = "print('built')", rebuild_env: str = "", extra: str = ""
) -> Path:
    """A stdlib-only task (no torch, fast): `lib.py` is editable; the build writes `out/lib.built`."""
    tree = root / "tree"
    tree.mkdir(parents=True, exist_ok=True)
    (tree / "lib.py").write_text("VALUE = 2\n")
    (tree / "build.py").write_text(
        textwrap.dedent(f"""\
        import os, pathlib
        {build}
        pathlib.Path("out").mkdir(exist_ok=True)
        pathlib.Path("out/lib.built").write_text(open("lib.py").read())
        """)
    )
    (tree / "check.py").write_text(
        textwrap.dedent("""\
        import json, os, sys
        import lib
        ok = lib.VALUE == 2
        print("ENV", json.dumps({k: os.environ.get(k) for k in ("TINY_REBUILD",)}))
        print(json.dumps({"cases": {c["id"]: {"passed": ok, "max_abs_error": 0.0}
                                   for c in json.load(open(sys.argv[1]))}}))
        """)
    )
    (tree / "bench.py").write_text(
        textwrap.dedent(f"""\
        import json, os, sys
        import lib
        getattr(lib, "on_bench", lambda: None)()  # the candidate's code runs inside the benchmark
        print("ENV", json.dumps({{k: os.environ.get(k) for k in ("TINY_REBUILD",)}}))
        cases = json.load(open(sys.argv[1]))
        print(json.dumps({{"cases": {{c["id"]: {bench_output} for c in cases}}}}))
        """)
    )
    (root / "aka_task.toml").write_text(
        textwrap.dedent(f"""\
        name = "tiny"
        source_tree = "tree"
        editable = ["lib.py"]
        build_outputs = ["out/lib.built"]
        {extra}
        [rebuild_env]
        {rebuild_env}
        [commands.build]
        argv = ["{{python}}", "build.py"]
        timeout_s = 60
        [commands.correctness]
        argv = ["{{python}}", "check.py", "{{cases}}"]
        timeout_s = 60
        [commands.performance]
        argv = ["{{python}}", "bench.py", "{{cases}}"]
        timeout_s = 60
        [performance]
        timing_keys = ["device_us"]
        capture_key = "graph_kernels"
        [[cases.correctness]]
        id = "small"
        n = 4
        [[cases.performance]]
        id = "large"
        n = 4096
        """)
    )
    return root
