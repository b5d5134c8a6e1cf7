"""A project's settings (the thresholds a judge must reach, annotators per item), the endpoints judges
are sent to, and the model price table.

An endpoint keeps the NAME of the variable that holds its API key, never a key: the form starts with
no key variable at all (a local server needs none; a hosted one names its variable), and only a
server admin learns whether a named variable is set. Saving is one call, checked against the
database at the moment of the click: an admin who was demoted or disabled meanwhile is refused and
nothing is written. Saving a new endpoint under a name that exists asks first
(:class:`EndpointExistsError`); the page then saves again with ``replace=True``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final, Literal, get_args

import pandas as pd

from evalcore.errors import ConfigError, PermissionDeniedError
from evalcore.runs import endpoints_table, key_policy, price_table, save_endpoint, save_prices
from evalcore.secrets import key_status
from evalcore.store import (
    DEFAULT_THRESHOLDS,
    EndpointKind,
    EndpointRecord,
    ProjectRecord,
    check_api_key_env,
)
from evalcore.workflows._session import Session, caller

__all__ = [
    "ENDPOINT_KINDS",
    "PROJECT_FIELDS",
    "EndpointExistsError",
    "EndpointForm",
    "KeyState",
    "KeyVariableError",
    "ProjectField",
    "Settings",
    "key_state",
    "save_endpoint_form",
    "save_price_table",
    "save_project_settings",
    "settings",
]

#: The kinds of endpoint (the picker's choices).
ENDPOINT_KINDS: Final[tuple[EndpointKind, ...]] = get_args(EndpointKind)


@dataclass(frozen=True)
class ProjectField:
    """One input of the project settings form: its value's name, label, bounds, step and help."""

    name: str
    label: str
    low: float
    high: float
    step: float
    help: str | None = None
    whole: bool = False


#: The project settings a form edits, in order.
PROJECT_FIELDS: Final = (
    ProjectField("balanced_accuracy", "Balanced accuracy ≥", 0.0, 1.0, 0.05),
    ProjectField("cohen_kappa", "Cohen's kappa ≥", -1.0, 1.0, 0.05),
    ProjectField(
        "annotators_per_item",
        "Annotators per item",
        1,
        50,
        1,
        "How many people should label each item; queues stop assigning an item beyond it.",
        whole=True,
    ),
)


@dataclass(frozen=True)
class EndpointForm:
    """An endpoint as the form holds it; :meth:`of` fills it from a saved one (or a new, empty
    one: no key variable until one is chosen)."""

    name: str = ""
    kind: EndpointKind = "openai"
    base_url: str = ""
    api_key_env: str = ""
    api_version: str = ""
    default_model: str = ""

    @classmethod
    def of(cls, record: EndpointRecord | None) -> EndpointForm:
        if record is None:
            return cls()
        return cls(
            record.name,
            record.kind,
            record.base_url or "",
            record.api_key_env or "",
            record.api_version or "",
            record.default_model or "",
        )


@dataclass(frozen=True)
class Settings:
    """What the Settings page shows: the project's values, the endpoints and the prices."""

    project: ProjectRecord
    values: Mapping[str, float]
    endpoints: tuple[EndpointRecord, ...]
    endpoints_table: pd.DataFrame
    prices: pd.DataFrame
    server_admin: bool

    def endpoint(self, endpoint_id: int | None) -> EndpointRecord | None:
        return next((e for e in self.endpoints if e.id == endpoint_id), None)


def settings(session: Session, project_id: int) -> Settings:
    """The project's settings (thresholds with their defaults), the endpoints with the state of
    their key variables (server admins only learn whether a variable is set) and the prices."""
    who = caller(session)
    project = who.store.get_project(project_id)
    thresholds = {**DEFAULT_THRESHOLDS, **project.thresholds}
    values = {
        "balanced_accuracy": float(thresholds["balanced_accuracy"]),
        "cohen_kappa": float(thresholds["cohen_kappa"]),
        "annotators_per_item": float(project.annotators_per_item),
    }
    admin = who.actor.is_admin
    table = endpoints_table(who.store, who.server.secrets)
    if not admin:
        table = table.drop(columns=["key"])
    return Settings(
        project,
        values,
        tuple(who.store.list_endpoints()),
        table,
        price_table(who.store),
        admin,
    )


@dataclass(frozen=True)
class KeyState:
    """Whether a key variable is set on this server, in words (``level``: ``ok`` or ``bad``)."""

    level: Literal["ok", "bad"]
    text: str


def key_state(session: Session, name: str) -> KeyState | None:
    """Whether the key variable ``name`` is set, missing or not allowed here; ``None`` for an empty
    name, or for a caller who is not a server admin (nobody else may learn which variables
    exist)."""
    who = caller(session)
    name = name.strip()
    if not name or not who.actor.is_admin:
        return None
    status = key_status(name, who.server.secrets, key_policy(who.store))
    if status == "set":
        return KeyState("ok", f"`{name}` is set")
    if status == "missing":
        return KeyState("bad", f"`{name}` is not set on this server")
    return KeyState(
        "bad",
        f"`{name}` is not an allowed key variable: the Admin page lists the names allowed besides "
        "those ending in `_API_KEY`",
    )


class EndpointExistsError(ConfigError):
    """A new endpoint was given the name of one that exists; save with ``replace=True`` to
    overwrite it."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"An endpoint named {name!r} exists already. Replace it with these settings, or give "
            "this one another name."
        )
        self.name = name


class KeyVariableError(ConfigError):
    """The key variable of an endpoint was refused (a pasted key, or a name the server's policy
    does not allow); the message never repeats the value, and a form should forget it."""


def save_endpoint_form(
    session: Session, form: EndpointForm, *, editing: int | None = None, replace: bool = False
) -> EndpointRecord:
    """Check and save an endpoint (server admins only; the check is made now).

    ``editing`` is the id of the endpoint the form was opened for (``None``: a new endpoint). A new
    endpoint whose name is taken raises :class:`EndpointExistsError` unless ``replace``; an edited
    one keeps its name. A pasted key, a host the server does not allow or an Azure endpoint without
    an API version is refused with a :class:`ConfigError`; nothing is saved then.
    """
    who = caller(session)
    if not who.actor.is_admin:
        raise PermissionDeniedError("You may not do this: only an admin may change endpoints.")
    existing = {e.name: e for e in who.store.list_endpoints()}
    if editing is not None:
        current = next((e for e in existing.values() if e.id == editing), None)
        if current is None:
            raise ConfigError("The endpoint being edited no longer exists; choose it again.")
        form = _with_name(form, current.name)
    elif form.name.strip() in existing and not replace:
        raise EndpointExistsError(form.name.strip())
    try:
        check_api_key_env(form.api_key_env, key_policy(who.store))
    except ConfigError as exc:
        raise KeyVariableError(str(exc)) from None
    return save_endpoint(
        who.store,
        form.name,
        kind=form.kind,
        base_url=form.base_url,
        api_key_env=form.api_key_env.strip() or None,
        api_version=form.api_version,
        default_model=form.default_model,
    )


def _with_name(form: EndpointForm, name: str) -> EndpointForm:
    return replace(form, name=name)


def save_price_table(session: Session, table: pd.DataFrame) -> str:
    """Make the stored prices equal ``table`` (checked in full first); what changed, in words."""
    changes = save_prices(caller(session).store, table)
    return f"Prices saved: {changes['set']} set, {changes['removed']} removed."


def save_project_settings(session: Session, project_id: int, values: Mapping[str, float]) -> str:
    """Save the project's thresholds and annotators per item (project admins), keeping any other
    threshold the project has."""
    who = caller(session)
    project = who.store.get_project(project_id)
    thresholds = dict(project.thresholds)
    for name in ("balanced_accuracy", "cohen_kappa"):
        if name in values:
            thresholds[name] = float(values[name])
    changes: dict[str, object] = {"thresholds": thresholds}
    if "annotators_per_item" in values:
        changes["annotators_per_item"] = values["annotators_per_item"]
    who.store.update_project_settings(project_id, changes)
    return "Project settings saved."
