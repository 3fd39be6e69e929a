"""How campaign checkpoints are serialised, the same for SQLite (one host) and PostgreSQL (a fleet).

LangGraph's serializer only rebuilds the classes it is told about; these are the campaign's own state
types. One list, so the single-host runner and the fleet's savers can never disagree on it.
"""

from __future__ import annotations

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from aka_graph.state import (
    CampaignConfig,
    CampaignState,
    Decision,
    EnvironmentBlock,
    Incumbent,
    ReviewNote,
    ReviewTask,
    TrialRecord,
)
from aka_graph.target import CampaignTarget

SERDE_TYPES = [
    CampaignConfig,
    CampaignState,
    Incumbent,
    TrialRecord,
    ReviewNote,
    Decision,
    EnvironmentBlock,
    ReviewTask,
    CampaignTarget,
]


def campaign_serde() -> JsonPlusSerializer:
    """The serializer every campaign checkpointer uses."""
    return JsonPlusSerializer(allowed_msgpack_modules=SERDE_TYPES)
