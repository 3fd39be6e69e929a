"""Instant, deterministic test doubles for a campaign, injected through the runtime context.

They implement the real protocols honestly: the sandbox runs jobs as subprocesses and reports health; the
evaluator hashes the kernel it is given and derives numbers from a header line in it
(`# fake: status=PASS latency=90`); the agent writes the scripted kernel for (episode, trial) into its
working directory and reports exact tokens. `make_context` is usable as AKA_GRAPH_CONTEXT_FACTORY, so a
campaign subprocess (crash tests, `langgraph dev`) gets the same doubles; AKA_FAKE_KILL_AT=node:event:n
makes the process SIGKILL itself at the n-th such progress event (after that node's side effects);
AKA_FAKE_AGENT_SLEEP=s makes every agent turn run `sleep s` in its own session (stop tests);
AKA_FAKE_AGENT_LOG=path makes every agent invocation append one JSON line (agent, role, episode, trial,
tokens charged, pid) to a file outside the checkpoint, so crash tests see what a resumed process re-ran.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from aka_graph.cli_agents.base import AgentResult, AgentRun, BudgetExceeded, TokenUsage
from aka_graph.context import CampaignContext
from aka_graph.state import CampaignConfig
from aka_graph.tools.evaluator.evaluation_result import DeviceInfo, EvaluationResult, Summary, WorkloadResult
from aka_graph.tools.evaluator.sandbox.job import EXIT_TIMEOUT, HealthReport, SandboxJob, SandboxResult

WORKLOADS = {"w_small": 0.25, "w_mid": 1.0, "w_big": 4.0}
TOKENS_PER_TURN = TokenUsage(input=1000, output=200, total=1200, accuracy="exact")
HEADER = re.compile(r"#\s*fake:\s*(.*)")

# episode -> trial -> (status, latency); episode 1 fast (3 trials), 2 and 3 full.
STANDARD_SCRIPT: dict[str, dict[str, tuple[str, float]]] = {
    "1": {"1": ("INCORRECT", 80.0), "2": ("PASS", 90.0), "3": ("PASS", 95.0)},
    "2": {"1": ("PASS", 96.0)},
    "3": {"1": ("PASS", 70.0)},
    "v1": {"1": ("PASS", 100.0)},
}


# the decorator that makes a fake kernel pure for its framework (frameworks.framework_purity reads the AST;
# the fake evaluator never imports the kernel)
KERNEL_DECORATOR = {"triton": "triton.jit", "gluon": "gluon.jit", "cute_dsl": "cute.kernel"}


def fake_kernel(
    status: str, latency: float, tag: str, framework: str = "triton", torch_only: bool = False
) -> str:
    """A fake kernel whose work is in `framework`'s kernel (or, `torch_only`, in a torch op: impure)."""
    head = f"# fake: status={status} latency={latency}\n# {tag}\n"
    if torch_only:
        return head + "import torch\n\n\ndef run(x, out):\n    out.copy_(torch.softmax(x, -1))\n"
    decorator = KERNEL_DECORATOR.get(framework, "triton.jit")
    return head + f"\n@{decorator}\ndef _kernel():\n    pass\n\n\ndef run(*args):\n    _kernel[(1,)]()\n"


def parse_kernel(text: str) -> tuple[str, float]:
    match = HEADER.search(text)
    fields = dict(kv.split("=", 1) for kv in match.group(1).split()) if match else {}
    return fields.get("status", "PASS"), float(fields.get("latency", 100.0))


def entry_source(kernel_dir: Path) -> bytes:
    """The candidate's entry file as the real harness finds it: solution.json's entry point (kernel.cu
    for a CUDA candidate), else kernel.py."""
    solution = Path(kernel_dir) / "solution.json"
    entry = "kernel.py"
    if solution.is_file():
        entry = str(json.loads(solution.read_text()).get("spec", {}).get("entry_point", entry)).split("::")[0]
    return (Path(kernel_dir) / entry).read_bytes()


FAKE_CUDA_SOLUTION = {"spec": {"languages": ["cuda_cpp"], "entry_point": "kernel.cu::run"}}


def fake_cuda_kernel(status: str, latency: float, tag: str, torch_only: bool = False) -> str:
    """A fake CUDA candidate (never compiled: the header comment carries its numbers)."""
    head = f"// # fake: status={status} latency={latency}\n// {tag}\n#include <torch/extension.h>\n"
    if torch_only:
        return head + "void run(torch::Tensor x, torch::Tensor y) { y.copy_(torch::softmax(x, -1)); }\n"
    return head + "__global__ void fake_kernel() {}\nvoid run() { fake_kernel<<<1, 1>>>(); }\n"


def write_fake_candidate(
    cwd: Path, status: str, latency: float, tag: str, framework: str, torch_only: bool = False
) -> None:
    """The implementer's files for `framework` (frameworks.py): kernel.cu + solution.json for CUDA,
    kernel.py for the Python frameworks."""
    if framework == "cuda":
        (cwd / "kernel.cu").write_text(fake_cuda_kernel(status, latency, tag, torch_only))
        (cwd / "solution.json").write_text(json.dumps(FAKE_CUDA_SOLUTION))
    else:
        (cwd / "kernel.py").write_text(fake_kernel(status, latency, tag, framework, torch_only))


class FakeSandbox:
    """Runs jobs as local subprocesses; `outage(n)` makes the next n health probes fail."""

    name = "fake"

    def __init__(self) -> None:
        self.unhealthy_probes = 0
        self.health_calls = 0

    def outage(self, probes: int) -> None:
        self.unhealthy_probes = probes

    def run(self, job: SandboxJob, results_dir: Path) -> SandboxResult:
        start = time.monotonic()
        try:
            proc = subprocess.run(
                job.argv,
                capture_output=True,
                text=True,
                timeout=job.timeout_s,
                env=dict(job.env),
                cwd=results_dir,
                stdin=subprocess.DEVNULL,
            )
            return SandboxResult(
                exit_code=proc.returncode,
                stdout=proc.stdout,
                stderr=proc.stderr,
                wall_s=time.monotonic() - start,
            )
        except subprocess.TimeoutExpired:
            return SandboxResult(
                exit_code=EXIT_TIMEOUT,
                stdout="",
                stderr="timeout",
                timed_out=True,
                wall_s=time.monotonic() - start,
            )

    def health(self) -> HealthReport:
        self.health_calls += 1
        if self.unhealthy_probes > 0:
            self.unhealthy_probes -= 1
            return HealthReport(healthy=False, diagnostic="fake GPU lost")
        return HealthReport(healthy=True, device={"name": "cpu"})


class FakeRound(BaseModel):
    label: str
    repeat: int
    position: int
    latency_us: dict[str, float]


class FakeComparison(BaseModel):
    status: str
    timing_method: str
    authoritative: bool
    kernels: dict[str, EvaluationResult]
    rounds: list[FakeRound] = Field(default_factory=list)
    message: str = ""


class FakeEvaluator:
    """Numbers from the kernel's header; INFRA_ERROR (and an unhealthy sandbox) on scheduled calls."""

    def __init__(
        self,
        sandbox: FakeSandbox,
        outage_on_calls: set[int] | None = None,
        classify: Callable[[str], tuple[str, float]] = parse_kernel,
    ) -> None:
        """`classify` maps a kernel's source to (status, latency): the header line by default; a test of
        real kernels (the demo's) passes its own deterministic timing."""
        self.sandbox = sandbox
        self.calls = 0
        self.outage_on_calls = outage_on_calls or set()
        self.classify = classify
        self.evaluated: list[str] = []

    def _result(self, kernel_dir: Path) -> EvaluationResult:
        data = entry_source(kernel_dir)
        status, latency = self.classify(data.decode())
        workloads = [
            WorkloadResult(
                id=w,
                status=status,
                latency_us=latency * f if status == "PASS" else None,
                utilization_pct=(40.0 * 100.0 / latency) if status == "PASS" else None,
            )
            for w, f in WORKLOADS.items()
        ]
        geo = latency * math.exp(sum(math.log(f) for f in WORKLOADS.values()) / len(WORKLOADS))
        summary = (
            Summary(objective=geo, geomean_latency_us=geo, geomean_utilization_pct=40.0 * 100.0 / latency)
            if status == "PASS"
            else Summary()
        )
        return EvaluationResult(
            status=status,
            kernel_sha256=hashlib.sha256(data).hexdigest(),
            device=DeviceInfo(name="fake", arch="cpu"),
            timing_method="cuda_graph",
            authoritative=True,
            seeds=[0, 1, 2],
            workloads=workloads,
            summary=summary,
            message="" if status == "PASS" else f"fake {status}",
        )

    def _outage(self) -> bool:
        self.calls += 1
        if self.calls in self.outage_on_calls:
            self.sandbox.outage(2)
            return True
        return False

    def evaluate(
        self, sandbox: Any, op_dir: Path, kernel_dir: Path, results_dir: Path, **_: Any
    ) -> EvaluationResult:
        if self._outage():
            return EvaluationResult(
                status="INFRA_ERROR",
                kernel_sha256="",
                device=DeviceInfo(name="?", arch="?"),
                timing_method="none",
                authoritative=False,
                message="fake: ssh down",
            )
        self.evaluated.append(str(kernel_dir))
        return self._result(Path(kernel_dir))

    def compare(
        self,
        sandbox: Any,
        op_dir: Path,
        kernels: dict[str, Path],
        results_dir: Path,
        *,
        pattern: str,
        repeats: int,
        **_: Any,
    ) -> FakeComparison:
        if self._outage():
            return FakeComparison(
                status="INFRA_ERROR",
                timing_method="none",
                authoritative=False,
                kernels={},
                message="fake: ssh down",
            )
        results = {label: self._result(Path(path)) for label, path in kernels.items()}
        rounds = []
        for rep in range(repeats):
            for pos, label in enumerate(pattern):
                jitter = 1.0 + 0.002 * ((rep + pos) % 3 - 1)
                lat = {w.id: w.latency_us * jitter for w in results[label].workloads if w.latency_us}
                rounds.append(FakeRound(label=label, repeat=rep, position=pos, latency_us=lat))
        status = "PASS" if all(r.status == "PASS" for r in results.values()) else "INCORRECT"
        return FakeComparison(
            status=status, timing_method="cuda_graph", authoritative=True, kernels=results, rounds=rounds
        )


class FakeAgent:
    """Writes the scripted kernel for its (episode, trial) labels; plans and reviews as plain files."""

    def __init__(
        self,
        name: str = "fake",
        script: dict[str, dict[str, tuple[str, float]]] | None = None,
        forbidden_on: tuple[str, str] | None = None,
        log: Path | None = None,
        policy_fail: frozenset[tuple[str, str]] = frozenset(),
        torch_only: frozenset[tuple[str, str]] = frozenset(),
    ) -> None:
        """`policy_fail`: the (episode, trial) labels whose policy review answers FAIL; `torch_only`: those
        whose kernel does its work in torch (not a kernel of the campaign's framework)."""
        self.name = name
        self.torch_only = torch_only
        self.policy_fail = policy_fail
        self.script = script or STANDARD_SCRIPT
        self.forbidden_on = forbidden_on
        self.log = log
        self.runs: list[AgentRun] = []

    def _log(self, run: AgentRun, tokens: TokenUsage) -> None:
        """One line per invocation, appended before the turn's result is returned (survives a SIGKILL)."""
        if self.log is None:
            return
        line = {
            "agent": self.name,
            "role": run.role,
            "episode": run.labels.get("episode", "?"),
            "trial": run.labels.get("trial", "1"),
            "tokens": tokens.total,
            "pid": os.getpid(),
        }
        with open(self.log, "a") as f:
            f.write(json.dumps(line) + "\n")

    def check_ready(self) -> None:
        return None

    def run(self, run: AgentRun, on_tokens: Any = None) -> AgentResult:
        self.runs.append(run)
        episode, trial = run.labels.get("episode", "?"), run.labels.get("trial", "1")
        text = "done"
        if on_tokens is not None:  # like a real backend: the observer may stop the turn (token budget)
            try:
                on_tokens(TOKENS_PER_TURN)
            except BudgetExceeded as exc:
                self._log(run, TOKENS_PER_TURN)
                return AgentResult(
                    exit_code=0,
                    session_id=None,
                    failed=True,
                    stopped=True,
                    error=str(exc),
                    tokens=TOKENS_PER_TURN.model_copy(update={"accuracy": "partial"}),
                    transcript_path=run.transcript_dir,
                    final_text="",
                )
        sleep_s = os.environ.get("AKA_FAKE_AGENT_SLEEP")
        if sleep_s:  # like a real CLI: a child process in its own session that `stop` must terminate
            subprocess.run(["sleep", sleep_s], start_new_session=True, check=False)
        if run.role == "implementer":
            status, latency = self.script.get(episode, {}).get(trial, ("PASS", 100.0))
            write_fake_candidate(run.cwd, status, latency, f"episode {episode} trial {trial}",
                                 run.labels.get("framework", "triton"), (episode, trial) in self.torch_only)
            if self.forbidden_on == (episode, trial):
                (run.cwd / "op" / "definition.json").write_text("{}")
        elif run.role == "planner":
            plan = run.cwd / "plans" / f"episode_{episode}.md"
            plan.parent.mkdir(parents=True, exist_ok=True)
            plan.write_text(f"plan for episode {episode}\n")
        elif run.role == "problem_deriver":
            problem = {
                "schema": "atrex.agent_problem.v1",
                "objective": "minimise latency",
                "evaluation": {"exact_cases": "private", "development_cases_are_evaluation_cases": False},
                "shape_domain": {"n": [1, 4096]},
                "development_cases": [{"n": 7}],
            }
            if self.forbidden_on == ("problem", "leak"):
                problem["development_cases"] = [{"id": "private_shape_1"}]
            (run.cwd / "agent_problem.json").write_text(json.dumps(problem))
        elif run.role == "policy_reviewer":
            failing = (episode, trial) in self.policy_fail
            text = "POLICY: FAIL special-cases a shape" if failing else "POLICY: PASS"
        else:
            text = f"review notes from {self.name} for episode {episode}"
        run.transcript_dir.mkdir(parents=True, exist_ok=True)
        transcript = run.transcript_dir / f"{run.role.replace(':', '_')}.log"
        transcript.write_text(text)
        self._log(run, TOKENS_PER_TURN)
        return AgentResult(
            exit_code=0,
            session_id=f"{run.role}-{episode}-{trial}",
            tokens=TOKENS_PER_TURN,
            transcript_path=transcript,
            final_text=text,
        )


class KillSwitch:
    """SIGKILLs this process at the n-th progress event matching node:event (crash tests)."""

    def __init__(self, spec: str) -> None:
        node, event, count = spec.split(":")
        self.node, self.event, self.count, self.seen = node, event, int(count), 0

    def __call__(self, payload: dict[str, Any]) -> None:
        if payload.get("node") == self.node and payload.get("event") == self.event:
            self.seen += 1
            if self.seen == self.count:
                os.kill(os.getpid(), signal.SIGKILL)


def make_context(config: CampaignConfig | None = None) -> CampaignContext:
    sandbox = FakeSandbox()
    outages = {int(x) for x in os.environ.get("AKA_FAKE_OUTAGE_ON_EVAL", "").split(",") if x}
    kill = os.environ.get("AKA_FAKE_KILL_AT")
    log = Path(os.environ["AKA_FAKE_AGENT_LOG"]) if os.environ.get("AKA_FAKE_AGENT_LOG") else None
    reviewers = config.reviewers if config else []
    return CampaignContext(
        sandbox=sandbox,
        agent=FakeAgent(log=log),
        evaluator=FakeEvaluator(sandbox, outages),
        reviewers={name: FakeAgent(name, log=log) for name in reviewers},
        sleep=lambda _: None,
        on_event=KillSwitch(kill) if kill else None,
    )


def write_fake_operator(root: Path, name: str = "fake_op") -> Path:
    """A minimal, valid SOL-ExecBench operator directory (the fake evaluator never runs it)."""
    root.mkdir(parents=True, exist_ok=True)
    definition = {
        "name": name,
        "axes": {"n": {"type": "var"}},
        "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
        "reference": "import torch\n\ndef run(x):\n    return x * 2\n",
    }
    (root / "definition.json").write_text(json.dumps(definition, indent=2))
    rows = [{"uuid": w, "axes": {"n": 16}, "inputs": {"x": {"type": "random"}}} for w in WORKLOADS]
    (root / "workload.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return root


def write_fake_native_operator(root: Path) -> Path:
    """A minimal native (Atrex-Bench) operator with private shapes and no agent_problem.json."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "reference.py").write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
    )
    (root / "input.py").write_text("import torch\n\ndef _make_inputs(n):\n    return [torch.randn(n)]\n")
    shapes = {f"private_shape_{i}": {"init_kwargs": {}, "input_kwargs": {"n": 100 + i}} for i in range(3)}
    (root / "shapes.json").write_text(json.dumps(shapes))
    return root
