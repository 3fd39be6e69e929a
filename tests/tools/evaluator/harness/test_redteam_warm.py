"""Red team, round 5: the warm evaluator (`python -m harness serve`, serve.py).

One trusted parent evaluates a campaign's candidates one after another. Each test drives one service
with a sequence of candidates (candidates/redteam5_*: a planting or misbehaving one, then the one that
would profit, then an honest one) and asserts the SAFE outcome: nothing one candidate leaves behind
changes another's verdict, a cheat built on such leftovers is caught, and an honest kernel after a
misbehaving one still PASSes. A test that fails here is an attack that works (see each docstring).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SOL_FIXTURES
from tests.tools.evaluator.harness.test_serve import BATCH1, CANDIDATES, HARNESS_PARENT, Service

OP = SOL_FIXTURES / "rmsnorm"
HONEST = CANDIDATES / "rmsnorm_torch"
# what redteam5_shm_plant leaves (the service here runs on the host: cleaned before and after)
LEFTOVERS = (Path("/dev/shm/aka_rt5_memo"), Path("/dev/shm/aka_rt5_marker"), Path("/dev/aka_rt5_marker"))


def _clean_leftovers() -> None:
    for path in LEFTOVERS:
        shutil.rmtree(path, ignore_errors=True)


def _verdict(result: dict) -> str:
    return f"{result['status']}: {result['message'][:400]}"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    _clean_leftovers()
    svc = Service(tmp_path / "spool", OP)
    svc.wait_for("ready.json")
    try:
        yield svc
    finally:
        if svc.proc.poll() is None:
            svc.proc.kill()
            svc.proc.wait()
        _clean_leftovers()


# -- 1. files a candidate leaves where the jailed worker can write --------------------------------------


@pytest.mark.slow
def test_files_a_candidate_leaves_in_dev_shm_are_not_seen_by_the_next_candidate(service: Service) -> None:
    """redteam5_shm_plant (honest) writes into /dev/shm and /dev; redteam5_shm_probe (honest, but zeroes
    its output when it sees them) must still PASS.

    Failed before the fix (the probe was INCORRECT: a candidate's behaviour depended on files an earlier
    candidate of the same service wrote; a cold bubblewrap job has its own /dev, but the warm service is
    one job for every candidate). Now each worker has a private /dev/shm and a read-only /dev."""
    plant = service.evaluate(CANDIDATES / "redteam5_shm_plant")
    assert plant["status"] == "PASS", _verdict(plant)
    probe = service.evaluate(CANDIDATES / "redteam5_shm_probe")
    left = [str(p) for p in LEFTOVERS if p.exists()]
    assert probe["status"] == "PASS", f"{_verdict(probe)}; left by the previous candidate: {left}"


@pytest.mark.slow
def test_replaying_an_earlier_candidates_outputs_from_dev_shm_gains_nothing(service: Service) -> None:
    """redteam5_shm_plant stores its outputs in /dev/shm; redteam5_shm_replay returns them without
    computing. Every evaluation draws fresh seeds: the replay must be INCORRECT, and an honest kernel
    afterwards must PASS."""
    plant = service.evaluate(CANDIDATES / "redteam5_shm_plant")
    assert plant["status"] == "PASS", _verdict(plant)
    # the jail now gives each worker a private /dev/shm: nothing reaches the host's (or the next worker's)
    assert not [p for p in LEFTOVERS if p.exists()], "the plant's files outlived its worker"
    replay = service.evaluate(CANDIDATES / "redteam5_shm_replay")
    assert replay["status"] == "INCORRECT", _verdict(replay)
    assert not set(plant["seeds"]) & set(replay["seeds"])
    honest = service.evaluate(HONEST)
    assert honest["status"] == "PASS", _verdict(honest)


# -- 2. sabotage of the next candidate through the shared /dev -------------------------------------------

# A private /dev for the service (and so for its jailed workers): a tmpfs with copies of the few device
# nodes a process needs, and its own /dev/shm. The sabotage below then cannot touch the host's /dev.
PRIVATE_DEV = r"""
dev="$1"; shift
mkdir -p "$dev" && mount -t tmpfs -o mode=755 rt5dev "$dev" || exit 90
for n in null zero full random urandom tty; do cp -a "/dev/$n" "$dev/$n" || exit 91; done
mkdir "$dev/shm" "$dev/pts" && chmod 1777 "$dev/shm"
ln -s /proc/self/fd "$dev/fd"; ln -s fd/0 "$dev/stdin"; ln -s fd/1 "$dev/stdout"; ln -s fd/2 "$dev/stderr"
mount --bind "$dev" /dev && mount -t tmpfs -o size=256m rt5shm /dev/shm || exit 92
exec "$@"
"""


class PrivateDevService(Service):
    """test_serve's Service, in a private mount namespace with its own /dev."""

    def __init__(self, spool: Path, op_dir: Path, dev: Path) -> None:
        self.spool, self.n = spool, 0
        argv = [sys.executable, "-m", "harness", "serve", "--op-dir", str(op_dir), "--device", "cpu"]
        argv += ["--spool", str(spool), "--shape-id", BATCH1, "--seeds", "3"]
        prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c", PRIVATE_DEV, "rt5", str(dev)]
        spool.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(spool.parent / "serve.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([*prefix, *argv], cwd=HARNESS_PARENT, stdout=self.log, stderr=self.log)


def _private_dev_usable() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = ["unshare", "--mount", "--propagation", "private", "sh", "-c", "mount -t tmpfs rt5 /mnt"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _private_dev_usable(), reason="needs mount namespaces (a private /dev)")
def test_a_candidate_that_removes_dev_null_does_not_fail_the_next_one(tmp_path: Path) -> None:
    """redteam5_dev_null_sabotage (honest, but unlinks /dev/null), then an honest kernel in the same
    service: the honest one must PASS.

    Failed before the fix where the service runs as root: the jail left /dev writable and mapped the
    worker to the service's uid, the unlink succeeded, the parent's next spawn (stdin=DEVNULL) raised
    FileNotFoundError and the service died. Now the jail makes /dev read-only, and where it cannot (as
    in this private /dev, perhaps) the service refuses to start, naming the jail (failed.json)."""
    svc = PrivateDevService(tmp_path / "spool", OP, tmp_path / "dev")
    try:
        deadline = time.monotonic() + 120
        while not (svc.spool / "ready.json").is_file() and time.monotonic() < deadline:
            if (svc.spool / "failed.json").is_file():  # safe too: no shared worker /dev, no warm service
                failed = (svc.spool / "failed.json").read_text()
                assert "jail" in failed, failed
                return
            time.sleep(0.05)
        sabotage = svc.evaluate(CANDIDATES / "redteam5_dev_null_sabotage")
        deadline = time.monotonic() + 5
        while svc.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        still_serving = svc.proc.poll() is None
        honest = svc.evaluate(HONEST) if still_serving else None
        assert still_serving and honest is not None, (
            f"the service died (exit {svc.proc.poll()}) after the saboteur's {_verdict(sabotage)}; "
            f"log: {svc.log_text()[-700:]}"
        )
        assert honest["status"] == "PASS", _verdict(honest)
    finally:
        if svc.proc.poll() is None:
            svc.proc.kill()
            svc.proc.wait()
        with contextlib.suppress(ValueError):
            svc.log.close()


# -- 3. memory left committed in the long-lived parent ---------------------------------------------------


def _region_mappings(pid: int) -> int:
    """How many distinct output regions (memfd "aka_outputs") the process maps now."""
    lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return len({line.split()[4] for line in lines if "aka_outputs" in line})


def _shmem_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1])
    return 0


@pytest.mark.slow
def test_output_region_pages_a_candidate_dirtied_are_not_kept_by_the_parent(service: Service) -> None:
    """redteam5_region_hog dirties 1 GiB of its output region (shared memory, outside its RLIMIT_DATA)
    and PASSes. Twice. The parent must not keep evaluated workers' regions mapped (each would pin its
    dirtied pages for the rest of the campaign: a memory leak a later honest candidate pays for)."""
    before = _shmem_kib()
    for _ in range(2):
        hog = service.evaluate(CANDIDATES / "redteam5_region_hog")
        assert hog["status"] in ("PASS", "REWARD_HACK"), _verdict(hog)
    time.sleep(1.0)
    kept = _region_mappings(service.proc.pid)
    grown_gib = (_shmem_kib() - before) / (1 << 20)
    assert kept <= 1, f"the parent still maps {kept} output regions (the spare's is 1)"
    assert grown_gib < 0.5, f"{grown_gib:.2f} GiB of shared memory still committed after the verdicts"
    honest = service.evaluate(HONEST)
    assert honest["status"] == "PASS", _verdict(honest)


# -- 4. a malformed reply frame --------------------------------------------------------------------------


@pytest.mark.slow
def test_a_malformed_reply_frame_is_no_pass_and_the_next_verdict_is_right(service: Service) -> None:
    """redteam5_pipe_garbage writes a bogus frame header into its reply pipe. Only the candidate's
    process writes there: REWARD_HACK (it was INFRA_ERROR, a free cold re-run through warm.py's
    fallback). An honest kernel next must PASS, and a cheat after it must still be caught."""
    garbage = service.evaluate(CANDIDATES / "redteam5_pipe_garbage")
    assert garbage["status"] == "REWARD_HACK" and "malformed" in garbage["message"], _verdict(garbage)
    if service.proc.poll() is not None:  # the service ended itself: the client starts a fresh one
        return
    honest = service.evaluate(HONEST)
    assert honest["status"] == "PASS", _verdict(honest)
    noop = service.evaluate(CANDIDATES / "adv_noop")
    assert noop["status"] == "INCORRECT", _verdict(noop)
