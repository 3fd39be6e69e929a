"""`PoolSandbox`: a `Sandbox` over the fleet's GPU hosts, one leased GPU per job.

Each job leases a free GPU of a healthy host through the database (`gpu_leases.py`), runs on that host's
`SshSandbox`, and releases the GPU. When the job's failure is the environment's (exit 75: SSH down, the
host's probe failing), the host is drained and the same job runs again on another host, so the candidate
is never charged for it. Only when no host is left does the job return the environment failure; the graph
then parks the campaign in `await_environment`, whose `health()` calls probe the drained hosts and let
the first healthy one rejoin.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aka_graph.fleet.gpu_leases import GpuLease, GpuLeases
from aka_graph.fleet.hosts import HostSpec
from aka_graph.tools.evaluator.sandbox.job import HealthReport, SandboxJob, SandboxResult
from aka_graph.tools.evaluator.sandbox.outcome import environment_failure

log = logging.getLogger(__name__)


class SandboxCache:
    """One `SshSandbox` per (host, GPU) for the whole coordinator process (shared by its campaigns)."""

    def __init__(self, hosts: list[HostSpec], factory: Callable[[HostSpec, int], Any] | None = None) -> None:
        self.hosts = {h.name: h for h in hosts}
        self.factory = factory or (lambda host, gpu: host.sandbox(gpu))
        self._sandboxes: dict[tuple[str, int], Any] = {}
        self._lock = threading.Lock()

    def get(self, host: str, gpu: int) -> Any:
        with self._lock:
            key = (host, gpu)
            if key not in self._sandboxes:
                self._sandboxes[key] = self.factory(self.hosts[host], gpu)
            return self._sandboxes[key]

    def disconnect_host(self, host: str) -> None:
        with self._lock:
            found = [s for (h, _), s in self._sandboxes.items() if h == host]
        for sandbox in found:
            try:
                sandbox.disconnect()
            except Exception as e:  # a dead host may fail to close cleanly; the next job reconnects
                log.debug("disconnecting from %s: %s", host, e)

    def close(self) -> None:
        with self._lock:
            found, self._sandboxes = list(self._sandboxes.values()), {}
        for sandbox in found:
            try:
                sandbox.close()
            except Exception as e:
                log.debug("closing a sandbox: %s", e)


class PoolSandbox:
    """Runs one campaign's jobs on the fleet's GPU pool (see module docstring)."""

    name = "fleet"

    def __init__(
        self,
        leases: GpuLeases,
        sandboxes: SandboxCache,
        *,
        holder: str,
        campaign: str,
        lease_ttl_s: float = 60.0,
        probe_interval_s: float = 30.0,
        wait_poll_s: float = 0.2,
        on_host: Callable[[str], None] | None = None,
        still_held: Callable[[], bool] = lambda: True,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.leases = leases
        self.sandboxes = sandboxes
        self.holder = holder
        self.campaign = campaign
        self.lease_ttl_s = lease_ttl_s
        self.probe_interval_s = probe_interval_s
        self.wait_poll_s = wait_poll_s
        self.on_host = on_host
        self.still_held = still_held
        self.sleep = sleep

    # -- Sandbox protocol ---------------------------------------------------------------------------

    def run(self, job: SandboxJob, results_dir: Path) -> SandboxResult:
        """Run `job` on a leased GPU; raises `LeaseLost` once the campaign's lease is gone (never runs
        GPU work for a campaign another coordinator now holds)."""
        started = time.monotonic()
        failures: list[str] = []
        while True:
            self._check_held()
            lease = self._lease(job)
            if lease is None:
                detail = "; ".join(failures[-3:]) or "every host is drained"
                return environment_failure(
                    "preflight",
                    f"no healthy GPU host in the fleet pool ({detail})",
                    wall_s=time.monotonic() - started,
                )
            if self.on_host is not None:
                self.on_host(lease.host)
            result = self._run_leased(lease, job, results_dir)
            if not result.is_environment_failure:
                return result
            assert result.environment_failure is not None
            diagnostic = f"{result.environment_failure.stage}: {result.environment_failure.diagnostic}"
            failures.append(f"{lease.host}: {diagnostic}")
            if self.leases.drain(lease.host, diagnostic):
                log.warning(
                    "host %s drained (%s); job %s retried elsewhere", lease.host, diagnostic, job.label
                )
            self.sandboxes.disconnect_host(lease.host)

    def health(self, gpu_index: int | None = None) -> HealthReport:
        """Healthy when a host's probe passes (run under a GPU lease, like any job); drained hosts whose
        probe is due are probed first (and rejoin if it passes); an up host whose probe fails is drained."""
        self.probe_drained()
        probe = SandboxJob(argv=["health"], timeout_s=1, label="health")
        while (lease := self._lease(probe)) is not None:
            try:
                report = self.sandboxes.get(lease.host, lease.gpu).health(lease.gpu)
            finally:
                self.leases.release(lease, "health")
            if report.healthy:
                return report
            if self.leases.drain(lease.host, f"health probe: {report.diagnostic}"):
                log.warning("host %s drained (health probe: %s)", lease.host, report.diagnostic[-300:])
                self.sandboxes.disconnect_host(lease.host)
        return HealthReport(healthy=False, diagnostic="no healthy GPU host in the fleet pool")

    # -- internals ----------------------------------------------------------------------------------

    def probe_drained(self) -> list[str]:
        """Probe drained hosts whose probe is due (claimed in the database: one prober per host and
        interval, fleet-wide; the host's sandbox reconnects by itself if its connection was lost)."""
        rejoined = []
        for host in self.leases.claim_probe(self.probe_interval_s):
            spec = self.sandboxes.hosts.get(host)
            if spec is None:
                continue
            report = self.sandboxes.get(host, spec.gpus[0]).health()
            if report.healthy and self.leases.rejoin(host, "health probe passed"):
                log.warning("host %s rejoined the pool", host)
                rejoined.append(host)
            elif not report.healthy:
                self.leases.record_event(host, "probe-failed", report.diagnostic)
        return rejoined

    def _check_held(self) -> None:
        if not self.still_held():
            from aka_graph.fleet.coordinator import LeaseLost

            raise LeaseLost(self.campaign)

    def _lease(self, job: SandboxJob) -> GpuLease | None:
        """A GPU lease, waiting while every GPU of the up hosts is busy; None when no host is up."""
        while True:
            self.probe_drained()
            lease = self.leases.acquire(
                self.holder, self.campaign, job.label, exclusive=job.exclusive_gpu, ttl_s=self.lease_ttl_s
            )
            if lease is not None:
                return lease
            if not self.leases.up_hosts():
                return None
            self.sleep(self.wait_poll_s)

    def _run_leased(self, lease: GpuLease, job: SandboxJob, results_dir: Path) -> SandboxResult:
        """Run `job` on the leased GPU, renewing the lease until it ends; then release it."""
        done = threading.Event()

        def keep_alive() -> None:
            while not done.wait(self.lease_ttl_s / 3):
                try:
                    if not self.leases.renew_lease(lease, self.lease_ttl_s):
                        log.error("GPU lease %s:%s expired under job %s", lease.host, lease.gpu, job.label)
                        return
                except Exception as e:  # the database may blink; the next renewal retries
                    log.warning("renewing GPU lease %s:%s failed: %s", lease.host, lease.gpu, e)

        renewer = threading.Thread(target=keep_alive, name=f"gpu-lease-{lease.lease_id}", daemon=True)
        renewer.start()
        outcome = "error"
        try:
            sandbox = self.sandboxes.get(lease.host, lease.gpu)
            result: SandboxResult = sandbox.run(job.model_copy(update={"gpu_index": lease.gpu}), results_dir)
            outcome = "environment" if result.is_environment_failure else f"exit {result.exit_code}"
            return result
        finally:
            done.set()
            renewer.join()
            self.leases.release(lease, outcome)
