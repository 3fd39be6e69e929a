"""Agent prompts are built from the campaign's own facts: entry point by format, V1 smoke shapes."""

from __future__ import annotations

from aka_graph.nodes.prompts import implement_prompt, smoke_shapes, v1_prompt
from aka_graph.state import CampaignConfig, CampaignState
from aka_graph.target import CampaignTarget


def target(op_format: str = "sol") -> CampaignTarget:
    return CampaignTarget(
        op_dir="/op",
        op_name="rms",
        op_format=op_format,
        platform="H200",
        arch="sm_90",
        frameworks=("triton", "gluon"),
        framework="triton",
        production=False,
    )


def test_v1_smoke_tests_on_the_fast_median_and_slow_reference_workloads() -> None:
    assert smoke_shapes({"a": 5.0, "b": 1.0, "c": 9.0, "d": 3.0, "e": 7.0}) == ["b", "a", "c"]
    assert smoke_shapes({"x": 1.0, "y": 2.0}) == ["x", "y"]
    state = CampaignState(config=CampaignConfig(op_dir="/op"), target=target())
    assert "workloads b, a, c (fast, median and slow" in v1_prompt(state, ["b", "a", "c"])


def test_sol_kernels_are_told_to_be_destination_passing_and_native_ones_a_model() -> None:
    sol = CampaignState(config=CampaignConfig(op_dir="/op"), target=target("sol"), episode=1)
    native = CampaignState(config=CampaignConfig(op_dir="/op"), target=target("native"), episode=1)
    assert "run(*inputs, *outputs)" in implement_prompt(sol, 1)
    assert "class Model" in implement_prompt(native, 1)


def test_a_conversion_episode_asks_for_parity_in_the_new_framework() -> None:
    state = CampaignState(
        config=CampaignConfig(op_dir="/op"),
        target=target(),
        episode=4,
        episode_framework="gluon",
        converting=True,
        episode_kind="full",
    )
    assert "Convert the incumbent kernel to gluon at performance parity (within 5.0%)" in implement_prompt(
        state, 1
    )
