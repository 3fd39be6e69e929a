"""`python -m aka_graph run`: start a campaign, or resume it when the same command runs again.

With no `--op-dir` it runs the demo: the example operator shipped in `aka_graph/examples/`, the replay
agent backend and the local sandbox (Triton interpreter without a GPU), ending with its report.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from aka_graph.state import CampaignConfig

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO_SETTINGS = "demo.json"


def demo_operator() -> Path:
    """The example operator with a replay script (the demo's agent)."""
    found = sorted(p.parent for p in EXAMPLES.glob("*/replay.json")) if EXAMPLES.is_dir() else []
    if not found:
        raise typer.BadParameter(f"no example operator with replay.json under {EXAMPLES}: pass --op-dir")
    return found[0]


def demo_settings(example: Path) -> dict[str, Any]:
    """Campaign settings of the demo: the example's demo.json (if any) over these defaults."""
    settings: dict[str, Any] = {
        "op_dir": str(example / "op") if (example / "op").is_dir() else str(example),
        "agent_cli": "replay",
        "replay_script": str(example / "replay.json"),
        "max_iters": 2,
        "fast_episodes": 1,
        "fast_trials": 2,
        "seeds": 1,
        "verify_repeats": 2,
        "environment_poll_interval": 2.0,
    }
    if not Path("/dev/nvidiactl").exists():  # no GPU: the Triton interpreter on the CPU, said explicitly
        settings["platform"] = "cpu"
    if (example / DEMO_SETTINGS).is_file():
        settings.update(json.loads((example / DEMO_SETTINGS).read_text()))
    return settings


def build_config(explicit: dict[str, Any], op_dir: Path | None) -> CampaignConfig:
    values = {k: v for k, v in explicit.items() if v is not None}
    if op_dir is None:
        example = demo_operator()
        values = {**demo_settings(example), **values}
        os.environ.setdefault("TRITON_INTERPRET", "1")
    else:
        values["op_dir"] = str(op_dir)
    try:
        return CampaignConfig(**values)
    except ValidationError as e:
        problems = "; ".join(
            f"--{'-'.join(str(p) for p in err['loc']).replace('_', '-')}: {err['msg']}" for err in e.errors()
        )
        raise typer.BadParameter(problems) from e


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors that are the user's input or environment (printed as one line naming the fix, exit 2)."""
    from aka_graph.cli_agents.base import AgentNotReady
    from aka_graph.nodes.preprocess import OperatorError, UnsupportedFramework
    from aka_graph.nodes.problem import ProblemDerivationError
    from aka_graph.runner import CampaignConflict
    from aka_graph.tools.evaluator.arch import UnknownPlatformError
    from aka_graph.tools.records.workspace import WorkspaceError

    return (
        CampaignConflict,
        OperatorError,
        UnknownPlatformError,
        WorkspaceError,
        ProblemDerivationError,
        AgentNotReady,
        UnsupportedFramework,
    )


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(
        op_dir: Annotated[
            Path | None,
            typer.Option(
                help="Operator directory: SOL-ExecBench (definition.json + "
                "workload.jsonl) or native (reference.py, input.py, "
                "shapes.json). Omit to run the demo campaign."
            ),
        ] = None,
        platform: Annotated[
            str | None,
            typer.Option(
                help="Logical target GPU, e.g. H200. Real hardware is "
                "detected first; an unknown name is an error."
            ),
        ] = None,
        framework: Annotated[
            str | None,
            typer.Option(
                help="triton, gluon, cute_dsl or cuda. Omit: one campaign per framework the target "
                "GPU supports, run concurrently (CPU/interpreter: triton)."
            ),
        ] = None,
        agent_cli: Annotated[str | None, typer.Option(help="claude, codex, qoder, pi or replay.")] = None,
        replay_script: Annotated[Path | None, typer.Option(help="Script of the replay backend.")] = None,
        reviewer: Annotated[
            list[str] | None,
            typer.Option(
                help="Reviewer CLI for full episodes (repeatable: one parallel review per reviewer)."
            ),
        ] = None,
        optimization_mode: Annotated[
            str | None,
            typer.Option(help="leaderboard (default) or production (private shapes, policy review, V1)."),
        ] = None,
        max_iters: Annotated[int | None, typer.Option(help="Episodes to run at most (default 10).")] = None,
        token_budget: Annotated[
            int | None,
            typer.Option(
                help="Stop once every agent session together (reviewers, "
                "retries, handoff resumes) spent this many "
                "tokens."
            ),
        ] = None,
        max_stall: Annotated[
            int | None,
            typer.Option(help="Stop after this many episodes in a row without a promotion (default 5)."),
        ] = None,
        target_util: Annotated[
            float | None,
            typer.Option(help="Stop once the incumbent reaches this utilization in % of the speed of light."),
        ] = None,
        fast_episodes: Annotated[
            int | None, typer.Option(help="First N episodes are fast (default 2).")
        ] = None,
        fast_trials: Annotated[
            int | None,
            typer.Option(
                help="Plan-implement-evaluate rounds per fast episode "
                "(default 5); the campaign keeps the best."
            ),
        ] = None,
        convert_after: Annotated[
            int | None,
            typer.Option(
                help="Stalls before a Triton campaign converts to Gluon (default 3; parity within 5% passes)."
            ),
        ] = None,
        verify_repeats: Annotated[
            int | None, typer.Option(help="ABBA repeats in full-episode verification (default 2).")
        ] = None,
        min_improvement_pct: Annotated[
            float | None,
            typer.Option(
                help="Promote only above this improvement in % (default 1), one-sided test over the repeats."
            ),
        ] = None,
        regression_guard_pct: Annotated[
            float | None, typer.Option(help="Reject when any shape regresses more than this % (default 5).")
        ] = None,
        v1: Annotated[
            str | None,
            typer.Option(help="Framework-native V1 before episodes: auto (production only), always, never."),
        ] = None,
        handoff_resumes: Annotated[
            int | None,
            typer.Option(help="Resumes of an agent session that ended without its deliverable (default 2)."),
        ] = None,
        seeds: Annotated[
            int | None, typer.Option(help="Correctness seeds per evaluation (default 3).")
        ] = None,
        sandbox_ssh: Annotated[
            str | None, typer.Option(help="Run GPU jobs on user@host over SSH (default: local sandbox).")
        ] = None,
        sandbox_ssh_gpu: Annotated[int | None, typer.Option(help="GPU index on the SSH host.")] = None,
        sandbox_ssh_init: Annotated[
            str | None,
            typer.Option(help="Shell command run before each remote job (e.g. activate an environment)."),
        ] = None,
        gpu_index: Annotated[int | None, typer.Option(help="GPU index of the local sandbox.")] = None,
        workspace: Annotated[
            Path,
            typer.Option(
                help="Parent of checkpoints/ and of the campaign directory "
                "kernel_opt_<op>_<framework>_<platform>."
            ),
        ] = Path("."),
        environment_poll_interval: Annotated[
            float | None, typer.Option(help="Seconds between health probes while the environment is down.")
        ] = None,
        agent_timeout_s: Annotated[
            float | None, typer.Option(help="Wall-clock limit of one agent turn.")
        ] = None,
        quiet: Annotated[bool, typer.Option(help="No progress output.")] = False,
    ) -> None:
        """Run an optimization campaign (re-running the same command resumes it)."""
        from aka_graph.progress import Progress
        from aka_graph.runner import available_frameworks, run_campaign, run_campaigns

        explicit = dict(
            platform=platform,
            framework=framework,
            agent_cli=agent_cli,
            replay_script=str(replay_script) if replay_script else None,
            reviewers=reviewer or None,
            optimization_mode=optimization_mode,
            max_iters=max_iters,
            token_budget=token_budget,
            max_stall=max_stall,
            target_util=target_util,
            fast_episodes=fast_episodes,
            fast_trials=fast_trials,
            convert_after=convert_after,
            verify_repeats=verify_repeats,
            min_improvement_pct=min_improvement_pct,
            regression_guard_pct=regression_guard_pct,
            v1=v1,
            handoff_resumes=handoff_resumes,
            seeds=seeds,
            sandbox_ssh=sandbox_ssh,
            sandbox_ssh_gpu=sandbox_ssh_gpu,
            sandbox_ssh_init=sandbox_ssh_init,
            gpu_index=gpu_index,
            workspace=str(workspace),
            environment_poll_interval=environment_poll_interval,
            agent_timeout_s=agent_timeout_s,
        )
        config = build_config(explicit, op_dir)
        USER_ERRORS = user_errors()
        try:
            if framework is None and op_dir is not None and len(fws := available_frameworks(config)) > 1:
                # no --framework: one campaign per framework the target supports, run concurrently
                outcomes = run_campaigns([config.model_copy(update={"framework": f}) for f in fws], quiet)
                for each in outcomes:
                    print_outcome(each.values, each.status)
                if any(each.status == "stopped" for each in outcomes):
                    raise typer.Exit(3)
                return
            if framework is None and op_dir is not None:
                config = config.model_copy(update={"framework": available_frameworks(config)[0]})
            outcome = run_campaign(config, progress=Progress.for_terminal(quiet))
        except USER_ERRORS as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from e
        print_outcome(outcome.values, outcome.status)
        report = outcome.values.get("report_path")
        if op_dir is None and report and Path(report).is_file():  # the demo ends by showing its report
            typer.echo("\n" + Path(report).read_text())
        if outcome.status == "stopped":
            raise typer.Exit(3)


def print_outcome(values: dict[str, Any], status: str) -> None:
    inc = values.get("incumbent")
    typer.echo(f"campaign {status}: {values.get('stop_reason') or '-'}")
    typer.echo(f"workspace: {values.get('workspace_root')}")
    if inc is not None:
        typer.echo(f"incumbent: v{inc.version} objective={inc.objective} commit={inc.commit[:12]}")
    if values.get("report_path"):
        typer.echo(f"report: {values['report_path']}")
    if values.get("submission_path"):
        typer.echo(f"submission: {values['submission_path']}")
