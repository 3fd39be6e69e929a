"""Every routing rule of the campaign as a pure, typed function of the state (table-tested).

Routers never raise and never touch disk: LangGraph skips a router that raised when a thread resumes,
and a rule that reads only the state is the same rule after a restart.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from langgraph.types import Send

from aka_graph.state import CampaignConfig, CampaignState, EpisodeKind, Outcome, ReviewTask

StopReason = Literal["max-iters", "token-budget", "max-stall", "target-util"]
AfterBaseline = Literal["await_environment", "framework_baseline_v1", "plan_episode", "finish"]
AfterV1 = Literal["await_environment", "plan_episode", "finish"]
AfterEvaluate = Literal["await_environment", "implement", "policy_review", "abba", "promote"]
AfterPolicy = Literal["abba", "promote"]
AfterAbba = Literal["await_environment", "promote"]
AfterPromote = Literal["plan_episode", "finish"]
AfterAwait = Literal["baseline_v0", "framework_baseline_v1", "evaluate", "abba"]


class EpisodePlan(NamedTuple):
    kind: EpisodeKind
    framework: str
    converting: bool


def episode_kind(episode: int, fast_episodes: int) -> EpisodeKind:
    """Episodes are numbered from 1; the first `fast_episodes` are fast, the rest full."""
    return "fast" if episode <= fast_episodes else "full"


def wants_v1(config: CampaignConfig) -> bool:
    """V1 (a framework-native first kernel): production `auto`, or `always`; never with `never`."""
    if config.v1 == "always":
        return True
    if config.v1 == "never":
        return False
    return config.optimization_mode == "production"


def budget_left(state: CampaignState) -> int | None:
    """Tokens left of `--token-budget` (None: no budget); the routing and the nodes' turn guard share it."""
    budget = state.config.token_budget
    return None if budget is None else max(0, budget - state.tokens_spent)


def budget_exhausted(state: CampaignState) -> bool:
    budget = state.config.token_budget
    return budget is not None and state.tokens_spent >= budget


def stop_reason(state: CampaignState) -> StopReason | None:
    """Why the campaign must stop before starting another episode, or None to go on."""
    config = state.config
    if state.episode >= config.max_iters:
        return "max-iters"
    if budget_exhausted(state):
        return "token-budget"
    if state.stalls >= config.max_stall:
        return "max-stall"
    util = state.incumbent.utilization_pct if state.incumbent else None
    if config.target_util is not None and util is not None and util >= config.target_util:
        return "target-util"
    return None


def next_stalls(stalls: int, outcome: Outcome) -> int:
    """Consecutive episodes without a promotion; a promotion resets the count."""
    return 0 if outcome == "promoted" else stalls + 1


def plan_next_episode(state: CampaignState) -> EpisodePlan:
    """Kind and framework of episode `state.episode + 1`.

    A Triton campaign that stalled `convert_after` times in a row converts to Gluon (when the GPU has it);
    once a conversion is promoted (`gluon_locked`) every later episode stays in Gluon.
    """
    config = state.config
    kind = episode_kind(state.episode + 1, config.fast_episodes)
    if state.gluon_locked:
        return EpisodePlan(kind, "gluon", False)
    if (
        config.framework == "triton"
        and state.target is not None
        and "gluon" in state.target.frameworks
        and state.stalls >= config.convert_after
    ):
        return EpisodePlan(kind, "gluon", True)
    return EpisodePlan(kind, config.framework, False)


def gluon_locked_after(state: CampaignState, outcome: Outcome) -> bool:
    return state.gluon_locked or (state.converting and outcome == "promoted")


def review_sends(state: CampaignState, episode: int) -> list[Send]:
    """One `review` branch per reviewer (episode 0: correctness guidance for V1; else the episode's plan)."""
    return [
        Send(
            "review",
            ReviewTask(
                reviewer=name,
                episode=episode,
                workspace_root=state.workspace_root,
                config=state.config,
                budget_left=budget_left(state),
            ),
        )
        for name in state.config.reviewers
    ]


def route_after_baseline(state: CampaignState) -> list[Send] | AfterBaseline:
    if state.blocked is not None:
        return "await_environment"
    if state.incumbent is None:
        return "finish"  # the reference itself failed: nothing to optimise against
    command_task = state.target is not None and state.target.op_format == "command"
    if wants_v1(state.config) and not command_task:  # a command task's V0 is the tree's own kernel
        # reviewers first give correctness guidance for the framework-native V1 (fan-out)
        return review_sends(state, 0) if state.config.reviewers else "framework_baseline_v1"
    return "finish" if stop_reason(state) else "plan_episode"


def route_after_review(state: CampaignState) -> Literal["framework_baseline_v1", "implement"]:
    """Reviews before any episode are V1's guidance; later ones are an episode plan's."""
    return "framework_baseline_v1" if state.episode == 0 else "implement"


def route_after_v1(state: CampaignState) -> AfterV1:
    if state.blocked is not None:
        return "await_environment"
    return "finish" if stop_reason(state) else "plan_episode"


def route_after_plan(state: CampaignState) -> list[Send] | Literal["implement", "promote"]:
    """Full episodes with reviewers fan out, one `review` branch per reviewer; otherwise implement."""
    reviewers = state.config.reviewers
    if budget_exhausted(state):
        return "promote"  # the planner used up the budget: record the episode, then stop
    if state.episode_kind != "full" or not reviewers:
        return "implement"
    return review_sends(state, state.episode)


def route_after_evaluate(state: CampaignState) -> AfterEvaluate:
    if state.blocked is not None:
        return "await_environment"
    trials_per_episode = state.config.fast_trials if state.episode_kind == "fast" else 1
    if state.trial < trials_per_episode and not budget_exhausted(state):
        return "implement"
    if state.candidate is None:
        return "promote"  # records the episode as having no candidate
    if state.config.optimization_mode == "production":
        return "policy_review"
    return "abba"


def route_after_policy(state: CampaignState) -> AfterPolicy:
    return "abba" if state.policy_ok else "promote"


def route_after_abba(state: CampaignState) -> AfterAbba:
    return "await_environment" if state.blocked is not None else "promote"


def route_after_promote(state: CampaignState) -> AfterPromote:
    return "finish" if stop_reason(state) else "plan_episode"


def route_after_await(state: CampaignState) -> AfterAwait:
    """Back to the step the environment interrupted (it re-runs it; the candidate is not charged)."""
    node = state.blocked.node if state.blocked else "evaluate"
    if node in ("baseline_v0", "framework_baseline_v1", "evaluate", "abba"):
        return node  # type: ignore[return-value]
    return "evaluate"
