"""`python -m aka_graph fleet submit|status|stop|resume|report|work`: many campaigns on a pool of GPU hosts,
coordinated through PostgreSQL (`aka_graph/fleet/`). Every command takes `--database-url` (or
`AKA_DATABASE_URL`); without one, nothing here runs and single campaigns keep using SQLite."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

fleet_app = typer.Typer(
    name="fleet",
    help="Fleets of campaigns (operators × frameworks) on SSH GPU hosts, shared through PostgreSQL.",
    no_args_is_help=True,
)

DatabaseUrl = Annotated[
    str | None,
    typer.Option("--database-url", help="postgresql://user@host:port/db (default: $AKA_DATABASE_URL)"),
]
Ids = Annotated[list[str] | None, typer.Argument(help="campaign ids (see `fleet status`)")]
AllFlag = Annotated[bool, typer.Option("--all", help="every campaign of the fleet")]


def _fail(message: str) -> typer.Exit:
    typer.echo(f"aka_graph fleet: {message}", err=True)
    return typer.Exit(2)


def _pool(database_url: str | None) -> ConnectionPool:
    """The fleet database's pool, schema up to date; bad or unreachable URLs end with one line, exit 2."""
    import psycopg

    from aka_graph.fleet.database import DatabaseNotConfigured, migrated_pool
    from aka_graph.fleet.database import database_url as resolve

    try:
        url = resolve(database_url)
    except DatabaseNotConfigured as e:
        raise _fail(str(e)) from None
    try:
        psycopg.connect(url, connect_timeout=10).close()
    except (psycopg.Error, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise _fail(
            f"cannot connect to {url}: {first}; check --database-url and that the server runs"
        ) from None
    return migrated_pool(url)


def _ids(ids: list[str] | None, all_: bool, verb: str) -> list[str] | None:
    if not ids and not all_:
        raise _fail(f"name the campaigns to {verb} (ids from `fleet status`) or pass --all")
    return None if all_ else list(ids or [])


@fleet_app.command("submit")
def submit(
    campaigns_file: Annotated[Path, typer.Argument(help="TOML: [defaults] + [[campaign]] op_dir/frameworks")],
    workspace: Annotated[
        Path, typer.Option(help="parent of every campaign's workspace (shared storage for coordinators)")
    ] = Path("fleet"),
    database_url: DatabaseUrl = None,
) -> None:
    """Queue every campaign of CAMPAIGNS_FILE (operators × frameworks with their budgets)."""
    from aka_graph.fleet.registry import Registry
    from aka_graph.fleet.submission import CampaignsFileError, plan_campaigns

    try:
        planned = plan_campaigns(campaigns_file, workspace)
    except CampaignsFileError as e:
        raise _fail(str(e)) from None
    registry = Registry(_pool(database_url))
    added = 0
    for campaign in planned:
        spec = campaign.config.model_dump(mode="json")
        if registry.submit(campaign.id, campaign.op_name, campaign.framework, spec):
            added += 1
        else:
            typer.echo(f"{campaign.id}: already submitted, left as it is", err=True)
    typer.echo(f"submitted {added} campaign(s) ({len(planned) - added} already known); run `fleet work`")


@fleet_app.command("status")
def status(
    ids: Ids = None,
    check: Annotated[bool, typer.Option(help="also check the GPU lease log (exit 1 on overlaps)")] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Per campaign: state, current node, incumbent, speedup, budget spent, last host; then the hosts."""
    from aka_graph.fleet.gpu_leases import GpuLeases, overlapping_leases
    from aka_graph.fleet.registry import Registry
    from aka_graph.fleet.report import format_table, status_rows

    pool = _pool(database_url)
    rows = Registry(pool).rows(ids)
    typer.echo(format_table(status_rows(rows)) if rows else "no campaigns (submit some with `fleet submit`)")
    hosts = GpuLeases(pool).hosts()
    if hosts:
        typer.echo("")
        typer.echo(
            format_table(
                [(h.name, h.target, h.state, f"{h.busy}/{h.gpus}", h.diagnostic[:80]) for h in hosts],
                ("host", "target", "state", "GPUs busy", "diagnostic"),
            )
        )
    if check:
        overlaps = overlapping_leases(pool)
        typer.echo(f"GPU lease log: {len(overlaps)} overlapping lease(s)")
        if overlaps:
            raise typer.Exit(1)


@fleet_app.command("stop")
def stop(ids: Ids = None, all_: AllFlag = False, database_url: DatabaseUrl = None) -> None:
    """Stop campaigns: queued ones now, running ones at their coordinator's next step."""
    from aka_graph.fleet.registry import Registry

    which = _ids(ids, all_, "stop")
    stopped = Registry(_pool(database_url)).request_stop(which)
    typer.echo(f"stop requested for {len(stopped)} campaign(s): {', '.join(stopped) or '-'}")


@fleet_app.command("resume")
def resume(ids: Ids = None, all_: AllFlag = False, database_url: DatabaseUrl = None) -> None:
    """Queue stopped or failed campaigns again; a coordinator resumes them from their checkpoints."""
    from aka_graph.fleet.registry import Registry

    which = _ids(ids, all_, "resume")
    queued = Registry(_pool(database_url)).requeue(which)
    typer.echo(f"queued {len(queued)} campaign(s): {', '.join(queued) or '-'}")


@fleet_app.command("report")
def report(
    out: Annotated[Path, typer.Option(help="directory for fleet_report.md and fleet_speedups.png")] = Path(
        "fleet_report"
    ),
    database_url: DatabaseUrl = None,
) -> None:
    """A table of every campaign and a plot of speedups by operator."""
    from aka_graph.fleet.registry import Registry
    from aka_graph.fleet.report import format_table, report_markdown, speedup_plot, status_rows

    rows = Registry(_pool(database_url)).rows()
    if not rows:
        raise _fail("no campaigns to report; submit some with `fleet submit`")
    plot = speedup_plot(rows, out / "fleet_speedups.png")
    (out / "fleet_report.md").write_text(report_markdown(rows, plot))
    typer.echo(format_table(status_rows(rows)))
    typer.echo(f"report: {out / 'fleet_report.md'}  plot: {plot}")


@fleet_app.command("work")
def work(
    hosts: Annotated[Path, typer.Option(help="TOML hosts file: [[host]] name, target, gpus")],
    concurrency: Annotated[int, typer.Option(min=1, help="campaigns this coordinator runs at once")] = 4,
    lease_ttl: Annotated[
        float, typer.Option(min=1.0, help="seconds until a silent coordinator's leases expire")
    ] = 60.0,
    poll: Annotated[float, typer.Option(min=0.05, help="seconds between looks for work when idle")] = 2.0,
    probe_interval: Annotated[
        float, typer.Option(min=0.1, help="seconds between drained-host probes")
    ] = 30.0,
    database_url: DatabaseUrl = None,
) -> None:
    """Be a coordinator: take leased campaigns and run them until none are left in the fleet."""
    from aka_graph.fleet.coordinator import Coordinator, CoordinatorSettings
    from aka_graph.fleet.hosts import HostsFileError, load_hosts

    try:
        host_specs = load_hosts(hosts)
    except HostsFileError as e:
        raise _fail(str(e)) from None
    pool = _pool(database_url)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s")
    logging.getLogger("asyncssh").setLevel(logging.WARNING)
    settings = CoordinatorSettings(
        database_url=pool.conninfo,
        hosts=host_specs,
        concurrency=concurrency,
        lease_ttl_s=lease_ttl,
        poll_s=poll,
        probe_interval_s=probe_interval,
    )
    coordinator = Coordinator(settings)
    typer.echo(f"coordinator {settings.holder}: {len(host_specs)} host(s), up to {concurrency} campaign(s)")
    ran = coordinator.work()
    typer.echo(f"coordinator {settings.holder}: no campaign left; ran {len(ran)}: {', '.join(ran) or '-'}")


def register(app: typer.Typer) -> None:
    app.add_typer(fleet_app, name="fleet")
