"""`python -m aka_graph fleet ...`: user errors are one line and exit 2; submit/status/stop/resume/report
work against a real PostgreSQL (no coordinator needed for these)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from aka_graph.cli import app
from aka_graph.tools.records.ledger import DATABASE_URL_ENV

EXAMPLE = Path(__file__).resolve().parents[2] / "aka_graph" / "examples" / "vq_nearest_code"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["fleet", *args])
    return result.exit_code, result.output


def campaigns(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "campaigns.toml"
    path.write_text(body)
    return path


GOOD = f"""
[defaults]
platform = "cpu"
max_iters = 3
token_budget = 500000

[[campaign]]
op_dir = "{EXAMPLE}"
frameworks = ["triton", "gluon"]

[[campaign]]
op_dir = "{EXAMPLE}"
name = "vq-long"
max_iters = 9
"""


def test_user_errors_are_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    code, out = invoke("status")
    assert code == 2 and "pass --database-url" in out and DATABASE_URL_ENV in out
    bad = campaigns(tmp_path, f'[[campaign]]\nop_dir = "{EXAMPLE}"\nmax_iter = 3\n')
    code, out = invoke("submit", str(bad))
    assert code == 2 and "unknown setting(s) ['max_iter']" in out
    code, out = invoke("submit", str(campaigns(tmp_path, '[[campaign]]\nop_dir = "nowhere"\n')))
    assert code == 2 and "campaign #1" in out
    code, out = invoke("submit", str(campaigns(tmp_path, "[[campaign]\n")))
    assert code == 2 and "not valid TOML" in out
    dup = campaigns(tmp_path, f'[[campaign]]\nop_dir = "{EXAMPLE}"\n[[campaign]]\nop_dir = "{EXAMPLE}"\n')
    code, out = invoke("submit", str(dup), "--database-url", "postgresql://nobody@127.0.0.1:1/x")
    assert code == 2 and "repeat" in out and "distinct `name`s" in out
    code, out = invoke("status", "--database-url", "postgresql://nobody@127.0.0.1:1/x")
    assert code == 2 and "cannot connect" in out and len(out.strip().splitlines()) == 1
    code, out = invoke(
        "work", "--hosts", str(tmp_path / "missing.toml"), "--database-url", "postgresql://x@y/z"
    )
    assert code == 2 and "hosts file" in out and "does not exist" in out
    code, out = invoke("stop", "--database-url", "postgresql://x@y/z")
    assert code == 2 and "--all" in out


def test_submit_status_stop_resume_report(database_url: str, tmp_path: Path) -> None:
    path = campaigns(tmp_path, GOOD)
    code, out = invoke(
        "submit", str(path), "--workspace", str(tmp_path / "ws"), "--database-url", database_url
    )
    assert code == 0 and "submitted 3 campaign(s)" in out, out
    code, out = invoke(
        "submit", str(path), "--workspace", str(tmp_path / "ws"), "--database-url", database_url
    )
    assert code == 0 and "submitted 0" in out and "already submitted" in out
    code, out = invoke("status", "--database-url", database_url)
    ids = ["vq-long-triton", "vq_nearest_code_d64_k1024-gluon", "vq_nearest_code_d64_k1024-triton"]
    assert code == 0 and all(i in out for i in ids) and out.count("queued") == 3
    assert "0 tok (0%)" in out
    code, out = invoke("stop", "vq-long-triton", "--database-url", database_url)
    assert code == 0 and "vq-long-triton" in out
    code, out = invoke("status", "vq-long-triton", "--database-url", database_url)
    assert "stopped" in out and "queued" not in out
    code, out = invoke("resume", "--all", "--database-url", database_url)
    assert code == 0 and "queued 1 campaign(s): vq-long-triton" in out
    code, out = invoke("report", "--out", str(tmp_path / "report"), "--database-url", database_url)
    assert code == 0 and (tmp_path / "report" / "fleet_speedups.png").stat().st_size > 1000
    assert "vq-long-triton" in (tmp_path / "report" / "fleet_report.md").read_text()
