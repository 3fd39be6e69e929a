"""`python -m aka_graph run`: start a campaign, or resume it when the same command runs again.

With no `--op-dir` it runs the demo: the example operator shipped in `aka_graph/examples/`, the replay
agent backend and the local sandbox (Triton interpreter without a GPU), ending with its report.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from aka_graph.commands.config_options import (
    config_parameters,
    config_values,
    validation_problem,
    with_parameters,
)
from aka_graph.state import CampaignConfig

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO_SETTINGS = "demo.json"


def demo_operator() -> Path:
    """The example operator with a replay script (the demo's agent)."""
    found = sorted(p.parent for p in EXAMPLES.glob("*/replay.json")) if EXAMPLES.is_dir() else []
    if not found:
        raise fail(f"no example operator with replay.json under {EXAMPLES}: pass --op-dir")
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


EXIT_CODES = (
    "Exit status: 0 the campaign finished (or had finished); 2 bad input (one line naming the problem); "
    "3 stopped by `python -m aka_graph stop` or SIGTERM (run the same command, or `resume`, to continue); "
    "4 the campaign failed its privacy check (production: a private shape reached the agent's side; "
    "the report says where, no submission is written)."
)
EXIT_FAILED = 4
CLI_NOTES = {"op_dir": "Omit to run the demo campaign."}


def fail(message: str) -> typer.Exit:
    """A user error: one line on stderr, exit 2 (raise the returned exception)."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def build_config(explicit: dict[str, Any]) -> CampaignConfig:
    """The settings the user gave over the model's defaults (the demo's, when no --op-dir is given)."""
    values = dict(explicit)
    if values.get("op_dir") is None:
        example = demo_operator()
        values = {**demo_settings(example), **values}
        os.environ.setdefault("TRITON_INTERPRET", "1")
    try:
        return CampaignConfig(**values)
    except ValidationError as e:
        raise fail(validation_problem(e)) from e


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors that are the user's input or environment (printed as one line naming the fix, exit 2)."""
    from aka_graph.cli_agents.base import AgentNotReady
    from aka_graph.cli_agents.registry import UnknownBackend
    from aka_graph.nodes.problem import ProblemDerivationError
    from aka_graph.runner import CampaignConflict
    from aka_graph.target import OperatorError, UnsupportedFramework
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
        UnknownBackend,
    )


def run_command(quiet: bool = False, **given: Any) -> None:
    """Run an optimization campaign (re-running the same command resumes it).

    Every option is a campaign setting (`CampaignConfig` in aka_graph/state.py); the sandbox host and GPU
    (--sandbox-ssh*, --gpu-index) may change between runs of one campaign.
    """
    from aka_graph.context import CampaignContext
    from aka_graph.progress import Progress
    from aka_graph.runner import framework_targets, run_campaign, run_campaigns

    explicit = config_values(given)
    config = build_config(explicit)
    demo, framework_given = "op_dir" not in explicit, "framework" in explicit
    try:
        targets = framework_targets(config) if not framework_given and not demo else []
        fws = [t.framework for t in targets]
        if len(fws) > 1:
            # no --framework: one campaign per framework the target supports, run concurrently
            configs = [config.model_copy(update={"framework": f}) for f in fws]
            outcomes = run_campaigns(configs, quiet, targets)
            for each in outcomes:
                print_outcome(each.values, each.status)
            print_comparison(config, fws, outcomes)
            if any(each.status == "failed" for each in outcomes):
                raise typer.Exit(EXIT_FAILED)
            if any(each.status == "stopped" for each in outcomes):
                raise typer.Exit(3)
            return
        seeded = None
        if targets:
            config = config.model_copy(update={"framework": fws[0]})
            seeded = CampaignContext(target=targets[0])
        outcome = run_campaign(config, seeded, progress=Progress.for_terminal(quiet))
    except user_errors() as e:
        raise fail(str(e)) from e
    print_outcome(outcome.values, outcome.status)
    report = outcome.values.get("report_path")
    if demo and report and Path(report).is_file():  # the demo ends by showing its report
        typer.echo("\n" + Path(report).read_text())
    if outcome.status == "stopped":
        raise typer.Exit(3)
    if outcome.status == "failed" or outcome.values.get("failed"):
        raise typer.Exit(EXIT_FAILED)


def register(app: typer.Typer) -> None:
    quiet = inspect.Parameter(
        "quiet",
        inspect.Parameter.KEYWORD_ONLY,
        default=False,
        annotation=Annotated[bool, typer.Option(help="No progress output.")],
    )
    command = with_parameters(run_command, [*config_parameters(CLI_NOTES), quiet])
    app.command("run", epilog=EXIT_CODES)(command)


def print_comparison(config: Any, frameworks: list[str], outcomes: list[Any]) -> None:
    """The per-framework campaigns side by side (`frameworks.md` beside their directories)."""
    from aka_graph.tools.records.framework_comparison import write_comparison

    campaigns = [(f, Path(o.values["workspace_root"])) for f, o in zip(frameworks, outcomes, strict=True)
                 if o.values.get("workspace_root")]
    if campaigns:
        path = write_comparison(Path(config.workspace), campaigns)
        typer.echo(f"\n{path.read_text()}frameworks compared: {path}")


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
    if values.get("failed"):
        typer.echo(f"FAILED: {values['failed']}")
