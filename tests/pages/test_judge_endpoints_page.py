"""The Judge page and issue 20 (points 7 and 8): a run that cannot authenticate is refused before it
exists, with the reason "Try" gives; a resumed run that finishes shows no banner of an earlier
attempt; an engineer is told whom to ask, never sent to a page they cannot open; Improve lists the
candidates it dropped, with why."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from evalcore.runs import execute_run, plan_run
from evalcore.store import Store
from evalcore.testing import FakeOpenAI
from tests.pages import test_judge_improve_page as improve_page
from tests.pages import test_judge_page as judge_page
from tests.pages.conftest import PASSWORD
from tests.pages.improve_demo import OPTIMIZER, demo_ids
from ui.state import Judge

# the Judge and Improve page tests' fixtures, found by name
fake, store, judge = judge_page.fake, judge_page.store, judge_page.judge
world, improve = improve_page.world, improve_page.improve
_ok, _pick_template, _wait, _errors = (
    judge_page._ok,
    judge_page._pick_template,
    judge_page._wait,
    judge_page._errors,
)
KEY_ENV = judge_page.KEY_ENV


def _captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def test_a_run_whose_key_is_missing_is_refused_with_the_reason_try_gives(
    judge, store: Store, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_user("root", role="admin", password=PASSWORD)
    at = judge()  # an engineer
    _pick_template(at, store, "helpfulness-judge")
    monkeypatch.delenv(KEY_ENV)
    at.button(key=Judge.TRY).click().run()
    _ok(at)
    tried = _errors(at)
    assert "not available on the server" in tried
    assert "this server's admins: root" in tried  # whom to ask
    runs_before = len(store.list_runs())
    at.button(key=Judge.START).click().run()
    _ok(at)
    started = _errors(at)
    assert "The run was not started" in started
    assert tried.split(":", 1)[-1].strip() in started  # the same reason
    assert len(store.list_runs()) == runs_before
    assert fake.count == 0
    assert at.session_state[Judge.SECTION] == "Editor"  # nothing started: the page stays


def test_an_engineer_is_told_whom_to_ask_for_a_price_and_an_endpoint(judge, store: Store) -> None:
    store.add_user("root", role="admin", password=PASSWORD)
    at = judge()
    _pick_template(at, store, "helpfulness-judge")
    captions = _captions(at)
    assert "No price for demo-judge-mini: ask an admin of this server (root) to add a price" in (
        captions
    )
    assert "Settings" not in captions
    assert "ask an admin of this server (root)" in at.selectbox(key=Judge.ENDPOINT).help
    admin = judge(role="admin", user="ada")
    _pick_template(admin, store, "helpfulness-judge")
    assert "No price for demo-judge-mini: add one on the Settings page." in _captions(admin)


def test_a_resumed_run_that_finishes_shows_no_banner_of_its_first_attempt(
    judge, store: Store, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = judge()
    project = store.list_projects()[0]
    dataset = next(d for d in store.list_datasets(project.id) if d.name == "support-answers")
    template = next(t for t in store.list_templates(project.id) if t.name == "helpfulness-judge")
    version = store.list_template_versions(template.id)[-1]
    endpoint = store.get_endpoint(at.session_state[Judge.ENDPOINT])
    # the first attempt, made without the key, fails before its first request
    monkeypatch.delenv(KEY_ENV)
    run = plan_run(
        store,
        dataset_id=dataset.id,
        template_version_id=version.id,
        endpoint_id=endpoint.id,
        item_ids=["sa-001", "sa-002", "sa-003"],
    )
    execute_run(store, run.id)
    at.segmented_control(key=Judge.SECTION).set_value("Runs").run()
    at.selectbox(key=Judge.RUN).set_value(run.id).run()
    _ok(at)
    assert "not available on the server" in _errors(at)
    monkeypatch.setenv(KEY_ENV, "page-test-secret")
    at.button(key=Judge.RESUME).click().run()
    _ok(at)
    assert _wait(store, run.id) == "done"
    at.run()
    _ok(at)
    assert "3 of 3 results · done" in at.progress[0].text
    assert "not available on the server" not in _errors(at)


def test_improve_lists_the_candidates_it_dropped_and_ends_with_every_step(improve, world) -> None:
    at = improve()
    store, fake = world.store, world.fake
    dataset_id, *_ = demo_ids(store)
    scripted = fake.reply

    def reply(request: dict[str, object]) -> object:
        if request.get("model") == OPTIMIZER:
            return "Some thoughts, and no JSON."
        return scripted(request)

    fake.reply = reply
    at.button(key=Judge.IMPROVE_START).click().run()
    _ok(at)
    job = improve_page._wait(store, dataset_id)
    assert job.status == "done", job.error
    at.run()
    _ok(at)
    steps = {m.label: m.value for m in at.metric}["Steps"]
    done, total = steps.split(" / ")
    assert done == total
    dropped = next(d.value for d in at.dataframe if "why" in d.value.columns)
    assert dropped["candidate"].tolist() == ["rewrite 1 of 1"]
    assert "no JSON object" in dropped["why"].iloc[0]
    text = " ".join(m.value for m in at.markdown)
    assert "planned steps ran; 1 were dropped" in text
