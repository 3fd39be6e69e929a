"""One interface for running jobs locally or on an SSH GPU host (design §3 'Sandbox job')."""

from aka_graph.tools.evaluator.sandbox.job import (
    EXIT_ENVIRONMENT,
    EXIT_TIMEOUT,
    EnvironmentFailure,
    HealthReport,
    Sandbox,
    SandboxJob,
    SandboxResult,
)

__all__ = [
    "EXIT_ENVIRONMENT",
    "EXIT_TIMEOUT",
    "EnvironmentFailure",
    "HealthReport",
    "Sandbox",
    "SandboxJob",
    "SandboxResult",
]
