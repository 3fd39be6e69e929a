"""A campaign context for crash tests of command tasks: the real one (`build_default_context`: the
configured agent CLI, the local sandbox, the command-task evaluator) plus the crash tests' `KillSwitch`
(tests/nodes/campaign_fakes.py), which SIGKILLs the process at the n-th progress event named by
`AKA_FAKE_KILL_AT` (node:event:n). Used through `AKA_GRAPH_CONTEXT_FACTORY`."""

from __future__ import annotations

import os

from campaign_fakes import KillSwitch

from aka_graph.context import CONTEXT_FACTORY_ENV, CampaignContext, build_default_context
from aka_graph.state import CampaignConfig


def make_context(config: CampaignConfig) -> CampaignContext:
    factory = os.environ.pop(CONTEXT_FACTORY_ENV)  # build the real context, not this one again
    try:
        context = build_default_context(config)
    finally:
        os.environ[CONTEXT_FACTORY_ENV] = factory
    kill = os.environ.get("AKA_FAKE_KILL_AT")
    if kill:
        context.on_event = KillSwitch(kill)
    return context
