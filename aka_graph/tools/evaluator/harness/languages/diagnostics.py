"""Trim a C++/CUDA build log to the first errors, each with file and line.

A failed CUTLASS or CUB build prints thousands of lines of template notes; the agent needs the few that
say what is wrong and where in *its* sources. Recognised formats (tested on recorded real output):

- g++/clang: `path:line:col: error: message` (+ `fatal error:`), with `required from here` lines naming
  the user's line when the error itself sits in a library header;
- nvcc front end: `path(line): error: message`, and `detected during ... at line N of path`;
- ptxas / nvlink / fatbinary: `ptxas error   : message`;
- the linker: `ld: cannot find -lfoo`, `undefined reference to ...`.

Paths under the build's source directory are shown relative to it; library paths are kept (shortened).
Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_ERRORS = 5
MAX_CHARS = 3000

_GCC = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+)(?::(?P<col>\d+))?: (?P<kind>fatal error|error): (?P<msg>.*)$"
)
_NVCC = re.compile(
    r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?P<kind>error|catastrophic error): (?P<msg>.*)$"
)
_TOOL = re.compile(
    r"^(?P<tool>ptxas|nvlink|fatbinary|nvcc|cicc)(?: fatal)? ?(?:error|fatal)\s*:\s*(?P<msg>.*)$"
)
_LD = re.compile(r"^(?:/\S*/)?(?:ld|collect2)(?:\.\w+)?: (?P<msg>(?:cannot find|error:).*)$")
_UNDEF = re.compile(r"^(?P<where>.*?):\s*(?P<msg>undefined reference to .*)$")
_REQUIRED = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+):\s+required from here")
_DETECTED = re.compile(r"at line (?P<line>\d+) of (?P<file>\S+)")
_IMPORT = re.compile(r"(?P<msg>undefined symbol: \S+)")


@dataclass(frozen=True)
class Diagnostic:
    file: str | None
    line: int | None
    message: str
    context: str = ""  # the source line and caret that follow a compiler error, when printed
    user_site: str = ""  # the user's line that instantiated a template whose error sits in a header

    def render(self) -> str:
        where = (
            f"{self.file}:{self.line}: "
            if self.file and self.line
            else (f"{self.file}: " if self.file else "")
        )
        text = f"{where}error: {self.message}"
        if self.user_site:
            text += f"\n  (instantiated from {self.user_site})"
        if self.context:
            text += "\n" + self.context
        return text


def _short(path: str, roots: tuple[str, ...]) -> str:
    for root in roots:
        root = root.rstrip("/") + "/"
        if path.startswith(root):
            return path[len(root) :]
    if "/include/" in path:  # a library header: keep the part after the include root
        return "<" + path.split("/include/", 1)[1] + ">"
    return path


def _is_user(path: str, roots: tuple[str, ...]) -> bool:
    if not path.startswith("/"):
        return True
    return any(path.startswith(r.rstrip("/") + "/") for r in roots)


def parse(log: str, source_roots: tuple[str, ...] = ()) -> list[Diagnostic]:
    """Every error in `log`, in order, deduplicated (ninja prints a failing command's output once per
    target, nvcc repeats some errors per architecture)."""
    lines = log.splitlines()
    found: list[Diagnostic] = []
    seen: set[tuple[str | None, int | None, str]] = set()
    user_site = ""

    def add(file: str | None, line: int | None, msg: str, idx: int, site: str = "") -> None:
        key = (file, line, msg.strip())
        if key in seen:
            return
        seen.add(key)
        context = []
        for nxt in lines[idx + 1 : idx + 3]:  # gcc: '  5 |   code' and the caret; nvcc: code and caret
            if (
                nxt.strip()
                and ((nxt.lstrip()[:1].isdigit() and "|" in nxt) or nxt.startswith(" "))
                and not (_GCC.match(nxt) or _NVCC.match(nxt))
            ):
                context.append(nxt.rstrip()[:200])
            else:
                break
        found.append(Diagnostic(file, line, msg.strip()[:400], "\n".join(context), site))

    for idx, raw in enumerate(lines):
        text = raw.rstrip()
        if m := _REQUIRED.match(text):
            if _is_user(m["file"], source_roots):
                user_site = f"{_short(m['file'], source_roots)}:{m['line']}"
            continue
        if m := _GCC.match(text):
            file = m["file"]
            site = "" if _is_user(file, source_roots) else user_site
            add(_short(file, source_roots), int(m["line"]), m["msg"], idx, site)
            user_site = ""
            continue
        if m := _NVCC.match(text):
            file = m["file"]
            site = ""
            if not _is_user(file, source_roots):  # nvcc names the instantiating user line below the error
                for nxt in lines[idx + 1 : idx + 30]:
                    d = _DETECTED.search(nxt)
                    if d and _is_user(d["file"], source_roots):
                        site = f"{_short(d['file'], source_roots)}:{d['line']}"
                        break
            add(_short(file, source_roots), int(m["line"]), m["msg"], idx, site)
            continue
        if m := _TOOL.match(text):
            add(m["tool"], None, m["msg"], idx)
            continue
        if m := _LD.match(text):
            if "returned 1 exit status" not in text:  # collect2's summary repeats the real error
                add("ld", None, m["msg"].removeprefix("error: "), idx)
            continue
        if (m := _UNDEF.match(text)) and "undefined reference" in text:
            add("ld", None, m["msg"], idx)
            continue
        if m := _IMPORT.search(text):
            add("import", None, m["msg"], idx)
    return found


def trim(log: str, source_roots: tuple[str, ...] = (), max_errors: int = MAX_ERRORS) -> str:
    """The first `max_errors` errors of a build log, rendered; the log's last lines when none is
    recognised (an unknown tool's failure is still shown, never swallowed)."""
    diags = parse(log, source_roots)
    if not diags:
        tail = [line for line in log.strip().splitlines() if line.strip()][-15:]
        return "\n".join(line[:300] for line in tail)[-MAX_CHARS:]
    shown = "\n".join(d.render() for d in diags[:max_errors])
    if len(diags) > max_errors:
        shown += f"\n({len(diags)} errors in all; the first {max_errors} shown)"
    return shown[:MAX_CHARS]
