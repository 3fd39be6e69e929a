"""The campaign runner: one SQLite-checkpointed LangGraph thread per campaign workspace.

`<workspace>/checkpoints/campaign.sqlite` holds every campaign under `--workspace`, one thread each (thread
id = the campaign directory name), written with durability "sync" so a `kill -9` loses at most the node
that was running. Re-running the same command resumes an interrupted thread; a finished one just reports
(`thread_phase` tells them apart). `stop` asks a running campaign to end via a request file plus SIGTERM.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.state import CompiledStateGraph

from aka_graph.checkpoint_serde import campaign_serde
from aka_graph.context import CampaignContext, context_for
from aka_graph.graph import build_graph
from aka_graph.progress import Progress
from aka_graph.state import (
    CampaignConfig,
    CampaignInput,
)
from aka_graph.target import CampaignTarget, resolve_target
from aka_graph.thread_phase import resume_point, thread_phase
from aka_graph.tools.evaluator.warm import stop_for as stop_warm_evaluators
from aka_graph.tools.records.privacy import PrivacyViolation
from aka_graph.tools.records.sqlite_wal import use_wal
from aka_graph.tools.records.workspace import clear_stale_git_locks

CHECKPOINT_DIR = "checkpoints"
CHECKPOINT_DB = "campaign.sqlite"
EXIT_STOPPED = 3


class CampaignConflict(RuntimeError):
    """The same workspace holds this campaign with different settings; the message says what to do."""


@dataclass
class RunOutcome:
    thread_id: str
    status: str  # finished | stopped | already-finished | failed (production: the privacy check)
    values: dict[str, Any]
    resumed: bool


def checkpoint_path(workspace: Path) -> Path:
    return Path(workspace).resolve() / CHECKPOINT_DIR / CHECKPOINT_DB


def control_path(workspace: Path, thread_id: str, suffix: str) -> Path:
    return Path(workspace).resolve() / CHECKPOINT_DIR / f"{thread_id}.{suffix}"


@contextmanager
def open_checkpointer(workspace: Path) -> Iterator[SqliteSaver]:
    path = checkpoint_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
    use_wal(conn)
    try:
        yield SqliteSaver(conn, serde=campaign_serde())
    finally:
        conn.close()


def compile_graph(saver: SqliteSaver) -> CompiledStateGraph:
    return build_graph().compile(checkpointer=saver)


def thread_config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": 100_000}


def campaign_thread_id(config: CampaignConfig, context: CampaignContext) -> str:
    """The campaign directory name (op, framework, platform, production): the checkpoint thread's id."""
    return context.target_for(config).dir_name


def framework_targets(config: CampaignConfig, context: CampaignContext | None = None) -> list[CampaignTarget]:
    """One target per framework the GPU supports (the campaigns `run` starts when --framework is omitted),
    from a single resolution: the operator is loaded and the GPU probed once, not once per framework."""
    ctx = context_for(context, config)
    target = resolve_target(config, ctx.sandbox, check_framework=False)
    return [target.model_copy(update={"framework": f}) for f in target.frameworks]


def available_frameworks(config: CampaignConfig, context: CampaignContext | None = None) -> list[str]:
    """Every framework the target supports."""
    return [t.framework for t in framework_targets(config, context)]


def run_campaigns(
    configs: list[CampaignConfig], quiet: bool = False, targets: list[CampaignTarget] | None = None
) -> list[RunOutcome]:
    """One campaign per config, concurrently (threads; one checkpoint database, one thread id each).
    `targets` (from `framework_targets`), when given, are the campaigns' resolved targets, in order.

    `stop` ends them all: SIGTERM records the stop in each campaign and exits, like a single campaign.
    """
    import threading

    outcomes: dict[int, RunOutcome] = {}
    errors: dict[int, BaseException] = {}

    def work(index: int, config: CampaignConfig) -> None:
        try:
            progress = Progress.for_terminal(quiet=True) if quiet else Progress(label=config.framework)
            seeded = CampaignContext(target=targets[index]) if targets else None
            outcomes[index] = run_campaign(config, seeded, progress=progress)
        except BaseException as e:  # reported below, in the main thread
            errors[index] = e

    def on_term(signum: int, frame: Any) -> None:
        for config in configs:
            workspace = Path(config.workspace).resolve()
            for tid in list_threads(workspace):
                _record_stop(workspace / tid, "stop requested")
                control_path(workspace, tid, "pid").unlink(missing_ok=True)
        print("campaigns stopped; run the same command to resume them", file=sys.stderr, flush=True)
        os._exit(EXIT_STOPPED)

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        threads = [
            threading.Thread(target=work, args=(i, c), name=f"campaign-{c.framework}", daemon=True)
            for i, c in enumerate(configs)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if errors:
        raise next(iter(errors.values()))
    return [outcomes[i] for i in sorted(outcomes)]


def list_threads(workspace: Path) -> list[str]:
    path = checkpoint_path(workspace)
    if not path.is_file():
        return []
    with sqlite3.connect(str(path)) as conn:
        try:
            return [
                r[0] for r in conn.execute("select distinct thread_id from checkpoints order by thread_id")
            ]
        except sqlite3.OperationalError:
            return []


def stored_config(compiled: CompiledStateGraph, thread_id: str) -> CampaignConfig | None:
    values = compiled.get_state(thread_config(thread_id)).values
    config = values.get("config") if values else None
    if config is None:
        return None
    return config if isinstance(config, CampaignConfig) else CampaignConfig.model_validate(config)


def known_thread(workspace: Path, config: CampaignConfig) -> str | None:
    """The thread of the campaign started with these settings (where it runs aside), if there is one."""
    threads = list_threads(workspace)
    if not threads:
        return None
    with open_checkpointer(workspace) as saver:
        compiled = compile_graph(saver)
        for tid in threads:
            stored = stored_config(compiled, tid)
            if stored is not None and stored.identity() == config.identity():
                return tid
        return None


def _differences(a: CampaignConfig, b: CampaignConfig) -> list[str]:
    """What makes `b` another campaign than `a` (infrastructure settings never do: `identity()`)."""
    da, db = a.identity(), b.identity()
    return [f"{k}: {da[k]!r} (stored) vs {db[k]!r} (now)" for k in da if da[k] != db[k]]


def run_campaign(
    config: CampaignConfig,
    context: CampaignContext | None = None,
    *,
    progress: Progress | None = None,
    thread_id: str | None = None,
) -> RunOutcome:
    """Start, resume, or report the campaign `config` describes. Blocks until it finishes or is stopped."""
    config = config.model_copy(
        update={
            "op_dir": str(Path(config.op_dir).resolve()),
            "workspace": str(Path(config.workspace).resolve()),
        }
    )
    ctx = context_for(context, config)
    workspace = Path(config.workspace)
    # a restart finds its thread by its settings (no health probe on the way back to the interrupted node)
    tid = thread_id or known_thread(workspace, config) or campaign_thread_id(config, ctx)
    progress = progress or Progress.for_terminal()
    with open_checkpointer(workspace) as saver:
        compiled = compile_graph(saver)
        cfg = thread_config(tid)
        snapshot = compiled.get_state(cfg)
        previous = stored_config(compiled, tid)
        if previous is not None and previous.identity() != config.identity():
            raise CampaignConflict(
                f"campaign {tid} in {workspace} was started with other settings ("
                + "; ".join(_differences(previous, config))
                + "): run `python -m aka_graph resume` to continue it as it was, or use another --workspace"
            )
        phase = thread_phase(snapshot)
        if phase == "finished":
            progress.log(f"campaign {tid} already finished: {snapshot.values.get('stop_reason')}")
            return RunOutcome(tid, "already-finished", dict(snapshot.values), resumed=False)
        resumed = phase == "interrupted"
        if resumed:  # the progress lines start from what the campaign already spent and kept
            progress.resume_from(snapshot.values)
        for backend in (ctx.agent, *ctx.reviewers.values()):  # fail before any work, naming the fix
            backend.check_ready()
        progress.log(
            f"{'resuming' if resumed else 'starting'} campaign {tid}"
            + (f" at {resume_point(snapshot)}" if resumed else "")
        )
        return _drive(
            compiled,
            cfg,
            None if resumed else CampaignInput(config=config),
            ctx,
            progress,
            workspace,
            tid,
            resumed,
        )


def resume_campaign(
    workspace: Path,
    thread_id: str | None = None,
    context: CampaignContext | None = None,
    *,
    progress: Progress | None = None,
) -> RunOutcome:
    """Continue a campaign with the settings it was started with."""
    threads = list_threads(workspace)
    if thread_id is None:
        if len(threads) != 1:
            raise CampaignConflict(
                f"{workspace} holds campaigns {threads or 'none'}: name one with --campaign"
            )
        thread_id = threads[0]
    with open_checkpointer(workspace) as saver:
        config = stored_config(compile_graph(saver), thread_id)
    if config is None:
        raise CampaignConflict(f"no campaign {thread_id!r} in {checkpoint_path(workspace)}; known: {threads}")
    return run_campaign(config, context, progress=progress, thread_id=thread_id)


def _drive(
    compiled: CompiledStateGraph,
    cfg: dict[str, Any],
    graph_input: CampaignInput | None,
    ctx: CampaignContext,
    progress: Progress,
    workspace: Path,
    tid: str,
    resumed: bool,
) -> RunOutcome:
    stop_file, pid_file = control_path(workspace, tid, "stop"), control_path(workspace, tid, "pid")
    root = workspace / tid
    running = live_runner(pid_file)
    if running is not None:
        raise CampaignConflict(
            f"campaign {tid} is already running in process {running}: watch it with "
            "`python -m aka_graph status`, or end it with `python -m aka_graph stop` first"
        )
    if resumed:  # the previous runner is gone: a git command it was killed in left its locks behind
        for lock in clear_stale_git_locks(root):
            progress.log(f"removed a stale git lock left by the interrupted run: {lock}")
    stop_file.unlink(missing_ok=True)
    pid_file.write_text(str(os.getpid()))
    previous_handler = signal.getsignal(signal.SIGTERM)

    def stop_now(reason: str) -> None:
        """End like a crash (the interrupted node re-runs on resume, exactly as after kill -9), but say so."""
        _record_stop(root, reason)
        progress.log(
            f"campaign {tid} stopped ({reason}); run the same command or `python -m aka_graph resume`"
        )
        progress.close({})
        pid_file.unlink(missing_ok=True)
        stop_file.unlink(missing_ok=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_STOPPED)

    def on_term(signum: int, frame: Any) -> None:
        stop_now("stop requested")

    in_main = _is_main_thread()
    if in_main:
        signal.signal(signal.SIGTERM, on_term)
    status = "finished"
    try:
        for mode, payload in compiled.stream(
            graph_input, cfg, context=ctx, durability="sync", stream_mode=["tasks", "custom", "updates"]
        ):
            progress.handle(mode, payload)
            if stop_file.exists():
                if in_main:
                    stop_now("stop requested between steps")
                status = "stopped"  # embedded in a thread: leave the loop, the caller decides
                break
    except PrivacyViolation as leak:  # production: a commit leaked a private shape; the campaign is void
        from aka_graph.nodes.finish import fail_campaign_on_leak

        progress.log(f"campaign {tid} failed: {fail_campaign_on_leak(root, leak.findings)}")
        status = "failed"
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous_handler)
        pid_file.unlink(missing_ok=True)
        stop_file.unlink(missing_ok=True)
        stop_warm_evaluators(ctx.sandbox)  # the campaign's evaluator services (warm.py) end with it
    snapshot = compiled.get_state(cfg)
    progress.close(dict(snapshot.values))
    if snapshot.values.get("failed"):
        status = "failed"
    return RunOutcome(tid, status, dict(snapshot.values), resumed)


def live_runner(pid_file: Path) -> int | None:
    """The pid of another live `aka_graph` process that is running this campaign, if there is one (a pid
    file left by a killed runner, or a pid reused by an unrelated process, does not count)."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    if pid == os.getpid():
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return pid if b"aka_graph" in cmdline or b"aka-graph" in cmdline else None


def _record_stop(root: Path, reason: str) -> None:
    if not (root / "memory").is_dir():
        return
    from aka_graph.tools.records.memory import LiveRecord, read_live, write_live

    live = read_live(root) or LiveRecord()
    write_live(root, live.model_copy(update={"node": "stopped", "message": f"{reason} during {live.node}"}))


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
