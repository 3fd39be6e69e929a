"""The campaign's identity, resolved once: which operator (name and format), on which target (platform,
GPU architecture, the frameworks it supports), and so which campaign directory.

Everything that asks "what is this operator?" or "what GPU is this?" asks here. The runner resolves the
target before the graph starts (it needs the campaign directory name for the checkpoint thread) and hands
it to the graph in the runtime context; `preprocess` records it in the state; no node re-derives it. The
GPU is detected with one health probe per sandbox, however many campaigns or commands ask.
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

OperatorFormat = Literal["sol", "native", "command"]  # command: a kernel inside a source tree

# The files that make an operator of each format. Everything that copies, uploads or checks an operator's
# files reads these lists.
SOL_FILES = ("definition.json", "workload.jsonl")
NATIVE_CODE_FILES = ("reference.py", "input.py")
NATIVE_SHAPES_FILE = "shapes.json"
AGENT_PROBLEM_FILE = "agent_problem.json"
HIDDEN_OPERATOR_FILES = ("metadata.json", "roofline.json")  # never leave the operator's directory


class OperatorError(ValueError):
    """The operator directory cannot be used; the message says why and what to pass instead."""


class UnsupportedFramework(ValueError):
    """The target GPU does not support the requested kernel framework."""


def safe_name(name: str) -> str:
    """A name usable in a directory name and a git branch."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "op"


def campaign_dir_name(op_name: str, framework: str, platform: str, production: bool) -> str:
    for label, value in (("op_name", op_name), ("framework", framework), ("platform", platform)):
        if not value or "/" in value or value.startswith("."):
            raise OperatorError(f"invalid {label} {value!r}: use a plain name without '/' or leading '.'")
    return f"kernel_opt_{op_name}_{framework}_{platform}" + ("_production" if production else "")


def operator_format(op_dir: Path) -> OperatorFormat:
    """SOL-ExecBench (definition.json + workload.jsonl), native Atrex-Bench (reference.py + input.py), or
    a command task (a task .toml file, or a directory with aka_task.toml: aka_graph/tasks/)."""
    from aka_graph.tasks.loader import is_command_task

    op_dir = Path(op_dir)
    if is_command_task(op_dir):
        return "command"
    if not op_dir.is_dir():
        raise OperatorError(f"--op-dir {op_dir} is not a directory: pass an operator directory")
    if (op_dir / SOL_FILES[0]).is_file():
        if not (op_dir / SOL_FILES[1]).is_file():
            raise OperatorError(f"{op_dir} has definition.json but no workload.jsonl: add the workloads")
        return "sol"
    if all((op_dir / name).is_file() for name in NATIVE_CODE_FILES):
        return "native"
    raise OperatorError(
        f"{op_dir} is not an operator directory: expected SOL-ExecBench (definition.json + workload.jsonl) "
        "or native Atrex-Bench (reference.py + input.py + shapes.json)"
    )


def operator_identity(op_dir: Path) -> tuple[str, OperatorFormat]:
    """(name, format) of an operator directory; a SOL problem is named by its definition."""
    op_dir = Path(op_dir)
    fmt = operator_format(op_dir)
    if fmt == "sol":
        try:
            definition = json.loads((op_dir / SOL_FILES[0]).read_text())
        except json.JSONDecodeError as e:
            raise OperatorError(f"{op_dir}/definition.json is not valid JSON: {e}") from e
        if not isinstance(definition, dict):
            raise OperatorError(f"{op_dir}/definition.json must hold a JSON object with a 'name'")
        return safe_name(str(definition.get("name") or op_dir.name)), fmt
    if fmt == "command":
        from aka_graph.tasks.loader import TaskFileError, load_task

        try:
            return safe_name(load_task(op_dir).name), fmt
        except TaskFileError as e:
            raise OperatorError(str(e)) from e
    return safe_name(op_dir.name), fmt


_PROBES: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_PROBES_LOCK = threading.Lock()


def probe_health(sandbox: Any) -> Any:
    """The sandbox's health probe, run once per sandbox object (later callers get the same answer)."""
    with _PROBES_LOCK:
        try:
            cached = _PROBES.get(sandbox)
        except TypeError:  # not weak-referenceable: probe every time
            return sandbox.health()
        if cached is None:
            cached = sandbox.health()
            if cached.healthy:  # a failed probe is not remembered: the environment may recover
                _PROBES[sandbox] = cached
        return cached


def detect_gpu(sandbox: Any, platform: str | None) -> str | None:
    """The GPU the sandbox's health probe sees (None on a CPU host). Without --platform, a failed probe
    is an error that carries the probe's own diagnostic, not a silent 'no GPU'."""
    from aka_graph.tools.evaluator.arch import UnknownPlatformError

    health = probe_health(sandbox)
    if not health.healthy:
        if platform:
            return None  # the configured platform decides; evaluations will wait for the environment
        raise UnknownPlatformError(
            "the sandbox's health probe failed, so the GPU could not be detected; fix the environment "
            f"or pass --platform. Probe: {health.diagnostic.strip()[-600:]}"
        )
    detected = health.device.get("name")
    return None if not detected or detected.lower().startswith("cpu") else detected


class CampaignTarget(BaseModel):
    """What one campaign optimises, and where: resolved once, then read by everyone."""

    model_config = ConfigDict(frozen=True)

    op_dir: str
    op_name: str
    op_format: OperatorFormat
    platform: str  # the label in the campaign directory name (the configured platform, or the arch)
    arch: str
    frameworks: tuple[str, ...]
    framework: str
    production: bool

    def describes(self, config: Any) -> bool:
        """Whether this target was resolved from settings naming the same campaign as `config`."""
        return (
            self.op_dir == str(Path(config.op_dir).resolve())
            and self.framework == config.framework
            and self.production == (config.optimization_mode == "production")
            and (config.platform is None or self.platform == safe_name(config.platform))
        )

    @property
    def dir_name(self) -> str:
        return campaign_dir_name(self.op_name, self.framework, self.platform, self.production)


def resolve_platform(platform: str | None, detected_gpu: str | None) -> tuple[str, str, tuple[str, ...]]:
    """(platform label, arch, frameworks) through the shared architecture table."""
    from aka_graph.tools.evaluator.arch import frameworks_for, resolve_arch

    arch = resolve_arch(platform, detected_gpu)
    return safe_name(platform or arch.name), arch.arch, tuple(frameworks_for(arch))


def check_operator(op_dir: Path, op_format: str) -> Any:
    """Load the operator as the evaluator will (torch-free), so a malformed one is the user's error before
    the campaign starts, with the file, the problem and the fix, not an INFRA_ERROR at V0. Returns the
    harness's operator model (None for a command task, which its own loader checked)."""
    if op_format not in ("sol", "native"):
        return None
    from aka_graph.tools.evaluator.harness.loading import load_operator
    from aka_graph.tools.evaluator.harness.opmodel import OperatorError as HarnessOperatorError

    try:
        return load_operator(Path(op_dir))
    except HarnessOperatorError as e:
        raise OperatorError(str(e)) from e


def resolve_target(config: Any, sandbox: Any, *, check_framework: bool = True) -> CampaignTarget:
    """The campaign `config` (a CampaignConfig) describes, on the GPU `sandbox` reaches."""
    op_dir = Path(config.op_dir).resolve()
    op_name, op_format = operator_identity(op_dir)
    check_operator(op_dir, op_format)
    platform, arch, frameworks = resolve_platform(config.platform, detect_gpu(sandbox, config.platform))
    if check_framework and config.framework not in frameworks:
        raise UnsupportedFramework(
            f"--framework {config.framework} is not supported on {platform} ({arch}): "
            f"choose one of {', '.join(frameworks)}"
        )
    return CampaignTarget(
        op_dir=str(op_dir),
        op_name=op_name,
        op_format=op_format,
        platform=platform,
        arch=arch,
        frameworks=frameworks,
        framework=config.framework,
        production=config.optimization_mode == "production",
    )
