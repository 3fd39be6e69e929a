"""`fleet work`: a coordinator process that takes leased campaigns and runs them until none are left.

Each campaign runs in its own thread of this process: the campaign graph compiled with LangGraph's
Postgres checkpointer (its own saver; thread id = `campaign_thread_id(campaign id)`), with a
`PoolSandbox` as its sandbox. A heartbeat thread renews this coordinator's campaign leases; after every
graph step the campaign's progress row is written, and the step is also where a stop request or a lost
lease is seen. A lost lease (this process stalled past the expiry and another coordinator took the
campaign) fences GPU work at once: the campaign's next job raises `LeaseLost` instead of running, and
this coordinator leaves the campaign to its new holder. A coordinator killed with `kill -9` simply stops
renewing; after the expiry another one takes the campaign and resumes it from its last checkpoint (the
interrupted node re-runs, as after any crash: nodes are idempotent).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aka_graph.fleet.checkpointer import campaign_thread_id, postgres_checkpointer
from aka_graph.fleet.database import migrated_pool
from aka_graph.fleet.gpu_leases import GpuLeases
from aka_graph.fleet.hosts import HostSpec
from aka_graph.fleet.pool import PoolSandbox, SandboxCache
from aka_graph.fleet.registry import CampaignLease, Registry
from aka_graph.thread_phase import resume_point, thread_phase
from aka_graph.tools.records.ledger import DATABASE_URL_ENV
from aka_graph.tools.records.workspace import clear_stale_git_locks

log = logging.getLogger(__name__)


class LeaseLost(RuntimeError):
    """This coordinator no longer holds the campaign: it must not touch it again."""


@dataclass
class CoordinatorSettings:
    database_url: str
    hosts: list[HostSpec]
    concurrency: int = 4  # campaigns this process runs at once
    lease_ttl_s: float = 60.0  # a dead coordinator's campaigns and GPUs are free after this
    poll_s: float = 2.0  # how often an idle coordinator looks for work
    probe_interval_s: float = 30.0  # how often a drained host is probed
    max_failures: int = 3  # attempts that raise before a campaign is marked failed
    holder: str = field(
        default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    )


def default_context(config: Any) -> Any:
    from aka_graph.context import build_default_context

    return build_default_context(config)


class Coordinator:
    """Takes campaign leases and runs the campaigns (see module docstring)."""

    def __init__(
        self, settings: CoordinatorSettings, context_factory: Callable[[Any], Any] = default_context
    ) -> None:
        self.settings = settings
        self.context_factory = context_factory
        os.environ[DATABASE_URL_ENV] = settings.database_url  # the campaigns' ledgers live there too
        self.pool = migrated_pool(settings.database_url)
        self.registry = Registry(self.pool)
        self.leases = GpuLeases(self.pool)
        self.leases.register_hosts((h.name, h.target, h.gpus) for h in settings.hosts)
        self.sandboxes = SandboxCache(settings.hosts)
        self._lost: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.finished: list[str] = []

    # -- the work loop ------------------------------------------------------------------------------

    def work(self) -> list[str]:
        """Run campaigns until no campaign is queued or running anywhere; returns those this process ran."""
        from aka_graph.graph import build_graph

        builder = build_graph()
        heartbeat = threading.Thread(target=self._heartbeat, name="fleet-heartbeat", daemon=True)
        heartbeat.start()
        running: dict[str, threading.Thread] = {}
        try:
            while not self._stop.is_set():
                for cid in [c for c, t in running.items() if not t.is_alive()]:
                    running.pop(cid).join()
                    with self._lock:
                        self._lost.pop(cid, None)
                while len(running) < self.settings.concurrency:
                    with self._lock:  # never between a heartbeat's renewal and its check of the result
                        lease = self.registry.take(self.settings.holder, self.settings.lease_ttl_s)
                        if lease is None:
                            break
                        self._lost[lease.campaign_id] = threading.Event()
                    thread = threading.Thread(
                        target=self._run_guarded,
                        # a saver per campaign: a PostgresSaver serialises its own calls behind one lock
                        args=(builder.compile(checkpointer=postgres_checkpointer(self.pool)), lease),
                        name=f"campaign-{lease.campaign_id}",
                    )
                    running[lease.campaign_id] = thread
                    thread.start()
                if not running and self.registry.unfinished() == 0:
                    break
                self._wake.wait(self.settings.poll_s)
                self._wake.clear()
        finally:
            self._stop.set()
            for thread in running.values():
                thread.join()
            heartbeat.join()
            self.sandboxes.close()
        return self.finished

    def _heartbeat(self) -> None:
        ttl = self.settings.lease_ttl_s
        while not self._stop.wait(ttl / 4):
            with self._lock:
                try:
                    held = self.registry.renew(self.settings.holder, ttl)
                except Exception as e:  # the database blinked: the next beat retries (leases last ttl)
                    log.warning("renewing campaign leases failed: %s", e)
                    continue
                for cid, lost in self._lost.items():
                    if cid not in held and not lost.is_set():
                        log.warning("lost the lease of campaign %s; leaving it to its new holder", cid)
                        lost.set()

    # -- one campaign -------------------------------------------------------------------------------

    def _run_guarded(self, compiled: Any, lease: CampaignLease) -> None:
        holder, cid = self.settings.holder, lease.campaign_id
        try:
            state = self._run(compiled, lease)
        except LeaseLost:
            # let go of it if the database still says it is ours (the loss was this process's view)
            self.registry.end(cid, holder, "running", "lease lost by its coordinator; taken over")
            state = None
        except Exception as e:  # a crash of this attempt: resumed from the checkpoint, up to max_failures
            log.exception("campaign %s: attempt failed", cid)
            message = f"{type(e).__name__}: {e}"[:2000]
            state = self.registry.fail(cid, holder, message, self.settings.max_failures)
            if state != "failed":
                state = None
        if state is not None:
            self.finished.append(cid)
        self._wake.set()

    def _run(self, compiled: Any, lease: CampaignLease) -> str | None:
        from aka_graph.runner import thread_config
        from aka_graph.state import CampaignConfig, CampaignInput

        cid, holder = lease.campaign_id, self.settings.holder
        lost = self._lost[cid]
        config = CampaignConfig.model_validate(lease.spec)
        sandbox = PoolSandbox(
            self.leases,
            self.sandboxes,
            holder=holder,
            campaign=cid,
            lease_ttl_s=self.settings.lease_ttl_s,
            probe_interval_s=self.settings.probe_interval_s,
            on_host=lambda host: self._on_host(cid, host),
            still_held=lambda: not lost.is_set(),
        )
        if lease.takeover:
            cleared = clear_stale_git_locks(Path(config.workspace))
            if cleared:
                log.warning("campaign %s: removed the dead holder's git locks %s", cid, cleared)
        ctx = dataclasses.replace(self.context_factory(config), sandbox=sandbox)
        cfg = thread_config(campaign_thread_id(cid))
        snapshot = compiled.get_state(cfg)
        phase = thread_phase(snapshot)
        if phase == "finished":
            self.registry.end(cid, holder, "finished", **summarize(snapshot.values))
            return "finished"
        if phase == "interrupted":
            log.info("resuming campaign %s at %s", cid, resume_point(snapshot))
        else:
            log.info("starting campaign %s", cid)
        graph_input = None if phase == "interrupted" else CampaignInput(config=config)
        progress = Progress()
        for mode, payload in compiled.stream(
            graph_input, cfg, context=ctx, durability="sync", stream_mode=["updates", "values"]
        ):
            if lost.is_set():
                raise LeaseLost(cid)
            if mode == "updates":
                progress.nodes = [n for n in payload if not n.startswith("__")] or progress.nodes
                continue
            stop = self.registry.progress(cid, holder, **progress.fields(payload))
            if stop is None:
                raise LeaseLost(cid)
            if stop:
                self.registry.end(cid, holder, "stopped", "stop requested; `fleet resume` continues it")
                return "stopped"
        final = compiled.get_state(cfg)
        if final.next:  # the graph paused (an interrupt): let another pass pick it up
            self.registry.end(cid, holder, "queued", f"paused before {', '.join(final.next)}")
            return None
        self.registry.end(cid, holder, "finished", **progress.fields(final.values))
        return "finished"

    def _on_host(self, cid: str, host: str) -> None:
        self.registry.progress(cid, self.settings.holder, last_host=host)


@dataclass
class Progress:
    """What the registry shows of a running campaign, taken from the graph state after each step."""

    nodes: list[str] = field(default_factory=list)
    baseline: float | None = None

    def fields(self, values: Any) -> dict[str, Any]:
        return {"node": ",".join(self.nodes) or None, **summarize(values, self)}


def summarize(values: Any, progress: Progress | None = None) -> dict[str, Any]:
    """Registry columns from a campaign state (a dict of channel values)."""
    incumbent = _get(values, "incumbent")
    version = _get(incumbent, "version")
    objective = _get(incumbent, "objective")
    baseline = progress.baseline if progress is not None else None
    if baseline is None and version == 0:
        baseline = objective
    if baseline is None and version is not None:
        baseline = _v0_objective(_get(values, "workspace_root"))
    if progress is not None:
        progress.baseline = baseline
    return {
        "episode": _get(values, "episode"),
        "incumbent_version": version,
        "incumbent_objective": objective,
        "baseline_objective": baseline,
        "tokens_spent": _get(values, "tokens_spent") or 0,
        "stop_reason": _get(values, "stop_reason"),
    }


def _v0_objective(root: Any) -> float | None:
    """V0's objective from `memory/v0.json` (a coordinator that took the campaign over after V0)."""
    if not root:
        return None
    from aka_graph.tools.records.memory import read_version_records

    try:
        records = read_version_records(Path(root))
    except Exception:  # a half-written workspace: the next step tries again
        return None
    return next((r.objective for r in records if r.version == 0), None)


def _get(value: Any, name: str) -> Any:
    if value is None:
        return None
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)
