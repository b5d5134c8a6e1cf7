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
