"""What the nodes need but the checkpoint must not hold: the sandbox, the agent backends, the evaluator.

It travels in LangGraph's runtime context (`invoke(..., context=CampaignContext(...))`). Embedded in a
parent graph or under `langgraph dev` there is no context, so `context_for` builds the default one from
the campaign settings — or from `AKA_GRAPH_CONTEXT_FACTORY=module:function` (a function taking the
`CampaignConfig`), which is how a server process gets test doubles or site-specific backends.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import PlainValidator, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

from aka_graph.cli_agents.base import AgentBackend
from aka_graph.state import CampaignConfig
from aka_graph.target import CampaignTarget
from aka_graph.tools.evaluator.evaluation import ComparisonResult
from aka_graph.tools.evaluator.evaluation_result import EvaluationResult
from aka_graph.tools.evaluator.sandbox.job import Sandbox
from aka_graph.tools.records.workspace import CampaignWorkspace

CONTEXT_FACTORY_ENV = "AKA_GRAPH_CONTEXT_FACTORY"


class Evaluator(Protocol):
    """Runs the harness through a sandbox (A1's `evaluate_kernel` / `compare_kernels`)."""

    def evaluate(
        self,
        sandbox: Sandbox,
        op_dir: Path,
        kernel_dir: Path,
        results_dir: Path,
        *,
        seeds: int,
        timeout_s: float,
        gpu_index: int | None,
        device: str,
    ) -> EvaluationResult: ...

    def compare(
        self,
        sandbox: Sandbox,
        op_dir: Path,
        kernels: dict[str, Path],
        results_dir: Path,
        *,
        pattern: str,
        repeats: int,
        seeds: int,
        timeout_s: float,
        gpu_index: int | None,
        device: str,
    ) -> ComparisonResult: ...


@dataclass(frozen=True)
class HarnessEvaluator:
    """The real evaluator: the coordinator-side functions that run the GPU-side harness in a sandbox job.

    `blob_root` (where workloads' safetensors blobs live), `all_workloads` (no CPU subset) and `warm` (a
    long-lived evaluator service) are the campaign's settings for every evaluation it makes, so they are
    fixed when the evaluator is built."""

    blob_root: Path | None = None
    all_workloads: bool = False
    warm: bool = False  # one evaluator service per operator for the campaign's evaluations (warm.py)

    def evaluate(
        self,
        sandbox: Sandbox,
        op_dir: Path,
        kernel_dir: Path,
        results_dir: Path,
        *,
        seeds: int,
        timeout_s: float,
        gpu_index: int | None,
        device: str,
        private_shapes: bool = False,
    ) -> EvaluationResult:
        from aka_graph.tools.evaluator.evaluation import evaluate_kernel

        return evaluate_kernel(
            sandbox,
            op_dir,
            kernel_dir,
            results_dir,
            seeds=seeds,
            timeout_s=timeout_s,
            gpu_index=gpu_index,
            device=device,
            private_shapes=private_shapes,  # production: the harness withholds its messages
            blob_root=self.blob_root,
            all_workloads=self.all_workloads,
            warm=self.warm,
        )

    def compare(
        self,
        sandbox: Sandbox,
        op_dir: Path,
        kernels: dict[str, Path],
        results_dir: Path,
        *,
        pattern: str,
        repeats: int,
        seeds: int,
        timeout_s: float,
        gpu_index: int | None,
        device: str,
        private_shapes: bool = False,
    ) -> ComparisonResult:
        from aka_graph.tools.evaluator.evaluation import compare_kernels

        return compare_kernels(
            sandbox,
            op_dir,
            kernels,
            results_dir,
            pattern=pattern,
            repeats=repeats,
            seeds=seeds,
            timeout_s=timeout_s,
            gpu_index=gpu_index,
            device=device,
            private_shapes=private_shapes,  # production: the harness withholds its messages
            blob_root=self.blob_root,
            all_workloads=self.all_workloads,
        )


AS_IS = PlainValidator(lambda value: value)
"""Runtime dependencies are typed for readers and checkers but passed through untouched: LangGraph builds
the context's pydantic schema (what Studio draws), and protocols such as `Sandbox` cannot be validated."""


@dataclass
class CampaignContext:
    """Runtime dependencies of one campaign (never checkpointed).

    Every field is optional so a server (`langgraph dev`) can build an empty one; `context_for` fills the
    missing dependencies from the campaign settings.
    """

    sandbox: Annotated[Sandbox | None, AS_IS, WithJsonSchema({"description": "where jobs run"})] = None
    agent: Annotated[AgentBackend | None, AS_IS, WithJsonSchema({"description": "the implementer"})] = None
    reviewers: Annotated[
        Mapping[str, AgentBackend], AS_IS, WithJsonSchema({"description": "reviewer agents by name"})
    ] = field(default_factory=dict)
    evaluator: Annotated[Evaluator | None, AS_IS, WithJsonSchema({"description": "runs the harness"})] = None
    sleep: Annotated[Callable[[float], None], SkipJsonSchema()] = time.sleep
    on_event: Annotated[Callable[[dict[str, Any]], None] | None, SkipJsonSchema()] = None
    skills_dir: Path | None = None
    # the campaign's identity, resolved once by whoever starts the graph (the runner); preprocess resolves
    # it itself when the graph runs embedded or under `langgraph dev`
    target: CampaignTarget | None = None
    _workspaces: Annotated[dict[str, Any], SkipJsonSchema()] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def complete(self) -> bool:
        return self.sandbox is not None and self.agent is not None and self.evaluator is not None

    def target_for(self, config: CampaignConfig) -> CampaignTarget:
        """The campaign's target: the one resolved already for these settings, else resolved now."""
        if self.target is None or not self.target.describes(config):
            from aka_graph.target import resolve_target

            self.target = resolve_target(config, self.sandbox)
        return self.target

    def workspace(self, root: str | Path) -> CampaignWorkspace:
        """The campaign workspace at `root` (created by preprocess), opened once per context."""
        key = str(root)
        if key not in self._workspaces:
            self._workspaces[key] = CampaignWorkspace.reopen(Path(root))
            if self.target is not None and self.target.op_format == "command":
                from aka_graph.tasks.campaign import configure_workspace

                configure_workspace(self._workspaces[key], self.target)
        return self._workspaces[key]

    def reviewer(self, name: str) -> AgentBackend:
        if name not in self.reviewers:
            from aka_graph.cli_agents.registry import make_backend

            self.reviewers = {**self.reviewers, name: make_backend(name)}
        return self.reviewers[name]


def default_skills_dir() -> Path | None:
    candidate = Path(__file__).resolve().parent.parent / "skills"
    return candidate if candidate.is_dir() else None


def build_default_context(config: CampaignConfig) -> CampaignContext:
    """The context a plain `run` uses: the configured sandbox, agent CLI and the real evaluator."""
    factory = os.environ.get(CONTEXT_FACTORY_ENV)
    if factory:
        module_name, _, attr = factory.partition(":")
        if not attr:
            raise ValueError(f"{CONTEXT_FACTORY_ENV}={factory!r}: use the form 'package.module:function'")
        return getattr(importlib.import_module(module_name), attr)(config)
    from aka_graph.cli_agents.registry import make_backend
    from aka_graph.tasks.evaluator import CommandTaskEvaluator
    from aka_graph.tasks.loader import is_command_task
    from aka_graph.tools.evaluator.sandbox.factory import SandboxSpec, make_sandbox

    if config.sandbox_ssh:
        spec = SandboxSpec(
            kind="ssh",
            ssh_target=config.sandbox_ssh,
            ssh_gpu=config.sandbox_ssh_gpu,
            ssh_init=config.sandbox_ssh_init,
        )
    else:
        spec = SandboxSpec(kind="local", gpu_index=config.gpu_index)
    replay = Path(config.replay_script) if config.replay_script else None
    return CampaignContext(
        sandbox=make_sandbox(spec),
        agent=make_backend(config.agent_cli, replay_script=replay),
        reviewers={name: make_backend(name, replay_script=replay) for name in config.reviewers},
        evaluator=CommandTaskEvaluator()
        if is_command_task(Path(config.op_dir))
        else HarnessEvaluator(
            blob_root=Path(config.blob_root).resolve() if config.blob_root else None,
            all_workloads=config.all_workloads,
            warm=config.warm_evaluator,
        ),
        skills_dir=default_skills_dir(),
    )


_DEFAULTS: dict[str, CampaignContext] = {}
_DEFAULTS_LOCK = threading.Lock()


def context_for(context: CampaignContext | None, config: CampaignConfig) -> CampaignContext:
    """The injected context, or the (cached) default one for these settings (also when one is partial)."""
    if context is not None and context.complete:
        return context
    key = config.model_dump_json()
    with _DEFAULTS_LOCK:
        if key not in _DEFAULTS:
            _DEFAULTS[key] = build_default_context(config)
        default = _DEFAULTS[key]
    if context is None:
        return default
    return CampaignContext(
        sandbox=context.sandbox or default.sandbox,
        agent=context.agent or default.agent,
        reviewers={**default.reviewers, **context.reviewers},
        evaluator=context.evaluator or default.evaluator,
        sleep=context.sleep,
        on_event=context.on_event or default.on_event,
        skills_dir=context.skills_dir or default.skills_dir,
        target=context.target,
    )
