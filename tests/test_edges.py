"""Table tests for every routing rule in `aka_graph.edges` (pure functions of the state)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.types import Send

from aka_graph import edges
from aka_graph.state import CampaignConfig, CampaignState, EnvironmentBlock, Incumbent, TrialRecord
from aka_graph.target import CampaignTarget


def make_state(config: dict[str, Any] | None = None, **fields: Any) -> CampaignState:
    frameworks = fields.pop("frameworks_available", None)
    if frameworks is not None:  # the resolved target's frameworks are what the routing rules read
        fields["target"] = CampaignTarget(
            op_dir="/op",
            op_name="op",
            op_format="sol",
            platform="H200",
            arch="sm_90",
            frameworks=tuple(frameworks),
            framework="triton",
            production=False,
        )
    return CampaignState(config=CampaignConfig(op_dir="/op", **(config or {})), **fields)


def incumbent(util: float | None = None) -> Incumbent:
    return Incumbent(version=0, kernel_path="/k", sha256="a" * 64, objective=10.0, utilization_pct=util)


def trial(n: int = 1) -> TrialRecord:
    return TrialRecord(episode=1, trial=n, kernel_dir="/t", sha256="b" * 64, status="PASS", objective=9.0)


@pytest.mark.parametrize(
    ("episode", "fast_episodes", "kind"),
    [
        (1, 2, "fast"),
        (2, 2, "fast"),
        (3, 2, "full"),
        (1, 0, "full"),
        (10, 10, "fast"),
        (11, 10, "full"),
    ],
)
def test_first_fast_episodes_are_fast_then_full(episode: int, fast_episodes: int, kind: str) -> None:
    assert edges.episode_kind(episode, fast_episodes) == kind


@pytest.mark.parametrize(
    ("v1", "mode", "expected"),
    [
        ("auto", "leaderboard", False),
        ("auto", "production", True),
        ("always", "leaderboard", True),
        ("always", "production", True),
        ("never", "production", False),
        ("never", "leaderboard", False),
    ],
)
def test_v1_runs_in_production_auto_or_always(v1: str, mode: str, expected: bool) -> None:
    assert edges.wants_v1(CampaignConfig(op_dir="/op", v1=v1, optimization_mode=mode)) is expected


@pytest.mark.parametrize(
    ("config", "fields", "reason"),
    [
        ({"max_iters": 3}, {"episode": 2}, None),
        ({"max_iters": 3}, {"episode": 3}, "max-iters"),
        ({"max_iters": 0}, {"episode": 0}, "max-iters"),
        ({"token_budget": 1000}, {"tokens_spent": 999}, None),
        ({"token_budget": 1000}, {"tokens_spent": 1000}, "token-budget"),
        ({"token_budget": None}, {"tokens_spent": 10**9}, None),
        ({"max_stall": 2}, {"stalls": 1}, None),
        ({"max_stall": 2}, {"stalls": 2}, "max-stall"),
        ({"target_util": 80.0}, {"incumbent": incumbent(79.9)}, None),
        ({"target_util": 80.0}, {"incumbent": incumbent(80.0)}, "target-util"),
        ({"target_util": 80.0}, {"incumbent": incumbent(None)}, None),
        ({"target_util": None}, {"incumbent": incumbent(99.0)}, None),
        ({"max_iters": 1, "token_budget": 5}, {"episode": 1, "tokens_spent": 9}, "max-iters"),
    ],
)
def test_stop_reasons(config: dict[str, Any], fields: dict[str, Any], reason: str | None) -> None:
    assert edges.stop_reason(make_state(config, **fields)) == reason


@pytest.mark.parametrize(
    ("stalls", "outcome", "expected"),
    [
        (0, "promoted", 0),
        (3, "promoted", 0),
        (0, "rejected", 1),
        (2, "no_candidate", 3),
        (1, "policy_rejected", 2),
        (4, "incomparable", 5),
    ],
)
def test_stalls_count_episodes_without_promotion(stalls: int, outcome: str, expected: int) -> None:
    assert edges.next_stalls(stalls, outcome) == expected


GLUON = ["triton", "gluon"]


@pytest.mark.parametrize(
    ("config", "fields", "plan"),
    [
        ({}, {"episode": 0, "frameworks_available": GLUON}, ("fast", "triton", False)),
        (
            {"convert_after": 3},
            {"episode": 4, "stalls": 2, "frameworks_available": GLUON},
            ("full", "triton", False),
        ),
        (
            {"convert_after": 3},
            {"episode": 4, "stalls": 3, "frameworks_available": GLUON},
            ("full", "gluon", True),
        ),
        (
            {"convert_after": 3},
            {"episode": 4, "stalls": 3, "frameworks_available": ["triton"]},
            ("full", "triton", False),
        ),
        (
            {"convert_after": 1, "framework": "cuda"},
            {"episode": 4, "stalls": 5, "frameworks_available": [*GLUON, "cuda"]},
            ("full", "cuda", False),
        ),
        (
            {},
            {"episode": 6, "stalls": 0, "gluon_locked": True, "frameworks_available": GLUON},
            ("full", "gluon", False),
        ),
        ({"fast_episodes": 5}, {"episode": 1, "stalls": 0, "gluon_locked": True}, ("fast", "gluon", False)),
    ],
)
def test_gluon_escalation_after_convert_after_stalls(
    config: dict[str, Any], fields: dict[str, Any], plan: tuple[str, str, bool]
) -> None:
    assert tuple(edges.plan_next_episode(make_state(config, **fields))) == plan


@pytest.mark.parametrize(
    ("locked", "converting", "outcome", "expected"),
    [
        (False, True, "promoted", True),
        (False, True, "rejected", False),
        (False, False, "promoted", False),
        (True, False, "rejected", True),
    ],
)
def test_a_promoted_conversion_locks_gluon(
    locked: bool, converting: bool, outcome: str, expected: bool
) -> None:
    state = make_state(gluon_locked=locked, converting=converting)
    assert edges.gluon_locked_after(state, outcome) is expected


BLOCK = EnvironmentBlock(node="evaluate", diagnostic="ssh down")


@pytest.mark.parametrize(
    ("config", "fields", "route"),
    [
        ({}, {"blocked": EnvironmentBlock(node="baseline_v0", diagnostic="x")}, "await_environment"),
        ({}, {"incumbent": None}, "finish"),
        ({}, {"incumbent": incumbent()}, "plan_episode"),
        ({"v1": "always"}, {"incumbent": incumbent()}, "framework_baseline_v1"),
        ({"optimization_mode": "production"}, {"incumbent": incumbent()}, "framework_baseline_v1"),
        ({"max_iters": 0}, {"incumbent": incumbent()}, "finish"),
    ],
)
def test_route_after_baseline(config: dict[str, Any], fields: dict[str, Any], route: str) -> None:
    assert edges.route_after_baseline(make_state(config, **fields)) == route


@pytest.mark.parametrize(
    ("config", "fields", "route"),
    [
        (
            {},
            {"blocked": EnvironmentBlock(node="framework_baseline_v1", diagnostic="x")},
            "await_environment",
        ),
        ({}, {"incumbent": incumbent()}, "plan_episode"),
        ({"token_budget": 10}, {"tokens_spent": 10}, "finish"),
    ],
)
def test_route_after_v1(config: dict[str, Any], fields: dict[str, Any], route: str) -> None:
    assert edges.route_after_v1(make_state(config, **fields)) == route


def test_fast_episodes_never_fan_out_to_reviewers() -> None:
    state = make_state({"reviewers": ["codex", "pi"]}, episode=1, episode_kind="fast")
    assert edges.route_after_plan(state) == "implement"


def test_full_episodes_without_reviewers_go_straight_to_implement() -> None:
    assert edges.route_after_plan(make_state({}, episode=3, episode_kind="full")) == "implement"


def test_full_episodes_fan_out_one_review_branch_per_reviewer() -> None:
    state = make_state(
        {"reviewers": ["codex", "pi"]}, episode=3, episode_kind="full", workspace_root="/ws"
    )
    sends = edges.route_after_plan(state)
    assert isinstance(sends, list) and all(isinstance(s, Send) and s.node == "review" for s in sends)
    assert [s.arg.reviewer for s in sends] == ["codex", "pi"]
    assert {s.arg.episode for s in sends} == {3}


@pytest.mark.parametrize(
    ("config", "fields", "route"),
    [
        ({}, {"blocked": BLOCK}, "await_environment"),
        ({"fast_trials": 3}, {"episode_kind": "fast", "trial": 1}, "implement"),
        ({"fast_trials": 3}, {"episode_kind": "fast", "trial": 2, "candidate": trial()}, "implement"),
        ({"fast_trials": 3}, {"episode_kind": "fast", "trial": 3, "candidate": trial()}, "abba"),
        ({"fast_trials": 3}, {"episode_kind": "fast", "trial": 3}, "promote"),
        (
            {"fast_trials": 3, "token_budget": 100},
            {"episode_kind": "fast", "trial": 1, "tokens_spent": 100, "candidate": trial()},
            "abba",
        ),
        ({"fast_trials": 3}, {"episode_kind": "full", "trial": 1, "candidate": trial()}, "abba"),
        ({"fast_trials": 3}, {"episode_kind": "full", "trial": 1}, "promote"),
        (
            {"optimization_mode": "production"},
            {"episode_kind": "full", "trial": 1, "candidate": trial()},
            "policy_review",
        ),
        ({"optimization_mode": "production"}, {"episode_kind": "full", "trial": 1}, "promote"),
    ],
)
def test_route_after_evaluate_more_trials_or_verify(
    config: dict[str, Any], fields: dict[str, Any], route: str
) -> None:
    assert edges.route_after_evaluate(make_state(config, **fields)) == route


@pytest.mark.parametrize(("policy_ok", "route"), [(True, "abba"), (False, "promote"), (None, "promote")])
def test_route_after_policy(policy_ok: bool | None, route: str) -> None:
    assert edges.route_after_policy(make_state(policy_ok=policy_ok)) == route


@pytest.mark.parametrize(("blocked", "route"), [(BLOCK, "await_environment"), (None, "promote")])
def test_route_after_abba(blocked: EnvironmentBlock | None, route: str) -> None:
    assert edges.route_after_abba(make_state(blocked=blocked)) == route


@pytest.mark.parametrize(
    ("config", "fields", "route"),
    [
        ({"max_iters": 5}, {"episode": 1}, "plan_episode"),
        ({"max_iters": 5}, {"episode": 5}, "finish"),
        ({"max_stall": 2}, {"episode": 2, "stalls": 2}, "finish"),
        ({"target_util": 50.0}, {"episode": 1, "incumbent": incumbent(60.0)}, "finish"),
    ],
)
def test_route_after_promote_continues_or_stops(
    config: dict[str, Any], fields: dict[str, Any], route: str
) -> None:
    assert edges.route_after_promote(make_state(config, **fields)) == route


@pytest.mark.parametrize(
    ("node", "route"),
    [
        ("baseline_v0", "baseline_v0"),
        ("framework_baseline_v1", "framework_baseline_v1"),
        ("evaluate", "evaluate"),
        ("abba", "abba"),
    ],
)
def test_await_environment_resumes_the_interrupted_step(node: str, route: str) -> None:
    state = make_state(blocked=EnvironmentBlock(node=node, diagnostic="gpu lost"))
    assert edges.route_after_await(state) == route


@pytest.mark.parametrize(
    ("fields", "exhausted"),
    [
        ({}, False),
        ({"tokens_spent": 10}, False),
    ],
)
def test_no_budget_means_never_exhausted(fields: dict[str, Any], exhausted: bool) -> None:
    assert edges.budget_exhausted(make_state({}, **fields)) is exhausted


def test_a_plan_that_used_up_the_budget_goes_straight_to_recording_the_episode() -> None:
    state = make_state(
        {"token_budget": 100, "reviewers": ["codex"]}, episode=3, episode_kind="full", tokens_spent=100
    )
    assert edges.route_after_plan(state) == "promote"


def test_review_branches_carry_the_budget_left() -> None:
    state = make_state(
        {"token_budget": 1000, "reviewers": ["a", "b"]}, episode=3, episode_kind="full", tokens_spent=300
    )
    assert {s.arg.budget_left for s in edges.route_after_plan(state)} == {700}


def test_v1_with_reviewers_fans_out_for_correctness_guidance_first() -> None:
    state = make_state(
        {"v1": "always", "reviewers": ["codex", "pi"]}, incumbent=incumbent(), workspace_root="/ws"
    )
    sends = edges.route_after_baseline(state)
    assert isinstance(sends, list) and [s.arg.reviewer for s in sends] == ["codex", "pi"]
    assert {s.arg.episode for s in sends} == {0}


def test_without_v1_reviewers_wait_for_the_full_episodes() -> None:
    state = make_state({"v1": "never", "reviewers": ["codex"]}, incumbent=incumbent())
    assert edges.route_after_baseline(state) == "plan_episode"


@pytest.mark.parametrize(
    ("episode", "route"), [(0, "framework_baseline_v1"), (1, "implement"), (7, "implement")]
)
def test_reviews_lead_to_v1_before_the_episodes_and_to_implement_in_them(episode: int, route: str) -> None:
    assert edges.route_after_review(make_state(episode=episode)) == route
