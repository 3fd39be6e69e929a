"""The campaigns file `fleet submit` reads: operators × frameworks with their budgets.

TOML. `[defaults]` takes any setting of `python -m aka_graph run` (a `CampaignConfig` field, e.g.
`platform`, `agent_cli`, `max_iters`, `token_budget`); each `[[campaign]]` names an `op_dir`, optionally
`frameworks` (one campaign per framework; default: the `framework` setting), an optional `name` (the id
prefix; default: the operator's name), and overrides of any setting. Relative paths are relative to the
file. Each campaign gets its own workspace `<--workspace>/<id>/`, which every coordinator must see at the
same path (shared storage): the git workspace and its records stay on disk, as in a single campaign.

    [defaults]
    platform = "H200"
    agent_cli = "claude"
    max_iters = 10
    token_budget = 2_000_000

    [[campaign]]
    op_dir = "ops/rmsnorm"
    frameworks = ["triton", "cuda"]

    [[campaign]]
    op_dir = "ops/softmax"
    max_iters = 20
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aka_graph.state import CampaignConfig

PATH_SETTINGS = ("op_dir", "replay_script")
ENTRY_ONLY = ("frameworks", "name")


class CampaignsFileError(ValueError):
    """The campaigns file is unusable; the message says where and how to fix it."""


@dataclass(frozen=True)
class PlannedCampaign:
    id: str
    op_name: str
    framework: str
    config: CampaignConfig


def _op_name(op_dir: Path) -> str:
    from aka_graph.target import operator_identity

    return operator_identity(op_dir)[0]


def plan_campaigns(path: Path, workspace: Path) -> list[PlannedCampaign]:
    """Every campaign the file describes, checked as `run` would check its flags."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise CampaignsFileError(f"campaigns file {path} does not exist") from None
    except tomllib.TOMLDecodeError as e:
        raise CampaignsFileError(f"campaigns file {path} is not valid TOML: {e}") from None
    unknown = set(data) - {"defaults", "campaign"}
    if unknown:
        raise CampaignsFileError(
            f"{path}: unknown table(s) {sorted(unknown)}; use [defaults] and [[campaign]]"
        )
    entries = data.get("campaign", [])
    if not entries:
        raise CampaignsFileError(f"{path}: no [[campaign]] entries; add one with an op_dir")
    defaults = data.get("defaults", {})
    planned: list[PlannedCampaign] = []
    for number, entry in enumerate(entries, start=1):
        planned.extend(_expand(path, workspace, number, {**defaults, **entry}))
    ids = [p.id for p in planned]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CampaignsFileError(
            f"{path}: campaign ids {duplicates} repeat; give the entries distinct `name`s"
        )
    return planned


def _expand(path: Path, workspace: Path, number: int, entry: dict[str, Any]) -> list[PlannedCampaign]:
    where = f"{path}: campaign #{number}"
    settings = {k: v for k, v in entry.items() if k not in ENTRY_ONLY}
    if "op_dir" not in settings:
        raise CampaignsFileError(f"{where}: op_dir is missing (the operator directory to optimise)")
    for key in PATH_SETTINGS:
        if settings.get(key):
            settings[key] = str((path.parent / str(settings[key])).resolve())
    unknown = set(settings) - set(CampaignConfig.model_fields) - {"workspace"}
    if unknown:
        raise CampaignsFileError(
            f"{where}: unknown setting(s) {sorted(unknown)}; use `python -m aka_graph run` settings "
            "(e.g. max_iters, token_budget, platform) or frameworks/name"
        )
    if "workspace" in settings:
        raise CampaignsFileError(f"{where}: workspace is set by `fleet submit --workspace`, not per campaign")
    frameworks = entry.get("frameworks") or [settings.get("framework", "triton")]
    if isinstance(frameworks, str):
        frameworks = [frameworks]
    op_dir = Path(settings["op_dir"])
    try:
        op_name = _op_name(op_dir)
    except (OSError, ValueError) as e:
        raise CampaignsFileError(f"{where}: {e}") from None
    prefix = _safe(str(entry.get("name") or op_name))
    out = []
    for framework in frameworks:
        cid = f"{prefix}-{framework}"
        try:
            config = CampaignConfig(
                **{**settings, "framework": framework, "workspace": str(Path(workspace).resolve() / cid)}
            )
        except ValidationError as e:
            first = e.errors()[0]
            key = ".".join(str(p) for p in first["loc"]) or "settings"
            raise CampaignsFileError(f"{where} ({framework}): {key}: {first['msg']}") from None
        out.append(PlannedCampaign(cid, op_name, framework, config))
    return out


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "campaign"
