"""Sign-in limits held in the database (issue 19, part 2), on SQLite and PostgreSQL.

The limits are decided before the password is hashed, so the tests count real Argon2
verifications (``hash_stats``, counted by the semaphore every hash goes through) rather than
trusting the messages alone.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from evalcore.errors import SignInError
from evalcore.store import ACCOUNT_LIMIT, CLIENT_LIMIT, PAIR_LIMIT, Actor, Store, hash_stats
from evalcore.store._limits import REFUSALS
from evalcore.store._models import utcnow
from evalcore.store._passwords import _gate, hash_limit
from evalcore.store._users import WRONG_CREDENTIALS

PASSWORD = "correct horse battery"
STRANGER = "203.0.113.66"
OWNER = "192.0.2.10"


def _verifications() -> int:
    return hash_stats().verifications


def _attempt(store: Store, name: str, password: str, client: str, **kw: object) -> str:
    """``"in"`` for a success, else the refusal's message."""
    try:
        store.sign_in(name, password, client=client, **kw)  # type: ignore[arg-type]
    except SignInError as exc:
        return str(exc)
    return "in"


def test_sixteen_parallel_guesses_make_at_most_the_limit_of_checks(store: Store) -> None:
    """Issue 19: 16 guesses at once from one address; the owner signs in meanwhile elsewhere."""
    store.add_user("root", role="admin", password=PASSWORD)
    store.sign_in("root", PASSWORD, client=OWNER)  # warm up (the dummy hash, the pool)
    before = _verifications()
    barrier = threading.Barrier(17)

    def guess(i: int) -> str:
        barrier.wait()
        if i == 16:
            return _attempt(store, "root", PASSWORD, OWNER)
        return _attempt(store, "root", f"guess number {i}", STRANGER)

    with ThreadPoolExecutor(17) as pool:
        outcomes = list(pool.map(guess, range(17)))
    guesses, owner = outcomes[:16], outcomes[16]
    assert owner == "in"
    # 5 guesses were checked (and failed), the other 11 were refused before any hash:
    # 5 + 1 (the owner's) = 6 verifications in all
    assert _verifications() - before == PAIR_LIMIT.attempts + 1
    assert "in" not in guesses
    refused = [g for g in guesses if g == REFUSALS["pair"]]
    checked = [g for g in guesses if g == WRONG_CREDENTIALS]
    # the failure that fills the count says "locked" too, so 11 or 12 carry the lock message
    assert len(refused) + len(checked) == 16
    assert len(refused) >= 16 - PAIR_LIMIT.attempts
    log = store.audit_log()
    failed = log[log["action"] == "sign_in_failed"]
    assert len(failed) == PAIR_LIMIT.attempts  # one row per real check, none per refusal
    assert {d["client"] for d in failed["detail"]} == {STRANGER.lower()}
    locked = log[log["action"] == "sign_in_locked"]
    assert len(locked) == 1
    assert locked["detail"].iloc[0]["scope"] == "pair"
    assert store.sign_in_locks()[0].account == "root"
    # when the lock has ended, one row says how many attempts it refused
    later = utcnow() + PAIR_LIMIT.lock + timedelta(seconds=1)
    assert _attempt(store, "root", "one more guess", STRANGER, now=later) == WRONG_CREDENTIALS
    ended = store.audit_log(action="sign_in_lock_ended")
    assert len(ended) == 1
    detail = ended["detail"].iloc[0]
    assert (detail["scope"], detail["client"]) == ("pair", STRANGER)
    # 16 guesses - 5 checked = 11 refused (the owner's address has its own rows)
    assert detail["refused"] == 16 - PAIR_LIMIT.attempts


def test_a_stranger_hammering_the_name_never_locks_out_the_owner(store: Store) -> None:
    store.add_user("ana", role="viewer", password=PASSWORD)
    t0 = utcnow()
    for i in range(40):  # well past the pair's and the address's limits
        at = t0 + timedelta(seconds=i)
        assert _attempt(store, "ana", f"guess {i}", STRANGER, now=at) != "in"
        if i % 10 == 9:  # the owner, from a new address each time, is let in throughout
            assert _attempt(store, "ana", PASSWORD, f"192.0.2.{i}", now=at) == "in"
    # the stranger made at most the address's limit of checks; everything else was refused
    failed = store.audit_log(action="sign_in_failed")
    assert len(failed) <= CLIENT_LIMIT.attempts
    assert _attempt(store, "ana", PASSWORD, STRANGER, now=t0 + timedelta(seconds=41)) in (
        REFUSALS["pair"],
        REFUSALS["client"],
    )
    # the account itself was never locked
    assert not store.get_user("ana").is_locked(t0 + timedelta(seconds=41))


def test_an_address_trying_many_names_is_stopped(store: Store) -> None:
    t0 = utcnow()
    for i in range(CLIENT_LIMIT.attempts - 1):
        assert _attempt(store, f"name{i}", "guess", STRANGER, now=t0) == WRONG_CREDENTIALS
    # the failure that fills the address's count says so
    assert _attempt(store, "last", "guess", STRANGER, now=t0) == REFUSALS["client"]
    before = _verifications()
    assert _attempt(store, "another", "guess", STRANGER, now=t0) == REFUSALS["client"]
    assert _verifications() == before  # refused without a hash
    # other addresses are not affected, and the lock ends after its time
    assert _attempt(store, "another", "guess", OWNER, now=t0) == WRONG_CREDENTIALS
    after = t0 + CLIENT_LIMIT.lock + timedelta(seconds=1)
    assert _attempt(store, "another", "guess", STRANGER, now=after) == WRONG_CREDENTIALS


def test_a_guess_from_many_addresses_guards_the_name_for_known_addresses(store: Store) -> None:
    store.add_user("ana", role="viewer", password=PASSWORD)
    t0 = utcnow()
    assert _attempt(store, "ana", PASSWORD, OWNER, now=t0) == "in"  # the owner's usual address
    addresses = ACCOUNT_LIMIT.attempts // PAIR_LIMIT.attempts  # 50 / 5 = 10 addresses
    for a in range(addresses):
        for i in range(PAIR_LIMIT.attempts):
            at = t0 + timedelta(seconds=1 + i)
            assert _attempt(store, "ana", "guess", f"198.51.100.{a}", now=at) != "in"
    at = t0 + timedelta(seconds=30)
    before = _verifications()
    # a new address is refused without a hash, as an unknown name would be
    assert _attempt(store, "ana", PASSWORD, "198.51.100.200", now=at) == REFUSALS["account"]
    assert _verifications() == before
    assert store.get_user("ana").is_locked(at)  # the list shows the name as guarded
    # the owner's usual address still gets in
    assert _attempt(store, "ana", PASSWORD, OWNER, now=at) == "in"
    # the guard ends after its time
    after = t0 + timedelta(seconds=10) + ACCOUNT_LIMIT.lock  # the last guess was at t0 + 5 s
    assert _attempt(store, "ana", PASSWORD, "198.51.100.200", now=after) == "in"
    scopes = [d["scope"] for d in store.audit_log(action="sign_in_locked")["detail"]]
    assert scopes.count("account") == 1
    assert scopes.count("pair") == addresses


def test_an_admin_lists_and_lifts_locks(store: Store) -> None:
    store.add_user("ana", role="viewer", password=PASSWORD)
    for _ in range(PAIR_LIMIT.attempts):
        _attempt(store, "ana", "guess", STRANGER)
    (lock,) = store.sign_in_locks()
    assert (lock.scope, lock.account, lock.client) == ("pair", "ana", STRANGER)
    assert lock.attempts == PAIR_LIMIT.attempts
    assert _attempt(store, "ana", PASSWORD, STRANGER) == REFUSALS["pair"]
    assert store.sign_in_locks()[0].refused == 1
    admin = store.acting_as(Actor.system("cli:tester"))
    assert admin.clear_sign_in_locks("ana") >= 1
    assert store.sign_in_locks() == []
    assert _attempt(store, "ana", PASSWORD, STRANGER) == "in"
    ended = store.audit_log(action="sign_in_lock_ended")["detail"].iloc[0]
    assert (ended["reason"], ended["refused"]) == ("cleared", 1)
    assert store.audit_log(action="sign_in_unlocked")["actor"].iloc[0] == "cli:tester"
    with pytest.raises(Exception, match="which name or client"):
        store.clear_sign_in_locks()


def test_sixteen_sign_ins_at_once_hash_at_most_the_limit_at_once(store: Store) -> None:
    """The Argon2 semaphore: 16 sign-ins at once (16 accounts, 16 addresses: no limit refuses
    any) run at most ``hash_limit()`` hashes at the same time."""
    for i in range(16):
        store.add_user(f"user{i}", role="viewer", password=PASSWORD)
    store.sign_in("user0", PASSWORD, client="192.0.2.200")  # warm up
    _gate().reset_peak()
    before = _verifications()
    barrier = threading.Barrier(16)

    def sign_in(i: int) -> str:
        barrier.wait()
        return _attempt(store, f"user{i}", PASSWORD, f"192.0.2.{i}")

    with ThreadPoolExecutor(16) as pool:
        assert list(pool.map(sign_in, range(16))) == ["in"] * 16
    stats = hash_stats()
    assert stats.verifications - before == 16
    assert 1 <= stats.peak <= hash_limit() == 2
