"""preprocess: validate the operator, resolve the GPU architecture, create or reopen the workspace.

An unknown platform or an unsupported framework is an error naming the choices — never a silent default.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.context import CampaignContext
from aka_graph.nodes._common import ctx_of, emit, update_live
from aka_graph.state import CampaignState
from aka_graph.tools.records.workspace import CampaignWorkspace


class OperatorError(ValueError):
    """The operator directory cannot be used; the message says why and what to pass instead."""


class UnsupportedFramework(ValueError):
    """The target GPU does not support the requested kernel framework."""


def operator_identity(op_dir: Path) -> tuple[str, str]:
    """(name, format) of an operator directory: SOL (definition.json) or native (reference.py)."""
    if not op_dir.is_dir():
        raise OperatorError(f"--op-dir {op_dir} is not a directory: pass an operator directory")
    if (op_dir / "definition.json").is_file():
        if not (op_dir / "workload.jsonl").is_file():
            raise OperatorError(f"{op_dir} has definition.json but no workload.jsonl: add the workloads")
        try:
            name = str(json.loads((op_dir / "definition.json").read_text()).get("name") or op_dir.name)
        except json.JSONDecodeError as e:
            raise OperatorError(f"{op_dir}/definition.json is not valid JSON: {e}") from e
        return _safe(name), "sol"
    if (op_dir / "reference.py").is_file() and (op_dir / "input.py").is_file():
        return _safe(op_dir.name), "native"
    raise OperatorError(
        f"{op_dir} is not an operator directory: expected SOL-ExecBench (definition.json + workload.jsonl) "
        "or native Atrex-Bench (reference.py + input.py + shapes.json)"
    )


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "op"


def detect_gpu(sandbox: Any, platform: str | None) -> str | None:
    """The GPU the sandbox's health probe sees (None on a CPU host). Without --platform, a failed probe
    is an error that carries the probe's own diagnostic, not a silent 'no GPU'."""
    from aka_graph.tools.evaluator.arch import UnknownPlatformError

    health = sandbox.health()
    if not health.healthy:
        if platform:
            return None  # the configured platform decides; evaluations will wait for the environment
        raise UnknownPlatformError(
            "the sandbox's health probe failed, so the GPU could not be detected; fix the environment "
            f"or pass --platform. Probe: {health.diagnostic.strip()[-600:]}"
        )
    detected = health.device.get("name")
    return None if not detected or detected.lower().startswith("cpu") else detected


def resolve_target(platform: str | None, detected_gpu: str | None) -> tuple[str, str, list[str], str]:
    """(platform label, arch, frameworks, gpu name) through A1's shared table."""
    from aka_graph.tools.evaluator.arch import frameworks_for, resolve_arch

    arch = resolve_arch(platform, detected_gpu)
    label = _safe(platform or arch.name)
    return label, arch.arch, list(frameworks_for(arch)), detected_gpu or arch.name


def preprocess(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    config = state.config
    op_dir = Path(config.op_dir).resolve()
    op_name, op_format = operator_identity(op_dir)
    detected = detect_gpu(ctx.sandbox, config.platform)
    platform, arch, frameworks, gpu_name = resolve_target(config.platform, detected)
    if config.framework not in frameworks:
        raise UnsupportedFramework(
            f"--framework {config.framework} is not supported on {platform} ({arch}): "
            f"choose one of {', '.join(frameworks)}"
        )
    production = config.optimization_mode == "production"
    ws = CampaignWorkspace.open_or_create(
        Path(config.workspace), op_name, config.framework, platform, production
    )
    install = ws.install_operator(op_dir, production)
    tokens = sessions = 0
    if "agent_problem.json" in install.missing:  # production, native, no public problem supplied
        from aka_graph.nodes.problem import derive_public_problem

        problem, tokens, sessions = derive_public_problem(ctx, config, ws, op_dir)
        ws.install_operator(op_dir, production, agent_problem=problem)
    if ctx.skills_dir is not None:
        from aka_graph.cli_agents.assets import install_workspace_assets

        install_workspace_assets(ws.root, ctx.skills_dir)
    update = {
        "workspace_root": str(ws.root),
        "op_name": op_name,
        "op_format": op_format,
        "platform": platform,
        "arch": arch,
        "gpu_name": gpu_name,
        "frameworks_available": frameworks,
        "episode_framework": config.framework,
    }
    update_live(ws, state.model_copy(update=update), "preprocess", f"campaign {ws.root.name} ready")
    emit(runtime, ctx, "preprocess", "ready", workspace=str(ws.root), platform=platform, arch=arch)
    return {**update, "tokens_spent": tokens, "agent_sessions": sessions}
