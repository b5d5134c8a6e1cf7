"""Accounts, sign-in, project memberships, the audit log and server-wide settings.

- A local account has an Argon2id password hash; an OIDC account is made on its first sign-in
  from the server setting ``"oidc_rules"`` and has no password. A new password must pass the
  policy of :mod:`evalcore.store._passwords` (at least 12 characters, and not easy to guess by
  zxcvbn's estimate); the refusal says why.
- A user's ``role`` is their role in every project they belong to; each membership carries the role
  for one project, so ``set_role(name, role)`` changes the user and all their memberships and
  ``set_role(name, role, project_id=…)`` one membership. ``"admin"`` administers the whole server
  and every project without memberships. Nothing leaves the server without an enabled admin: a
  demotion, a disabling or an OIDC rule that would do so is refused (or, for a rule, not applied),
  under a lock so that two at once cannot each leave the other as the last.
- ``sign_in`` gives one message for a wrong name and a wrong password, and takes as long for both
  (an unknown name is checked against a dummy hash). Attempts are limited per name and client
  address, per address and per name, in the database and before any hash is computed (see
  :mod:`evalcore.store._limits`): a stranger who guesses locks out only their own address.
- ``oidc_sign_in`` finds the account of an ID token by its issuer and subject, or by an e-mail
  address the provider verified, never by the display name (see :meth:`UsersMixin.oidc_sign_in`).
- Every change is written to the audit log in the same transaction; the log holds names, roles and
  reasons, never a password or a hash.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import pandas as pd
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from evalcore.errors import (
    ConfigError,
    NotFoundError,
    PermissionDeniedError,
    SignInError,
    StoreError,
)
from evalcore.store import _limits
from evalcore.store._access import ROLES, Actor, Role
from evalcore.store._base import LOCK_ADMINS, StoreBase, jsonable
from evalcore.store._models import (
    AuditEvent,
    Membership,
    Project,
    ServerSetting,
    SignInLimit,
    User,
    table_of,
    utcnow,
)
from evalcore.store._oidc import OidcClaims
from evalcore.store._passwords import (
    MIN_PASSWORD_LENGTH,
    _dummy_hash,
    hash_password,
    needs_rehash,
    require_password,
    verify_password,
)
from evalcore.store._records import (
    MembershipRecord,
    ProjectAdmins,
    SignInLockRecord,
    UserRecord,
)

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

#: Failed sign-ins on one name from one client address, within :data:`FAILURE_WINDOW`, that lock
#: that pair (see :mod:`evalcore.store._limits` for the per-address and per-name limits).
LOCK_AFTER_FAILURES: Final = _limits.PAIR_LIMIT.attempts
#: How long a locked (name, address) pair stays locked.
LOCK_DURATION: Final = _limits.PAIR_LIMIT.lock
#: Attempts older than this no longer count towards a lock.
FAILURE_WINDOW: Final = _limits.PAIR_LIMIT.window
MAX_NAME_LENGTH: Final = 200
AUDIT_COLUMNS: Final = ("at", "actor", "action", "target", "project_id", "detail")

WRONG_CREDENTIALS: Final = "The name or password is not right."
LOCKED: Final = _limits.REFUSALS["pair"]

_SOURCES = ("local", "oidc")
#: What an OIDC rule can match: an e-mail address, a domain, or a group claim.
OIDC_MATCHES: Final = ("email", "domain", "group")
_OIDC_KEYS = frozenset({"match", "value", "role", "project"})

_OIDC_REFUSALS: Final = {
    "name_taken": "The account name {account!r} belongs to someone else. Ask an admin to link "
    "your address to your account.",
    "disabled": "This account is disabled. Ask an admin to enable it.",
    "unverified": "Your identity provider has not verified the address {email}, so it cannot be "
    "used to sign in here. Verify it with the provider, or ask an admin.",
    "no_email": "Your identity provider gave no verified e-mail address, and this sign-in is not "
    "linked to an account here. Ask an admin.",
    "bound_elsewhere": "The account of {email} is linked to another single sign-on identity. Ask "
    "an admin.",
    "no_rule": "No role is set for {email}: an admin has to give this address a role before it "
    "can sign in.",
}


def _new_hash(password: object, *, user_inputs: Iterable[str | None] = ()) -> str:
    """The hash of a new password that the policy accepts (:class:`WeakPasswordError` if not)."""
    return hash_password(require_password(password, user_inputs=[u for u in user_inputs if u]))


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


def _oidc_matches(rule: Mapping[str, Any], email: str | None, groups: frozenset[str]) -> bool:
    """Whether a rule admits a sign-in; e-mail and domain rules need a verified address."""
    if rule["match"] == "group":
        return rule["value"] in groups
    if email is None:
        return False
    if rule["match"] == "email":
        return bool(rule["value"] == email)
    return bool(email.rpartition("@")[2] == rule["value"])


def _oidc_roles(matched: Sequence[Mapping[str, Any]]) -> tuple[Role, Role | None, dict[str, Role]]:
    """The account role, the everywhere role and the per-project roles the matching rules give.

    Every matching rule counts and the most privileged role wins: a rule without a project gives
    its role in every project, one with a project in that project. A project rule never makes a
    server admin: the account's own role is the everywhere role, else the least privileged of its
    project roles short of admin.
    """
    everywhere = _best(r["role"] for r in matched if r["project"] is None)
    per_project: dict[str, Role] = {}
    for r in matched:
        if r["project"] is not None:
            held = per_project.get(r["project"], r["role"])
            per_project[r["project"]] = min(held, r["role"], key=ROLES.index)
    below_admin = [r for r in per_project.values() if r != "admin"] or ["engineer"]
    role: Role = everywhere if everywhere is not None else max(below_admin, key=ROLES.index)
    return role, everywhere, per_project


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
                oidc_issuer=r.oidc_issuer,
                oidc_subject=r.oidc_subject,
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

        ``password`` must pass the password policy (at least :data:`MIN_PASSWORD_LENGTH`
        characters, not easy to guess: :class:`~evalcore.errors.WeakPasswordError` says why) and
        is stored as an Argon2id hash; an account without one signs in through OIDC only. ``projects`` (ids or names) are
        the projects the user joins with ``role``; None means every existing project, except for
        an admin, who needs no memberships.
        """
        name, role, email = _user_name(name), _role(role), _email(email)
        if source not in _SOURCES:
            raise ConfigError(f"An account's source is 'local' or 'oidc', not {source!r}.")
        password_hash = None if password is None else _new_hash(password, user_inputs=(name, email))
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

    def _other_admins(self, session: Session, user: User) -> int:
        """How many enabled admins there are besides ``user``, holding the admins' lock until the
        transaction ends (PostgreSQL; SQLite's write lock already serialises writers), so that
        two demotions at once cannot each count the other."""
        self._lock(session, LOCK_ADMINS, 0)
        return int(
            session.scalar(
                select(func.count())
                .select_from(User)
                .where(User.role == "admin", User.disabled.is_(False), User.id != user.id)
            )
            or 0
        )

    def project_admins(self, project_id: int) -> ProjectAdmins:
        """Who may be asked for what only an admin may do in a project: the server's admins
        (prices, endpoints, key variables) and the project's own admins (its members and
        settings), enabled accounts only, by name. Any member of the project may ask."""
        with self._read() as s:
            pid = self._project_ids(s, [int(project_id)])[0]
            server = s.scalars(
                select(User.name).where(User.role == "admin", User.disabled.is_(False))
            )
            project = s.scalars(
                select(User.name)
                .join(Membership, Membership.user_id == User.id)
                .where(
                    Membership.project_id == pid,
                    Membership.role == "admin",
                    User.role != "admin",
                    User.disabled.is_(False),
                )
            )
            return ProjectAdmins(tuple(sorted(server)), tuple(sorted(project)))

    def _keep_an_admin(self, session: Session, user: User) -> None:
        """Refuse to demote or disable the last enabled admin (nobody could manage users)."""
        if not self._other_admins(session, user):
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
        """Give a user a new password (it must pass the password policy); this also lifts every
        sign-in lock of the name."""
        with self._read() as s:
            user = self._user_row(s, name)
            inputs = (user.name, user.email)
        password_hash = _new_hash(password, user_inputs=inputs)
        now = utcnow()
        with self._write() as s:
            user = self._user_row(s, name)
            user.password_hash = password_hash
            user.failed_attempts, user.locked_until = 0, None
            _limits.clear(s, user.name, now, partial(self._record, s))
            self._record(s, "password_reset", target=user.name, at=now)

    # --- sign-in limits -----------------------------------------------------------------------

    def sign_in_locks(self, *, now: datetime | None = None) -> list[SignInLockRecord]:
        """The sign-in limits that refuse attempts at ``now`` (default: the current time): a
        name from one address (``pair``), an address (``client``), or a guarded name
        (``account``: only addresses it was used from before may try), newest first."""
        now = now or utcnow()
        query = (
            select(SignInLimit)
            .where(SignInLimit.locked_until > now)
            .order_by(SignInLimit.locked_at.desc(), SignInLimit.id.desc())
        )
        with self._read() as s:
            return [
                SignInLockRecord(
                    scope=r.scope,
                    account=r.account or None,
                    client=r.client or None,
                    attempts=r.attempts,
                    refused=r.refused,
                    locked_at=r.locked_at,
                    locked_until=r.locked_until,
                )
                for r in s.scalars(query)
            ]

    def clear_sign_in_locks(self, name: str | None = None, *, client: str | None = None) -> int:
        """Lift the sign-in locks and counts of a name (from every address), or of a client
        address (for every name), or both; returns how many limit rows were cleared. What each
        lock refused is written to the audit log first."""
        if name is None and client is None:
            raise ConfigError("Say which name or client address to unlock.")
        now = utcnow()
        with self._write() as s:
            record = partial(self._record, s)
            cleared = 0
            if name is not None:
                account = _user_name(name)
                cleared += _limits.clear(s, account, now, record)
                s.execute(
                    update(User)
                    .where(User.name == account)
                    .values(failed_attempts=0, locked_until=None)
                )
            if client is not None:
                cleared += _limits.clear_client(s, _limits.client_key(client), now, record)
            self._record(
                s,
                "sign_in_unlocked",
                target=name,
                detail={"client": client, "rows": cleared},
                at=now,
            )
            return cleared

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

    def _mirror(self, session: Session, attempt: _limits.Attempt) -> None:
        """Keep the user row's ``failed_attempts`` and ``locked_until`` (what the user list
        shows) in step with the name's own limit: its attempts from every address, and how long
        it stays guarded."""
        row = attempt.rows["account"]
        session.execute(
            update(User)
            .where(User.name == attempt.account)
            .values(failed_attempts=row.attempts, locked_until=row.locked_until)
        )

    def sign_in(
        self,
        name: str,
        password: str,
        *,
        client: str | None = None,
        now: datetime | None = None,
    ) -> Actor:
        """The actor for ``name`` when ``password`` is theirs; :class:`SignInError` otherwise.

        ``client`` is the address the attempt comes from (the page passes the browser's address
        as the server sees it; behind a proxy, the forwarded one). The limits are kept per name
        and address, per address and per name (see :mod:`evalcore.store._limits`) and are
        decided before the password is hashed: an attempt over a limit is refused without a
        hash, so a stranger's guesses lock out the stranger's address, not the owner. Without a
        ``client`` every attempt counts as one unknown address, which makes the limit per name.

        A wrong name, a wrong password and a disabled account give the same message and cost
        the same. ``now`` stands in for the current time in tests.
        """
        now = now or utcnow()
        typed = str(name or "").strip()[:MAX_NAME_LENGTH]
        where = _limits.client_key(client)
        password = password if isinstance(password, str) else ""
        with self._write() as s:
            record = partial(self._record, s, actor="anonymous")
            attempt = _limits.load(s, self._insert, typed, where, now, record)
            refused = _limits.admit(attempt, now, record)
            self._mirror(s, attempt)
            user = None
            if refused is None:
                user = s.scalars(select(User).where(User.name == typed)).one_or_none()
            user_id = None if user is None else user.id
            stored = None if user is None else user.password_hash
        if refused is not None:
            raise SignInError(_limits.REFUSALS[refused])
        _dummy_hash()  # made on the first sign-in of any name, so no name pays for it alone
        matches = verify_password(stored, password)
        fresh = hash_password(password) if matches and stored and needs_rehash(stored) else None
        with self._write() as s:
            record = partial(self._record, s, actor="anonymous")
            attempt = _limits.load(s, self._insert, typed, where, now, record)
            row = None if user_id is None else s.get(User, user_id)
            current = row is not None and stored is not None and stored == row.password_hash
            if row is not None and matches and current and not row.disabled:
                if fresh is not None:
                    row.password_hash = fresh
                _limits.after_success(attempt, now, record)
                self._mirror(s, attempt)
                row.last_sign_in_at = now
                self._record(
                    s,
                    "sign_in",
                    target=row.name,
                    actor=row.name,
                    detail={"method": "password", "client": where},
                    at=now,
                )
                _limits.prune(s, now, record)
                return self._actor(s, row)
            reason = "unknown" if row is None else "disabled" if row.disabled else "password"
            self._record(
                s,
                "sign_in_failed",
                target=typed,
                actor="anonymous",
                detail={"reason": reason, "client": where},
                at=now,
            )
            locked = _limits.after_failure(attempt, now, record)
            self._mirror(s, attempt)
        raise SignInError(WRONG_CREDENTIALS if locked is None else _limits.REFUSALS[locked])

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
        self, claims: OidcClaims | Mapping[str, Any], *, now: datetime | None = None
    ) -> Actor:
        """Sign in the person a verified ID token names; the one entry point of single sign-on.

        ``claims`` is an :class:`OidcClaims`, or the token's claims as a mapping (the sign-in
        page passes ``st.user.to_dict()``). The account is found in this order:

        1. the account bound to the token's issuer and subject;
        2. else the account whose e-mail address is the token's, when the provider marks it
           verified (``email_verified``); the account is bound to the issuer and subject then,
           unless it is bound to another identity already (refused);
        3. else a new account named by the verified address, when an OIDC rule admits the
           address, its domain or one of the token's groups.

        An address the provider did not verify finds nothing and makes nothing: with no binding
        the sign-in is refused and says why. The display name (``name``) never finds an
        account; it goes to the audit log only.

        The rules keep the role and memberships of accounts they made (source ``"oidc"``)
        up to date on every sign-in; such an account no rule matches any more is refused. An
        account an admin made (source ``"local"``) keeps the role the admin gave it. A rule never
        demotes the last enabled admin. Every decision is in the audit log.
        """
        if isinstance(claims, str):
            raise ConfigError(
                "oidc_sign_in takes the ID token's claims (an OidcClaims, or the claims as a "
                "mapping), not an e-mail address."
            )
        token = claims if isinstance(claims, OidcClaims) else OidcClaims.from_claims(claims)
        now = now or utcnow()
        try:
            verified = _email(token.email) if token.email_verified else None
        except ConfigError as exc:
            raise SignInError(f"The identity provider's e-mail claim is not usable: {exc}") from exc
        shown = verified or (token.email or "").strip().lower() or None
        rules = check_oidc_rules(self.get_server_setting("oidc_rules", []))
        matched = [r for r in rules if _oidc_matches(r, verified, frozenset(token.groups))]
        refused: str | None = None
        with self._write() as s:
            user, how, refused = self._oidc_account(s, token, verified)
            if refused is None and how == "new":
                assert verified is not None
                if not matched:
                    refused = "no_rule"
                elif s.scalar(select(User.id).where(User.name == verified)) is not None:
                    refused = "name_taken"
                else:
                    role, _, _ = _oidc_roles(matched)
                    user = self._new_user(s, verified, role=role, email=verified, source="oidc")
                    self._record(
                        s,
                        "user_added",
                        target=user.name,
                        actor=user.name,
                        detail={"role": role, "source": "oidc"},
                        at=now,
                    )
            if refused is None and user is not None and user.source == "oidc" and not matched:
                refused = "no_rule"
            if refused is None and user is not None:
                if user.oidc_subject is None:
                    user.oidc_issuer, user.oidc_subject = token.issuer, token.subject
                    self._record(
                        s,
                        "oidc_bound",
                        target=user.name,
                        actor=user.name,
                        detail={"issuer": token.issuer, "subject": token.subject, "by": how},
                        at=now,
                    )
                if verified is not None and verified != user.email:
                    taken = s.scalar(select(User.id).where(User.email == verified))
                    if taken is None:
                        user.email = verified
                if user.source == "oidc":
                    self._oidc_update(s, user, matched, now)
                user.last_sign_in_at = now
                self._record(
                    s,
                    "sign_in",
                    target=user.name,
                    actor=user.name,
                    detail={
                        "method": "oidc",
                        "by": how,
                        "issuer": token.issuer,
                        "display_name": token.name,
                    },
                    at=now,
                )
                return self._actor(s, user)
        assert refused is not None
        self._oidc_refused(token, shown, refused, now)
        raise SignInError(
            _OIDC_REFUSALS[refused].format(account=verified, email=shown or "(none given)")
        )

    def _oidc_account(
        self, session: Session, token: OidcClaims, verified: str | None
    ) -> tuple[User | None, str, str | None]:
        """The account of a token and how it was found (``"subject"``, ``"email"``, or
        ``"new"``: make one), or why the token may not sign in (a key of
        :data:`_OIDC_REFUSALS`)."""
        user = session.scalars(
            select(User).where(User.oidc_issuer == token.issuer, User.oidc_subject == token.subject)
        ).one_or_none()
        how = "subject"
        if user is None:
            if verified is None:
                return None, "", "unverified" if token.email else "no_email"
            user = session.scalars(select(User).where(User.email == verified)).one_or_none()
            if user is None:
                return None, "new", None
            if user.oidc_subject is not None:
                return None, "", "bound_elsewhere"
            how = "email"
        if user.disabled:
            return None, "", "disabled"
        return user, how, None

    def _oidc_refused(
        self, token: OidcClaims, address: str | None, reason: str, now: datetime
    ) -> None:
        with self._write() as s:
            self._record(
                s,
                "sign_in_failed",
                target=address or f"{token.issuer} {token.subject}",
                actor="anonymous",
                detail={
                    "method": "oidc",
                    "reason": reason,
                    "issuer": token.issuer,
                    "subject": token.subject,
                    "email_verified": token.email_verified,
                    "display_name": token.name,
                },
                at=now,
            )

    def _oidc_update(
        self, s: Session, user: User, matched: Sequence[Mapping[str, Any]], now: datetime
    ) -> None:
        """Bring an OIDC account's role and memberships up to what the rules give, never
        demoting the last enabled admin."""
        role, everywhere, per_project = _oidc_roles(matched)
        if user.role != role:
            if user.role == "admin" and not user.disabled and not self._other_admins(s, user):
                self._record(
                    s,
                    "role_kept",
                    target=user.name,
                    actor=user.name,
                    detail={"role": "admin", "rule": role, "reason": "last_admin", "by": "oidc"},
                    at=now,
                )
                role = "admin"
            else:
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
