"""In a real browser, single sign-on end to end against a real OpenID provider on loopback (issue 19,
part 1): ``oidc-provider-mock`` runs in a thread, the app (``evalcore serve``) has an ``[auth.acme]``
section naming it in its secrets, and Chromium clicks "Sign in with acme", picks a subject on the
provider's own form, comes back through Streamlit's ``/oauth2callback`` and is signed in by the app's
``oidc_sign_in``; a reload keeps the session (the app's cookie). A subject whose provider has not
verified the admin's address is refused with the page's message and never becomes the admin.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from evalcore.demo.seed import ensure_demo
from evalcore.store import Store
from evalcore.workflows import SESSION_COOKIE
from tests.browser.conftest import PASSWORD, AppServer, wait_idle

with warnings.catch_warnings():  # the provider still imports Authlib's deprecated jose module
    # Authlib's own "always" filter is added when authlib.deprecate is first imported, so it goes
    # in first and the "ignore" after it, in front of it
    import authlib.deprecate  # noqa: F401

    warnings.simplefilter("ignore", DeprecationWarning)
    import oidc_provider_mock

pytestmark = [
    pytest.mark.browser,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:authlib.*"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:oidc_provider_mock.*"),
]

ADMIN = "root"
ADMIN_EMAIL = "root@example.org"
UNVERIFIED = "has not verified the address"


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    with oidc_provider_mock.run_server_in_thread() as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture(scope="module")
def sso_server(
    tmp_path_factory: pytest.TempPathFactory, chromium_path: str, provider: str
) -> Iterator[AppServer]:
    """The app with one admin (``root``, address ``root@example.org``), a rule that makes anyone of
    example.org with a verified address a viewer, and the provider in its secrets."""
    folder = tmp_path_factory.mktemp("sso")
    secrets = folder / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        'redirect_uri = "http://localhost:{port}/oauth2callback"\n'
        'cookie_secret = "a cookie secret only this test knows, long enough"\n'
        "[auth.acme]\n"
        'client_id = "evalcore"\n'
        'client_secret = "a client secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n',
        encoding="utf-8",
    )
    db = folder / "evalcore.sqlite"
    with Store.open(f"sqlite:///{db}") as store:
        ensure_demo(store)
        store.add_user(ADMIN, role="admin", password=PASSWORD, email=ADMIN_EMAIL)
        store.set_oidc_rules([{"match": "domain", "value": "example.org", "role": "viewer"}])
    server = AppServer(db, extra_env={"STREAMLIT_SECRETS_FILES": str(secrets)})
    server.url = f"http://localhost:{server.port}"  # the redirect_uri's host, for its cookies
    yield server
    server.stop()


def provider_user(provider: str, sub: str, claims: dict[str, Any]) -> None:
    """Set the claims the provider puts in the ID token of ``sub``."""
    answer = httpx.put(f"{provider}/users/{quote(sub, safe='')}", json=claims, timeout=30)
    answer.raise_for_status()


def sign_ins(db_url: str) -> int:
    """How many sign-ins the audit log has."""
    with Store.open(db_url) as store:
        return int((store.audit_log()["action"] == "sign_in").sum())


def is_hand_off(response: Any) -> bool:
    return bool(response.url.endswith("/auth/session") and response.request.method == "POST")


def sso_sign_in(page: Any, url: str, sub: str) -> None:
    """Open the app, press "Sign in with acme", and be ``sub`` on the provider's form."""
    page.goto(url)
    page.get_by_role("button", name="Sign in with acme").click(timeout=90_000)
    page.get_by_role("heading", name="Authorize Client").wait_for()
    page.locator("input[name='sub']").fill(sub)
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(f"{url}/**")
    wait_idle(page)


def test_a_verified_address_signs_in_as_its_account(
    sso_server: AppServer, provider: str, page: Any
) -> None:
    provider_user(
        provider, "root-at-acme", {"email": ADMIN_EMAIL, "email_verified": True, "name": "Root"}
    )
    # the page hands the session to the app's cookie (POST /auth/session) once signed in
    with page.expect_response(is_hand_off, timeout=90_000) as hand_off:
        sso_sign_in(page, sso_server.url, "root-at-acme")
        page.get_by_text(f"Signed in as {ADMIN}").first.wait_for(timeout=90_000)
    assert hand_off.value.ok
    assert SESSION_COOKIE in {c["name"] for c in page.context.cookies()}
    wait_idle(page)
    assert page.get_by_role("button", name="Sign in with acme").count() == 0
    signed_in = sign_ins(sso_server.db_url)
    # a reload is a new Streamlit session: the app's own cookie names the session, so the
    # provider's claims are not used for a second sign-in
    page.reload()
    page.get_by_text(f"Signed in as {ADMIN}").first.wait_for(timeout=90_000)
    wait_idle(page)
    assert page.get_by_role("button", name="Sign in with acme").count() == 0
    assert sign_ins(sso_server.db_url) == signed_in
    with Store.open(sso_server.db_url) as store:
        admin = store.get_user(ADMIN)
        log = store.audit_log()
    assert (admin.role, admin.oidc_subject) == ("admin", "root-at-acme")
    assert admin.oidc_issuer == provider
    assert "oidc_bound" in set(log["action"])


def test_an_unverified_address_of_the_admin_is_refused(
    sso_server: AppServer, provider: str, page: Any
) -> None:
    claims = {"email": ADMIN_EMAIL, "email_verified": False, "name": ADMIN}
    provider_user(provider, "mallory", claims)
    signed_in_before = sign_ins(sso_server.db_url)
    sso_sign_in(page, sso_server.url, "mallory")
    page.get_by_text(UNVERIFIED).first.wait_for(timeout=90_000)
    page.get_by_role("button", name="Sign in with acme").wait_for()  # the sign-in page, drawn
    wait_idle(page)
    assert page.get_by_text("Signed in as").count() == 0
    # a reload tries the provider's claims again, and is refused again
    page.reload()
    page.get_by_text(UNVERIFIED).first.wait_for(timeout=90_000)
    page.get_by_role("button", name="Sign in with acme").wait_for()
    wait_idle(page)
    assert page.get_by_text("Signed in as").count() == 0
    with Store.open(sso_server.db_url) as store:
        users = {u.name: u for u in store.list_users()}
        log = store.audit_log()
    assert list(users) == [ADMIN]
    assert users[ADMIN].role == "admin"
    assert users[ADMIN].oidc_subject != "mallory"
    assert sign_ins(sso_server.db_url) == signed_in_before
    refusals = log[log["action"] == "sign_in_failed"]["detail"].tolist()
    assert {"method": "oidc", "reason": "unverified", "subject": "mallory"}.items() <= refusals[
        -1
    ].items()
