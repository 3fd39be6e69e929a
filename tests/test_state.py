"""The state holds paths and numbers, merges review branches without duplicates, and rejects bad settings."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from aka_graph.state import CampaignConfig, CampaignState, ReviewNote, merge_reviews


def note(episode: int, reviewer: str, tokens: int = 1) -> ReviewNote:
    return ReviewNote(
        episode=episode, reviewer=reviewer, notes_path=f"/n/{reviewer}.md", ok=True, tokens=tokens
    )


def test_review_reducer_replaces_a_rerun_branch_instead_of_duplicating_it() -> None:
    merged = merge_reviews({"e1:codex": note(1, "codex", 1)}, {"e1:codex": note(1, "codex", 7)})
    assert list(merged) == ["e1:codex"] and merged["e1:codex"].tokens == 7


def test_review_reducer_keeps_branches_of_other_reviewers_and_episodes() -> None:
    merged = merge_reviews({"e1:codex": note(1, "codex")}, {"e2:pi": note(2, "pi")})
    assert set(merged) == {"e1:codex", "e2:pi"}


def test_config_is_frozen_so_a_resumed_campaign_keeps_its_settings() -> None:
    config = CampaignConfig(op_dir="/op")
    with pytest.raises(ValidationError):
        config.max_iters = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_iters", -1),
        ("fast_trials", 0),
        ("verify_repeats", 0),
        ("environment_poll_interval", 0),
        ("optimization_mode", "fastest"),
        ("v1", "sometimes"),
        ("unknown_flag", 1),
    ],
)
def test_bad_settings_are_rejected_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match=field):
        CampaignConfig(op_dir="/op", **{field: value})


def test_empty_op_dir_names_the_flag() -> None:
    with pytest.raises(ValidationError, match="--op-dir"):
        CampaignConfig(op_dir="")


def test_state_round_trips_through_json_with_paths_and_numbers_only() -> None:
    state = CampaignState(config=CampaignConfig(op_dir="/op"), tokens_spent=5, reviews={"e1:a": note(1, "a")})
    again = CampaignState.model_validate_json(state.model_dump_json())
    assert again == state
    assert len(state.model_dump_json()) < 4000


def test_where_a_campaign_runs_is_not_part_of_what_it_is() -> None:
    """Moving a campaign to another GPU host or GPU keeps its identity; every other setting changes it."""
    infra = CampaignConfig.infrastructure_fields()
    assert {"sandbox_ssh", "sandbox_ssh_gpu", "sandbox_ssh_init", "gpu_index"} <= infra
    assert infra == {"sandbox_ssh", "sandbox_ssh_gpu", "sandbox_ssh_init", "gpu_index"}
    here = CampaignConfig(op_dir="/op", gpu_index=0)
    moved = here.model_copy(update={"sandbox_ssh": "gpu-box", "sandbox_ssh_gpu": 3, "gpu_index": None})
    assert moved != here and moved.identity() == here.identity()
    assert here.model_copy(update={"max_iters": 3}).identity() != here.identity()


def test_every_config_field_has_a_description_for_its_cli_option() -> None:
    """`run`'s options are generated from these descriptions: a field without one would be a bare flag."""
    missing = [name for name, info in CampaignConfig.model_fields.items() if not info.description]
    assert missing == []
