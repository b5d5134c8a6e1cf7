"""``evalcore serve`` starts the dashboard in router mode, on loopback unless told otherwise, and
refuses to serve other machines without an account. The router-mode tests fail loudly when
Streamlit changes how it chooses its legacy multipage mode."""

from __future__ import annotations

import argparse
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.runtime.pages_manager import PagesManager

from evalcore.cli import serve
from evalcore.errors import ConfigError
from ui.serving import use_router_mode

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def flag() -> Iterator[None]:
    saved = PagesManager.uses_pages_directory
    PagesManager.uses_pages_directory = None
    try:
        yield
    finally:
        PagesManager.uses_pages_directory = saved


@pytest.mark.usefixtures("flag")
def test_streamlit_still_detects_the_pages_folder_so_the_switch_is_needed() -> None:
    PagesManager(str(ROOT / "app.py"))
    assert PagesManager.uses_pages_directory is True


@pytest.mark.usefixtures("flag")
def test_router_mode_survives_the_detection() -> None:
    use_router_mode()
    PagesManager(str(ROOT / "app.py"))
    assert PagesManager.uses_pages_directory is False


def test_the_script_runner_chooses_the_legacy_mode_by_this_flag() -> None:
    runner = importlib.import_module("streamlit.runtime.scriptrunner.script_runner")
    assert "PagesManager.uses_pages_directory" in inspect.getsource(runner)


def test_st_navigation_sets_the_same_flag_the_launcher_sets() -> None:
    navigation = importlib.import_module("streamlit.commands.navigation")
    assert "PagesManager.uses_pages_directory = False" in inspect.getsource(navigation)


def test_streamlit_finds_the_launchers_asgi_app() -> None:
    """``streamlit run ui/launch.py`` serves the st.App it defines (not the file as a script)."""
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(ROOT / "ui" / "launch.py")
    assert found.is_asgi_app
    assert found.app_name == "app"


def test_the_dashboard_is_found_in_a_checkout() -> None:
    assert serve.dashboard_dir() == ROOT


def _args(*argv: str) -> argparse.Namespace:
    from evalcore.cli import build_parser

    return build_parser().parse_args(["serve", *argv])


def _options(command: list[str]) -> dict[str, str]:
    options = command[4:]
    return {k: v for k, v in zip(options[::2], options[1::2], strict=False) if k.startswith("--")}


def test_the_default_command_listens_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(serve.ADDRESS_ENV, raising=False)
    command = serve.streamlit_command(_args(), ROOT)
    assert command[:4] == ["-m", "streamlit", "run", str(ROOT / "ui" / "launch.py")]
    options = _options(command)
    assert options["--server.address"] == "127.0.0.1"
    assert options["--server.port"] == "8501"
    assert options["--browser.serverAddress"] == "localhost"  # no public-address lookup
    assert options["--logger.level"] == "warning"
    assert options["--browser.gatherUsageStats"] == "false"
    chosen = _options(
        serve.streamlit_command(_args("--address", "0.0.0.0", "--port", "9000"), ROOT)
    )
    assert (chosen["--server.address"], chosen["--server.port"]) == ("0.0.0.0", "9000")
    monkeypatch.setenv(serve.ADDRESS_ENV, "10.0.0.5")  # Streamlit's own variable is a choice too
    assert _options(serve.streamlit_command(_args(), ROOT))["--server.address"] == "10.0.0.5"


def test_options_after_the_double_dash_go_to_streamlit_and_win() -> None:
    command = serve.streamlit_command(_args("--", "--logger.level", "info"), ROOT)
    assert command[-2:] == ["--logger.level", "info"]


@pytest.mark.parametrize(
    ("megabytes", "expected"),
    [(None, "200"), ("50", "50"), ("0.5", "1"), ("12.2", "13")],  # whole megabytes, rounded up
)
def test_streamlit_upload_limit_follows_evalcore(
    monkeypatch: pytest.MonkeyPatch, megabytes: str | None, expected: str
) -> None:
    if megabytes is None:
        monkeypatch.delenv("EVALCORE_MAX_UPLOAD_MB", raising=False)
    else:
        monkeypatch.setenv("EVALCORE_MAX_UPLOAD_MB", megabytes)
    assert _options(serve.streamlit_command(_args(), ROOT))["--server.maxUploadSize"] == expected


def test_the_upload_limit_cannot_be_set_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="EVALCORE_MAX_UPLOAD_MB"):
        serve.streamlit_command(_args("--", "--server.maxUploadSize", "1000"), ROOT)


@pytest.fixture
def no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory and home without any .streamlit/secrets.toml, and a new database."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv(serve.ADDRESS_ENV, raising=False)
    monkeypatch.setenv("EVALCORE_DATABASE_URL", f"sqlite:///{tmp_path / 'serve.sqlite'}")
    return tmp_path


def test_no_account_listens_on_loopback_only(no_secrets: Path) -> None:
    from evalcore.store import Store

    serve.start_check("127.0.0.1")  # single-user mode
    serve.start_check("localhost")
    for address in ("0.0.0.0", "", "192.168.1.20"):
        with pytest.raises(
            ConfigError, match="evalcore users add NAME --role admin --password-env VAR"
        ):
            serve.start_check(address)
    # OIDC configured: people sign in through it
    (no_secrets / ".streamlit").mkdir()
    secrets = no_secrets / ".streamlit" / "secrets.toml"
    secrets.write_text('[auth]\nredirect_uri = "http://x/oauth2callback"\ncookie_secret = "s"\n')
    serve.start_check("0.0.0.0")
    secrets.unlink()
    # or an account exists
    with Store.open(f"sqlite:///{no_secrets / 'serve.sqlite'}") as store:
        store.add_user("root", role="admin", password="a long password")
    serve.start_check("0.0.0.0")


def test_the_command_refuses_before_streamlit_starts(
    no_secrets: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalcore.cli import main

    assert main(["serve", "--address", "0.0.0.0"]) == 2
    assert capsys.readouterr().err.startswith("evalcore: evalcore has no user account yet")
    monkeypatch.setenv("EVALCORE_SESSION_IDLE_MINUTES", "-3")
    assert main(["serve"]) == 2
    assert "EVALCORE_SESSION_IDLE_MINUTES must be a positive" in capsys.readouterr().err
    monkeypatch.setenv("EVALCORE_SESSION_IDLE_MINUTES", "60")
    monkeypatch.setenv("EVALCORE_MAX_UPLOAD_MB", "lots")
    assert main(["serve"]) == 2
    assert "EVALCORE_MAX_UPLOAD_MB='lots'" in capsys.readouterr().err
