"""`run`'s options, generated from `CampaignConfig`: one option per field, with the field's type, its
`description` as help and its default shown from the model — the model is the one place a setting, its
default and its meaning are written, so every field can be set and `--help` cannot disagree with it.

A field's flag is `--<name-with-dashes>`, or the `cli` key of its `json_schema_extra` (`reviewers` is the
repeatable `--reviewer`). Every option defaults to None ("not given"), so only what the user typed
overrides the model's (or the demo's) defaults.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Annotated, Any, Union, get_args, get_origin

import typer
from pydantic import ValidationError
from pydantic.fields import FieldInfo

from aka_graph.state import CampaignConfig


def flag(name: str, info: FieldInfo | None = None) -> str:
    """The command-line flag of a config field."""
    info = info or CampaignConfig.model_fields[name]
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    return str(extra.get("cli") or "--" + name.replace("_", "-"))


def _without_none(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        return rest[0] if len(rest) == 1 else annotation
    return annotation


def _default_text(info: FieldInfo) -> str | None:
    if info.is_required():
        return None
    default = info.get_default(call_default_factory=True)
    if default is None or default == []:
        return None
    return str(default)


def _option(name: str, info: FieldInfo, note: str) -> tuple[Any, typer.models.OptionInfo]:
    """(Python type of the option, its typer.Option) for one field."""
    annotation = _without_none(info.annotation)
    help_text = " ".join(part for part in (info.description or "", note) if part)
    default = _default_text(info)
    if default is not None:
        help_text += f" (default: {default})"
    return annotation, typer.Option(flag(name, info), help=help_text)


def config_parameters(notes: dict[str, str] | None = None) -> list[inspect.Parameter]:
    """One keyword parameter per `CampaignConfig` field, annotated for Typer; `notes` adds CLI-only help."""
    notes = notes or {}
    params = []
    for name, info in CampaignConfig.model_fields.items():
        kind, option = _option(name, info, notes.get(name, ""))
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[kind | None, option],  # type: ignore[valid-type]
            )
        )
    return params


def with_parameters(function: Callable[..., Any], params: list[inspect.Parameter]) -> Callable[..., Any]:
    """Give `function(**values)` the signature Typer reads its options from."""
    function.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    function.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    return function


def config_values(values: dict[str, Any]) -> dict[str, Any]:
    """The config fields the user gave (None = not given), out of a command's keyword arguments."""
    fields = CampaignConfig.model_fields
    return {k: v for k, v in values.items() if k in fields and v is not None and v != []}


def validation_problem(error: ValidationError) -> str:
    """A pydantic error as one line naming each flag and what is wrong with it."""
    problems = []
    for err in error.errors():
        name = str(err["loc"][0]) if err["loc"] else ""
        where = flag(name) if name in CampaignConfig.model_fields else name or "settings"
        problems.append(f"{where}: {err['msg']}")
    return "; ".join(problems)
