"""The hand-off of a signed-in session to the browser's cookie: a one-time code, redeemed once,
within its minute, for a session that is still open."""

from __future__ import annotations

import pytest

from evalcore.errors import SessionEndedError, SignInError
from evalcore.workflows import HandOffs, Server, Session, caller
from evalcore.workflows import identity as flow
from tests.workflows.conftest import PASSWORD, People


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_code_is_redeemed_once_for_its_session(people: People) -> None:
    session = flow.sign_in(people.server, "eve", PASSWORD)
    code = flow.hand_off(session)
    assert session.token not in code  # the code is not the token
    assert len(code) >= 40  # 32 random bytes, URL-safe
    redeemed = flow.redeem(people.server, code)
    assert redeemed.token == session.token
    assert caller(redeemed).name == "eve"
    with pytest.raises(SignInError, match="unknown, used or expired"):
        flow.redeem(people.server, code)


def test_unknown_and_empty_codes_are_refused(server: Server) -> None:
    for code in ("", "not-a-code", "x" * 43):
        with pytest.raises(SignInError, match="unknown, used or expired"):
            flow.redeem(server, code)


def test_a_code_expires_after_its_minute() -> None:
    clock = Clock()
    codes = HandOffs(ttl=60.0, clock=clock)
    early, late = codes.issue("token-a"), codes.issue("token-b")
    clock.now += 59.0
    assert codes.redeem(early) == "token-a"
    clock.now += 1.0  # 60 s after the issue: over
    assert codes.redeem(late) is None
    stale = codes.issue("token-c")
    clock.now += 61.0
    codes.issue("token-d")  # issuing drops the stale codes
    assert stale not in codes._codes
    assert codes.redeem(stale) is None


def test_a_session_that_ended_meanwhile_is_refused(people: People) -> None:
    store = people.server.store
    signed_out = flow.sign_in(people.server, "eve", PASSWORD)
    code = flow.hand_off(signed_out)
    flow.sign_out(signed_out)
    with pytest.raises(SessionEndedError):
        flow.redeem(people.server, code)
    disabled = flow.sign_in(people.server, "dan", PASSWORD)
    code = flow.hand_off(disabled)
    store.disable_user("dan")
    with pytest.raises(SessionEndedError):
        flow.redeem(people.server, code)
    with pytest.raises(SessionEndedError):  # and no code is handed out for an ended session
        flow.hand_off(disabled)


def test_single_user_mode_has_nothing_to_hand_off(server: Server) -> None:
    single = Session(server)  # no account, loopback: single-user mode
    assert caller(single).actor.kind == "single_user"
    with pytest.raises(SessionEndedError, match="Single-user mode"):
        flow.hand_off(single)
