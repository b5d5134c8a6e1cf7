"""Single sign-on against a real OpenID provider on loopback (issue 19, part 1).

``oidc-provider-mock`` (an OpenID Connect provider built on Flask and Authlib) runs in a thread on
a free loopback port. Each sign-in goes through the authorization-code flow as a browser and the
app would: Authlib's OAuth client builds the authorization request (state and nonce), the person
picks their identity on the provider's form, the client exchanges the code at the token endpoint,
and the ID token is verified against the provider's JWKS (signature, issuer, audience, expiry,
nonce) with joserfc. The verified claims then go to ``Store.oidc_sign_in``, the one entry point
the sign-in page calls.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import OAuth2Client
from joserfc import jwt
from joserfc.jwk import KeySet

from evalcore.errors import SignInError
from evalcore.store import Store

with warnings.catch_warnings():  # the provider still imports Authlib's deprecated jose module
    # Authlib's own "always" filter is added when authlib.deprecate is first imported, so it goes
    # in first and the "ignore" after it, in front of it
    import authlib.deprecate  # noqa: F401

    warnings.simplefilter("ignore", DeprecationWarning)
    import oidc_provider_mock

# the provider's use of Authlib's older signing interface, not ours
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:authlib.*")

CLIENT_ID = "evalcore"
REDIRECT = "http://localhost:8501/oauth2callback"  # never called: the test reads the redirect
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    with oidc_provider_mock.run_server_in_thread() as server:
        yield f"http://localhost:{server.server_port}"


def sign_in_at(provider: str, sub: str, claims: dict[str, Any]) -> dict[str, Any]:
    """The verified claims of the ID token the provider issues for ``sub`` (with ``claims``)."""
    with httpx.Client(timeout=30) as http:
        http.put(f"{provider}/users/{quote(sub, safe='')}", json=claims).raise_for_status()
        meta = http.get(f"{provider}/.well-known/openid-configuration").json()
        nonce = generate_token(20)
        with OAuth2Client(
            CLIENT_ID,
            "a client secret",
            scope="openid email profile",
            redirect_uri=REDIRECT,
            timeout=30,
        ) as client:
            url, _state = client.create_authorization_url(
                meta["authorization_endpoint"], nonce=nonce
            )
            # the person chooses who they are on the provider's form
            answer = http.post(url, data={"sub": sub})
            assert answer.status_code == 302, answer.text[:500]
            callback = answer.headers["location"]
            assert callback.startswith(REDIRECT)
            token = client.fetch_token(meta["token_endpoint"], authorization_response=callback)
        keys = KeySet.import_key_set(http.get(meta["jwks_uri"]).json())
    decoded = jwt.decode(token["id_token"], keys)
    jwt.JWTClaimsRegistry(
        iss={"essential": True, "value": meta["issuer"]},
        aud={"essential": True, "value": CLIENT_ID},
        nonce={"essential": True, "value": nonce},
        exp={"essential": True},
        sub={"essential": True, "value": sub},
    ).validate(decoded.claims)
    return dict(decoded.claims)


def test_the_flow_gives_verified_claims(provider: str) -> None:
    claims = sign_in_at(
        provider, "u-1", {"email": "u1@example.org", "email_verified": True, "name": "U"}
    )
    assert claims["iss"] == provider
    assert (claims["sub"], claims["email"], claims["email_verified"]) == (
        "u-1",
        "u1@example.org",
        True,
    )


def test_a_display_name_of_admin_does_not_take_over_the_admin(store: Store, provider: str) -> None:
    store.add_user("admin", role="admin", password=PASSWORD)  # `evalcore users add admin`
    store.set_oidc_rules([{"match": "domain", "value": "example.org", "role": "viewer"}])
    mallory = {"email": "mallory@example.org", "email_verified": False, "name": "admin"}
    with pytest.raises(SignInError, match="has not verified the address"):
        store.oidc_sign_in(sign_in_at(provider, "mallory", mallory))
    assert [u.name for u in store.list_users()] == ["admin"]
    # once the provider verifies the address: an account of her own, with the rule's role
    actor = store.oidc_sign_in(sign_in_at(provider, "mallory", {**mallory, "email_verified": True}))
    assert (actor.name, actor.role) == ("mallory@example.org", "viewer")
    admin = store.get_user("admin")
    assert (admin.role, admin.source, admin.disabled) == ("admin", "local", False)
    assert store.sign_in("admin", PASSWORD).is_admin


def test_an_unverified_address_of_an_existing_account_is_refused(
    store: Store, provider: str
) -> None:
    store.add_user("root", role="admin", password=PASSWORD, email="root@example.org")
    store.set_oidc_rules([{"match": "domain", "value": "example.org", "role": "engineer"}])
    claims = {"email": "root@example.org", "email_verified": False, "name": "root"}
    with pytest.raises(SignInError, match="has not verified"):
        store.oidc_sign_in(sign_in_at(provider, "impostor", claims))
    assert store.get_user("root").role == "admin"


def test_a_verified_address_binds_and_the_subject_finds_the_account_again(
    store: Store, provider: str
) -> None:
    store.add_user("rita", role="engineer", password=PASSWORD, email="rita@example.org")
    first = store.oidc_sign_in(
        sign_in_at(provider, "rita-42", {"email": "rita@example.org", "email_verified": True})
    )
    assert (first.name, first.role) == ("rita", "engineer")  # no rule needed: an admin made it
    bound = store.audit_log(action="oidc_bound").iloc[0]["detail"]
    assert (bound["issuer"], bound["subject"], bound["by"]) == (provider, "rita-42", "email")
    rita = store.get_user("rita")
    assert (rita.oidc_issuer, rita.oidc_subject) == (provider, "rita-42")
    # the provider changes her address: the same issuer and subject land in the same account
    moved = {"email": "rita.new@example.net", "email_verified": True, "name": "Rita"}
    again = store.oidc_sign_in(sign_in_at(provider, "rita-42", moved))
    assert again.user_id == first.user_id
    assert store.get_user("rita").email == "rita.new@example.net"
    # another subject with her old, verified address cannot take the account
    with pytest.raises(SignInError):
        store.oidc_sign_in(
            sign_in_at(
                provider, "rita-43", {"email": "rita.new@example.net", "email_verified": True}
            )
        )
    assert store.count_users() == 1
    decisions = store.audit_log()
    assert list(decisions[decisions["action"] == "sign_in"]["detail"].map(lambda d: d["by"])) == [
        "subject",
        "email",
    ]
