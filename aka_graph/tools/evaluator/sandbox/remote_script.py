"""The shell text an SSH host runs: the host facts probe and the per-job wrapper.

The wrapper holds the GPU lock with `flock`, bounds the job with `timeout` on the host itself (so a lost
connection cannot leave it running), runs it inside bubblewrap, and ends stderr with one status line
written after every sandboxed process is gone, which therefore cannot be forged by the candidate.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from aka_graph.tools.evaluator.sandbox.isolation import HOST_RUNTIME_VARS

STATUS_MARK = "AKA-SANDBOX-STATUS"
_STATUS_LINE = re.compile(rf"\n?{STATUS_MARK} rc=(\d+) started=(\w*) error=(\w*)\n?$")


def host_facts_script(nvidia_smi: str, bind_sources: Sequence[str]) -> str:
    """Print `key=value` facts: home, PATH, euid, tools, /bin-style links, GPUs, resolved bind sources."""
    q = shlex.quote
    lines = [
        'echo "home=$HOME"',
        'echo "path=$PATH"',
        "for v in " + " ".join(HOST_RUNTIME_VARS) + '; do eval "echo env.$v=\\${$v:-}"; done',
        'echo "euid=$(id -u)"',
        'for t in bwrap timeout flock; do echo "tool.$t=$(command -v $t)"; done',
        "for d in bin sbin lib lib32 lib64 libx32; do",
        '  [ -L "/$d" ] && echo "link./$d=$(readlink "/$d")"; done',
        f"{q(nvidia_smi)} --query-gpu=index,uuid,pci.bus_id --format=csv,noheader 2>&1 | sed 's/^/gpu=/'",
        'for f in /proc/driver/nvidia/gpus/*/information; do [ -f "$f" ] && '
        'echo "minor.$(basename "$(dirname "$f")")=$(sed -n "s/^Device Minor:[[:space:]]*//p" "$f")"; done',
    ]
    for index, source in enumerate(bind_sources):
        lines.append(f'echo "bind.{index}=$(realpath -e -- {q(source)} 2>/dev/null)"')
    return "\n".join(lines) + "\ntrue\n"


# One long-lived shell per connection runs every job: sshd starts the login shell (and its rc files,
# often a quarter of a second or more) once per connection instead of once per job. It reads job roots on
# stdin, runs `root/job.sh` in the background with output to `root/stdout` and `root/stderr`, and prints
# `done ROOT`. When the connection goes (stdin closes), it stops the jobs still running.
EXECUTOR_SCRIPT = """roots=
while IFS= read -r root; do
  roots="$roots $root"
  ( sh "$root/job.sh" >"$root/stdout" 2>"$root/stderr" </dev/null
    rm -f "$root/timeout.pid"; echo "done $root" ) &
done
stop() {
  for r in $roots; do [ -f "$r/timeout.pid" ] && kill -"$1" "-$(cat "$r/timeout.pid")" 2>/dev/null; done
}
stop TERM; sleep 1; stop KILL
exit 0
"""


def parse_facts(output: str) -> dict[str, list[str]]:
    facts: dict[str, list[str]] = {}
    for line in output.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            facts.setdefault(key, []).append(value)
    return facts


@dataclass(frozen=True)
class JobScript:
    root: str  # the remote job root; the sandbox sees only root/work
    sandbox_argv: list[str]  # the full bwrap command line
    timeout_s: float
    kill_grace_s: float
    lock_path: str | None  # flock this for the whole job (exclusive GPU jobs)
    lock_wait_s: float

    def render(self) -> str:
        q = shlex.quote
        root = q(self.root)
        status = f'printf "\\n{STATUS_MARK} rc=%s started=%s error=%s\\n" "$rc" "$started" "$error" >&2'
        parts = [
            "rc=0; started=; error=",
            f"finish() {{ {status}; exit 0; }}",
            f"cd {root}/work || {{ rc=1; error=nojobdir; finish; }}",
        ]
        if self.lock_path:
            parts += [
                f"exec 9>>{q(self.lock_path)} || {{ rc=1; error=lockfile; finish; }}",
                f"flock -w {self.lock_wait_s:.0f} 9 || {{ rc=1; error=gpubusy; finish; }}",
            ]
        command = " ".join(q(a) for a in self.sandbox_argv)
        parts += [
            # timeout's pid is recorded before it starts (exec keeps the pid), so the executor can stop
            # the job if the connection dies at any moment after this line.
            f'sh -c \'echo $$ > "$0"; exec "$@"\' {root}/timeout.pid'
            f" timeout -k {self.kill_grace_s:g} {self.timeout_s:g} {command} 0>{root}/started 9>&- &",
            "wait $!; rc=$?",
            # timeout exits as soon as bubblewrap's outer process dies, which can leave the namespace's
            # init (it ignores SIGTERM) and the candidate behind: SIGKILL the whole group, always.
            f'kill -KILL "-$(cat {root}/timeout.pid)" 2>/dev/null',
            f"started=$(cat {root}/started 2>/dev/null)",
            "finish",
        ]
        return "\n".join(parts) + "\n"


def split_status(stderr: str) -> tuple[str, int | None, bool, str]:
    """(candidate stderr, wrapper rc or None when the status line is missing, started, wrapper error)."""
    match = _STATUS_LINE.search(stderr)
    if match is None:
        return stderr, None, False, ""
    return stderr[: match.start()], int(match.group(1)), match.group(2) == "started", match.group(3)
