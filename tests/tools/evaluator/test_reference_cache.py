"""The reference's cached latencies travel with each evaluation job (issue 9, Speed): the coordinator
stages the operator's entries, the harness reads them before any worker exists and rewrites the file only
after every worker is dead, and the coordinator stores back only well-formed entries. Through the real
command, the second evaluation of an operator takes its reference latency from the cache and says so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness import refcache
from aka_graph.tools.evaluator.harness.refcache import CARRY_VAR, operator_digest
from aka_graph.tools.evaluator.reference_cache import JOB_FILE, carry_in, carry_out, operator_key
from tests.conftest import REPO_ROOT, SOL_FIXTURES
from tests.tools.evaluator.harness.test_gates import BATCH1

ENTRY = {"latency_us": 9.5, "spread_pct": 0.3, "samples_us": [9.5], "method": "cuda_graph",
         "kernels_per_call": 1.0, "notes": []}  # fmt: skip
KEY, OTHER = "a" * 64, "b" * 64


def op_files(tmp_path: Path) -> dict[str, Path]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "definition.json").write_text('{"name": "x"}')
    (src / "workload.jsonl").write_text('{"uuid": "w"}\n')
    return {f"op/{p.name}": p for p in src.iterdir()}


def test_the_coordinators_key_is_the_digest_the_harness_computes_in_the_job(tmp_path: Path) -> None:
    files = op_files(tmp_path)
    job_op = tmp_path / "job" / "op"
    job_op.mkdir(parents=True)
    for name, path in files.items():
        shutil.copy(path, job_op / name.removeprefix("op/"))
    assert operator_key(files) == operator_digest(job_op)


def test_carry_in_stages_the_stored_entries_and_names_the_file(tmp_path: Path) -> None:
    files, store = op_files(tmp_path), tmp_path / "store"
    assert carry_in(files, store) == ({}, {CARRY_VAR: JOB_FILE})
    store.mkdir()
    (store / f"{operator_key(files)}.json").write_text(json.dumps({"entries": {KEY: ENTRY}}))
    inputs, env = carry_in(files, store)
    assert inputs == {JOB_FILE: store / f"{operator_key(files)}.json"} and env == {CARRY_VAR: JOB_FILE}


def test_carry_out_stores_only_well_formed_new_entries(tmp_path: Path) -> None:
    files, store, synced = op_files(tmp_path), tmp_path / "store", tmp_path / "synced.json"
    bad = {**ENTRY, "latency_us": float("nan")}
    synced.write_text(json.dumps({"entries": {KEY: ENTRY, OTHER: bad, "short": ENTRY}}))
    assert carry_out(synced, files, store) == 1
    stored = json.loads((store / f"{operator_key(files)}.json").read_text())["entries"]
    assert stored == {KEY: ENTRY}
    assert carry_out(synced, files, store) == 0  # nothing new
    assert carry_out(None, files, store) == 0 and carry_out(tmp_path / "missing", files, store) == 0


def test_the_harness_reads_the_file_before_workers_and_rewrites_it_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    carried = tmp_path / JOB_FILE
    carried.write_text(json.dumps({"entries": {KEY: ENTRY, OTHER: {"latency_us": -1}}}))
    monkeypatch.setenv(CARRY_VAR, str(carried))
    refcache.preload()
    assert not carried.exists()  # read, then removed: only flush writes it again
    assert refcache._carried() == {KEY: ENTRY, "__loaded__": True}  # the malformed entry was dropped
    refcache.flush(safe=True)  # no file there now: written afresh
    assert json.loads(carried.read_text()) == {"entries": {KEY: ENTRY}}
    carried.write_text(json.dumps({"entries": {OTHER: ENTRY}}))  # what a candidate could write meanwhile
    refcache.flush(safe=True)
    assert json.loads(carried.read_text()) == {"entries": {KEY: ENTRY}}
    refcache.flush(safe=False)
    assert json.loads(carried.read_text()) == {"entries": {}}


def _evaluate(tmp_path: Path, store: Path) -> dict:
    env = {**os.environ, "AKA_CACHE_DIR": str(store), "TMPDIR": str(tmp_path)}
    kernel = REPO_ROOT / "tests/tools/evaluator/harness/candidates/rmsnorm_torch"
    argv = [sys.executable, "-m", "aka_graph", "evaluate", str(SOL_FIXTURES / "rmsnorm"), str(kernel)]
    argv += ["--shape-id", BATCH1, "--seeds", "1", "--device", "cpu", "--json"]
    proc = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert proc.stdout.strip(), proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_the_second_evaluation_of_an_operator_takes_the_reference_latency_from_the_cache(
    tmp_path: Path,
) -> None:
    store = tmp_path / "cache"
    first = _evaluate(tmp_path, store)
    second = _evaluate(tmp_path, store)
    assert first["status"] == second["status"] == "PASS", (first["message"], second["message"])
    if not first["reference_timing_cache"]["used"]:
        pytest.skip(f"no isolation here: {first['reference_timing_cache']['reason']}")
    assert first["reference_timing_cache"]["cached_workloads"] == []
    assert second["reference_timing_cache"]["cached_workloads"] == [BATCH1]
    ref = [r["workloads"][0]["reference_latency_us"] for r in (first, second)]
    assert ref[0] is not None and ref[0] == ref[1]
    assert len(list((store / "reference_timing").glob("*.json"))) == 1
