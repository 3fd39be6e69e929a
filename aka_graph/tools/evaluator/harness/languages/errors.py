"""The two ways a build fails: the candidate's code (`CompileError` -> COMPILE_ERROR) or the host
(`MissingToolchain` -> INFRA_ERROR, never a score). `status` is what the worker reports."""

from __future__ import annotations


class CompileError(RuntimeError):
    """The candidate failed to import or build."""

    status = "COMPILE_ERROR"


class MissingToolchain(CompileError):
    """A compiler, library or Python package the candidate's language needs is not on the host."""

    status = "INFRA_ERROR"
