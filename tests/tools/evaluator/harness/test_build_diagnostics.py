"""The diagnostics trimmer on real compiler output recorded here (build_logs/README.md): the first errors
with file and line, library paths shortened, template noise dropped, the user's instantiating line kept."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness.languages.diagnostics import parse, trim

LOGS = Path(__file__).parent / "build_logs"


def log(name: str) -> str:
    return (LOGS / name).read_text()


def test_nvcc_front_end_errors_keep_file_line_and_the_offending_code() -> None:
    text = trim(log("nvcc_bad1.log"), ("/tmp/rec",))
    lines = text.splitlines()
    assert lines[0] == 'bad1.cu:6: error: identifier "factor" is undefined'
    assert "in[i] * factor" in lines[1] and lines[2].strip() == "^"
    assert any(line.startswith("bad1.cu:13: error: no instance of overloaded function") for line in lines)
    # the notes pointing into CUB's headers (3 candidates, ~12 lines) are dropped
    assert "note #3322-D" not in text and "block_reduce.cuh" not in text
    assert len(parse(log("nvcc_bad1.log"))) == 2


def test_ptxas_error_is_named_by_tool() -> None:
    assert trim(log("nvcc_bad2.log")) == (
        "ptxas: error: Entry function '_Z3bigPf' uses too much shared data (0x61a80 bytes, 0xc000 max)"
    )


def test_gxx_error_inside_ninja_output_is_relative_to_the_sources() -> None:
    text = trim(log("gxx_bad.log"), ("/tmp/rec",))
    assert text.splitlines()[0] == "bad.cpp:5: error: expected ‘,’ or ‘;’ before ‘out’"
    assert "ninja" not in text and "-isystem" not in text and "FAILED" not in text
    assert len(text.splitlines()) == 3  # the error, the source line, the caret


def test_linker_error_without_collect2_repetition() -> None:
    expected = "ld: error: cannot find -lnosuchlib_cudnn: No such file or directory"
    assert trim(log("ld_missing_lib.log")) == expected


def test_template_noise_is_cut_to_the_errors_with_the_users_line() -> None:
    raw = log("gxx_template.log")
    assert len(raw.splitlines()) == 122
    diags = parse(raw)
    assert [d.user_site for d in diags] == ["tmpl.cpp:8", "tmpl.cpp:10", "tmpl.cpp:10", "tmpl.cpp:10"]
    assert diags[0].file == "<c++/12/bits/stl_function.h>" and diags[0].line == 408
    text = trim(raw, max_errors=2)
    assert "(instantiated from tmpl.cpp:8)" in text and "(4 errors in all; the first 2 shown)" in text
    assert "candidate:" not in text and len(text.splitlines()) < 12


def test_unrecognised_failure_shows_the_last_lines_instead_of_nothing() -> None:
    text = trim("step 1\nstep 2\nsomething odd happened: code 7\n")
    assert text.endswith("something odd happened: code 7")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit)")
def test_live_nvcc_output_is_trimmed_the_same_way(tmp_path: Path) -> None:
    src = tmp_path / "bad1.cu"
    shutil.copy(LOGS / "bad1.cu", src)
    proc = subprocess.run(
        ["nvcc", "-c", "-arch=sm_90", str(src), "-o", str(tmp_path / "bad1.o")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    text = trim(proc.stdout + proc.stderr, (str(tmp_path),))
    assert text.splitlines()[0] == 'bad1.cu:6: error: identifier "factor" is undefined'
