"""Server-side sessions: a token opens a session, and every use answers with the user as the
database has them now, or says why the session is over. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest

from evalcore.errors import SessionEndedError
from evalcore.store import Store
from evalcore.store._models import utcnow

PASSWORD = "a long test password"
IDLE = 3600.0


@pytest.fixture
def ana(store: Store) -> Store:
    project = store.create_project("sessions")
    store.add_user("ana", role="viewer", password=PASSWORD, projects=[project.id])
    return store


def test_a_session_gives_the_user_and_only_its_hash_is_stored(ana: Store) -> None:
    token = ana.open_session("ana", method="password", client="127.0.0.1")
    actor = ana.session_actor(token, idle_s=IDLE)
    assert actor.name == "ana"
    assert actor.role == "viewer"
    with ana.engine.connect() as conn:
        stored = [tuple(r) for r in conn.exec_driver_sql("SELECT * FROM user_sessions")]
    assert stored
    assert all(token not in str(value) for row in stored for value in row)


def test_two_sessions_are_independent_and_sign_out_ends_one(ana: Store) -> None:
    first = ana.open_session("ana")
    second = ana.open_session("ana")
    assert first != second
    ana.end_session(first)
    with pytest.raises(SessionEndedError, match="signed out"):
        ana.session_actor(first, idle_s=IDLE)
    assert ana.session_actor(second, idle_s=IDLE).name == "ana"


def test_an_unknown_token_is_refused(ana: Store) -> None:
    with pytest.raises(SessionEndedError, match="not known"):
        ana.session_actor("made-up", idle_s=IDLE)


def test_a_role_change_is_seen_at_the_next_call(ana: Store) -> None:
    token = ana.open_session("ana")
    ana.set_role("ana", "engineer")
    assert ana.session_actor(token, idle_s=IDLE).role == "engineer"


def test_disabling_the_account_ends_its_sessions(ana: Store) -> None:
    token = ana.open_session("ana")
    ana.disable_user("ana")
    with pytest.raises(SessionEndedError, match="disabled"):
        ana.session_actor(token, idle_s=IDLE)
    ana.disable_user("ana", False)  # enabling again does not bring an ended session back
    with pytest.raises(SessionEndedError, match="disabled"):
        ana.session_actor(token, idle_s=IDLE)


def test_a_password_reset_ends_older_sessions_but_not_newer_ones(ana: Store) -> None:
    old = ana.open_session("ana")
    ana.reset_password("ana", "another long test password")
    new = ana.open_session("ana")
    with pytest.raises(SessionEndedError, match="password was changed"):
        ana.session_actor(old, idle_s=IDLE)
    assert ana.session_actor(new, idle_s=IDLE).name == "ana"


def test_an_idle_session_ends_and_use_keeps_one_alive(ana: Store) -> None:
    token = ana.open_session("ana")
    start = utcnow()
    # used every 40 s with a 60 s limit: alive (each use counts as activity)
    for step in range(1, 6):
        ana.session_actor(token, idle_s=60, now=start + timedelta(seconds=40 * step))
    later = start + timedelta(seconds=40 * 5 + 61)
    with pytest.raises(SessionEndedError, match="without activity"):
        ana.session_actor(token, idle_s=60, now=later)
    with pytest.raises(SessionEndedError, match="without activity"):  # and it stays ended
        ana.session_actor(token, idle_s=IDLE, now=later)


def test_end_user_sessions_ends_every_open_one(ana: Store) -> None:
    tokens = [ana.open_session("ana") for _ in range(3)]
    ana.end_session(tokens[0])
    assert ana.end_user_sessions("ana", reason="disabled") == 2
    for token in tokens[1:]:
        with pytest.raises(SessionEndedError, match="disabled"):
            ana.session_actor(token, idle_s=IDLE)


def test_no_session_opens_for_a_disabled_or_unknown_account(ana: Store) -> None:
    ana.disable_user("ana")
    with pytest.raises(SessionEndedError):
        ana.open_session("ana")
    with pytest.raises(SessionEndedError):
        ana.open_session("nobody")
