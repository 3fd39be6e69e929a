"""Routing rules at their boundaries and in their order of precedence: each test names the mutation of
`aka_graph.edges` it exists to catch (scripts/mutation_test.py runs them against every mutant)."""

from __future__ import annotations

from typing import Any

import pytest

from aka_graph import edges
from aka_graph.state import CampaignConfig, CampaignState, EnvironmentBlock, Incumbent, TrialRecord


def make_state(config: dict[str, Any] | None = None, **fields: Any) -> CampaignState:
    return CampaignState(config=CampaignConfig(op_dir="/op", **(config or {})), **fields)


def incumbent(util: float | None = None) -> Incumbent:
    return Incumbent(version=0, kernel_path="/k", sha256="a" * 64, objective=10.0, utilization_pct=util)


def trial() -> TrialRecord:
    return TrialRecord(episode=1, trial=1, kernel_dir="/t", sha256="b" * 64, status="PASS", objective=9.0)


@pytest.mark.parametrize(
    ("config", "fields"),
    [
        ({"token_budget": 100}, {"episode": 1, "episode_kind": "fast", "tokens_spent": 100}),
        ({"token_budget": 100}, {"episode": 3, "episode_kind": "full", "tokens_spent": 150}),
        (
            {"token_budget": 100, "reviewers": ["r"]},
            {"episode": 1, "episode_kind": "fast", "tokens_spent": 100},
        ),
        ({"token_budget": 0}, {"episode": 1, "episode_kind": "fast"}),
    ],
)
def test_a_plan_that_used_up_the_budget_never_goes_on_to_implement(
    config: dict[str, Any], fields: dict[str, Any]
) -> None:
    """Kills the budget check moved after the fast/no-reviewer shortcut in `route_after_plan`."""
    assert edges.route_after_plan(make_state(config, **fields)) == "promote"


@pytest.mark.parametrize(
    ("config", "fields"),
    [
        ({"token_budget": 100}, {"episode": 1, "episode_kind": "fast", "tokens_spent": 99}),
        ({"token_budget": None}, {"episode": 1, "episode_kind": "fast", "tokens_spent": 10**9}),
        (
            {"token_budget": 100, "reviewers": ["r"]},
            {"episode": 3, "episode_kind": "fast", "tokens_spent": 0},
        ),
    ],
)
def test_a_plan_within_budget_goes_on_to_implement(config: dict[str, Any], fields: dict[str, Any]) -> None:
    assert edges.route_after_plan(make_state(config, **fields)) == "implement"


def test_a_full_episode_within_budget_with_reviewers_fans_out() -> None:
    state = make_state(
        {"token_budget": 100, "reviewers": ["a"]}, episode=3, episode_kind="full", tokens_spent=99
    )
    sends = edges.route_after_plan(state)
    assert isinstance(sends, list) and [s.node for s in sends] == ["review"]
    assert sends[0].arg.budget_left == 1 and sends[0].arg.episode == 3 and sends[0].arg.reviewer == "a"


@pytest.mark.parametrize(
    ("budget", "spent", "left"), [(1000, 300, 700), (1000, 1000, 0), (1000, 1700, 0), (None, 5, None)]
)
def test_review_branches_get_the_budget_left_clamped_at_zero(
    budget: int | None, spent: int, left: int | None
) -> None:
    """Kills the `max(0, ...)` clamp removed or turned into min()."""
    state = make_state({"token_budget": budget, "reviewers": ["a", "b"]}, episode=0, tokens_spent=spent)
    sends = edges.review_sends(state, 0)
    assert [s.arg.budget_left for s in sends] == [left, left]
    assert [s.arg.reviewer for s in sends] == ["a", "b"] and {s.arg.episode for s in sends} == {0}


@pytest.mark.parametrize(
    ("budget", "spent", "exhausted"),
    [(100, 99, False), (100, 100, True), (100, 101, True), (0, 0, True), (None, 0, False)],
)
def test_budget_is_exhausted_at_exactly_the_budget(budget: int | None, spent: int, exhausted: bool) -> None:
    assert edges.budget_exhausted(make_state({"token_budget": budget}, tokens_spent=spent)) is exhausted


@pytest.mark.parametrize(
    "blocked",
    [
        None,
        EnvironmentBlock(node="implement", diagnostic="x"),
        EnvironmentBlock(node="promote", diagnostic="x"),
        EnvironmentBlock(node="", diagnostic="x"),
    ],
)
def test_await_environment_falls_back_to_evaluate(blocked: EnvironmentBlock | None) -> None:
    """Kills `route_after_await`'s fallbacks (no block, or a node that cannot be re-entered)."""
    assert edges.route_after_await(make_state(blocked=blocked)) == "evaluate"


@pytest.mark.parametrize("node", ["baseline_v0", "framework_baseline_v1", "evaluate", "abba"])
def test_await_environment_returns_to_each_resumable_node(node: str) -> None:
    assert edges.route_after_await(make_state(blocked=EnvironmentBlock(node=node, diagnostic="x"))) == node


@pytest.mark.parametrize(
    ("episode", "route"), [(0, "framework_baseline_v1"), (1, "implement"), (4, "implement")]
)
def test_reviews_before_any_episode_guide_v1(episode: int, route: str) -> None:
    assert edges.route_after_review(make_state(episode=episode)) == route


@pytest.mark.parametrize(
    ("config", "fields", "reason"),
    [
        # several reasons at once: the first in the documented order wins
        (
            {"max_iters": 2, "token_budget": 5, "max_stall": 1},
            {"episode": 2, "tokens_spent": 9, "stalls": 3},
            "max-iters",
        ),
        ({"token_budget": 5, "max_stall": 1}, {"tokens_spent": 5, "stalls": 3}, "token-budget"),
        (
            {"max_stall": 1, "target_util": 10.0},
            {"stalls": 1, "incumbent": incumbent(90.0)},
            "max-stall",
        ),
        ({"max_stall": 1, "target_util": 10.0}, {"stalls": 0, "incumbent": incumbent(90.0)}, "target-util"),
        ({"max_iters": 3}, {"episode": 4}, "max-iters"),
    ],
)
def test_stop_reasons_in_order(config: dict[str, Any], fields: dict[str, Any], reason: str) -> None:
    assert edges.stop_reason(make_state(config, **fields)) == reason


@pytest.mark.parametrize(
    ("config", "fields", "route"),
    [
        # a full episode has exactly one trial; a fast one `fast_trials`
        ({"fast_trials": 3}, {"episode_kind": "full", "trial": 0}, "implement"),
        ({"fast_trials": 3}, {"episode_kind": "full", "trial": 1}, "promote"),
        ({"fast_trials": 2}, {"episode_kind": "fast", "trial": 2, "candidate": trial()}, "abba"),
        ({"fast_trials": 2}, {"episode_kind": "fast", "trial": 1, "candidate": trial()}, "implement"),
        # the budget ends the episode early even with trials left
        (
            {"fast_trials": 3, "token_budget": 50},
            {"episode_kind": "fast", "trial": 1, "tokens_spent": 60},
            "promote",
        ),
        (
            {"fast_trials": 3, "token_budget": 50},
            {"episode_kind": "fast", "trial": 1, "tokens_spent": 49},
            "implement",
        ),
        (
            {},
            {"blocked": EnvironmentBlock(node="evaluate", diagnostic="x"), "candidate": trial()},
            "await_environment",
        ),
    ],
)
def test_route_after_evaluate_boundaries(config: dict[str, Any], fields: dict[str, Any], route: str) -> None:
    assert edges.route_after_evaluate(make_state(config, **fields)) == route


@pytest.mark.parametrize(
    ("config", "fields", "route"),
    [
        ({"v1": "never"}, {"incumbent": incumbent()}, "plan_episode"),
        ({"v1": "never", "max_iters": 0}, {"incumbent": incumbent()}, "finish"),
        ({"v1": "never", "token_budget": 0}, {"incumbent": incumbent()}, "finish"),
        ({"v1": "always", "max_iters": 0}, {"incumbent": incumbent()}, "framework_baseline_v1"),
        ({"v1": "always"}, {"incumbent": None}, "finish"),
    ],
)
def test_route_after_baseline_boundaries(config: dict[str, Any], fields: dict[str, Any], route: str) -> None:
    assert edges.route_after_baseline(make_state(config, **fields)) == route


def test_v1_with_reviewers_fans_out_with_episode_zero() -> None:
    sends = edges.route_after_baseline(
        make_state({"v1": "always", "reviewers": ["a"]}, incumbent=incumbent())
    )
    assert isinstance(sends, list) and [(s.node, s.arg.episode) for s in sends] == [("review", 0)]


@pytest.mark.parametrize(
    ("fields", "route"),
    [
        ({"blocked": EnvironmentBlock(node="framework_baseline_v1", diagnostic="x")}, "await_environment"),
        ({"episode": 0}, "plan_episode"),
    ],
)
def test_route_after_v1_boundaries(fields: dict[str, Any], route: str) -> None:
    assert edges.route_after_v1(make_state({"max_iters": 1}, **fields)) == route


@pytest.mark.parametrize(("episode", "route"), [(2, "plan_episode"), (3, "finish")])
def test_route_after_promote_at_max_iters(episode: int, route: str) -> None:
    assert edges.route_after_promote(make_state({"max_iters": 3}, episode=episode)) == route


def test_route_after_abba_and_policy() -> None:
    assert edges.route_after_abba(make_state(blocked=EnvironmentBlock(node="abba", diagnostic="x"))) == (
        "await_environment"
    )
    assert edges.route_after_abba(make_state()) == "promote"
    assert edges.route_after_policy(make_state(policy_ok=True)) == "abba"
    assert edges.route_after_policy(make_state(policy_ok=False)) == "promote"


@pytest.mark.parametrize(
    ("episode", "fast_episodes", "kind"), [(0, 1, "fast"), (1, 1, "full"), (1, 2, "fast")]
)
def test_the_next_episode_is_numbered_one_past_the_current(
    episode: int, fast_episodes: int, kind: str
) -> None:
    """Kills `state.episode + 1` -> `- 1` in plan_next_episode."""
    plan = edges.plan_next_episode(make_state({"fast_episodes": fast_episodes}, episode=episode))
    assert plan.kind == kind and plan.framework == "triton" and not plan.converting
