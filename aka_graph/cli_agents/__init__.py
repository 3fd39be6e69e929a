"""Coding-agent CLIs as backends behind one interface (design §3 'Agent run')."""

from aka_graph.cli_agents.base import (
    AgentBackend,
    AgentNotReady,
    AgentResult,
    AgentRun,
    BudgetExceeded,
    Effort,
    TokenUsage,
)

__all__ = [
    "AgentBackend",
    "AgentNotReady",
    "AgentResult",
    "AgentRun",
    "BudgetExceeded",
    "Effort",
    "TokenUsage",
]
