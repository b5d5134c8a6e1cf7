"""What the dashboard allows, without Streamlit: which page needs which permission, the loopback
addresses of single-user mode, the idle timeout, and when a server refuses to start.

``app.py`` and ``ui.identity`` use these while serving; ``ui.serve`` uses them before Streamlit
starts, so this module imports neither Streamlit nor anything that does.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from evalcore.errors import ConfigError
from evalcore.store import ROLE_PERMISSIONS, Actor, Permission

#: Addresses that only this machine can reach.
LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1"})

IDLE_ENV: Final = "EVALCORE_SESSION_IDLE_MINUTES"
DEFAULT_IDLE_MINUTES: Final = 60.0

#: What opening each page needs in the current project; "server" is a server administrator.
PageNeed = Permission | Literal["server"]
PAGE_NEEDS: Final[dict[str, PageNeed]] = {
    "home": "open",
    "annotate": "annotate",
    "calibrate": "read",
    "reports": "read",
    "datasets": "manage",
    "judge": "manage",
    "settings": "admin",
    "admin": "server",
}

REFUSED: Final = "This page is not available to your role."

NO_ACCOUNT: Final = (
    "evalcore has no user account yet, so it serves only this machine (127.0.0.1) in single-user "
    "mode. To listen on {address}, add an admin first: evalcore users add NAME --role admin "
    "--password-env VAR (the password is read from the environment variable VAR), or configure "
    "OIDC in .streamlit/secrets.toml ([auth])."
)


def may_open(actor: Actor, page: str, project_id: int | None) -> bool:
    """Whether ``actor`` may open ``page`` in the project (``None``: the actor has no project)."""
    need = PAGE_NEEDS[page]
    if need == "server":
        return actor.is_admin
    if project_id is None:
        # no project: Home says so, an admin may create one, and a file can still be calibrated
        # (the upload mode saves nothing) by those whose role reads calibrations
        if page == "calibrate":
            return "read" in ROLE_PERMISSIONS[actor.role]
        return page == "home" or (page == "datasets" and actor.is_admin)
    return actor.can(need, project_id)


def visible_pages(actor: Actor, project_id: int | None) -> list[str]:
    """The pages the navigation lists for ``actor`` in the project, in menu order."""
    return [page for page in PAGE_NEEDS if may_open(actor, page, project_id)]


def is_loopback(address: str | None) -> bool:
    """Whether a server bound to ``address`` is reachable from this machine only (an empty address
    means every interface)."""
    return (address or "").strip().strip("[]").lower() in LOOPBACK


def idle_minutes(environ: Mapping[str, str] | None = None) -> float:
    """How long a session may stay idle before it is signed out (``EVALCORE_SESSION_IDLE_MINUTES``,
    default 60), as a :class:`ConfigError` when the variable is not a positive number of minutes."""
    raw = (os.environ if environ is None else environ).get(IDLE_ENV, "").strip()
    if not raw:
        return DEFAULT_IDLE_MINUTES
    try:
        minutes = float(raw)
    except ValueError:
        minutes = float("nan")
    if not minutes > 0 or minutes == float("inf"):
        raise ConfigError(
            f"{IDLE_ENV} must be a positive number of minutes, such as 60; it is {raw!r}."
        )
    return minutes


def oidc_configured(secrets: Mapping[str, Any]) -> bool:
    """Whether the secrets have an ``[auth]`` section (Streamlit's OIDC sign-in)."""
    auth = secrets.get("auth")
    return isinstance(auth, Mapping) and bool(auth)


def oidc_providers(secrets: Mapping[str, Any]) -> list[str | None]:
    """The providers ``st.login`` can be called with: ``[None]`` for an ``[auth]`` section that
    names one provider itself, else the names of its ``[auth.NAME]`` sub-sections."""
    auth = secrets.get("auth")
    if not isinstance(auth, Mapping):
        return []
    named = [str(k) for k, v in auth.items() if isinstance(v, Mapping)]
    return named or ([None] if "client_id" in auth else [])


def secrets_files(cwd: Path | None = None) -> list[Path]:
    """Where Streamlit reads ``secrets.toml`` by default (the user's, then the project's)."""
    return [
        Path.home() / ".streamlit" / "secrets.toml",
        (cwd or Path.cwd()) / ".streamlit" / "secrets.toml",
    ]


def file_secrets(paths: list[Path]) -> dict[str, Any]:
    """The secrets of ``paths`` merged (later files win), for checks made before Streamlit starts."""
    merged: dict[str, Any] = {}
    for path in paths:
        if path.is_file():
            try:
                merged.update(tomllib.loads(path.read_text(encoding="utf-8")))
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise ConfigError(f"{path} could not be read: {exc}") from None
    return merged


def start_refusal(address: str | None, accounts: int, oidc: bool) -> str | None:
    """Why a server must not listen on ``address``: it has no account, no OIDC and is not on
    loopback (then anyone who reaches the port would be an admin); ``None`` when it may."""
    if accounts > 0 or oidc or is_loopback(address):
        return None
    return NO_ACCOUNT.format(address=(address or "").strip() or "every network interface")
