"""Regenerate `recordings/`: real CLI stdout streams captured against the fake model server.

Run from the repository root: `python -m tests.cli_agents.record_streams`. Each scenario's raw stdout
is copied with the temporary paths replaced by `/workspace`, plus a `.expected.json` with the tokens the
server charged, so the parser tests check recorded streams against numbers from outside the parser.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.cli_agents.conftest import KERNEL, SERVER, FakeServer, agent_run, make_cli_backend
from tests.cli_agents.test_real_clis import sent_tokens

OUT = Path(__file__).with_name("recordings")
SCENARIOS = {
    "claude": ["edit", "resume", "error"],
    "codex": ["edit", "resume", "error"],
    "pi": ["edit", "resume", "error"],
}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        log_path, port_file = tmp / "requests.jsonl", tmp / "port"
        log_path.touch()
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), "--log", str(log_path), "--port-file", str(port_file)]
        )
        try:
            while not port_file.exists():
                time.sleep(0.05)
            server = FakeServer(int(port_file.read_text()), log_path, [], False, "recording")
            for cli, scenarios in SCENARIOS.items():
                ws = tmp / cli / "ws"
                ws.mkdir(parents=True)
                (ws / "kernel.py").write_text(KERNEL)
                backend = make_cli_backend(cli, server, tmp / cli / "home")
                session = None
                for scenario in scenarios:
                    task = {"resume": "answer"}.get(scenario, scenario)
                    run, run_id = agent_run(ws, task, resume=session if scenario == "resume" else None)
                    result = backend.run(run)
                    session = result.session_id if scenario == "edit" else session
                    text = result.transcript_path.read_text().replace(str(tmp), "/workspace")
                    (OUT / f"{cli}_{scenario}.jsonl").write_text(text)
                    expected = {
                        "session_id": result.session_id,
                        "failed": result.failed,
                        "final_text": result.final_text,
                        "server_tokens": sent_tokens(server, run_id).model_dump()
                        if not result.failed
                        else None,
                    }
                    (OUT / f"{cli}_{scenario}.expected.json").write_text(
                        json.dumps(expected, indent=2) + "\n"
                    )
                    print(cli, scenario, "ok" if result.ok else f"failed: {result.error[:80]}")
        finally:
            proc.kill()


if __name__ == "__main__":
    main()
