"""Session settings from the environment, secrets kept out of argv, the registry, and readiness checks
that name the fixing command."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aka_graph.cli_agents.base import AgentBackend, AgentNotReady, AgentRun
from aka_graph.cli_agents.claude import ClaudeBackend
from aka_graph.cli_agents.codex import CodexBackend, toml_value
from aka_graph.cli_agents.home import HomeLayout, prepare_home
from aka_graph.cli_agents.pi import PiBackend
from aka_graph.cli_agents.qoder import QoderBackend
from aka_graph.cli_agents.registry import BACKEND_NAMES, make_backend
from aka_graph.cli_agents.settings import SessionSettings, check_argv_has_no_secrets, load_settings

SECRET = "sk-live-abcdefghijklmnop"
CREDENTIAL_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "GEMINI_API_KEY",
    "OPENROUTER_API_KEY",
    "QODER_PERSONAL_ACCESS_TOKEN",
    "QODER_PAT",
    "CODEX_HOME",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
)


def _run(tmp_path: Path, **kw: object) -> AgentRun:
    return AgentRun.model_validate(
        {
            "role": "implementer",
            "prompt": "do it",
            "cwd": tmp_path,
            "timeout_s": 5,
            "transcript_dir": tmp_path / "t",
            **kw,
        }
    )


# --- settings ------------------------------------------------------------------------------------------
def test_per_cli_settings_win_over_the_generic_ones() -> None:
    env = {
        "AKA_SESSION_SETTINGS": json.dumps({"model": "generic"}),
        "AKA_CODEX_SESSION_SETTINGS": json.dumps({"model": "gpt-5.5", "env": {"A": "1"}}),
    }
    assert load_settings("codex", env).model == "gpt-5.5"
    assert load_settings("codex", env).env == {"A": "1"}
    assert load_settings("claude", env).model == "generic"
    assert load_settings("pi", {}) == SessionSettings()


def test_settings_can_come_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"extra_args": ["--foo"]}))
    assert load_settings("pi", {"AKA_PI_SESSION_SETTINGS": f"@{path}"}).extra_args == ["--foo"]


@pytest.mark.parametrize(
    ("raw", "needle"),
    [("{not json", "AKA_CLAUDE_SESSION_SETTINGS is not valid JSON"), ('{"modle": "x"}', "invalid settings")],
)
def test_bad_settings_name_the_variable(raw: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        load_settings("claude", {"AKA_CLAUDE_SESSION_SETTINGS": raw})


def test_a_secret_value_or_key_flag_in_argv_is_refused() -> None:
    env = {"ANTHROPIC_API_KEY": SECRET, "HOME": "/home/x"}
    check_argv_has_no_secrets(["claude", "-p", "hello", "/home/x"], env)  # non-secret values may appear
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY appears in argument 2"):
        check_argv_has_no_secrets(["claude", "--settings", f'{{"apiKey": "{SECRET}"}}'], env)
    with pytest.raises(ValueError, match="--api-key"):
        check_argv_has_no_secrets(["pi", "--api-key=whatever"], env)
    with pytest.raises(ValueError, match="CLAUDE_CODE_OAUTH_TOKEN"):
        check_argv_has_no_secrets(["claude", f"x{SECRET}"], {"CLAUDE_CODE_OAUTH_TOKEN": SECRET})
    # a name that merely contains such a word is not a secret: the author's name may be in a prompt
    check_argv_has_no_secrets(["claude", "by Jane Developer"], {"GIT_AUTHOR_NAME": "Jane Developer"})


def test_a_backend_refuses_to_start_a_cli_with_a_key_in_argv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = tmp_path / "claude"
    exe.write_text("#!/bin/sh\ntouch started\n")
    exe.chmod(0o755)
    monkeypatch.setenv("AKA_CLAUDE_BIN", str(exe))
    settings = SessionSettings(
        env={"ANTHROPIC_API_KEY": SECRET},
        extra_args=["--append-system-prompt", SECRET],
        home=str(tmp_path / "home"),
    )
    with pytest.raises(ValueError, match="never in argv"):
        ClaudeBackend(settings).run(_run(tmp_path))
    assert not (tmp_path / "started").exists()


def test_a_prompt_too_long_for_argv_is_passed_through_a_file(tmp_path: Path) -> None:
    from aka_graph.cli_agents.process import TranscriptPaths

    transcript = TranscriptPaths.allocate(tmp_path, "claude", "implementer")
    long_prompt = "optimize " * 20_000
    backend = ClaudeBackend(SessionSettings())
    arg = backend._prompt_argument(long_prompt, transcript)
    path = Path(arg.split("in the file ")[1].split(". Read")[0])
    assert len(arg) < 1000 and path.read_text() == long_prompt
    assert backend._prompt_argument("short", transcript) == "short"


def test_codex_links_the_login_of_the_users_own_codex_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "my-codex"
    mine.mkdir()
    (mine / "auth.json").write_text("{}")
    monkeypatch.setenv("CODEX_HOME", str(mine))
    home = CodexBackend(SessionSettings(home=str(tmp_path / "priv"))).home()
    assert (home / "auth.json").resolve() == mine / "auth.json"


def test_toml_values_for_codex_overrides() -> None:
    assert toml_value(False) == "false"
    assert toml_value('a"b') == '"a\\"b"'
    assert (
        toml_value({"name": "fake", "retries": 0, "odd key": [1, 2]})
        == '{name = "fake", retries = 0, "odd key" = [1, 2]}'
    )


def test_private_home_links_auth_copies_config_and_writes_home_files(tmp_path: Path) -> None:
    user = tmp_path / "user"
    (user / ".codex").mkdir(parents=True)
    (user / ".codex" / "auth.json").write_text('{"token": 1}')
    (user / ".codex" / "config.toml").write_text('model = "x"\n')
    settings = SessionSettings(home=str(tmp_path / "priv"), home_files={"models.json": {"a": 1}})
    layout = HomeLayout(
        links=((".codex/auth.json", "auth.json"),), copies=((".codex/config.toml", "config.toml"),)
    )
    home = prepare_home("codex", settings, layout, user_home=user)
    assert (home / "auth.json").is_symlink() and (
        home / "auth.json"
    ).resolve() == user / ".codex" / "auth.json"
    assert not (home / "config.toml").is_symlink()
    (home / "config.toml").write_text("changed by the CLI\n")
    assert (user / ".codex" / "config.toml").read_text() == 'model = "x"\n'  # the user's file is untouched
    assert json.loads((home / "models.json").read_text()) == {"a": 1}
    with pytest.raises(ValueError, match="outside the private home"):
        prepare_home(
            "codex", SessionSettings(home=str(home), home_files={"../x": "y"}), layout, user_home=user
        )


# --- argv per CLI --------------------------------------------------------------------------------------
def test_claude_runs_in_its_private_home_but_keeps_the_users_python_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    monkeypatch.delenv("PYTHONUSERBASE", raising=False)
    env = ClaudeBackend(SessionSettings()).cli_env(tmp_path / "priv")
    assert env["HOME"] == str(tmp_path / "priv") and env["PYTHONUSERBASE"] == "/home/someone/.local"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and env["DISABLE_TELEMETRY"] == "1"


def test_claude_argv_new_session_then_resume(tmp_path: Path) -> None:
    backend = ClaudeBackend(SessionSettings(model="opus", settings={"x": 1}))
    argv, session = backend.build_argv(_run(tmp_path, effort="max"), Path("/bin/claude"), "do it", tmp_path)
    assert argv[:5] == ["/bin/claude", "--print", "--verbose", "--output-format", "stream-json"]
    assert "--dangerously-skip-permissions" in argv
    assert argv[argv.index("--effort") + 1] == "max" and argv[argv.index("--model") + 1] == "opus"
    assert argv[argv.index("--session-id") + 1] == session and argv[-2:] == ["--", "do it"]
    assert json.loads(argv[argv.index("--settings") + 1]) == {"x": 1}
    argv, again = backend.build_argv(
        _run(tmp_path, resume_session=session), Path("/bin/claude"), "go on", tmp_path
    )
    assert again == session and argv[argv.index("--resume") + 1] == session and "--session-id" not in argv


def test_codex_argv_new_thread_then_resume(tmp_path: Path) -> None:
    backend = CodexBackend(SessionSettings(config={"model_provider": "fake"}))
    argv, session = backend.build_argv(_run(tmp_path, effort="max"), Path("/bin/codex"), "do it", tmp_path)
    assert session is None  # codex picks the thread id
    assert argv[:5] == ["/bin/codex", "exec", "--color", "never", "--json"]
    assert "--dangerously-bypass-approvals-and-sandbox" in argv
    assert 'model_reasoning_effort="xhigh"' in argv and 'model_provider="fake"' in argv
    assert "check_for_update_on_startup=false" in argv and "analytics.enabled=false" in argv
    argv, _ = backend.build_argv(_run(tmp_path, resume_session="T1"), Path("/bin/codex"), "go on", tmp_path)
    assert argv[:4] == ["/bin/codex", "exec", "resume", "--json"] and argv[-3:] == ["--", "T1", "go on"]
    assert "--color" not in argv and "-C" not in argv and "--sandbox" not in argv


def test_pi_argv_reuses_the_session_id_to_resume(tmp_path: Path) -> None:
    backend = PiBackend(SessionSettings(provider="fake", model="m"))
    native = tmp_path / "pi"
    native.write_bytes(b"\x7fELF")
    argv, session = backend.build_argv(_run(tmp_path, effort="low"), native, "do it", tmp_path)
    assert argv[:5] == [str(native), "--mode", "json", "-p", "--approve"]
    assert argv[argv.index("--thinking") + 1] == "low" and argv[argv.index("--provider") + 1] == "fake"
    argv, again = backend.build_argv(_run(tmp_path, resume_session=session), native, "go on", tmp_path)
    assert again == session and argv[argv.index("--session-id") + 1] == session


def test_qoder_argv_is_a_fresh_unpersisted_session_and_it_cannot_resume(tmp_path: Path) -> None:
    backend = QoderBackend(SessionSettings())
    argv, session = backend.build_argv(
        _run(tmp_path, effort="xhigh"), Path("/bin/qodercli"), "do it", tmp_path
    )
    assert argv[:4] == ["/bin/qodercli", "--print", "--output-format", "stream-json"]
    assert argv[argv.index("--session-id") + 1] == session and "--no-session-persistence" in argv
    assert argv[argv.index("--reasoning-effort") + 1] == "xhigh"
    assert backend.supports_resume is False
    with pytest.raises(ValueError, match="cannot resume"):
        backend.run(_run(tmp_path, resume_session="abc"))


# --- registry and readiness ----------------------------------------------------------------------------
def test_registry_knows_every_backend_and_rejects_unknown_names() -> None:
    assert BACKEND_NAMES == ("claude", "codex", "qoder", "pi", "replay", "outside-loop")
    for name in ("claude", "codex", "qoder", "pi"):
        backend = make_backend(name)
        assert isinstance(backend, AgentBackend) and backend.name == name
    with pytest.raises(ValueError, match="claude, codex, qoder, pi, replay, outside-loop"):
        make_backend("cursor")
    with pytest.raises(ValueError, match="--replay-script"):
        make_backend("replay")


def test_registry_builds_the_replay_backend_from_a_script() -> None:
    script = (
        Path(__file__).resolve().parents[2] / "aka_graph" / "examples" / "vq_nearest_code" / "replay.json"
    )
    if not script.is_file():
        pytest.skip(f"the demo replay script {script} is not in this checkout yet")
    backend = make_backend("replay", replay_script=script)
    assert backend.name == "replay" and isinstance(backend, AgentBackend)
    backend.check_ready()


@pytest.fixture
def logged_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No credentials anywhere: an empty HOME, no key variables, every CLI binary a dummy that exists."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in CREDENTIAL_VARS:
        monkeypatch.delenv(var, raising=False)
    dummy = tmp_path / "dummy-cli"
    dummy.write_bytes(b"\x7fELF")
    dummy.chmod(0o755)
    for cli in ("CLAUDE", "CODEX", "QODER", "PI"):
        monkeypatch.setenv(f"AKA_{cli}_BIN", str(dummy))
    return home


@pytest.mark.parametrize(
    ("backend", "fix"),
    [
        (ClaudeBackend, "claude setup-token"),
        (CodexBackend, "codex login"),
        (QoderBackend, "qodercli login"),
        (PiBackend, "/login"),
    ],
)
def test_a_cli_that_is_not_logged_in_is_reported_with_the_fixing_command(
    logged_out: Path, backend: type, fix: str
) -> None:
    if backend is PiBackend and os.environ.get("AKA_NODE_BIN") is None:
        from aka_graph.cli_agents.locate import PI_MIN_NODE, find_node

        if find_node(PI_MIN_NODE) is None:
            pytest.skip("no Node >= 22.19 here: pi reports that first")
    with pytest.raises(AgentNotReady, match=fix):
        backend(SessionSettings()).check_ready()


def test_credentials_in_the_settings_env_make_a_cli_ready(logged_out: Path) -> None:
    ClaudeBackend(SessionSettings(env={"ANTHROPIC_API_KEY": SECRET})).check_ready()
    CodexBackend(SessionSettings(env={"OPENAI_API_KEY": SECRET})).check_ready()
    (logged_out / ".codex").mkdir()
    (logged_out / ".codex" / "auth.json").write_text("{}")
    CodexBackend(SessionSettings()).check_ready()


def test_a_missing_cli_is_reported_with_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AKA_CLAUDE_BIN", str(tmp_path / "nowhere" / "claude"))
    with pytest.raises(AgentNotReady, match=r"bash scripts/install_agent_clis\.sh"):
        ClaudeBackend(SessionSettings(env={"ANTHROPIC_API_KEY": SECRET})).check_ready()


def test_pi_without_a_recent_node_is_reported_with_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / "bin" / "node"
    old.parent.mkdir()
    old.write_text("#!/bin/sh\necho v20.11.0\n")
    old.chmod(0o755)
    monkeypatch.setenv("AKA_NODE_BIN", str(old))
    monkeypatch.setenv("AKA_NPM_PREFIX", str(tmp_path / "empty-prefix"))
    monkeypatch.setenv("PATH", str(old.parent))
    with pytest.raises(AgentNotReady, match=r"Node.js >= 22.19.*install_agent_clis"):
        PiBackend(SessionSettings(provider="fake")).check_ready()
