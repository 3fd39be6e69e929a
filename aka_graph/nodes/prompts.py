"""The text of every agent turn, built from the campaign's own numbers (never from the agent's claims)."""

from __future__ import annotations

from aka_graph.frameworks import FRAMEWORKS, entry_file, files_line
from aka_graph.state import CampaignState, TrialRecord


def contract(framework: str = "pytorch") -> str:
    """What the agent may touch: the framework's files (frameworks.py), nothing the campaign hashes."""
    return (
        f"Edit only {files_line(framework)} (you may write notes under plans/ and profiles/). Never edit "
        "op/, memory/, skills or harness files: the campaign hashes them and rejects the candidate if they "
        "change. The campaign evaluates your kernel itself; your own timings are not used."
    )


CONTRACT = contract()  # the PyTorch/Triton wording (kernel.py)


def framework_line(framework: str) -> str:
    """The framework's prompt fragment, its purity rule and its skill (empty for plain PyTorch)."""
    fw = FRAMEWORKS.get(framework)
    if fw is None:
        return ""
    return (
        f"Framework: {fw.prompt_fragment}; {fw.purity_rule} (a candidate whose main work is a torch op is "
        f"rejected unevaluated). Use the `{fw.skill}` skill."
    )


def entry_point(state: CampaignState, framework: str | None = None) -> str:
    """What the candidate's entry file must define, by operator format and framework (what the evaluator
    will call): kernel.py::run / Model, or kernel.cu::run for CUDA."""
    entry = entry_file(framework or "pytorch")
    if entry != "kernel.py" and state.target.op_format != "command":
        return (
            f"{entry} must define run(inputs..., outputs...) that writes the pre-allocated outputs in place "
            "(destination-passing, torch::Tensor arguments in the order of op/definition.json); "
            f"solution.json names {entry}::run as its entry point. kernel.py is the V0 PyTorch reference: "
            "read it; it is not part of the candidate."
        )
    if state.target.op_format == "command":
        return (
            "This kernel lives in a source tree, tree/ (built, tested and benchmarked by its own commands, "
            "listed in op/aka_task.toml). Here 'kernel.py' below means the task's editable files "
            "(`editable` in op/aka_task.toml): edit only those; every other file of tree/ is harness."
        )
    if state.target.op_format == "sol":
        return (
            "kernel.py must define run(*inputs, *outputs) that writes the pre-allocated outputs in place "
            "(destination-passing, in the order of op/definition.json); the V0 reference returns its "
            "outputs instead and is only a starting point."
        )
    return (
        "kernel.py must define class Model with the same constructor and forward signature as the reference."
    )


def _incumbent_line(state: CampaignState) -> str:
    inc = state.incumbent
    if inc is None:
        return "There is no incumbent yet."
    return (
        f"Incumbent: v{inc.version} ({inc.framework}), objective {inc.objective} "
        f"(lower is better), utilization {inc.utilization_pct}%."
    )


def _trial_lines(trials: list[TrialRecord]) -> str:
    if not trials:
        return "No trials yet in this episode."
    return "\n".join(
        f"- trial {t.trial}: {t.status}, objective {t.objective} {t.message[:200]}".rstrip() for t in trials
    )


def implement_prompt(state: CampaignState, trial: int) -> str:
    framework = state.episode_framework
    files = files_line(framework)
    if state.converting:
        task = (
            f"Convert the incumbent kernel to {framework} at performance parity (within "
            f"{state.config.conversion_parity_pct}%). Later episodes will stay in {framework}."
        )
    elif state.episode_kind == "fast":
        task = (
            f"Fast episode {state.episode}, trial {trial} of {state.config.fast_trials}: make one focused "
            f"change to {files} ({framework}) that should make it faster while staying correct."
        )
    else:
        task = (
            f"Full episode {state.episode}: profile, research and plan (plans/), then edit and repair "
            f"{files} ({framework}) and hand off ONE candidate that is correct and faster."
        )
    reviews = [r for r in state.reviews.values() if r.episode == state.episode]
    review_text = "\n".join(f"- {r.reviewer}: {r.notes_path}" for r in reviews) or "- none"
    return (
        f"{task}\n\n{_incumbent_line(state)}\nOperator: {state.target.op_name} on {state.target.platform} "
        f"({state.target.arch}). Public operator files are in op/, past versions in memory/.\n\n"
        f"Trials so far:\n{_trial_lines(state.trials)}\n\nReviewer notes:\n{review_text}\n\n"
        f"{entry_point(state, framework)} {contract(framework)}\n{framework_line(framework)}\n"
        "When done, reply with a short summary of what you changed and why."
    )


def plan_prompt(state: CampaignState, episode: int, plan_path: str) -> str:
    return (
        f"Plan episode {episode} for operator {state.target.op_name} ({state.episode_framework} on "
        f"{state.target.platform}). {_incumbent_line(state)} Read memory/ for what was tried. Write the plan "
        f"(hypotheses, experiments, risks) to {plan_path}. Do not edit "
        f"{files_line(state.episode_framework)} in this turn.\n{contract(state.episode_framework)}"
    )


def v1_review_prompt(framework: str, notes_path: str) -> str:
    return (
        f"Before anyone writes the first {framework} kernel of this operator (op/ holds its definition), "
        "give correctness guidance: numerics and accumulation dtype, edge and degenerate shapes, strides "
        f"and layouts, destination-passing outputs, what a {framework} implementation typically gets "
        f"wrong. Write your notes to {notes_path}. Do not edit {files_line(framework)}."
    )


def review_prompt(episode: int, plan_path: str, notes_path: str) -> str:
    return (
        f"Review the plan {plan_path} of episode {episode} for correctness risks (numerics, edge shapes, "
        f"destination-passing, dtype) and performance ideas. Write your notes to {notes_path}. "
        "Do not edit the kernel's files."
    )


def smoke_shapes(latencies: dict[str, float]) -> list[str]:
    """The workloads at the fast, median and slow quantiles of V0 latency (what V1 smoke-tests on)."""
    ordered = [w for w, _ in sorted(latencies.items(), key=lambda item: (item[1], item[0]))]
    if len(ordered) <= 3:
        return ordered
    return [ordered[0], ordered[len(ordered) // 2], ordered[-1]]


def v1_prompt(state: CampaignState, smoke: list[str]) -> str:
    if state.target.production and state.target.op_format == "native":
        # the evaluation shapes are private: the agent smoke-tests on the public problem's own cases
        smoke_line = (
            "The evaluation shapes are private: smoke-test on the development_cases of "
            "op/agent_problem.json and make the kernel correct and fast over its whole shape_domain. "
        )
    else:
        shapes = ", ".join(smoke) if smoke else "a few shapes"
        smoke_line = f"Smoke-test on the workloads {shapes} (fast, median and slow for the reference). "
    framework = state.config.framework
    fw = FRAMEWORKS.get(framework)
    how = f"{fw.v1_instructions} " if fw else ""
    return (
        f"Write a first {framework}-native kernel for {state.target.op_name} in {files_line(framework)}, "
        f"replacing the PyTorch reference. {how}Correctness first: match the reference on every shape in "
        f"op/. {smoke_line}"
        f"{_incumbent_line(state)}\n{entry_point(state, framework)} {contract(framework)}\n"
        f"{framework_line(framework)}"
    )


def policy_prompt(state: CampaignState, patch: str) -> str:
    return (
        f"Policy review (production mode) of the candidate for {state.target.op_name}. The candidate must "
        "be a general kernel: no special-casing of benchmark shapes or input values, no caching of outputs "
        "across calls, no work on other streams or threads, no timer tricks. Here is its diff:\n\n"
        f"{patch[:20000]}\n\nReply with a first line exactly 'POLICY: PASS' or 'POLICY: FAIL <reason>'."
    )
