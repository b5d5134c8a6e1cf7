"""The one door between the dashboard's pages and the library: one module per user task.

Every function takes the caller's :class:`Session` first, checks it against the database at the
moment of the call (a disabled, removed, demoted or idle user, or a changed password, is refused
there: :func:`caller`), does the work through the store acting as that user, and returns frozen
view objects. What is costly to compute is kept in the server's :class:`Memo`, keyed by the data's
version, never by who asked: the check always comes first. Nothing here imports streamlit; the tests
of this layer run without it.

- :mod:`~evalcore.workflows.identity`: sign in and out, the projects and pages a caller may open;
- :mod:`~evalcore.workflows.home`: where to start, and whether each criterion's judge can be trusted;
- :mod:`~evalcore.workflows.annotate`: queues, the item on screen, answers saved or kept;
- :mod:`~evalcore.workflows.datasets`: uploads, criteria, label imports, agreement, exports;
- :mod:`~evalcore.workflows.judge`: templates and versions, tries, runs and their results, built-in
  metrics;
- :mod:`~evalcore.workflows.improve`: optimising a template from the labels;
- :mod:`~evalcore.workflows.calibrate`: judge runs against people, from the project or a file;
- :mod:`~evalcore.workflows.confidence`: the judge's confidence, trust or escalate, label next;
- :mod:`~evalcore.workflows.reports`: the summary, history, rates and exports;
- :mod:`~evalcore.workflows.settings`: a project's thresholds, endpoints and prices;
- :mod:`~evalcore.workflows.admin`: users, memberships, sign-in rules, the audit log.
"""

from evalcore.workflows import confidence
from evalcore.workflows._memo import Memo
from evalcore.workflows._server import (
    ALLOWED_HOSTS_ENV,
    LOOPBACK,
    Server,
    allowed_hosts,
    any_host_notice,
    cookie_seconds,
    database_url,
    host_allowed,
    host_refusal,
    idle_minutes,
    is_loopback,
    oidc_configured,
    oidc_providers,
    start_refusal,
)
from evalcore.workflows._session import (
    SESSION_COOKIE,
    SINGLE_USER,
    Caller,
    HandOffs,
    Session,
    caller,
)

__all__ = [
    "ALLOWED_HOSTS_ENV",
    "LOOPBACK",
    "SESSION_COOKIE",
    "SINGLE_USER",
    "Caller",
    "HandOffs",
    "Memo",
    "Server",
    "Session",
    "allowed_hosts",
    "any_host_notice",
    "caller",
    "confidence",
    "cookie_seconds",
    "database_url",
    "host_allowed",
    "host_refusal",
    "idle_minutes",
    "is_loopback",
    "oidc_configured",
    "oidc_providers",
    "start_refusal",
]
