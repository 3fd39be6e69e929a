"""The untrusted worker's whole process tree, as the kernel (not the worker) reports it: found, timed,
killed (issue 13, classes 4 and 5).

A candidate can fork, double-fork (re-parented to the trusted parent, a subreaper), `posix_spawn`, leave
zombies or move its helpers to another process group. Everything here reads /proc from the trusted
parent, so nothing the worker says about itself is needed: its descendants (zombies included), their CPU
time (a helper doing the work is counted), and a kill that scans *before* it kills (a killed worker's
children are re-parented, and a killed group hides what it held).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    state: str  # "R", "S", "Z" (zombie), ...
    pgid: int
    sid: int
    children_ticks: int  # CPU time of its reaped children (cutime + cstime), clock ticks
    name: str
    own_ticks: int = 0  # its own CPU time (utime + stime), clock ticks, exited threads included


def read_proc(pid: int) -> Proc | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    try:
        reaped = int(fields[13]) + int(fields[14])
        own = int(fields[11]) + int(fields[12])
        return Proc(pid, int(fields[1]), fields[0], int(fields[2]), int(fields[3]), reaped, name, own)
    except (IndexError, ValueError):
        return None


# Signals a timer raises (setitimer: ALRM, VTALRM, PROF) or asynchronous I/O does (IO): a handler for one
# runs Python code in the worker at moments the kernel does not control and no clock of ours covers
# (red team round 8: the call's work done by a SIGALRM handler while the harness wrote the next inputs).
TIMER_SIGNALS = {signal.SIGALRM: "SIGALRM", signal.SIGVTALRM: "SIGVTALRM", signal.SIGPROF: "SIGPROF"}
if hasattr(signal, "SIGIO"):
    TIMER_SIGNALS[signal.SIGIO] = "SIGIO"


def caught_signals(pid: int) -> set[int]:
    """The signals process `pid` has a handler for (its SigCgt mask in /proc), empty if it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return set()
    line = next((x for x in status.splitlines() if x.startswith("SigCgt:")), "")
    try:
        mask = int(line.split(":", 1)[1].strip(), 16) if line else 0
    except ValueError:
        return set()
    return {bit + 1 for bit in range(mask.bit_length()) if mask >> bit & 1}


def posix_timers(pid: int) -> set[int]:
    """The POSIX timers (timer_create) process `pid` holds, by id, from /proc/<pid>/timers: red team round
    9b armed one by raw syscalls aimed at glibc's own signal 33, which a handler check cannot tell apart."""
    try:
        text = Path(f"/proc/{pid}/timers").read_text()
    except OSError:
        return set()
    return {
        int(line.split()[1]) for line in text.splitlines() if line.startswith("ID:") and len(line.split()) > 1
    }


O_ASYNC = 0o20000  # fcntl's FASYNC, as /proc/<pid>/fdinfo prints a descriptor's flags (octal)


def async_fds(pid: int) -> list[int]:
    """Descriptors of process `pid` set to raise a signal on I/O (O_ASYNC, with F_SETOWN/F_SETSIG): on
    the worker's end of the parent's pipe, every step the parent sends would run the kernel's handler."""
    found = []
    try:
        entries = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return []
    for name in entries:
        try:
            text = Path(f"/proc/{pid}/fdinfo/{name}").read_text()
        except OSError:
            continue
        line = next((x for x in text.splitlines() if x.startswith("flags:")), "")
        try:
            if line and int(line.split(":", 1)[1].strip(), 8) & O_ASYNC:
                found.append(int(name))
        except ValueError:
            continue
    return found


def thread_ids(pid: int) -> set[int]:
    """The OS threads of process `pid` (its /proc tasks), every one, whether or not Python's `threading`
    knows it (`_thread.start_new_thread` makes threads `threading.enumerate()` never lists)."""
    try:
        return {int(t.name) for t in os.scandir(f"/proc/{pid}/task") if t.name.isdigit()}
    except OSError:
        return set()


def table() -> dict[int, Proc]:
    """Every process this user can see, zombies included."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            proc = read_proc(int(entry.name))
            if proc is not None:
                found[proc.pid] = proc
    return found


def children(pid: int) -> list[int]:
    """The child processes of `pid` (zombies included), from each of its threads' children list: a child
    is listed under the thread that made it, and moves to a live one when that thread exits."""
    try:
        tids = [t.name for t in os.scandir(f"/proc/{pid}/task") if t.name.isdigit()]
    except OSError:
        return []
    found: list[int] = []
    for tid in tids:
        try:
            found += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except (OSError, ValueError):
            continue  # the thread has exited (its children are listed under another)
    return list(dict.fromkeys(found))


# Whether this kernel lists each thread's children in /proc (CONFIG_PROC_CHILDREN). Walking the tree from
# the root costs a few reads; the whole process table costs one read per process on the host (11 ms per
# reply of the worker on the H200's host, 1.4-1.7 s of a cold evaluation: issue 9's speed).
CHILDREN_LISTED = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists()


def descendants(root: int, procs: dict[int, Proc] | None = None) -> list[Proc]:
    """Every process below `root` (children, grandchildren, zombies), breadth first: from the children
    lists where the kernel keeps them, else from the whole process table (or `procs`, one taken already)."""
    if procs is None and CHILDREN_LISTED:
        return _walk(root)
    procs = table() if procs is None else procs
    by_parent: dict[int, list[Proc]] = {}
    for proc in procs.values():
        by_parent.setdefault(proc.ppid, []).append(proc)
    out, frontier = [], [root]
    while frontier:
        nxt = []
        for pid in frontier:
            for child in by_parent.get(pid, []):
                if child.pid != root and child not in out:
                    out.append(child)
                    nxt.append(child.pid)
        frontier = nxt
    return out


def _walk(root: int) -> list[Proc]:
    """`descendants` from the children lists: each found process read once (a pid already gone is left
    out, as the table would leave it out)."""
    out: list[Proc] = []
    seen = {root}
    frontier = [root]
    while frontier:
        nxt = []
        for pid in frontier:
            for child in children(pid):
                if child in seen:
                    continue
                seen.add(child)
                proc = read_proc(child)
                if proc is not None:
                    out.append(proc)
                    nxt.append(child)
        frontier = nxt
    return out


def thread_cpu_ns(pid: int) -> int:
    """CPU time of every live thread of `pid` (ns, /proc/<pid>/task/*/schedstat)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    total = 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that just exited
    return total


def tree_cpu_ns(root: int, extra_roots: tuple[int, ...] = ()) -> int | None:
    """CPU time of `root`, of every live descendant, and of every child any of them reaped (ns): work
    handed to a forked or spawned helper counts as the kernel's. `extra_roots`: processes outside the
    tree that count too (double-forked helpers re-parented to the trusted parent)."""
    root_proc = read_proc(root)
    if root_proc is None:
        return None
    procs = table()
    members = [root_proc, *descendants(root, procs)]
    for pid in extra_roots:
        if pid in procs:
            members += [procs[pid], *descendants(pid, procs)]
    ticks_ns = 1_000_000_000 // CLOCK_TICKS
    return sum(process_cpu_ns(p.pid) + p.children_ticks * ticks_ns for p in members)


def process_cpu_ns(pid: int) -> int:
    """CPU time of a whole process (ns), threads that already exited included: its CPU-time clock
    (clock_getcpuclockid's MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)), readable for any process of ours.
    The live threads' schedstat sum where that clock cannot be read: a thread that exits takes its time
    with it there (red team round 7: each call's work on a thread born and joined inside the call).
    0 for no such process."""
    if pid <= 0:
        return 0  # ~pid would name the calling process's own clock
    try:
        return time.clock_gettime_ns(((~pid) << 3) | 2)
    except (OSError, OverflowError):
        return thread_cpu_ns(pid)


# The longest a reading of the tree's CPU time waits for its processes to leave the CPU (`off_cpu`).
SETTLE_S = 0.005


def off_cpu(procs: list[Proc], timeout_s: float | None = None) -> list[Proc]:
    """The processes read again once each one's main thread is off the CPU (neither running nor
    runnable), or after `timeout_s` (SETTLE_S); those gone meanwhile are left out.

    Why: Linux books a running thread's CPU time at its next scheduler event (a tick, 4 ms here, or
    being switched out), and another process reading its clock sees only what is booked
    (thread_group_cputime updates the pending time of the reader's own tasks only). A reading taken
    while the worker is still on its way back to its pipe misses what it just did, which then shows up
    in the next reading's window: an honest call step read 134 us dearer than its own clock said (CI,
    round 16)."""
    deadline = time.monotonic() + (SETTLE_S if timeout_s is None else timeout_s)
    out = []
    for proc in procs:
        latest: Proc | None = proc
        while latest is not None and latest.state == "R" and time.monotonic() < deadline:
            time.sleep(0)
            latest = read_proc(proc.pid)
        if latest is not None:
            out.append(latest)
    return out


def tree_cpu_pair(root: int) -> tuple[int, int] | None:
    """(precise, coarse) CPU time of the tree (ns), read once its processes are off the CPU (`off_cpu`):
    the precise figure reads each process's CPU-time clock (`process_cpu_ns`); the coarse one sums the
    tick counters (utime + stime + cutime + cstime), at 1/CLK_TCK resolution. A difference of two
    readings is at least max(precise delta, coarse delta - 2 ticks)."""
    root_proc = read_proc(root)
    if root_proc is None:
        return None
    members = off_cpu([root_proc, *descendants(root)])
    tick = 1_000_000_000 // CLOCK_TICKS
    precise = sum(process_cpu_ns(p.pid) + p.children_ticks * tick for p in members)
    coarse = sum((p.own_ticks + p.children_ticks) * tick for p in members)
    return precise, coarse


def cpu_delta_ns(before: tuple[int, int], after: tuple[int, int]) -> int:
    """CPU time used between two `tree_cpu_pair` readings, never less than the work done."""
    tick = 1_000_000_000 // CLOCK_TICKS
    return max(after[0] - before[0], after[1] - before[1] - 2 * tick, 0)


def strays(known: set[int]) -> list[Proc]:
    """Processes re-parented to this (subreaper) process that are not known workers, with their
    descendants: whatever a candidate double-forked. Zombies included."""
    procs = table()
    me = os.getpid()
    out = []
    for proc in procs.values():
        if proc.ppid == me and proc.pid not in known:
            out += [proc, *descendants(proc.pid, procs)]
    return out


def describe(procs: list[Proc]) -> str:
    parts = [f"pid {p.pid} ({p.name}{', zombie' if p.state == 'Z' else ''})" for p in procs[:6]]
    return ", ".join(parts) + (f" and {len(procs) - 6} more" if len(procs) > 6 else "")


def kill_all(procs: list[Proc]) -> None:
    """SIGKILL each (zombies are already dead) and reap those that are our children."""
    for proc in procs:
        if proc.state != "Z":
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, signal.SIGKILL)
    reap(procs)


def reap(procs: list[Proc]) -> None:
    me = os.getpid()
    for proc in procs:
        if proc.ppid == me:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(proc.pid, 0)
