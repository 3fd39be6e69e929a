"""Opaque ids, masked evaluator output and the leak scanner (production mode's privacy)."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import git

from aka_graph.tools.evaluator.evaluation_result import DeviceInfo, EvaluationResult, WorkloadResult
from aka_graph.tools.records.privacy import (
    LeakScanner,
    OpaqueIds,
    PrivateEvaluator,
    PrivateShapes,
    audit_campaign,
    mask_evaluation,
)

SHAPES = {
    "t211_h1237": {"init_kwargs": {"hidden": 1237}, "input_kwargs": {"tokens": 211, "hidden": 1237}},
    "t389_h4096": {"init_kwargs": {"hidden": 4096}, "input_kwargs": {"tokens": 389, "hidden": 4096}},
}


def operator(tmp_path: Path) -> Path:
    op = tmp_path / "op"
    op.mkdir()
    (op / "shapes.json").write_text(json.dumps(SHAPES))
    return op


def test_opaque_ids_are_random_stable_and_private(tmp_path: Path) -> None:
    path = tmp_path / "checkpoints" / "c.private" / "opaque_ids.json"
    ids = OpaqueIds.load_or_create(path, list(SHAPES))
    opaque = [ids.opaque(i) for i in SHAPES]
    assert all(o.startswith("w_") and len(o) == 14 for o in opaque) and len(set(opaque)) == 2
    assert all(re.fullmatch(r"w_[a-z]{12}", o) for o in opaque)  # letters only: no number can hide in one
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [OpaqueIds.load_or_create(path, list(SHAPES)).opaque(i) for i in SHAPES] == opaque  # stable
    other = OpaqueIds.load_or_create(tmp_path / "other.json", list(SHAPES))
    assert [other.opaque(i) for i in SHAPES] != opaque  # drawn per campaign


def test_masked_evaluations_carry_no_id_no_shape_numbers_and_no_job_text(tmp_path: Path) -> None:
    ids = OpaqueIds.load_or_create(tmp_path / "ids.json", list(SHAPES))
    result = EvaluationResult(
        status="INCORRECT", kernel_sha256="a" * 64, device=DeviceInfo(name="cpu", arch="cpu"),
        timing_method="host_interpreter", authoritative=False,
        workloads=[
            WorkloadResult(id="t211_h1237", status="INCORRECT",
                           message="t211_h1237: seed 0: 26.9 % of 261007",
                           bytes_moved=2 * 211 * 1237 * 4, flops=211 * 1237 * 4, sol_bound_us=1.0,
                           utilization_pct=50.0, latency_us=None),
            WorkloadResult(id="t389_h4096", status="PASS", latency_us=12.5),
        ],
        message="t211_h1237: seed 0: output0 wrong at row 210",
    )
    masked = mask_evaluation(result, ids)
    text = masked.model_dump_json()
    assert "t211" not in text and "1237" not in text and "261007" not in text and "row 210" not in text
    assert sorted(w.id for w in masked.workloads) == [w.id for w in masked.workloads]  # no shapes.json order
    assert {w.id for w in masked.workloads} == set(ids.mapping.values())
    assert all(w.bytes_moved is None and w.sol_bound_us is None for w in masked.workloads)
    assert masked.status == "INCORRECT" and "withheld" in masked.message
    assert next(w for w in masked.workloads if w.status == "PASS").latency_us == 12.5
    cached = result.model_copy(update={
        "reference_timing_cache": {"used": True, "directory": "/c/t211", "cached_workloads": ["t211_h1237"]},
        "output_transfer": {"bytes": 211 * 1237 * 4},
    })
    text = mask_evaluation(cached, ids).model_dump_json()
    assert "t211" not in text and str(211 * 1237 * 4) not in text
    assert mask_evaluation(cached, ids).reference_timing_cache == {
        "used": True, "cached_workloads": [ids.opaque("t211_h1237")]}


def test_the_scanner_finds_ids_and_rare_values_but_not_common_numbers_or_counters(tmp_path: Path) -> None:
    shapes = PrivateShapes.of_operator(operator(tmp_path))
    ids = OpaqueIds.load_or_create(tmp_path / "ids.json", shapes.ids)
    scanner = LeakScanner(shapes, ids)
    assert shapes.distinctive_values() == {211, 1237, 389}  # 4096 is everywhere
    expected = [f"private shape id of {ids.opaque('t211_h1237')} in x"]
    assert scanner.scan("tuned for t211_h1237", "x") == expected
    assert scanner.scan("BLOCK = 4096; eps 1e-6; latency 211.5 us; sha 1237abc; x1237", "x") == []
    assert scanner.scan('{"tokens": {"input": 1237, "total": 211}}', "x") == []
    findings = scanner.scan("rows = 389  # the slow shape", "plans/p.md")
    assert findings == [f"a private shape value of {ids.opaque('t389_h4096')} in plans/p.md"]
    assert "389" not in " ".join(findings) and "t389" not in " ".join(findings)  # findings leak nothing
    public = LeakScanner(shapes, ids, public_text="development case: tokens 389")
    assert public.scan("rows = 389", "x") == []  # a number the public problem states is no leak
    assert scanner.scan("| 1 | PASS | 389,455.66 | 1,211.50 |", "report.md") == []  # a report's latencies
    assert scanner.scan("shapes [389,4096]", "x") != []
    assert scanner.scan("t211_h1237 special-cased", "x") != []
    assert LeakScanner(shapes, ids, public_text="see t211_h1237").scan("t211_h1237", "x") == []


def test_a_value_in_the_users_own_directory_names_is_no_leak_but_the_same_value_elsewhere_is(
    tmp_path: Path,
) -> None:
    shapes = PrivateShapes.of_operator(operator(tmp_path))
    ids = OpaqueIds.load_or_create(tmp_path / "ids.json", shapes.ids)
    workspace = tmp_path / "pytest-211" / "runs"  # pytest's numbering on a CI machine hit a private value
    scanner = LeakScanner(shapes, ids, public_paths=[str(workspace)])
    transcript = json.dumps({"cwd": f"{workspace}/c/e1", "prompt": f"edit {workspace}/c/kernel.py"})
    assert scanner.scan(transcript, "t.jsonl") == []
    assert LeakScanner(shapes, ids).scan(transcript, "t.jsonl") != []  # without the path it would read a leak
    assert scanner.scan(f"{workspace}/c/kernel.py: rows == 211", "t.jsonl") != []  # a leak beside it is found
    assert scanner.scan(f"{workspace}-1237/x", "t") != []  # a value added after the path is no part of it
    assert scanner.scan(f"{workspace}1237", "t") == []  # `runs1237` is one word, as it was without the path
    assert scanner.scan(f"{workspace}/t211_h1237", "t") != []  # ids are searched in the whole text


def test_the_audit_reads_every_git_object_even_unreachable_ones(tmp_path: Path) -> None:
    shapes = PrivateShapes.of_operator(operator(tmp_path))
    ids = OpaqueIds.load_or_create(tmp_path / "ids.json", shapes.ids)
    scanner = LeakScanner(shapes, ids)
    root = tmp_path / "ws"
    repo = git.Repo.init(root, initial_branch="main")
    (root / "kernel.py").write_text("print('clean')\n")
    repo.index.add(["kernel.py"])
    repo.index.commit("clean")
    assert audit_campaign(root, scanner) == []
    repo.git.checkout("-q", "-b", "episode/1")
    (root / "plans.md").write_text("special-case tokens == 211\n")
    repo.index.add(["plans.md"])
    leaked = repo.index.commit("tune").hexsha
    assert scanner.scan_commit(root, leaked)
    repo.git.checkout("-q", "main")
    repo.git.branch("-D", "episode/1")  # gone from every branch, still an object: still found
    found = audit_campaign(root, scanner)
    assert found and all("git blob" in f for f in found)


class RawWritingEvaluator:
    """Writes the harness's raw JSON where it is told, like the sandbox job's sync-back does."""

    def evaluate(self, sandbox, op_dir, kernel_dir, results_dir, *, private_shapes=False, **_):
        assert private_shapes  # the harness is always told to withhold
        results_dir.mkdir(parents=True)
        (results_dir / "result.json").write_text('{"id": "t211_h1237"}')
        return EvaluationResult(
            status="INFRA_ERROR", kernel_sha256="", device=DeviceInfo(name="cpu", arch="cpu"),
            timing_method="none", authoritative=False,
            message="OOM allocating [211, 1237] for t211_h1237",
            workloads=[WorkloadResult(id="t211_h1237", status="INFRA_ERROR")],
        )


def test_the_private_evaluator_keeps_raw_output_and_diagnostics_out_of_the_workspace(tmp_path: Path) -> None:
    ids = OpaqueIds.load_or_create(tmp_path / "private" / "ids.json", list(SHAPES))
    evaluator = PrivateEvaluator(RawWritingEvaluator(), ids, tmp_path / "private")
    results_dir = tmp_path / "ws" / "results" / "v0"
    result = evaluator.evaluate(None, tmp_path / "op", tmp_path / "kernel", results_dir, seeds=1)
    assert not results_dir.exists()  # the raw result.json went to a private scratch dir, now removed
    assert not (tmp_path / "private" / "jobs").exists() or not any((tmp_path / "private" / "jobs").iterdir())
    assert "t211" not in result.model_dump_json() and "1237" not in result.model_dump_json()
    assert "t211_h1237" in (tmp_path / "private" / "evaluator.log").read_text()  # for the operator
