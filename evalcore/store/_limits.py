"""Sign-in limits held in the database: per name and client address, per address, per name.

A password check is decided *before* the password is hashed, in one write transaction that holds
the three counter rows of the attempt (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: the upsert and
``SELECT … FOR UPDATE`` lock each row until commit, always in the order address, name, pair):

- **pair** (one name from one client address): :data:`PAIR_LIMIT` attempts in its window, then
  that pair is locked for a minute. This is what stops a guesser, and it stops only them: the
  owner of the name, at another address, is not affected.
- **client** (every name from one address): :data:`CLIENT_LIMIT` attempts, then the address is
  locked for every name. It stops one address from trying many names (password spraying).
- **account** (one name from every address): :data:`ACCOUNT_LIMIT` attempts, more than one
  address may make, so only a guess from many addresses reaches it. Then the name is *guarded*:
  an address that signed in to it within :data:`KNOWN_CLIENT` still may try, every other
  address is refused. The owner at their usual address keeps signing in during the attack.

Each attempt is counted on all three rows when it is let through, so sixteen guesses at once from
one address make at most :data:`PAIR_LIMIT` password checks: the others find the count full and
are refused without a hash. A success gives its own count back (the pair starts again at 0 and
remembers the success, which makes the address known to the name); a failure keeps it. A row over
its limit is locked; the first refusal or the failure that reaches the limit starts the lock and
writes one ``sign_in_locked`` audit row, the attempts refused during the lock only add to a
count, and the lock's end writes one ``sign_in_lock_ended`` row with that count.

Rows are keyed by the name as typed, never by a user id, so an unknown name is limited exactly
like a known one and a refusal says nothing about whether the name exists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Literal

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from evalcore.store._models import SignInLimit, table_of

__all__ = [
    "ACCOUNT_LIMIT",
    "CLIENT_LIMIT",
    "KNOWN_CLIENT",
    "PAIR_LIMIT",
    "UNKNOWN_CLIENT",
    "Limit",
    "LimitScope",
    "client_key",
]

LimitScope = Literal["client", "account", "pair"]
#: The order rows are locked in (the same for every transaction, so two never wait on each other).
_SCOPES: Final[tuple[LimitScope, ...]] = ("client", "account", "pair")


@dataclass(frozen=True)
class Limit:
    """At most ``attempts`` sign-in attempts within ``window``; one more is refused and starts a
    lock of ``lock``."""

    attempts: int
    window: timedelta
    lock: timedelta


PAIR_LIMIT: Final = Limit(5, timedelta(minutes=15), timedelta(minutes=1))
CLIENT_LIMIT: Final = Limit(20, timedelta(minutes=15), timedelta(minutes=15))
ACCOUNT_LIMIT: Final = Limit(50, timedelta(minutes=15), timedelta(minutes=15))
LIMITS: Final[dict[LimitScope, Limit]] = {
    "pair": PAIR_LIMIT,
    "client": CLIENT_LIMIT,
    "account": ACCOUNT_LIMIT,
}
#: An address that signed in to a name this recently may still try it while the name is guarded.
KNOWN_CLIENT: Final = timedelta(days=90)
#: Quiet rows older than this are deleted (a pair's success is kept for :data:`KNOWN_CLIENT`).
PRUNE_AFTER: Final = timedelta(days=1)
#: The client address of a sign-in that did not say where it came from.
UNKNOWN_CLIENT: Final = "unknown"
MAX_CLIENT_LENGTH: Final = 100

REFUSALS: Final[dict[LimitScope, str]] = {
    "pair": "Too many failed sign-ins for this name from your address: it is locked for a minute "
    "there. Wait, then try again.",
    "client": "Too many failed sign-ins from your address. Wait a quarter of an hour, then try "
    "again.",
    "account": "This name has had too many failed sign-ins from many addresses, so for now it "
    "accepts sign-ins only from addresses it was used from before. Wait a quarter of an hour, or "
    "ask an admin.",
}

Record = Callable[..., None]


def client_key(client: object) -> str:
    """The address a limit is kept for: trimmed, lower case, at most 100 characters.

    >>> client_key(" 2001:DB8::1 "), client_key(None)
    ('2001:db8::1', 'unknown')
    """
    text = str(client or "").strip().lower()[:MAX_CLIENT_LENGTH]
    return text or UNKNOWN_CLIENT


@dataclass
class Attempt:
    """The three rows of one sign-in attempt, held locked by the transaction that loaded them."""

    rows: dict[LimitScope, SignInLimit]
    account: str
    client: str

    def known(self, now: datetime) -> bool:
        """Whether the address signed in to the name within :data:`KNOWN_CLIENT` before ``now``."""
        last = self.rows["pair"].last_success_at
        return last is not None and last > now - KNOWN_CLIENT


def _key(scope: LimitScope, account: str, client: str) -> tuple[str, str]:
    if scope == "client":
        return "", client
    if scope == "account":
        return account, ""
    return account, client


def load(
    session: Session,
    insert: Callable[[Any], Any],
    account: str,
    client: str,
    now: datetime,
    record: Record,
) -> Attempt:
    """Create or lock the attempt's three rows, and bring each up to ``now``: a window that has
    passed starts again, and a lock that has ended is summed up in the audit log."""
    rows: dict[LimitScope, SignInLimit] = {}
    for scope in _SCOPES:
        who, where = _key(scope, account, client)
        stmt = insert(table_of(SignInLimit)).values(
            scope=scope,
            account=who,
            client=where,
            attempts=0,
            window_start=now,
            refused=0,
            updated_at=now,
            created_at=now,
        )
        # DO UPDATE (not NOTHING) so that PostgreSQL returns the id and locks the row
        stmt = stmt.on_conflict_do_update(
            index_elements=["scope", "account", "client"], set_={"scope": stmt.excluded.scope}
        ).returning(table_of(SignInLimit).c.id)
        ident = session.connection().execute(stmt).scalar_one()
        row = session.get(SignInLimit, ident, with_for_update=True, populate_existing=True)
        assert row is not None
        _bring_up_to(row, now, record)
        row.updated_at = max(row.updated_at, now)
        rows[scope] = row
    return Attempt(rows, account, client)


def _bring_up_to(row: SignInLimit, now: datetime, record: Record) -> None:
    limit = LIMITS[row.scope]  # type: ignore[index]
    if row.locked_until is not None:
        if row.locked_until > now:
            return
        end_lock(row, now, record, reason="expired")
    if row.window_start + limit.window <= now:
        row.attempts, row.window_start = 0, now


def end_lock(row: SignInLimit, now: datetime, record: Record, *, reason: str) -> None:
    """Lift the row's lock (if any) and record how many attempts it refused; the count starts
    again."""
    if row.locked_until is not None:
        record(
            "sign_in_lock_ended",
            target=row.account or None,
            detail={
                "scope": row.scope,
                "client": row.client or None,
                "refused": int(row.refused),
                "locked_at": row.locked_at,
                "reason": reason,
            },
            at=now,
        )
    row.locked_at = row.locked_until = None
    row.refused = 0
    row.attempts, row.window_start = 0, now


def _locked(row: SignInLimit, now: datetime) -> bool:
    return row.locked_until is not None and row.locked_until > now


def _lock(row: SignInLimit, now: datetime, record: Record, *, why: str) -> None:
    if _locked(row, now):
        return
    limit = LIMITS[row.scope]  # type: ignore[index]
    row.locked_at, row.locked_until, row.refused = now, now + limit.lock, 0
    record(
        "sign_in_locked",
        target=row.account or None,
        detail={
            "scope": row.scope,
            "client": row.client or None,
            "attempts": int(row.attempts),
            "until": row.locked_until,
            "why": why,
        },
        at=now,
    )


def admit(attempt: Attempt, now: datetime, record: Record) -> LimitScope | None:
    """Let the attempt through (counting it on every row) or name the scope that refuses it.

    A refusal adds to the refusing row's count of refused attempts and, when the row was not yet
    locked (its count was full of attempts still being checked), starts its lock.
    """
    rows = attempt.rows
    for scope in _SCOPES:
        row = rows[scope]
        if scope == "account" and attempt.known(now):
            continue
        if _locked(row, now) or row.attempts >= LIMITS[scope].attempts:
            _lock(row, now, record, why="refused")
            row.refused += 1
            return scope
    for row in rows.values():
        row.attempts += 1
    return None


def after_failure(attempt: Attempt, now: datetime, record: Record) -> LimitScope | None:
    """A checked password was wrong: the attempt stays counted, and a row it filled is locked.
    Returns the scope that is locked for this attempt's address now, if any."""
    locked: LimitScope | None = None
    for scope in _SCOPES:
        row = attempt.rows[scope]
        if row.attempts >= LIMITS[scope].attempts:
            _lock(row, now, record, why="failures")
            if locked is None and not (scope == "account" and attempt.known(now)):
                locked = scope
    return locked


def after_success(attempt: Attempt, now: datetime, record: Record) -> None:
    """The password was right: the pair starts again and knows the address; the address and the
    name give back the attempt they counted."""
    pair = attempt.rows["pair"]
    end_lock(pair, now, record, reason="signed_in")
    pair.last_success_at = now
    for scope in ("client", "account"):
        row = attempt.rows[scope]  # type: ignore[index]
        row.attempts = max(0, row.attempts - 1)


def clear(session: Session, account: str, now: datetime, record: Record) -> int:
    """Lift every lock and count of a name (a password reset, an admin's unlock); returns how
    many rows were cleared. What each lock refused is recorded first."""
    rows = list(
        session.scalars(
            select(SignInLimit)
            .where(SignInLimit.account == account, SignInLimit.scope.in_(("pair", "account")))
            .with_for_update()
        )
    )
    for row in rows:
        end_lock(row, now, record, reason="cleared")
        row.updated_at = now
    return len(rows)


def clear_client(session: Session, client: str, now: datetime, record: Record) -> int:
    """Lift every lock and count of a client address (its own row and its pairs)."""
    rows = list(
        session.scalars(
            select(SignInLimit)
            .where(SignInLimit.client == client, SignInLimit.scope.in_(("pair", "client")))
            .with_for_update()
        )
    )
    for row in rows:
        end_lock(row, now, record, reason="cleared")
        row.updated_at = now
    return len(rows)


def prune(session: Session, now: datetime, record: Record) -> int:
    """Delete rows that have been quiet for :data:`PRUNE_AFTER` and keep no recent success;
    returns how many. A lock's refused count is recorded before its row goes."""
    stale = (
        SignInLimit.updated_at < now - PRUNE_AFTER,
        or_(
            SignInLimit.last_success_at.is_(None),
            SignInLimit.last_success_at < now - KNOWN_CLIENT,
        ),
        or_(SignInLimit.locked_until.is_(None), SignInLimit.locked_until <= now),
    )
    for row in session.scalars(select(SignInLimit).where(*stale, SignInLimit.refused > 0)):
        end_lock(row, now, record, reason="pruned")
    result = session.execute(delete(SignInLimit).where(*stale))
    return int(getattr(result, "rowcount", 0) or 0)


def remaining(row: SignInLimit, now: datetime) -> timedelta:
    """How long the row stays locked after ``now`` (zero when it is not locked)."""
    if row.locked_until is None or row.locked_until <= now:
        return timedelta(0)
    return row.locked_until - now


def detail(attempt: Attempt, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The audit detail of an attempt: its client address, and ``extra``."""
    return {"client": attempt.client, **dict(extra or {})}
