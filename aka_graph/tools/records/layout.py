"""Every path inside a campaign workspace, spelled once.

A node that writes a result and the node that reads it later (abba writes `verdict.json`, promote reads
it) both ask this object, so the two can never drift apart. Paths only: nothing here touches the disk.

```
<root>/                       the campaign's git repository (branch `campaign`)
  kernel.py  op/  memory/  plans/  profiles/            committed
  episodes/<n>/               one git worktree per episode (branch `episode/<n>`)
  results/v0/ v1/ versions/vN/ e<n>/t<t>/ e<n>/verify/   evaluations, frozen kernels, verdicts (ignored)
  transcripts/  records/ledger.sqlite  report/  submission.json
```
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MARKER_FILE = ".aka_campaign.json"
MEMORY_DIR = "memory"
LIVE_FILE = "live.json"
REPORT_DIR = "report"
SUBMISSION_FILE = "submission.json"
RESULT_FILE = "result.json"


@dataclass(frozen=True)
class CampaignLayout:
    root: Path

    # ---- committed --------------------------------------------------------------------------------
    @property
    def marker(self) -> Path:
        return self.root / MARKER_FILE

    @property
    def kernel(self) -> Path:
        return self.root / "kernel.py"

    @property
    def op_dir(self) -> Path:
        return self.root / "op"

    @property
    def memory_dir(self) -> Path:
        return self.root / MEMORY_DIR

    def version_record(self, version: int) -> Path:
        return self.memory_dir / f"v{version}.json"

    @property
    def live_record(self) -> Path:
        return self.memory_dir / LIVE_FILE

    @property
    def submission(self) -> Path:
        return self.root / SUBMISSION_FILE

    @property
    def report_dir(self) -> Path:
        return self.root / REPORT_DIR

    # ---- episodes ---------------------------------------------------------------------------------
    def episode_worktree(self, episode: int) -> Path:
        return self.root / "episodes" / str(episode)

    # ---- results (never committed) ----------------------------------------------------------------
    @property
    def results_dir(self) -> Path:
        return self.root / "results"

    def frozen_version(self, version: int) -> Path:
        """The kernel directory of version `version`, copied once and never edited (the incumbent's)."""
        return self.results_dir / "versions" / f"v{version}"

    @property
    def v0_evaluation(self) -> Path:
        return self.results_dir / "v0"

    @property
    def v1_dir(self) -> Path:
        return self.results_dir / "v1"

    @property
    def v1_kernel(self) -> Path:
        return self.v1_dir / "kernel"

    @property
    def v1_agent_done(self) -> Path:
        """Written when V1's agent turn finished, so a crash re-runs only the evaluation."""
        return self.v1_dir / "agent_done.json"

    @property
    def v1_evaluation(self) -> Path:
        return self.v1_dir / "evaluation"

    def trial_dir(self, episode: int, trial: int) -> Path:
        return self.results_dir / f"e{episode}" / f"t{trial}"

    def trial_kernel(self, episode: int, trial: int) -> Path:
        return self.trial_dir(episode, trial) / "kernel"

    @staticmethod
    def evaluation_of(kernel_dir: Path) -> Path:
        """Where a frozen kernel's evaluation goes: beside it."""
        return Path(kernel_dir).parent / "evaluation"

    @staticmethod
    def result_in(evaluation_dir: Path) -> Path:
        return Path(evaluation_dir) / RESULT_FILE

    def verify_dir(self, episode: int) -> Path:
        return self.results_dir / f"e{episode}" / "verify"

    def verdict(self, episode: int) -> Path:
        return self.verify_dir(episode) / "verdict.json"

    def comparison(self, episode: int) -> Path:
        return self.verify_dir(episode) / "comparison.json"

    def review_notes(self, episode: int, reviewer: str) -> Path:
        return self.results_dir / f"e{episode}" / "reviews" / f"{reviewer}.md"

    def v1_review_copy(self, reviewer: str) -> Path:
        """A V1 reviewer's private copy of op/ (it reads the operator before any kernel exists)."""
        return self.results_dir / "e0" / f"review_{reviewer}"

    # ---- records ----------------------------------------------------------------------------------
    @property
    def transcripts_dir(self) -> Path:
        return self.root / "transcripts"

    def transcripts(self, episode: int | str, trial: int | None = None) -> Path:
        base = self.transcripts_dir / (f"e{episode}" if isinstance(episode, int) else episode)
        return base if trial is None else base / f"t{trial}"

    @property
    def ledger(self) -> Path:
        return self.root / "records" / "ledger.sqlite"
