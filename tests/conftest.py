"""Shared test fixtures: where the repository and the shared operator fixtures are."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = (REPO_ROOT / ".." / "shared" / "fixtures").resolve()
SOL_FIXTURES = SHARED_FIXTURES / "sol-execbench"


@pytest.fixture(scope="session")
def sol_fixtures() -> Path:
    """The five real SOL-ExecBench problems (read in place, never copied into the project)."""
    if not SOL_FIXTURES.is_dir():
        pytest.fail(f"shared fixtures not found at {SOL_FIXTURES}: the checkout needs ../shared beside it")
    return SOL_FIXTURES
