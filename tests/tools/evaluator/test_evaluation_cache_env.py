"""A local evaluation job is told where the host keeps what does not depend on the candidate (the
reference's latency, harness/refcache.py): its own HOME is a discarded job directory. A remote job is not
(the path would name the coordinator's disk)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from aka_graph.tools.evaluator.evaluation import cache_env


def test_a_local_job_gets_the_hosts_cache_directory() -> None:
    env = cache_env(SimpleNamespace(name="local"))  # type: ignore[arg-type]
    assert env == {"AKA_CACHE_DIR": str(Path("~/.cache/aka_graph").expanduser())}


def test_a_remote_job_gets_none() -> None:
    assert cache_env(SimpleNamespace(name="ssh")) == {}  # type: ignore[arg-type]
    assert cache_env(object()) == {}  # type: ignore[arg-type]
