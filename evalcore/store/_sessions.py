"""Signed-in sessions, held on the server.

A sign-in opens a session: a random token that the browser keeps (the dashboard keeps it in an
``HttpOnly`` cookie) and of which the database keeps only the SHA-256. Every call the dashboard makes
on someone's behalf presents the token, and :meth:`SessionsMixin.session_actor` answers with the
user as the database has them at that moment, or refuses:

- the session was ended (signed out, or ended by an admin);
- it was idle longer than the idle limit (it is ended then, with that reason);
- the account was disabled or removed;
- the password changed since the session began (each session keeps a fingerprint of the password
  hash it was opened under, so a reset by any path ends every older session).

A role or membership change needs no ending: the actor is rebuilt from the database on every call.
Ended sessions are kept for a week (so a stale tab is told why), then deleted.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final, Literal

from sqlalchemy import ForeignKey, Integer, String, delete, select, update
from sqlalchemy.orm import Mapped, mapped_column

from evalcore.errors import SessionEndedError
from evalcore.store._access import Actor
from evalcore.store._base import StoreBase
from evalcore.store._models import Base, User, UTCDateTime, _created_at, utcnow

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

__all__ = ["SESSION_END_REASONS", "SessionEndReason", "SessionsMixin", "UserSession"]

SessionEndReason = Literal["signed_out", "idle", "disabled", "password_changed", "removed"]

#: What a refused session's holder is told, by why it ended.
SESSION_END_REASONS: Final[dict[str, str]] = {
    "signed_out": "You signed out. Sign in again to go on.",
    "idle": "You were signed out after a time without activity. Sign in again to go on.",
    "disabled": "Your account was disabled. Ask an admin if this is a mistake.",
    "password_changed": "Your password was changed, so every session of yours ended. Sign in again.",
    "removed": "This account no longer exists.",
    "unknown": "Your session is not known to this server (it may have been restarted with another "
    "database). Sign in again.",
}

#: How long an ended session is kept so that its holder is told why, before it is deleted.
KEEP_ENDED: Final = timedelta(days=7)
#: A session's last activity is written at most this often (and at least ten times per idle limit).
TOUCH_EVERY_S: Final = 15.0
#: Bytes of randomness in a token (URL-safe base64, so 43 characters).
TOKEN_BYTES: Final = 32


class UserSession(Base):
    """One signed-in session: the token's hash, whose it is, and when it was last used."""

    __tablename__ = "user_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    method: Mapped[str] = mapped_column(String(16))
    credential: Mapped[str] = mapped_column(String(32))
    client: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = _created_at()
    last_active_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    end_reason: Mapped[str | None] = mapped_column(String(32))


def token_hash(token: str) -> str:
    """What the database keeps of a token: its SHA-256, in hex."""
    return hashlib.sha256(str(token).encode("utf-8", "surrogatepass")).hexdigest()


def credential_of(password_hash: str | None) -> str:
    """A fingerprint of the password hash a session was opened under (never the hash itself)."""
    return hashlib.sha256(f"evalcore-session:{password_hash or ''}".encode()).hexdigest()[:32]


class SessionsMixin(StoreBase):
    """Open, check and end signed-in sessions (see the module)."""

    if TYPE_CHECKING:

        def _actor(self, session: Session, user: User) -> Actor: ...  # UsersMixin's

    def open_session(
        self, name: str, *, method: str = "password", client: str | None = None
    ) -> str:
        """Open a session for the user ``name`` (already signed in by ``sign_in`` or
        ``oidc_sign_in``) and return its token. Only the token's hash is stored."""
        token = secrets.token_urlsafe(TOKEN_BYTES)
        now = utcnow()
        with self._write() as s:
            user = s.scalars(select(User).where(User.name == str(name).strip())).one_or_none()
            if user is None or user.disabled:
                raise SessionEndedError(
                    SESSION_END_REASONS["removed" if user is None else "disabled"]
                )
            s.execute(
                delete(UserSession).where(
                    UserSession.ended_at.is_not(None), UserSession.ended_at < now - KEEP_ENDED
                )
            )
            s.add(
                UserSession(
                    token_hash=token_hash(token),
                    user_id=user.id,
                    method=str(method)[:16],
                    credential=credential_of(user.password_hash),
                    client=None if client is None else str(client)[:200],
                    created_at=now,
                    last_active_at=now,
                )
            )
        return token

    def session_actor(self, token: str, *, idle_s: float, now: datetime | None = None) -> Actor:
        """The user of session ``token`` as the database has them now, or
        :class:`~evalcore.errors.SessionEndedError` saying why the session is over (module notes).
        A session idle for more than ``idle_s`` seconds is ended here. Using a session counts as
        activity (written at most every :data:`TOUCH_EVERY_S` seconds)."""
        now = now or utcnow()
        digest = token_hash(token)
        with self._read() as s:
            row = s.scalars(select(UserSession).where(UserSession.token_hash == digest)).first()
            if row is None:
                raise SessionEndedError(SESSION_END_REASONS["unknown"])
            if row.ended_at is not None:
                raise SessionEndedError(
                    SESSION_END_REASONS.get(row.end_reason or "", "Sign in again.")
                )
            user = s.get(User, row.user_id)
            reason: str | None = None
            if user is None:
                reason = "removed"
            elif user.disabled:
                reason = "disabled"
            elif credential_of(user.password_hash) != row.credential:
                reason = "password_changed"
            elif (now - row.last_active_at).total_seconds() > idle_s:
                reason = "idle"
            touch = (now - row.last_active_at).total_seconds() >= min(TOUCH_EVERY_S, idle_s / 10)
            actor = None if reason is not None or user is None else self._actor(s, user)
        if reason is not None:
            self._end(digest, reason, now)
            raise SessionEndedError(SESSION_END_REASONS[reason])
        if touch:
            with self._write() as s:
                s.execute(
                    update(UserSession)
                    .where(UserSession.token_hash == digest, UserSession.ended_at.is_(None))
                    .values(last_active_at=now)
                )
        assert actor is not None
        return actor

    def _end(self, digest: str, reason: str, now: datetime) -> None:
        with self._write() as s:
            s.execute(
                update(UserSession)
                .where(UserSession.token_hash == digest, UserSession.ended_at.is_(None))
                .values(ended_at=now, end_reason=reason)
            )

    def end_session(self, token: str, *, reason: SessionEndReason = "signed_out") -> None:
        """End the session ``token`` (signing out); an unknown or ended token is left as it is."""
        self._end(token_hash(token), reason, utcnow())

    def end_user_sessions(self, name: str, *, reason: SessionEndReason = "signed_out") -> int:
        """End every open session of user ``name``; returns how many were open."""
        now = utcnow()
        with self._write() as s:
            user_id = s.scalar(select(User.id).where(User.name == str(name).strip()))
            if user_id is None:
                return 0
            result = s.execute(
                update(UserSession)
                .where(UserSession.user_id == user_id, UserSession.ended_at.is_(None))
                .values(ended_at=now, end_reason=reason)
            )
            return int(result.rowcount or 0)  # type: ignore[attr-defined]
