"""hostmem.read: the host memory an evaluation may use is the machine's, bounded by its memory cgroup.

Inside a container /proc/meminfo shows the whole machine; a CPU evaluation that trusted it would pass the
host check and be killed by the cgroup's OOM killer mid-draw. Each case lays out the files a kernel
would show (/proc/meminfo, /proc/self/cgroup, the cgroup mount) in a temporary tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness.hostmem import DEFAULT_TOTAL, HostMemory, read

GIB = 1 << 30
MACHINE = 64 * GIB
FREE = 60 * GIB
NO_LIMIT_V1 = "9223372036854771712"


def _tree(tmp_path: Path, cgroup_line: str | None, files: dict[str, str], meminfo: bool = True):
    proc, root = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    root.mkdir()
    if meminfo:
        (proc / "meminfo").write_text(
            f"MemTotal:       {MACHINE // 1024} kB\nMemFree:        1 kB\nMemAvailable:   {FREE // 1024} kB\n"
        )
    if cgroup_line is not None:
        (proc / "self" / "cgroup").write_text(cgroup_line + "\n")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return proc, root


V2 = "cgroup.controllers"  # present at a cgroup v2 mount's root


@pytest.mark.parametrize(
    ("case", "line", "files", "expected"),
    [
        ("no cgroup at all: the machine", None, {}, HostMemory(MACHINE, FREE, None)),
        (
            "v2 container of 8 GiB holding 1 GiB, half of it inactive file pages",
            "0::/job",
            {V2: "memory", "job/memory.max": str(8 * GIB), "job/memory.current": str(GIB),
             "job/memory.stat": f"anon 1\ninactive_file {GIB // 2}"},
            HostMemory(8 * GIB, 8 * GIB - GIB // 2, 8 * GIB),
        ),
        (
            "v2: the limit is on the parent (a Slurm job), the step's own is max",
            "0::/job/step",
            {V2: "memory", "job/memory.max": str(6 * GIB), "job/memory.current": str(2 * GIB),
             "job/step/memory.max": "max", "job/step/memory.current": str(GIB)},
            HostMemory(6 * GIB, 4 * GIB, 6 * GIB),
        ),
        (
            "v2 limit above the machine's memory bounds nothing",
            "0::/big",
            {V2: "memory", "big/memory.max": str(128 * GIB), "big/memory.current": str(GIB)},
            HostMemory(MACHINE, FREE, None),
        ),
        (
            "v2 with a cgroup namespace: the path is not under the mount, the mount is the cgroup",
            "0::/kubepods/pod1/c1",
            {V2: "memory", "memory.max": str(16 * GIB), "memory.current": str(3 * GIB)},
            HostMemory(16 * GIB, 13 * GIB, 16 * GIB),
        ),
        (
            "v2 with no limit anywhere",
            "0::/user.slice",
            {V2: "memory", "user.slice/memory.max": "max", "user.slice/memory.current": str(GIB)},
            HostMemory(MACHINE, FREE, None),
        ),
        (
            "v1 (docker on an older host): the hierarchical limit counts an ancestor's",
            "4:memory:/docker/abc\n0::/",
            {"memory/docker/abc/memory.limit_in_bytes": NO_LIMIT_V1,
             "memory/docker/abc/memory.usage_in_bytes": str(3 * GIB),
             "memory/docker/abc/memory.stat": f"cache 1\nhierarchical_memory_limit {12 * GIB}\n"
             f"total_inactive_file {GIB}"},
            HostMemory(12 * GIB, 10 * GIB, 12 * GIB),
        ),
        (
            "v1 without a hierarchical figure: the cgroup's own limit",
            "9:memory,hugetlb:/batch/42",
            {"memory/batch/42/memory.limit_in_bytes": str(10 * GIB),
             "memory/batch/42/memory.usage_in_bytes": str(GIB)},
            HostMemory(10 * GIB, 9 * GIB, 10 * GIB),
        ),
        (
            "v1 unlimited (this CI host's kind)",
            "4:memory:/process_api/x",
            {"memory/process_api/x/memory.limit_in_bytes": NO_LIMIT_V1,
             "memory/process_api/x/memory.stat": f"hierarchical_memory_limit {NO_LIMIT_V1}"},
            HostMemory(MACHINE, FREE, None),
        ),
        (
            "a cgroup nearly full leaves little available though the machine has plenty",
            "0::/tight",
            {V2: "memory", "tight/memory.max": str(8 * GIB), "tight/memory.current": str(8 * GIB)},
            HostMemory(8 * GIB, 0, 8 * GIB),
        ),
    ],
)
def test_the_memory_an_evaluation_may_use(
    tmp_path: Path, case: str, line: str | None, files: dict[str, str], expected: HostMemory
) -> None:
    proc, root = _tree(tmp_path, line, files)
    assert read(proc, root) == expected, case


def test_without_proc_meminfo_a_default_size_and_still_the_cgroups_limit(tmp_path: Path) -> None:
    proc, root = _tree(tmp_path, "0::/", {V2: "memory"}, meminfo=False)
    assert read(proc, root) == HostMemory(DEFAULT_TOTAL, DEFAULT_TOTAL, None)
    proc, root = _tree(tmp_path / "b", "0::/", {V2: "memory", "memory.max": str(4 * GIB)}, meminfo=False)
    assert read(proc, root) == HostMemory(4 * GIB, 4 * GIB, 4 * GIB)


def test_a_message_names_the_cgroups_limit_when_it_is_what_bounds() -> None:
    assert HostMemory(MACHINE, FREE, None).describe() == "this host"
    assert HostMemory(8 * GIB, GIB, 8 * GIB).describe() == "this host (its memory cgroup's limit of 8.0 GiB)"


def test_this_machine_reads_without_error_and_never_above_proc_meminfo() -> None:
    here = read()
    meminfo = {
        key: int(rest.split()[0]) * 1024
        for key, _, rest in (line.partition(":") for line in Path("/proc/meminfo").read_text().splitlines())
    }
    assert 0 < here.total <= meminfo["MemTotal"] and 0 <= here.available <= meminfo["MemAvailable"] + GIB
