"""Sandbox overhead per job: what a ~0 s job (`true`) costs end to end through each sandbox.

Rows: a bare `subprocess.run(["true"])` (the floor), LocalSandbox without isolation, LocalSandbox with
bubblewrap, a bare command over an open asyncssh connection to a loopback sshd (the host's own
exec cost: sshd + the login shell), and SshSandbox on that loopback sshd (bubblewrap on the host).
Each row: median and p90 over N jobs after one warm-up (the SSH connection and preflight are set up
by the warm-up, as in a campaign, where one connection serves every job). Goal: <= 0.3 s added.

    python benchmarks/bench_sandbox.py [--jobs 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aka_graph.tools.evaluator.sandbox.job import SandboxJob, SandboxResult  # noqa: E402
from aka_graph.tools.evaluator.sandbox.local import LocalSandbox  # noqa: E402
from aka_graph.tools.evaluator.sandbox.ssh import SshSandbox  # noqa: E402

GOAL_S = 0.3


def timed(fn: Callable[[], object], jobs: int) -> list[float]:
    fn()  # warm-up: connection, preflight, page cache
    samples = []
    for _ in range(jobs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def checked(result: SandboxResult) -> SandboxResult:
    if result.exit_code != 0:
        raise SystemExit(f"benchmark job failed: {result}")
    return result


def p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def versions() -> str:
    bwrap = subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip()
    sshd = (
        subprocess.run(["/usr/sbin/sshd", "-V"], capture_output=True, text=True).stderr.strip().split(",")[0]
    )
    import asyncssh

    return f"Python {platform.python_version()}, {bwrap}, {sshd}, asyncssh {asyncssh.__version__}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from tests.tools.evaluator.sandbox.conftest import python_runtime_binds, start_sshd

    work = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    smi = work / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho '0, GPU-00000000-0000-0000-0000-000000000000, 00000000:19:00.0'\n")
    smi.chmod(0o755)
    sshd = start_sshd(work)
    job = SandboxJob(argv=["true"], timeout_s=30)
    rows: dict[str, list[float]] = {}
    try:
        rows["bare subprocess `true` (floor)"] = timed(
            lambda: subprocess.run(["true"], check=True), args.jobs
        )
        for isolation in ("none", "bwrap"):
            local = LocalSandbox(isolation=isolation)  # type: ignore[arg-type]
            rows[f"LocalSandbox isolation={isolation}"] = timed(
                lambda s=local: checked(s.run(job, work / "r")), args.jobs
            )

        async def bare_exec() -> list[float]:
            import asyncssh

            async with asyncssh.connect("aka-test-host", config=[str(sshd.ssh_config)]) as conn:
                await conn.run("true")
                samples = []
                for _ in range(args.jobs):
                    start = time.perf_counter()
                    await conn.run("true", check=True)
                    samples.append(time.perf_counter() - start)
                return samples

        rows["asyncssh exec `true`, open connection (host floor)"] = asyncio.run(bare_exec())
        remote = SshSandbox(
            "aka-test-host",
            0,
            ssh_config=sshd.ssh_config,
            nvidia_smi=str(smi),
            runtime_binds=python_runtime_binds(),
            cleanup_queue=work / "queue.json",
        )
        with remote:
            rows["SshSandbox loopback, bwrap on host"] = timed(
                lambda: checked(remote.run(job, work / "r")), args.jobs
            )
    finally:
        sshd.stop()

    print(f"\nSandbox overhead per ~0 s job ({args.jobs} jobs each after a warm-up); {versions()}")
    print(
        f"machine: {platform.node()} {platform.machine()}, {platform.processor() or 'cpu'}, "
        f"{subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores\n"
    )
    print(f"| {'path':<52} | median s | p90 s | goal <= {GOAL_S} s |")
    print(f"| {'-' * 52} | -------: | ----: | :----------: |")
    results = {}
    for name, samples in rows.items():
        med, tail = statistics.median(samples), p90(samples)
        results[name] = {"median_s": med, "p90_s": tail, "samples": samples}
        verdict = "(floor)" if "floor" in name else ("yes" if med <= GOAL_S else "NO")
        print(f"| {name:<52} | {med:8.3f} | {tail:5.3f} | {verdict:^12} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
