"""Who may do what: roles, permissions, the acting user, and the store as seen by one user.

Every page, the CLI and a notebook reach project data through a :class:`~evalcore.store.Store`. A
plain ``Store`` is trusted: it is what a process with the database URL gets, and it can already do
anything with the database. A person goes through ``store.acting_as(actor)``, a
:class:`GuardedStore` that checks every public method against :data:`RULES` before running it, and
raises :class:`~evalcore.errors.PermissionDeniedError` when the actor's role in the project the call
touches does not allow it. The rule table is the one place that says what each role may do; a public
method without a rule is refused (``tests/store/test_store_access.py`` checks that every method has
one).

Services above the store that read the database in bulk (the calibration loader, the upload
service, run planning) call ``store.authorize(...)`` first: a no-op on a plain store, the same check
on a guarded one.

>>> actor = Actor(name="ana", role="annotator", memberships={1: "annotator"})
>>> actor.can("annotate", 1), actor.can("read", 1), actor.can("annotate", 2)
(True, False, False)
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, cast

from sqlalchemy import select

from evalcore.errors import NotFoundError, PermissionDeniedError
from evalcore.store._models import (
    Criterion,
    Dataset,
    Item,
    JudgeRun,
    JudgeTemplate,
    TemplateVersion,
)

if TYPE_CHECKING:
    from evalcore.store._store import Store

__all__ = [
    "PERMISSIONS",
    "ROLES",
    "ROLE_LABELS",
    "ROLE_PERMISSIONS",
    "RULES",
    "AccessChecks",
    "Actor",
    "ActorKind",
    "Permission",
    "Role",
    "Rule",
]

Role = Literal["admin", "engineer", "annotator", "viewer"]
#: From most to least privileged.
ROLES: Final[tuple[Role, ...]] = ("admin", "engineer", "viewer", "annotator")
ROLE_LABELS: Final[dict[Role, str]] = {
    "admin": "Admin",
    "engineer": "Prompt engineer",
    "viewer": "Viewer",
    "annotator": "Annotator",
}

Permission = Literal["open", "annotate", "read", "export", "manage", "admin"]
PERMISSIONS: Final[tuple[Permission, ...]] = (
    "open",  # know the project exists: its datasets and criteria by name, the Home page
    "annotate",  # one's own queue and one's own labels
    "read",  # everyone's labels, judge runs and results, templates: Calibrate and Reports
    "export",  # download reports and labels
    "manage",  # datasets, criteria, label imports, templates, runs
    "admin",  # memberships and project settings
)

#: What each role may do in a project it belongs to.
ROLE_PERMISSIONS: Final[dict[Role, frozenset[Permission]]] = {
    "annotator": frozenset({"open", "annotate"}),
    "viewer": frozenset({"open", "read", "export"}),
    "engineer": frozenset({"open", "annotate", "read", "export", "manage"}),
    "admin": frozenset(PERMISSIONS),
}

ActorKind = Literal["user", "single_user", "system"]


@dataclass(frozen=True)
class Actor:
    """The user a call is made for, as the database knew them when the actor was loaded.

    ``role`` is the user's own role; an ``admin`` administers the whole server and every project.
    Anyone else has a role only in the projects of ``memberships`` (project id → role). ``kind`` is
    ``"single_user"`` for the one person of a loopback server without accounts, and ``"system"``
    for the CLI and other trusted processes; both act as admins.
    """

    name: str
    role: Role
    memberships: Mapping[int, Role] = field(default_factory=dict)
    user_id: int | None = None
    kind: ActorKind = "user"

    @classmethod
    def system(cls, name: str = "system") -> Actor:
        """A trusted process (the CLI, a script): an admin of everything."""
        return cls(name=name, role="admin", kind="system")

    @classmethod
    def single_user(cls, name: str) -> Actor:
        """The one user of a server that listens on loopback only and has no accounts."""
        return cls(name=name, role="admin", kind="single_user")

    @property
    def is_admin(self) -> bool:
        """An administrator of the whole server (users, endpoints, prices, new projects)."""
        return self.role == "admin"

    def role_in(self, project_id: int) -> Role | None:
        """The actor's role in a project, or None when they do not belong to it."""
        if self.is_admin:
            return "admin"
        return self.memberships.get(project_id)

    def can(self, permission: Permission, project_id: int) -> bool:
        """Whether the actor may ``permission`` in the project."""
        role = self.role_in(project_id)
        return role is not None and permission in ROLE_PERMISSIONS[role]

    def can_anywhere(self, permission: Permission) -> bool:
        """Whether some project lets the actor ``permission``."""
        if self.is_admin:
            return True
        return any(permission in ROLE_PERMISSIONS[r] for r in self.memberships.values())


# --- the rule table ------------------------------------------------------------------------------

#: Where a call's project comes from: an argument naming a project, dataset, criterion, item, run,
#: template or template version; "selection" (whichever of project_id, dataset_id and criterion_id a
#: filtering call was given; none given means every project, for server admins); "any" (some project
#: must allow it); "server" (server admins only);
#: "system" (trusted processes only); "always" (every actor, such as a sign-in or reading prices).
Scope = Literal[
    "project", "dataset", "criterion", "item", "run", "template", "version", "selection", "any",
    "server", "system", "always",
]  # fmt: skip


@dataclass(frozen=True)
class Rule:
    """What a store method needs: ``permission`` in the project found through ``scope``/``arg``.

    ``own`` names the argument that holds an annotator's name: an actor who may not ``read`` the
    project may make the call only about themselves, and with ``assigned`` only on an item of
    their own queue. ``elevated`` is the permission a call needs when ``own`` names someone else.
    """

    permission: Permission | None
    scope: Scope
    arg: str | None = None
    own: str | None = None
    elevated: Permission = "read"
    assigned: bool = False


def _r(permission: Permission, scope: Scope, arg: str | None = None, **kw: Any) -> Rule:
    return Rule(permission, scope, arg if arg is not None else _DEFAULT_ARG.get(scope), **kw)


_DEFAULT_ARG: dict[str, str] = {
    "project": "project_id",
    "dataset": "dataset_id",
    "criterion": "criterion_id",
    "item": "item_id",
    "run": "run_id",
    "template": "template_id",
    "version": "version_id",
}

_ALWAYS = Rule(None, "always")
_SERVER = Rule("admin", "server")
_SYSTEM = Rule("admin", "system")

#: Every public ``Store`` method and what it needs. Methods not listed are refused.
RULES: Final[dict[str, Rule]] = {
    # the database itself
    "migrate": _SYSTEM,
    "schema_revision": _ALWAYS,
    "is_up_to_date": _ALWAYS,
    "close": _ALWAYS,
    "acting_as": _SYSTEM,
    "authorize": _ALWAYS,
    # projects (list_projects is filtered, not refused)
    "create_project": _SERVER,
    "list_projects": _ALWAYS,
    "get_project": _r("open", "project"),
    "get_project_by_name": _ALWAYS,  # checked on the result
    "update_project_settings": _r("admin", "project"),
    # criteria, datasets, items
    "create_criterion": _r("manage", "project"),
    "get_criterion": _r("open", "criterion"),
    "get_criterion_by_name": _r("open", "project"),
    "list_criteria": _r("open", "project"),
    "save_dataset": _r("manage", "project"),
    "get_dataset": _r("open", "dataset"),
    "get_dataset_by_name": _r("open", "project"),
    "list_datasets": _r("open", "project"),
    "count_items": _r("open", "dataset"),
    "get_item": _r("read", "item"),
    "get_item_by_external_id": _r("read", "dataset"),
    "items_frame": _r("read", "dataset"),
    # annotators and annotations
    "get_or_create_annotator": Rule("annotate", "any", own="name", elevated="manage"),
    "list_annotators": Rule("read", "any"),
    "ensure_queue": _r("annotate", "dataset", own="annotator", elevated="manage"),
    "queue_status": _r("annotate", "dataset", own="annotator"),
    "release_claims": _r("annotate", "dataset", own="annotator", elevated="manage"),
    "next_open_position": _r("annotate", "dataset", own="annotator"),
    "queue_item": _r("annotate", "dataset", own="annotator"),
    "submit_annotation": _r("annotate", "item", own="annotator", elevated="manage", assigned=True),
    "annotation_history": _r("annotate", "item", own="annotator", assigned=True),
    "import_labels": _r("manage", "dataset"),
    "annotation_matrix": _r("read", "dataset"),
    "annotator_label_counts": _r("read", "dataset"),
    "export_annotations": Rule("export", "selection"),
    # templates
    "create_template": _r("manage", "project"),
    "get_template": _r("read", "template"),
    "list_templates": _r("read", "project"),
    "save_template_version": _r("manage", "template"),
    "list_template_versions": _r("read", "template"),
    "get_template_version": _r("read", "version"),
    # endpoints and prices: server-wide
    "upsert_endpoint": _SERVER,
    "get_endpoint": Rule("manage", "any"),
    "get_endpoint_by_name": Rule("manage", "any"),
    "list_endpoints": Rule("manage", "any"),
    "set_model_price": _SERVER,
    "get_model_prices": _ALWAYS,
    "delete_model_price": _SERVER,
    # runs and results
    "create_run": _r("manage", "dataset"),
    "import_judge_labels": _r("manage", "dataset"),
    "get_run": _r("read", "run"),
    "list_runs": Rule("read", "selection"),
    "run_progress": _r("read", "run"),
    "results_frame": _r("read", "run"),
    "first_failure": _r("read", "run"),
    "finished_keys": _r("read", "run"),
    "request_cancel": _r("manage", "run"),
    "set_run_status": _r("manage", "run"),
    "heartbeat": _r("manage", "run"),
    "record_result": _r("manage", "run"),
    "record_results": _r("manage", "run"),
    "runs_to_resume": _SYSTEM,
    # the reply cache (content-addressed, shared by every project)
    "cache_get": Rule("manage", "any"),
    "cache_get_many": Rule("manage", "any"),
    "cache_put": Rule("manage", "any"),
    "cache_put_many": Rule("manage", "any"),
    # archive: a project as one file (export_project, import_project)
    "export_project": _r("export", "project"),
    "import_project": _SERVER,
    # users, sign-in, the audit log and server settings (actor_for and list_memberships also
    # check inside: only admins ask about someone else)
    "add_user": _SERVER,
    "list_users": _SERVER,
    "get_user": _SERVER,
    "count_users": _ALWAYS,
    "set_role": _SERVER,
    "set_membership": _r("admin", "project"),
    "list_memberships": Rule("admin", "any"),
    "project_admins": _r("open", "project"),
    "disable_user": _SERVER,
    "reset_password": _SERVER,
    "sign_in_locks": _SERVER,
    "clear_sign_in_locks": _SERVER,
    "sign_in": _ALWAYS,
    "oidc_sign_in": _ALWAYS,
    "actor_for": _ALWAYS,
    "audit": _ALWAYS,
    # signed-in sessions (evalcore.workflows opens and checks them with the trusted store)
    "open_session": _SYSTEM,
    "session_actor": _SYSTEM,
    "end_session": _SYSTEM,
    "end_user_sessions": _SERVER,
    "audit_log": _SERVER,
    "get_server_setting": _ALWAYS,
    "set_server_setting": _SERVER,
    "set_oidc_rules": _SERVER,
    # run chunks and workers (the task queue on PostgreSQL): written by trusted processes only
    "plan_chunks": _SYSTEM,
    "run_chunks": _r("read", "run"),
    "set_chunk_job": _SYSTEM,
    "start_chunk": _SYSTEM,
    "finish_chunk": _SYSTEM,
    "register_worker": _SYSTEM,
    "worker_heartbeat": _SYSTEM,
    "retire_worker": _SYSTEM,
    "list_workers": Rule("read", "any"),
    # batch-mode runs: the provider batches of a run, and batch prices (server-wide)
    "run_batches": _r("read", "run"),
    "save_run_batches": _r("manage", "run"),
    "set_batch_price": _SERVER,
    "get_batch_prices": _ALWAYS,
    "delete_batch_price": _SERVER,
    # optimisation jobs ("Improve"): every call names the job's dataset
    "create_improve_job": _r("manage", "dataset"),
    "get_improve_job": _r("read", "dataset"),
    "list_improve_jobs": _r("read", "dataset"),
    "update_improve_job": _r("manage", "dataset"),
    "request_improve_cancel": _r("manage", "dataset"),
    "improve_jobs_to_resume": _SYSTEM,
    # leases on runs and optimisations: the background workers' own business
    "claim_lease": _SYSTEM,
    "renew_lease": _SYSTEM,
    "release_lease": _SYSTEM,
    "open_leases": _SYSTEM,
    # dev/test splits of a dataset for a criterion (optimisation)
    "save_split": _r("manage", "dataset"),
    "get_split": _r("read", "dataset"),
    # juries: runs combined from other runs of the same dataset and criterion
    "create_jury_run": _r("manage", "dataset"),
    "jury_members": _r("read", "run"),
    # queue orders (escalation, "label next"): their reasons are for readers, never annotators
    "save_queue_order": _r("manage", "dataset"),
    "activate_queue_order": _r("manage", "dataset"),
    "deactivate_queue_order": _r("manage", "dataset"),
    "get_queue_order": _r("read", "dataset"),
    "list_queue_orders": _r("read", "dataset"),
    "active_queue_order": _r("read", "dataset"),
}


# --- the guarded store ---------------------------------------------------------------------------

_OWNER_MODELS: dict[str, tuple[Any, Any]] = {
    # scope: (model, how to get from it to a project id)
    "dataset": (Dataset, Dataset.project_id),
    "criterion": (Criterion, Criterion.project_id),
    "run": (JudgeRun, JudgeRun.project_id),
    "template": (JudgeTemplate, JudgeTemplate.project_id),
}

#: (database, scope, id) → project id. Rows never move between projects, so this never goes stale.
_PROJECT_OF: dict[tuple[int, str, int], int] = {}
_PROJECT_OF_LOCK = threading.Lock()
_PROJECT_OF_MAX = 100_000


class AccessChecks:
    """The checks of :class:`~evalcore.store.GuardedStore` (the store as one acting user sees it).

    Built by ``store.acting_as(actor)``: it shares the store's engine and connections, and every
    public method first checks :data:`RULES`. Records it returns are the same records.
    """

    actor: Actor

    # what the Store subclass built in _store.py provides
    engine: Any

    def _project_of(self, scope: str, key: Any) -> int:
        if key is None:
            raise PermissionDeniedError("This needs a project, and none was given.")
        ident = int(key)
        cache_key = (id(self.engine), scope, ident)
        found = _PROJECT_OF.get(cache_key)
        if found is not None:
            return found
        if scope == "item":
            query = (
                select(Dataset.project_id)
                .join(Item, Item.dataset_id == Dataset.id)
                .where(Item.id == ident)
            )
        elif scope == "version":
            query = (
                select(JudgeTemplate.project_id)
                .join(TemplateVersion, TemplateVersion.template_id == JudgeTemplate.id)
                .where(TemplateVersion.id == ident)
            )
        else:
            model, column = _OWNER_MODELS[scope]
            query = select(column).where(model.id == ident)
        with self.engine.connect() as conn:
            project = conn.execute(query).scalar()
        if project is None:
            raise NotFoundError(f"{scope.capitalize()} {ident!r} does not exist.")
        with _PROJECT_OF_LOCK:
            if len(_PROJECT_OF) >= _PROJECT_OF_MAX:
                _PROJECT_OF.clear()
            _PROJECT_OF[cache_key] = int(project)
        return int(project)

    def _project_id(self, scope: str, key: Any) -> int:
        if scope == "project":
            if key is None:
                raise PermissionDeniedError("This needs a project, and none was given.")
            return int(key)
        return self._project_of(scope, key)

    def _deny(
        self, permission: Permission, project_id: int | None, scope: str = "project"
    ) -> PermissionDeniedError:
        if scope == "server":
            held = "only an admin may do it"
        elif scope == "any":
            held = "none of your projects gives it"
        else:
            role = None if project_id is None else self.actor.role_in(project_id)
            held = (
                f"your role in this project is {ROLE_LABELS[role].lower()}"
                if role
                else "you are not a member of this project"
            )
        error = PermissionDeniedError(
            f"You may not do this: it needs the {permission!r} permission, and {held}."
        )
        error.permission = permission  # type: ignore[attr-defined]
        error.project_id = project_id  # type: ignore[attr-defined]
        return error

    def _require(self, permission: Permission, project_id: int) -> None:
        if not self.actor.can(permission, project_id):
            raise self._deny(permission, project_id)

    def _check(self, name: str, rule: Rule, arguments: Mapping[str, Any]) -> None:
        actor = self.actor
        if rule.scope == "always" or rule.permission is None:
            return
        if rule.scope == "system":
            if actor.kind != "system":
                raise PermissionDeniedError(f"{name} is for evalcore's own processes only.")
            return
        if rule.scope == "server":
            if not actor.is_admin:
                raise self._deny(rule.permission, None, "server")
            return
        if rule.scope == "any":
            other = rule.own is not None and _name(arguments.get(rule.own)) != actor.name
            needed = rule.elevated if other else rule.permission
            if not actor.can_anywhere(needed):
                raise self._deny(needed, None, "any")
            return
        if rule.scope == "selection":
            given = [
                (scope, arguments[f"{scope}_id"])
                for scope in ("project", "dataset", "criterion")
                if arguments.get(f"{scope}_id") is not None
            ]
            if not given:
                if not actor.is_admin:
                    raise self._deny(rule.permission, None, "server")
                return
            for scope, key in given:
                self._require(rule.permission, self._project_id(scope, key))
            return
        assert rule.arg is not None
        project_id = self._project_id(rule.scope, arguments.get(rule.arg))
        if rule.own is not None and actor.can(rule.elevated, project_id):
            return  # about anyone: readers read every queue, managers write for anyone
        self._require(rule.permission, project_id)
        if rule.own is None:
            return
        if _name(arguments.get(rule.own)) != actor.name:
            raise self._deny(rule.elevated, project_id)
        if rule.assigned and not actor.can("read", project_id):
            self._require_assigned(arguments)

    def _require_assigned(self, arguments: Mapping[str, Any]) -> None:
        from evalcore.store._models import Annotator, Assignment

        query = (
            select(Assignment.id)
            .join(Annotator, Annotator.id == Assignment.annotator_id)
            .where(
                Annotator.name == self.actor.name,
                Assignment.item_id == int(arguments["item_id"]),
                Assignment.criterion_id == int(arguments["criterion_id"]),
            )
            .limit(1)
        )
        with self.engine.connect() as conn:
            if conn.execute(query).first() is None:
                raise PermissionDeniedError(
                    f"Item {arguments['item_id']!r} is not in {self.actor.name}'s queue."
                )

    def authorize(
        self,
        permission: Permission,
        *,
        project_id: int | None = None,
        dataset_id: int | None = None,
        criterion_id: int | None = None,
        run_id: int | None = None,
    ) -> None:
        """Raise :class:`PermissionDeniedError` unless the actor may ``permission`` there."""
        for scope, key in (
            ("project", project_id),
            ("dataset", dataset_id),
            ("criterion", criterion_id),
            ("run", run_id),
        ):
            if key is not None:
                self._require(permission, self._project_id(scope, key))

    # --- filtered, not refused ----------------------------------------------------------------

    def _visible(self, project_id: int) -> bool:
        return self.actor.role_in(project_id) is not None


def _name(value: Any) -> str:
    return str(value or "").strip()


def guard_methods(store_class: type[Store], guarded: type[Any]) -> None:
    """Wrap every public method of ``store_class`` on ``guarded`` with its rule's check.

    Called once, where the guarded class is defined (``evalcore/store/_store.py``). A public
    method without a rule is replaced by one that always refuses.
    """
    for name, function in inspect.getmembers(store_class, predicate=inspect.isfunction):
        if name.startswith("_") or getattr(guarded, name) is not function:
            continue  # private, or given its own checked version by the guarded class
        setattr(guarded, name, _guarded(name, function))


def _guarded(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    rule = RULES.get(name)
    signature = inspect.signature(function)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if rule is None:
            raise PermissionDeniedError(f"{name} has no access rule, so nobody may call it.")
        if rule.scope != "always":
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            self._check(name, rule, bound.arguments)
        return function(self, *args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"GuardedStore.{name}"
    method.__doc__ = function.__doc__
    return cast(Callable[..., Any], method)
