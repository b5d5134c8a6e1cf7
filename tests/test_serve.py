"""``ui.serve`` starts Streamlit in router mode; these fail loudly when Streamlit changes how.

The launcher sets ``PagesManager.uses_pages_directory``, a class attribute Streamlit sets itself on
the first ``st.navigation`` call. Each test pins one fact that the launcher relies on, so a Streamlit
upgrade that renames the attribute or stops reading it breaks here, not in a user's browser.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.runtime.pages_manager import PagesManager

from ui import serve

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
    serve.use_router_mode()
    PagesManager(str(ROOT / "app.py"))
    assert PagesManager.uses_pages_directory is False


def test_the_script_runner_chooses_the_legacy_mode_by_this_flag() -> None:
    runner = importlib.import_module("streamlit.runtime.scriptrunner.script_runner")
    assert "PagesManager.uses_pages_directory" in inspect.getsource(runner)


def test_st_navigation_sets_the_same_flag_the_launcher_sets() -> None:
    navigation = importlib.import_module("streamlit.commands.navigation")
    assert "PagesManager.uses_pages_directory = False" in inspect.getsource(navigation)


def test_local_server_args_are_headless_on_loopback() -> None:
    args = serve.local_server_args(8123)
    options = dict(zip(args[::2], args[1::2], strict=True))
    assert options["--server.port"] == "8123"
    assert options["--server.address"] == "127.0.0.1"
    assert options["--server.headless"] == "true"


def test_the_first_screen_options() -> None:
    # no address given: point browsers at localhost (no public-address lookup), quiet logger
    options = serve.streamlit_options([])
    assert options[options.index("--browser.serverAddress") + 1] == "localhost"
    assert options[options.index("--logger.level") + 1] == "warning"
    # an address on the command line is the user's choice, and later options win
    mine = serve.streamlit_options([*serve.local_server_args(9000), "--logger.level", "info"])
    assert "--browser.serverAddress" not in mine
    assert mine[-2:] == ["--logger.level", "info"]


def _streamlit_reads(options: list[str], name: str) -> object:
    """The value Streamlit's own ``run`` command and config loader give ``name`` for ``options``."""
    from streamlit import config
    from streamlit.web import bootstrap, cli

    context = cli.main_run.make_context("run", [str(serve.APP), *options])
    flags = {k: v for k, v in context.params.items() if k not in ("target", "args")}
    try:
        bootstrap.load_config_options(flag_options=flags)
        return config.get_option(name)
    finally:
        config.get_config_options(force_reparse=True)


@pytest.mark.parametrize(
    ("megabytes", "expected"),
    [
        (None, 200),  # the default of both
        ("50", 50),
        ("0.5", 1),  # Streamlit counts whole megabytes: rounded up, evalcore refuses the rest
        ("12.2", 13),
    ],
)
def test_streamlit_upload_limit_follows_evalcore(
    monkeypatch: pytest.MonkeyPatch, megabytes: str | None, expected: int
) -> None:
    if megabytes is None:
        monkeypatch.delenv("EVALCORE_MAX_UPLOAD_MB", raising=False)
    else:
        monkeypatch.setenv("EVALCORE_MAX_UPLOAD_MB", megabytes)
    options = serve.streamlit_options(serve.local_server_args(9000))
    assert _streamlit_reads(options, "server.maxUploadSize") == expected


def test_the_upload_limit_cannot_be_set_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.errors import ConfigError

    with pytest.raises(ConfigError, match="EVALCORE_MAX_UPLOAD_MB"):
        serve.streamlit_options(["--server.maxUploadSize", "1000"])
    monkeypatch.setenv("EVALCORE_MAX_UPLOAD_MB", "lots")
    with pytest.raises(SystemExit, match="EVALCORE_MAX_UPLOAD_MB='lots'"):
        serve.main([])


# --- where the server listens, and when it refuses to -----------------------------------------------


def test_the_default_address_is_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(serve.ADDRESS_ENV, raising=False)
    options = serve.streamlit_options([])
    assert serve.server_address(options) == "127.0.0.1"
    assert _streamlit_reads(options, "server.address") == "127.0.0.1"
    chosen = serve.streamlit_options(["--server.address", "0.0.0.0"])
    assert serve.server_address(chosen) == "0.0.0.0"
    assert "127.0.0.1" not in chosen
    assert serve.server_address(["--server.address=::"]) == "::"
    monkeypatch.setenv(serve.ADDRESS_ENV, "10.0.0.5")  # Streamlit's own variable is a choice too
    assert serve.server_address(serve.streamlit_options([])) == "10.0.0.5"


@pytest.fixture
def no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory and home without any .streamlit/secrets.toml."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv(serve.ADDRESS_ENV, raising=False)
    return tmp_path


def test_no_account_listens_on_loopback_only(no_secrets: Path) -> None:
    from evalcore.store import Store

    url = f"sqlite:///{no_secrets / 'serve.sqlite'}"
    serve.start_check("127.0.0.1", url)  # single-user mode
    serve.start_check("localhost", url)
    for address in ("0.0.0.0", None, "192.168.1.20"):
        with pytest.raises(
            SystemExit, match="evalcore users add NAME --role admin --password-env VAR"
        ):
            serve.start_check(address, url)
    # OIDC configured: people sign in through it
    (no_secrets / ".streamlit").mkdir()
    secrets = no_secrets / ".streamlit" / "secrets.toml"
    secrets.write_text('[auth]\nredirect_uri = "http://x/oauth2callback"\ncookie_secret = "s"\n')
    serve.start_check("0.0.0.0", url)
    secrets.unlink()
    # or an account exists
    with Store.open(url) as store:
        store.add_user("root", role="admin", password="a long password")
    serve.start_check("0.0.0.0", url)


def test_the_launcher_refuses_before_streamlit_starts(
    no_secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALCORE_DATABASE_URL", f"sqlite:///{no_secrets / 'main.sqlite'}")
    with pytest.raises(SystemExit, match=r"^evalcore: evalcore has no user account yet"):
        serve.main(["--server.address", "0.0.0.0", "--server.headless", "true"])
    monkeypatch.setenv("EVALCORE_SESSION_IDLE_MINUTES", "-3")
    with pytest.raises(SystemExit, match="EVALCORE_SESSION_IDLE_MINUTES must be a positive"):
        serve.main(["--server.headless", "true"])
