"""Home's workflow without Streamlit: numbered first steps of an empty project naming only the pages
the caller may open, "can I trust this judge?" per criterion, and refusals."""

from __future__ import annotations

import pytest

from evalcore.errors import PermissionDeniedError, SessionEndedError
from evalcore.labels import PASS_FAIL
from evalcore.workflows import home
from tests.workflows.conftest import People


def test_an_empty_project_shows_numbered_first_steps(people: People) -> None:
    steps = home.first_steps(people.engineer(), people.project)
    assert [s.number for s in steps] == [1, 2, 3, 4]
    assert steps[0].page == "datasets"
    assert steps[2].page == "judge"
    assert steps[3].page == "calibrate"
    assert not any(s.done for s in steps)
    # a viewer may not import or run a judge: those steps name no page
    viewer = home.first_steps(people.session("vic"), people.project)
    assert viewer[0].page is None
    assert viewer[2].page is None
    assert viewer[3].page == "calibrate"


def test_trust_says_what_is_missing(people: People) -> None:
    store = people.server.store
    store.create_criterion(people.project, "grounded", kind="pointwise", scale=PASS_FAIL)
    found = home.trust(people.session("vic"), people.project)
    assert [(t.criterion, t.light) for t in found] == [("grounded", "none")]
    assert found[0].line.startswith("No judge run yet")


def test_home_answers_are_refused_to_outsiders_and_ended_sessions(people: People) -> None:
    with pytest.raises(PermissionDeniedError):
        home.trust(people.session("oscar"), people.project)
    ended = people.session("vic")
    people.server.store.end_session(ended.token or "")
    with pytest.raises(SessionEndedError):
        home.first_steps(ended, people.project)
