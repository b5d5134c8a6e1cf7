"""Every page as every role, and as someone who belongs to no project, on the demo database.

What each role may open is written out here by hand (not read from ``evalcore.workflows.identity``), so a change to
the rule table that opens a page to the wrong role fails. A page a role may not open is still
registered (its address exists), and the page itself refuses it on the server.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from evalcore.store import Store
from evalcore.workflows import Server, Session, reports
from evalcore.workflows import identity as access
from tests.pages.conftest import APP, PASSWORD, sign_in
from ui.state import App

PAGES = ("home", "annotate", "calibrate", "reports", "datasets", "judge", "settings", "admin")
TITLES = {
    "annotate": "Annotate",
    "calibrate": "Calibrate",
    "reports": "Reports",
    "datasets": "Datasets",
    "judge": "Judge",
    "settings": "Settings",
    "admin": "Admin",
}

#: What each role opens in the demo project (``outsider``: an engineer of no project).
OPENS: dict[str, set[str]] = {
    "admin": set(PAGES),
    "engineer": {"home", "annotate", "calibrate", "reports", "datasets", "judge"},
    "viewer": {"home", "calibrate", "reports"},
    "annotator": {"home", "annotate"},
    "outsider": {"home", "calibrate"},  # Home says so; Calibrate's upload mode needs no project
}


@pytest.fixture(scope="module")
def shared_db(demo_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One copy of the demo for the module, so that the computed calibrations are cached once."""
    target = tmp_path_factory.mktemp("access") / "app.sqlite"
    shutil.copyfile(demo_file, target)
    url = f"sqlite:///{target}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALCORE_DATABASE_URL", url)
        store = Store.open(url)
        store.add_user("outsider", role="engineer", password=PASSWORD, projects=[])
        store.close()
        yield url


def _texts(at: AppTest) -> str:
    parts = [*at.title, *at.subheader, *at.markdown, *at.caption, *at.info, *at.error]
    return "\n".join(str(p.value) for p in parts)


def _as(at: AppTest, name: str) -> AppTest:
    """Sign ``at`` in as the existing account ``name``, keeping its memberships as they are."""
    with Store.open(os.environ["EVALCORE_DATABASE_URL"]) as store:
        at.session_state[App.TOKEN] = store.open_session(name, method="password")
    return at


def _open(role: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    if role == "outsider":
        _as(at, "outsider")
    else:
        sign_in(at, f"{role}-user", role)
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("role", list(OPENS))
def test_every_page_as_every_role(shared_db: str, role: str) -> None:
    at = _open(role)
    name = "outsider" if role == "outsider" else f"{role}-user"
    assert f"Signed in as **{name}**" in " ".join(c.value for c in at.sidebar.caption)
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        shown = _texts(at)
        errors = [e.value for e in at.error]
        if page in OPENS[role]:
            assert access.REFUSED not in errors, (role, page)
            if page in TITLES and not (role == "outsider" and page == "home"):
                assert TITLES[page] in [t.value for t in at.title], (role, page)
        else:
            assert errors == [access.REFUSED], (role, page, errors)
            assert not at.title, (role, page)  # stopped before drawing anything of its own
            assert not [*at.dataframe, *at.text_area, *at.file_uploader], (role, page)
        if role == "outsider" and page == "home":
            assert "not a member of any project" in shown


def test_what_home_shows_an_annotator_and_an_engineer(shared_db: str) -> None:
    annotator = _open("annotator")
    assert "Your queues" in [s.value for s in annotator.subheader]
    assert not annotator.metric  # no judge runs, no counts of other people's work
    engineer = _open("engineer")
    assert [m.label for m in engineer.metric] == ["Datasets", "Criteria", "Judge runs"]


def test_the_navigation_lists_what_the_role_may_open(shared_db: str) -> None:
    store = Store.open(shared_db)
    project = store.list_projects()[0].id
    for role in ("admin", "engineer", "viewer", "annotator"):
        sign_in(AppTest.from_file(APP), f"{role}-user", role)
        actor = store.actor_for(f"{role}-user")
        assert {p for p in access.PAGES if access.may_open(actor, p, project)} == OPENS[role], role
    outsider = store.actor_for("outsider")
    assert outsider.role_in(project) is None
    assert {p for p in access.PAGES if access.may_open(outsider, p, None)} == OPENS["outsider"]
    store.close()


def test_a_role_change_applies_on_the_next_run(shared_db: str) -> None:
    at = _open("engineer")
    at.switch_page("pages/judge.py").run()
    assert [t.value for t in at.title] == ["Judge"]
    with Store.open(shared_db) as store:
        store.set_role("engineer-user", "annotator")
    try:
        at.run()
        assert [e.value for e in at.error] == [access.REFUSED]
    finally:
        with Store.open(shared_db) as store:
            store.set_role("engineer-user", "engineer")


def test_the_project_picker_lists_only_the_members_projects(shared_db: str) -> None:
    with Store.open(shared_db) as store:
        other = store.create_project("Other team")
        store.add_user("two-projects", role="viewer", password=PASSWORD, projects=[other.id])
    at = _as(AppTest.from_file(APP, default_timeout=180), "two-projects")
    at.run()
    assert not at.exception, at.exception
    assert not at.sidebar.selectbox  # one project only: no picker
    assert [t.value for t in at.title] == ["Other team"]
    admin = _open("admin")
    picker = admin.sidebar.selectbox[0]
    assert {"Other team", "Northwind support demo"} <= set(picker.options)


def test_a_viewers_report_download_is_in_the_audit_log(shared_db: str) -> None:
    from ui.state import Reports

    at = _open("viewer")
    at.switch_page("pages/reports.py").run()
    assert not at.exception, at.exception
    assert Reports.DL_METRICS in [b.key for b in at.get("download_button")]
    # The button's file is made when the browser asks for it (AppTest never does): the call the
    # button makes, as the same viewer's session, is the one that writes the audit row.
    server = Server(store=Store.open(shared_db), secrets={})
    try:
        session = Session(server, at.session_state[App.TOKEN])
        project = server.store.list_projects()[0].id
        metrics = next(
            f
            for f in reports.exports(session, project).values()
            if f.file_name.endswith("-metrics.csv")
        )
        assert reports.export(session, project, metrics)
    finally:
        server.close()
    with Store.open(shared_db) as store:
        log = store.audit_log(action="export")
    mine = log[log["actor"] == "viewer-user"]
    assert mine["target"].str.endswith("-metrics.csv").any()
    assert mine["project_id"].notna().all()


def test_a_labels_export_is_in_the_audit_log(shared_db: str) -> None:
    from ui.state import Datasets

    at = _open("engineer")
    at.switch_page("pages/datasets.py").run()
    at.session_state[Datasets.TAB] = "Export"
    at.run()
    at.download_button(key=Datasets.EXPORT_DOWNLOAD).click().run()
    assert not at.exception, at.exception
    with Store.open(shared_db) as store:
        log = store.audit_log(action="export")
    assert (log[log["actor"] == "engineer-user"]["target"].str.endswith("-annotations.csv")).any()
