"""Accounts, sign-in, project memberships, the audit log and server-wide settings.

- A local account has an Argon2id password hash (``argon2-cffi``'s defaults); an OIDC account is made
  on its first sign-in from the server setting ``"oidc_rules"`` and has no password.
- A user's ``role`` is their role in every project they belong to; each membership carries the role
  for one project, so ``set_role(name, role)`` changes the user and all their memberships and
  ``set_role(name, role, project_id=…)`` one membership. ``"admin"`` administers the whole server
  and every project without memberships.
- ``sign_in`` gives one message for a wrong name and a wrong password, and takes as long for both
  (an unknown name is checked against a dummy hash). After :data:`LOCK_AFTER_FAILURES` failures
  within :data:`FAILURE_WINDOW`, the name is locked for :data:`LOCK_DURATION`, whether or not it
  exists. The count is read from the audit log (``sign_in_failed`` rows since the last success or
  password reset), so every process of a server sees the same count.
- Every change is written to the audit log in the same transaction; the log holds names, roles and
  reasons, never a password or a hash.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any, Final

import pandas as pd
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from evalcore.errors import (
    ConfigError,
    NotFoundError,
    PermissionDeniedError,
    SignInError,
    StoreError,
)
from evalcore.store._access import ROLES, Actor, Role
from evalcore.store._base import StoreBase, jsonable
from evalcore.store._models import (
    AuditEvent,
    Membership,
    Project,
    ServerSetting,
    User,
    table_of,
    utcnow,
)
from evalcore.store._records import MembershipRecord, UserRecord

__all__ = [
    "AUDIT_COLUMNS",
    "FAILURE_WINDOW",
    "LOCK_AFTER_FAILURES",
    "LOCK_DURATION",
    "MIN_PASSWORD_LENGTH",
    "OIDC_MATCHES",
    "UsersMixin",
    "check_oidc_rules",
]

#: Failed sign-ins on one name, within :data:`FAILURE_WINDOW`, that lock the name.
LOCK_AFTER_FAILURES: Final = 5
#: How long a locked name stays locked.
LOCK_DURATION: Final = timedelta(seconds=60)
#: Failures older than this no longer count towards a lock.
FAILURE_WINDOW: Final = timedelta(minutes=15)
MIN_PASSWORD_LENGTH: Final = 8
#: Longer passwords are refused without hashing them (a bound on the work one request causes).
MAX_PASSWORD_LENGTH: Final = 1024
MAX_NAME_LENGTH: Final = 200
AUDIT_COLUMNS: Final = ("at", "actor", "action", "target", "project_id", "detail")

WRONG_CREDENTIALS: Final = "The name or password is not right."
LOCKED: Final = "Too many failed sign-ins: this name is locked for a minute. Wait, then try again."

_SOURCES = ("local", "oidc")
#: What an OIDC rule can match: an e-mail address, a domain, or a group claim.
OIDC_MATCHES: Final = ("email", "domain", "group")
_OIDC_KEYS = frozenset({"match", "value", "role", "project"})
#: Audit actions that end a run of failed sign-ins on a name.
_CLEARS_FAILURES = ("sign_in", "password_reset")

_OIDC_REFUSALS: Final = {
    "name_taken": "The account name {account!r} belongs to someone else.",
    "disabled": "This account is disabled. Ask an admin to enable it.",
}

_HASHER = PasswordHasher()


@cache
def _dummy_hash() -> str:
    """A hash to verify against when the name is unknown, so that both cases cost the same."""
    return _HASHER.hash("evalcore: no such account")


def _verify(password_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches ``password_hash``; with no hash, spend the same time and fail."""
    try:
        return _HASHER.verify(password_hash or _dummy_hash(), password) and bool(password_hash)
    except (VerificationError, InvalidHashError):
        return False


def _new_hash(password: str | None) -> str:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_LENGTH:
        raise ConfigError(f"A password needs at least {MIN_PASSWORD_LENGTH} characters.")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise ConfigError(f"A password may have at most {MAX_PASSWORD_LENGTH} characters.")
    return _HASHER.hash(password)


def _user_name(name: object) -> str:
    cleaned = str(name or "").strip()
    if not cleaned:
        raise ConfigError("A user needs a name.")
    if len(cleaned) > MAX_NAME_LENGTH:
        raise ConfigError(f"A user name may have at most {MAX_NAME_LENGTH} characters.")
    return cleaned


def _role(role: object) -> Role:
    if role not in ROLES:
        raise ConfigError(f"A role is one of {', '.join(ROLES)}, not {role!r}.")
    return role  # type: ignore[return-value]


def _email(email: object) -> str | None:
    if email is None:
        return None
    cleaned = str(email).strip().lower()
    if not cleaned:
        return None
    if "@" not in cleaned or len(cleaned) > 320:
        raise ConfigError(f"{email!r} is not an e-mail address.")
    return cleaned


def _best(roles: Iterable[Role]) -> Role | None:
    """The most privileged of ``roles`` (None when there are none)."""
    return min(roles, key=ROLES.index, default=None)


def _lock_state(events: Iterable[tuple[datetime, str]]) -> tuple[int, datetime | None]:
    """Replay a name's sign-in events, oldest first: (failures counting now, locked until).

    A success or a password reset starts the count again; the failure that reaches
    :data:`LOCK_AFTER_FAILURES` locks the name, and attempts during a lock neither count nor
    extend it.

    >>> from datetime import UTC
    >>> t = datetime(2026, 1, 1, tzinfo=UTC)
    >>> _lock_state([(t, "sign_in_failed")] * 5)[1] == t + LOCK_DURATION
    True
    """
    count, until = 0, None
    for at, action in events:
        if action in _CLEARS_FAILURES:
            count, until = 0, None
        elif until is None or at >= until:
            count, until = count + 1, None
            if count >= LOCK_AFTER_FAILURES:
                count, until = 0, at + LOCK_DURATION
    return count, until


def check_oidc_rules(rules: object) -> list[dict[str, Any]]:
    """The OIDC rules, checked and normalised; :class:`ConfigError` names the first bad one.

    Each rule is ``{"match": "email" | "domain" | "group", "value": str, "role": role,
    "project": project name or None}``. E-mail addresses and domains are kept in lower case (they
    match case-insensitively); a domain loses a leading ``@``.

    >>> check_oidc_rules([{"match": "domain", "value": "@Example.org", "role": "viewer"}])
    [{'match': 'domain', 'value': 'example.org', 'role': 'viewer', 'project': None}]
    """
    if rules is None:
        return []
    if not isinstance(rules, Sequence) or isinstance(rules, str | bytes):
        raise ConfigError("The OIDC rules are a list of rules.")
    clean: list[dict[str, Any]] = []
    for number, rule in enumerate(rules, start=1):
        where = f"OIDC rule {number}"
        if not isinstance(rule, Mapping):
            raise ConfigError(f"{where} is not a table of match, value, role and project.")
        unknown = sorted(set(map(str, rule)) - _OIDC_KEYS)
        if unknown:
            raise ConfigError(f"{where} has unknown keys: {', '.join(unknown)}.")
        match = rule.get("match")
        if match not in OIDC_MATCHES:
            raise ConfigError(f"{where}: match is one of {', '.join(OIDC_MATCHES)}, not {match!r}.")
        value = str(rule.get("value") or "").strip()
        if match != "group":
            value = value.lower().removeprefix("@") if match == "domain" else value.lower()
        if not value:
            raise ConfigError(f"{where} needs a value to match.")
        role = rule.get("role")
        if role not in ROLES:
            raise ConfigError(f"{where}: the role is one of {', '.join(ROLES)}, not {role!r}.")
        project = rule.get("project")
        if project is not None:
            project = str(project).strip() or None
        clean.append({"match": match, "value": value, "role": role, "project": project})
    return clean


def _oidc_matches(rule: Mapping[str, Any], email: str, groups: frozenset[str]) -> bool:
    if rule["match"] == "email":
        return bool(rule["value"] == email)
    if rule["match"] == "domain":
        return bool(email.rpartition("@")[2] == rule["value"])
    return rule["value"] in groups


class UsersMixin(StoreBase):
    if TYPE_CHECKING:

        @property
        def acting(self) -> Actor | None: ...

    # --- the audit log ------------------------------------------------------------------------

    def _acting_name(self) -> str:
        return self.acting.name if self.acting is not None else "system"

    def _record(
        self,
        session: Session,
        action: str,
        *,
        target: str | None = None,
        project_id: int | None = None,
        detail: Mapping[str, Any] | None = None,
        actor: str | None = None,
        at: datetime | None = None,
    ) -> None:
        """Add an audit row to the session's transaction."""
        session.add(
            AuditEvent(
                actor=(actor if actor is not None else self._acting_name())[:MAX_NAME_LENGTH],
                action=action,
                target=None if target is None else str(target)[:500],
                project_id=project_id,
                detail=jsonable(dict(detail or {})),
                created_at=at or utcnow(),
            )
        )

    def audit(
        self,
        action: str,
        *,
        target: str | None = None,
        project_id: int | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        """Record that the acting user (or ``"system"``) did ``action`` to ``target``.

        ``detail`` is a small JSON table of facts (names, counts, reasons); never put a secret in it.
        """
        action = str(action or "").strip()
        if not action or len(action) > 64:
            raise ConfigError("An audit action is a name of 1 to 64 characters.")
        with self._write() as s:
            self._record(s, action, target=target, project_id=project_id, detail=detail)

    def audit_log(self, *, limit: int = 500, action: str | None = None) -> pd.DataFrame:
        """The newest ``limit`` audit rows (only ``action`` ones when given), newest first, with
        the columns :data:`AUDIT_COLUMNS`."""
        query = select(AuditEvent).order_by(AuditEvent.created_at.desc(), AuditEvent.id.desc())
        if action is not None:
            query = query.where(AuditEvent.action == action)
        with self._read() as s:
            rows = [
                (r.created_at, r.actor, r.action, r.target, r.project_id, r.detail or {})
                for r in s.scalars(query.limit(max(0, int(limit))))
            ]
        frame = pd.DataFrame(rows, columns=list(AUDIT_COLUMNS))
        frame["project_id"] = frame["project_id"].astype("Int64")
        return frame

    # --- server settings ----------------------------------------------------------------------

    def get_server_setting(self, key: str, default: Any = None) -> Any:
        """The value of server setting ``key`` (JSON), or ``default`` when it was never set."""
        with self._read() as s:
            row = s.get(ServerSetting, str(key))
            return default if row is None else row.value

    def set_server_setting(self, key: str, value: Any) -> None:
        """Set server setting ``key`` to the JSON ``value`` (``"oidc_rules"`` is checked first).

        The audit log records the key and who changed it, not the value.
        """
        key = str(key or "").strip()
        if not key or len(key) > 100:
            raise ConfigError("A server setting's key is a name of 1 to 100 characters.")
        if key == "oidc_rules":
            value = check_oidc_rules(value)
        try:
            value = json.loads(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"Server setting {key!r} must be plain JSON: {exc}") from exc
        now = utcnow()
        values = {"key": key, "value": value, "updated_by": self._acting_name(), "updated_at": now}
        stmt = self._insert(table_of(ServerSetting)).values(**values, created_at=now)
        stmt = stmt.on_conflict_do_update(
            index_elements=["key"],
            set_={
                "value": stmt.excluded.value,
                "updated_by": stmt.excluded.updated_by,
                "updated_at": stmt.excluded.updated_at,
            },
        )
        with self._write() as s:
            s.connection().execute(stmt)
            self._record(s, "setting_changed", target=key)

    def set_oidc_rules(self, rules: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Check and store the OIDC rules (see :func:`check_oidc_rules`); returns them as stored."""
        clean = check_oidc_rules(rules)
        self.set_server_setting("oidc_rules", clean)
        return clean

    # --- users --------------------------------------------------------------------------------

    def _user_row(self, session: Session, name: str) -> User:
        row = session.scalars(select(User).where(User.name == str(name).strip())).one_or_none()
        if row is None:
            raise NotFoundError(f"There is no user named {name!r}.")
        return row

    def _memberships(
        self,
        session: Session,
        *,
        project_id: int | None = None,
        user_ids: Sequence[int] | None = None,
    ) -> list[MembershipRecord]:
        query = (
            select(
                Membership.project_id, Project.name, Membership.user_id, User.name, Membership.role
            )
            .join(Project, Project.id == Membership.project_id)
            .join(User, User.id == Membership.user_id)
            .order_by(Project.name, User.name)
        )
        if project_id is not None:
            query = query.where(Membership.project_id == int(project_id))
        if user_ids is not None:
            query = query.where(Membership.user_id.in_(list(user_ids)))
        return [MembershipRecord(*row) for row in session.execute(query)]

    def _user_records(self, session: Session, rows: Sequence[User]) -> list[UserRecord]:
        by_user: dict[int, list[MembershipRecord]] = {}
        if rows:
            ids = [r.id for r in rows] if len(rows) < 500 else None
            for m in self._memberships(session, user_ids=ids):
                by_user.setdefault(m.user_id, []).append(m)
        return [
            UserRecord(
                id=r.id,
                name=r.name,
                role=r.role,
                email=r.email,
                source=r.source,
                disabled=bool(r.disabled),
                has_password=bool(r.password_hash),
                locked_until=r.locked_until,
                last_sign_in_at=r.last_sign_in_at,
                created_at=r.created_at,
                memberships=tuple(by_user.get(r.id, ())),
            )
            for r in rows
        ]

    def _project_ids(self, session: Session, projects: Iterable[int | str]) -> list[int]:
        """Database ids of projects given by id or by name; an unknown one is an error."""
        found: list[int] = []
        for project in projects:
            if isinstance(project, int) and not isinstance(project, bool):
                pid = session.scalar(select(Project.id).where(Project.id == project))
            else:
                pid = session.scalar(select(Project.id).where(Project.name == str(project).strip()))
            if pid is None:
                raise NotFoundError(f"There is no project {project!r}.")
            if pid not in found:
                found.append(int(pid))
        return found

    def _set_membership(
        self, session: Session, user: User, project_id: int, role: Role | None
    ) -> Role | None:
        """Give ``user`` ``role`` in the project (None: remove them); returns the old role."""
        row = session.scalars(
            select(Membership).where(
                Membership.user_id == user.id, Membership.project_id == project_id
            )
        ).one_or_none()
        old = None if row is None else _role(row.role)
        if role is None:
            if row is not None:
                session.delete(row)
        elif row is None:
            session.add(Membership(project_id=project_id, user_id=user.id, role=role))
        else:
            row.role = role
        session.flush()
        return old

    def add_user(
        self,
        name: str,
        *,
        role: Role,
        password: str | None = None,
        email: str | None = None,
        source: str = "local",
        projects: Iterable[int | str] | None = None,
    ) -> UserRecord:
        """Create an account; its name (trimmed, at most 200 characters) must be new.

        ``password`` (at least :data:`MIN_PASSWORD_LENGTH` characters) is stored as an Argon2id
        hash; an account without one signs in through OIDC only. ``projects`` (ids or names) are
        the projects the user joins with ``role``; None means every existing project, except for
        an admin, who needs no memberships.
        """
        name, role, email = _user_name(name), _role(role), _email(email)
        if source not in _SOURCES:
            raise ConfigError(f"An account's source is 'local' or 'oidc', not {source!r}.")
        password_hash = None if password is None else _new_hash(password)
        message = f"A user named {name!r} already exists."
        try:
            with self._write() as s:
                row = self._new_user(s, name, role=role, email=email, source=source)
                row.password_hash = password_hash
                if projects is not None:
                    project_ids = self._project_ids(s, projects)
                elif role == "admin":
                    project_ids = []
                else:
                    project_ids = list(s.scalars(select(Project.id).order_by(Project.id)))
                for pid in project_ids:
                    s.add(Membership(project_id=pid, user_id=row.id, role=role))
                s.flush()
                record = self._user_records(s, [row])[0]
                self._record(
                    s,
                    "user_added",
                    target=name,
                    detail={
                        "role": role,
                        "source": source,
                        "projects": [m.project_name for m in record.memberships],
                    },
                )
                return record
        except IntegrityError as exc:
            raise StoreError(message) from exc

    def _new_user(
        self, session: Session, name: str, *, role: Role, email: str | None, source: str
    ) -> User:
        if session.scalar(select(User.id).where(User.name == name)) is not None:
            raise StoreError(f"A user named {name!r} already exists.")
        if email is not None and session.scalar(select(User.id).where(User.email == email)):
            raise StoreError(f"Another user already has the address {email!r}.")
        row = User(
            name=name, role=role, email=email, source=source, disabled=False, failed_attempts=0
        )
        session.add(row)
        session.flush()
        return row

    def list_users(self) -> list[UserRecord]:
        """Every account, by name, with its memberships."""
        with self._read() as s:
            return self._user_records(s, list(s.scalars(select(User).order_by(User.name))))

    def get_user(self, name: str) -> UserRecord:
        """The account called ``name``; :class:`NotFoundError` when there is none."""
        with self._read() as s:
            return self._user_records(s, [self._user_row(s, name)])[0]

    def count_users(self) -> int:
        """How many accounts exist (0: the server may run in single-user mode)."""
        with self._read() as s:
            return int(s.scalar(select(func.count()).select_from(User)) or 0)

    def set_role(self, name: str, role: Role, *, project_id: int | None = None) -> None:
        """Set a user's role: everywhere (the user's role and each membership), or, with
        ``project_id``, in that project only (joining it when they were not a member)."""
        role = _role(role)
        with self._write() as s:
            user = self._user_row(s, name)
            if project_id is not None:
                pid = self._project_ids(s, [int(project_id)])[0]
                old = self._set_membership(s, user, pid, role)
            else:
                old = _role(user.role)
                if old == "admin" and role != "admin":
                    self._keep_an_admin(s, user)
                user.role = role
                for m in s.scalars(select(Membership).where(Membership.user_id == user.id)):
                    m.role = role
                s.flush()
                pid = None
            self._record(
                s,
                "role_changed",
                target=user.name,
                project_id=pid,
                detail={"from": old, "to": role},
            )

    def set_membership(self, name: str, project_id: int, role: Role | None) -> None:
        """Make a user a member of a project with ``role``, or remove them with None."""
        role = None if role is None else _role(role)
        with self._write() as s:
            user = self._user_row(s, name)
            pid = self._project_ids(s, [int(project_id)])[0]
            old = self._set_membership(s, user, pid, role)
            if old != role:
                self._record(
                    s,
                    "membership_changed",
                    target=user.name,
                    project_id=pid,
                    detail={"from": old, "to": role},
                )

    def list_memberships(
        self, *, project_id: int | None = None, user_name: str | None = None
    ) -> list[MembershipRecord]:
        """Memberships by project and user name, of one project and/or one user.

        An actor who is not a server admin sees only those of a project they administer.
        """
        acting = self.acting
        if not (acting is None or acting.is_admin) and (
            project_id is None or not acting.can("admin", int(project_id))
        ):
            raise PermissionDeniedError(
                "You may not do this: only an admin of the project may list its members."
            )
        with self._read() as s:
            ids = None if user_name is None else [self._user_row(s, user_name).id]
            return self._memberships(s, project_id=project_id, user_ids=ids)

    def _keep_an_admin(self, session: Session, user: User) -> None:
        """Refuse to demote or disable the last enabled admin (nobody could manage users)."""
        others = session.scalar(
            select(func.count())
            .select_from(User)
            .where(User.role == "admin", User.disabled.is_(False), User.id != user.id)
        )
        if not others:
            raise StoreError(f"{user.name} is the last admin: make another user an admin first.")

    def disable_user(self, name: str, disabled: bool = True) -> None:
        """Disable an account (it can no longer sign in), or enable it again with False."""
        with self._write() as s:
            user = self._user_row(s, name)
            if bool(user.disabled) != bool(disabled):
                if disabled and user.role == "admin":
                    self._keep_an_admin(s, user)
                user.disabled = bool(disabled)
                self._record(
                    s, "user_disabled", target=user.name, detail={"disabled": bool(disabled)}
                )

    def reset_password(self, name: str, password: str) -> None:
        """Give a user a new password; this also lifts a lock from failed sign-ins."""
        password_hash = _new_hash(password)
        with self._write() as s:
            user = self._user_row(s, name)
            user.password_hash = password_hash
            user.failed_attempts, user.locked_until = 0, None
            self._record(s, "password_reset", target=user.name)

    # --- signing in ---------------------------------------------------------------------------

    def _actor(self, session: Session, user: User) -> Actor:
        rows = session.execute(
            select(Membership.project_id, Membership.role).where(Membership.user_id == user.id)
        )
        return Actor(
            name=user.name,
            role=_role(user.role),
            memberships={int(pid): _role(role) for pid, role in rows},
            user_id=user.id,
        )

    def _sign_in_events(
        self, session: Session, name: str, now: datetime
    ) -> tuple[int, datetime | None]:
        query = (
            select(AuditEvent.created_at, AuditEvent.action)
            .where(
                AuditEvent.action.in_(("sign_in_failed", *_CLEARS_FAILURES)),
                AuditEvent.target == name,
                AuditEvent.created_at >= now - FAILURE_WINDOW,
                AuditEvent.created_at <= now,
            )
            .order_by(AuditEvent.created_at, AuditEvent.id)
        )
        return _lock_state((at, action) for at, action in session.execute(query))

    def sign_in(self, name: str, password: str, *, now: datetime | None = None) -> Actor:
        """The actor for ``name`` when ``password`` is theirs; :class:`SignInError` otherwise.

        A wrong name, a wrong password and a disabled account give the same message. A name with
        too many recent failures is locked for a minute (see the module's notes). ``now`` stands
        in for the current time in tests.
        """
        now = now or utcnow()
        typed = str(name or "").strip()[:MAX_NAME_LENGTH]
        password = password if isinstance(password, str) else ""
        with self._read() as s:
            _, locked_until = self._sign_in_events(s, typed, now)
            user = s.scalars(select(User).where(User.name == typed)).one_or_none()
            stored = None if user is None else user.password_hash
        if locked_until is not None and locked_until > now:
            with self._write() as s:
                self._record(
                    s,
                    "sign_in_failed",
                    target=typed,
                    actor="anonymous",
                    detail={"reason": "locked"},
                    at=now,
                )
            raise SignInError(LOCKED)
        _dummy_hash()  # made on the first sign-in of any name, so no name pays for it alone
        matches = len(password) <= MAX_PASSWORD_LENGTH and _verify(stored, password)
        with self._write() as s:
            row = None if user is None else s.get(User, user.id)
            current = row is not None and stored is not None and stored == row.password_hash
            if row is not None and stored is not None and matches and current and not row.disabled:
                if _HASHER.check_needs_rehash(stored):
                    row.password_hash = _HASHER.hash(password)
                row.failed_attempts, row.locked_until = 0, None
                row.last_sign_in_at = now
                self._record(
                    s,
                    "sign_in",
                    target=row.name,
                    actor=row.name,
                    detail={"method": "password"},
                    at=now,
                )
                return self._actor(s, row)
            reason = "unknown" if row is None else "disabled" if row.disabled else "password"
            self._record(
                s,
                "sign_in_failed",
                target=typed,
                actor="anonymous",
                detail={"reason": reason},
                at=now,
            )
            s.flush()
            count, locked_until = self._sign_in_events(s, typed, now)
            if row is not None:
                row.failed_attempts, row.locked_until = count, locked_until
        raise SignInError(LOCKED if locked_until is not None else WRONG_CREDENTIALS)

    def actor_for(self, name: str) -> Actor:
        """The actor for user ``name`` as the database has them now (role and memberships).

        Raises :class:`SignInError` when the account was disabled or removed. Anyone but a
        server admin may ask only about themselves.
        """
        acting = self.acting
        if acting is not None and not acting.is_admin and acting.name != str(name).strip():
            raise PermissionDeniedError("You may not do this: it is about another user.")
        with self._read() as s:
            user = s.scalars(select(User).where(User.name == str(name).strip())).one_or_none()
            if user is None or user.disabled:
                raise SignInError("This account is no longer active. Sign in again.")
            return self._actor(s, user)

    def oidc_sign_in(
        self,
        email: str,
        *,
        groups: Iterable[str] = (),
        name: str | None = None,
        now: datetime | None = None,
    ) -> Actor:
        """Sign in a user the identity provider vouched for, with the role the OIDC rules give.

        Every matching rule counts and the most privileged role wins: a rule without a project
        gives its role in every project, one with a project in that project. The account (source
        ``"oidc"``, named ``name`` or the address) is created on the first sign-in; its role and
        the memberships the rules cover are brought up to date on every one.
        """
        now = now or utcnow()
        address = _email(email)
        if address is None:
            raise SignInError("The identity provider gave no e-mail address.")
        group_set = frozenset(str(g).strip() for g in groups)
        rules = check_oidc_rules(self.get_server_setting("oidc_rules", []))
        matched = [r for r in rules if _oidc_matches(r, address, group_set)]
        if not matched:
            self._oidc_refused(address, "no_rule", now)
            raise SignInError(
                f"No role is set for {address}: an admin has to give this address a role "
                "before it can sign in."
            )
        everywhere = _best(r["role"] for r in matched if r["project"] is None)
        per_project: dict[str, Role] = {}
        for r in matched:
            if r["project"] is not None:
                held = per_project.get(r["project"], r["role"])
                per_project[r["project"]] = min(held, r["role"], key=ROLES.index)
        # a project rule never makes a server admin: the account's own role is the everywhere
        # role, else the least privileged of its project roles short of admin
        below_admin = [r for r in per_project.values() if r != "admin"] or ["engineer"]
        role: Role = everywhere if everywhere is not None else max(below_admin, key=ROLES.index)
        account = _user_name(name if name is not None else address)
        with self._write() as s:
            user, refused = self._oidc_account(s, address, account)
            if refused is None:
                if user is None:
                    user = self._new_user(s, account, role=role, email=address, source="oidc")
                    self._record(
                        s,
                        "user_added",
                        target=account,
                        actor=account,
                        detail={"role": role, "source": "oidc"},
                        at=now,
                    )
                return self._oidc_update(s, user, address, role, everywhere, per_project, now)
        self._oidc_refused(address, refused, now)
        raise SignInError(_OIDC_REFUSALS[refused].format(account=account))

    def _oidc_account(
        self, session: Session, address: str, account: str
    ) -> tuple[User | None, str | None]:
        """The account of an OIDC address (None: make one), or why it may not sign in (a key of
        :data:`_OIDC_REFUSALS`)."""
        user = session.scalars(select(User).where(User.email == address)).one_or_none()
        if user is None:
            user = session.scalars(select(User).where(User.name == account)).one_or_none()
            if user is not None and user.email not in (None, address):
                return None, "name_taken"
        if user is not None and user.disabled:
            return None, "disabled"
        return user, None

    def _oidc_refused(self, address: str, reason: str, now: datetime) -> None:
        with self._write() as s:
            self._record(
                s,
                "sign_in_failed",
                target=address,
                actor="anonymous",
                detail={"method": "oidc", "reason": reason},
                at=now,
            )

    def _oidc_update(
        self,
        s: Session,
        user: User,
        address: str,
        role: Role,
        everywhere: Role | None,
        per_project: Mapping[str, Role],
        now: datetime,
    ) -> Actor:
        """Bring an OIDC user's role and memberships up to what the rules give, and sign in."""
        user.email = address
        if user.role != role:
            self._record(
                s,
                "role_changed",
                target=user.name,
                actor=user.name,
                detail={"from": user.role, "to": role, "by": "oidc"},
                at=now,
            )
            user.role = role
        wanted: dict[int, Role] = {}
        if everywhere is not None and everywhere != "admin":
            wanted = {int(pid): everywhere for pid in s.scalars(select(Project.id))}
        for project_name, project_role in per_project.items():
            pid = s.scalar(select(Project.id).where(Project.name == project_name))
            if pid is not None:
                held = wanted.get(int(pid), project_role)
                wanted[int(pid)] = min(held, project_role, key=ROLES.index)
        for pid, project_role in wanted.items():
            old = self._set_membership(s, user, pid, project_role)
            if old != project_role:
                self._record(
                    s,
                    "membership_changed",
                    target=user.name,
                    project_id=pid,
                    actor=user.name,
                    detail={"from": old, "to": project_role, "by": "oidc"},
                    at=now,
                )
        user.last_sign_in_at = now
        self._record(
            s, "sign_in", target=user.name, actor=user.name, detail={"method": "oidc"}, at=now
        )
        return self._actor(s, user)
