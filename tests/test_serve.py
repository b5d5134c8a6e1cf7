"""``evalcore serve`` starts the dashboard in router mode, on loopback unless told otherwise, and
refuses to serve other machines without an account. The router-mode tests fail loudly when
Streamlit changes how it chooses its legacy multipage mode."""

from __future__ import annotations

import argparse
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


# --- host names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("localhost", True),
        ("LOCALHOST:8501", True),
        ("127.0.0.1:8501", True),
        ("[::1]:8501", True),
        ("localhost.:8501", True),  # the fully qualified spelling of the same name
        ("evil.example:8501", False),
        ("127.0.0.1.evil.example", False),
        ("localhost.evil.example:8501", False),
        ("", False),
        (None, False),
    ],
)
def test_a_loopback_server_answers_loopback_names_only(header: str | None, expected: bool) -> None:
    from evalcore.workflows import allowed_hosts, host_allowed

    assert host_allowed(header, allowed_hosts("127.0.0.1", {})) is expected
    assert host_allowed(header, allowed_hosts("::1", {})) is expected


def test_a_team_server_answers_the_names_it_is_given() -> None:
    from evalcore.workflows import allowed_hosts, any_host_notice, host_allowed

    setting = {"EVALCORE_ALLOWED_HOSTS": " Evals.Example.org ,10.0.0.5,"}
    named = allowed_hosts("0.0.0.0", setting)
    assert host_allowed("evals.example.org:443", named)
    assert host_allowed("10.0.0.5:8501", named)
    assert host_allowed("localhost:8501", named)
    assert not host_allowed("evil.example", named)
    assert any_host_notice("0.0.0.0", setting) is None
    # behind a reverse proxy on this machine: the proxy's public name is allowed too
    assert host_allowed("evals.example.org", allowed_hosts("127.0.0.1", setting))
    # without the setting a team server answers any name, and says so at start
    assert allowed_hosts("0.0.0.0", {}) is None
    assert host_allowed("anything.example", None)
    notice = any_host_notice("0.0.0.0", {})
    assert notice is not None
    assert "--allowed-host" in notice
    assert any_host_notice("127.0.0.1", {}) is None


def test_a_bad_host_setting_is_refused_by_name() -> None:
    from evalcore.workflows import allowed_hosts

    for bad in ("evals.example.org/path", "evals example.org", "http://evals.example.org"):
        with pytest.raises(ConfigError, match="EVALCORE_ALLOWED_HOSTS"):
            allowed_hosts("0.0.0.0", {"EVALCORE_ALLOWED_HOSTS": bad})


def test_serve_names_its_hosts_or_says_it_answers_any(
    no_secrets: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalcore.store import Store
    from evalcore.workflows import ALLOWED_HOSTS_ENV

    monkeypatch.delenv(ALLOWED_HOSTS_ENV, raising=False)
    with Store.open(f"sqlite:///{no_secrets / 'serve.sqlite'}") as store:
        store.add_user("root", role="admin", password="a long password")
    serve.start_check("0.0.0.0")
    assert "answers requests addressed to any host name on 0.0.0.0" in capsys.readouterr().out
    serve.start_check("127.0.0.1")
    assert capsys.readouterr().out == ""
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, "evals.example.org")
    serve.start_check("0.0.0.0")
    assert capsys.readouterr().out == ""
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, "not a name")
    with pytest.raises(ConfigError, match="'not a name' is not one"):
        serve.start_check("0.0.0.0")


def test_allowed_host_options_add_to_the_setting(
    no_secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalcore.workflows import ALLOWED_HOSTS_ENV

    monkeypatch.setenv(ALLOWED_HOSTS_ENV, "a.example")
    started: list[list[str]] = []
    monkeypatch.setattr(serve.os, "execv", lambda _exe, argv: started.append(argv))
    args = _args("--allowed-host", "b.example", "--allowed-host", "c.example")
    assert serve.serve(args) == 0
    assert serve.os.environ[ALLOWED_HOSTS_ENV] == "a.example,b.example,c.example"
    assert started  # the server would start with it in its environment


# --- the middleware and the cookie routes ------------------------------------------------------


@pytest.fixture
def asgi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """A small Starlette app with the dashboard's middleware and routes on a real server (a
    SQLite file with the account ``eve``), served on loopback, and its test client."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient
    from streamlit import config

    from evalcore.store import Store
    from evalcore.workflows import Server
    from ui import serving

    monkeypatch.delenv("EVALCORE_ALLOWED_HOSTS", raising=False)
    monkeypatch.delenv("EVALCORE_SESSION_IDLE_MINUTES", raising=False)
    saved = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")
    serving._allowed.cache_clear()
    server = Server(store=Store.open(f"sqlite:///{tmp_path / 'asgi.sqlite'}"))
    server.store.add_user("eve", role="engineer", password="a long password")
    monkeypatch.setattr(serving, "_server", lambda: server)  # the process's server, in a test
    app = Starlette(
        routes=[*serving.ROUTES, Route("/", lambda _r: PlainTextResponse("the app"))],
        middleware=[Middleware(serving.HostCheck)],
    )
    try:
        with TestClient(app, base_url="http://localhost:8501") as client:
            yield server, client
    finally:
        server.close()
        config.set_option("server.address", saved)
        serving._allowed.cache_clear()


POSTED = {"X-Evalcore": "1"}


def test_the_middleware_refuses_another_host_before_the_app(asgi: tuple[Any, Any]) -> None:
    _server, client = asgi
    assert client.get("/").text == "the app"
    refused = client.get("/", headers={"Host": "evil.example:8501"})
    assert refused.status_code == 403
    assert "'evil.example'" in refused.text
    assert "the app" not in refused.text
    from starlette.websockets import WebSocketDisconnect

    with (
        pytest.raises(WebSocketDisconnect),
        client.websocket_connect("/", headers={"Host": "evil.example"}),
    ):
        pass  # pragma: no cover - refused at the handshake


def test_a_hand_off_code_sets_the_cookie_once(asgi: tuple[Any, Any]) -> None:
    from evalcore.workflows import SESSION_COOKIE
    from evalcore.workflows import identity as flow

    server, client = asgi
    session = flow.sign_in(server, "eve", "a long password")
    code = flow.hand_off(session)
    assert client.post("/auth/session", content=code).status_code == 403  # no page header
    assert client.post("/auth/session", content=code, headers={**POSTED, "Origin": "http://evil.example"}).status_code == 403  # fmt: skip
    answer = client.post("/auth/session", content=code, headers=POSTED)
    assert answer.status_code == 204
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}={session.token};")
    for part in ("HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=604800"):
        assert part in cookie
    assert "Secure" not in cookie  # plain http on loopback
    again = client.post("/auth/session", content=code, headers=POSTED)  # used once already
    assert again.status_code == 403
    assert "unknown, used or expired" in again.text
    # a page load renews the cookie's lifetime
    client.cookies.set(SESSION_COOKIE, session.token or "")
    assert "Max-Age=604800" in client.get("/").headers["set-cookie"]
    # over https the cookie is Secure
    behind = client.post(
        "/auth/session",
        content=flow.hand_off(session),
        headers={**POSTED, "X-Forwarded-Proto": "https"},
    )
    assert "Secure" in behind.headers["set-cookie"]


def test_sign_out_ends_the_cookies_session_and_clears_it(asgi: tuple[Any, Any]) -> None:
    from evalcore.errors import SessionEndedError
    from evalcore.workflows import SESSION_COOKIE, caller
    from evalcore.workflows import identity as flow

    server, client = asgi
    session = flow.sign_in(server, "eve", "a long password")
    client.cookies.set(SESSION_COOKIE, session.token or "")
    assert client.post("/auth/sign-out").status_code == 403  # not from the page
    caller(session)  # still open
    answer = client.post("/auth/sign-out", headers=POSTED)
    assert answer.status_code == 204
    assert "Max-Age=0" in answer.headers["set-cookie"]
    with pytest.raises(SessionEndedError):
        caller(session)


def test_an_oidc_sign_out_clears_the_cookie_too(asgi: tuple[Any, Any]) -> None:
    from evalcore.workflows import SESSION_COOKIE

    _server, client = asgi
    client.cookies.set(SESSION_COOKIE, "a-token")
    answer = client.get("/auth/logout", follow_redirects=False)  # Streamlit's route (not here)
    assert f"{SESSION_COOKIE}=" in answer.headers["set-cookie"]
    assert "Max-Age=0" in answer.headers["set-cookie"]
