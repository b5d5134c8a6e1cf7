"""The Judge page's "Improve" section through AppTest, on the demo project and the scripted fake.

The optimisation runs in the app's background worker (a real thread talking real HTTP through the
``openai`` client to :class:`evalcore.testing.FakeOpenAI`); the test waits for it through the store,
as the page does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from streamlit.testing.v1 import AppTest

from evalcore.store import ImproveJobRecord, Store
from evalcore.testing import FakeOpenAI
from tests.pages.improve_demo import OPTIMIZER, demo_ids, scripted_demo_judge
from ui import state
from ui.state import Judge

KEY_ENV = "IMPROVE_PAGE_API_KEY"


def _setting(name: str) -> str:
    """The key of the number box of one declared optimiser setting."""
    return state.key(Judge.IMPROVE_SETTING, name)


@dataclass
class World:
    """The app's database and the scripted fake its endpoint points at."""

    store: Store
    fake: FakeOpenAI


@pytest.fixture
def world(app_db: str) -> Iterator[World]:
    with FakeOpenAI() as fake, Store.open(app_db) as store:
        yield World(store, fake)


@pytest.fixture
def improve(
    open_app: Callable[..., AppTest], world: World, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., AppTest]:
    """The Improve section on the demo's support answers, judged by the scripted fake."""
    monkeypatch.setenv(KEY_ENV, "improve-page-secret")
    store, fake = world.store, world.fake

    def _open(**kwargs: object) -> AppTest:
        at = open_app(page="judge", **kwargs)  # seeds the demo
        fake.reply = scripted_demo_judge(store)
        endpoint = store.upsert_endpoint(
            "fake", base_url=fake.base_url, api_key_env=KEY_ENV, default_model="fake-judge"
        )
        dataset_id, criterion_id, version_id = demo_ids(store)
        at.run()
        at.selectbox(key=Judge.ENDPOINT).set_value(endpoint.id).run()
        at.selectbox(key=Judge.DATASET).set_value(dataset_id).run()
        at.text_input(key=Judge.MODEL).set_value("fake-judge").run()
        at.segmented_control(key=Judge.SECTION).set_value("Improve").run()
        _ok(at)
        at.selectbox(key=Judge.IMPROVE_CRITERION).set_value(criterion_id).run()
        at.selectbox(key=Judge.IMPROVE_VERSION).set_value(version_id).run()
        at.text_input(key=Judge.IMPROVE_OPT_MODEL).set_value(OPTIMIZER).run()
        at.number_input(key=_setting("fewshot_candidates")).set_value(2).run()
        at.number_input(key=_setting("rewrites")).set_value(1).run()
        at.number_input(key=_setting("finalists")).set_value(2).run()
        return _ok(at)

    return _open


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, at.exception
    return at


def _text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [m.value for m in at.caption]
    parts += (
        [m.value for m in at.info] + [m.value for m in at.warning] + [e.value for e in at.error]
    )
    return "\n".join(str(p) for p in parts)


def _wait(store: Store, dataset_id: int, timeout: float = 180.0) -> ImproveJobRecord:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = store.list_improve_jobs(dataset_id)
        if jobs and jobs[0].is_terminal:
            return jobs[0]
        time.sleep(0.05)
    raise AssertionError("the optimisation did not end")


def test_estimate_start_report_and_save_a_better_version(improve, world: World) -> None:
    at = improve()
    store = world.store
    dataset_id, _criterion_id, version_id = demo_ids(store)
    at.button(key=Judge.IMPROVE_ESTIMATE).click().run()
    _ok(at)
    labels = {m.label: m.value for m in at.metric}
    assert int(labels["Requests"].replace(",", "")) > 0
    assert "labelled item" in _text(at)
    at.button(key=Judge.IMPROVE_START).click().run()
    _ok(at)
    job = _wait(store, dataset_id)
    assert job.status == "done", job.error
    at.run()
    _ok(at)
    assert at.session_state[Judge.IMPROVE_JOB] == job.id
    tables = [d.value for d in at.dataframe]
    dev = next(t for t in tables if "kind" in t.columns and "examples" in t.columns)
    test = next(t for t in tables if "McNemar p" in t.columns)
    assert "start" in set(dev["kind"])
    assert {"fewshot", "rewrite"} & set(dev["kind"])
    assert test.iloc[0]["kind"] == "start"
    assert "human ceiling" in _text(at)
    winners = [f for f in job.report["finalists"] if f["beats_start"]]  # type: ignore[index]
    assert winners, job.report
    template_id = store.get_template_version(version_id).template_id
    before = len(store.list_template_versions(template_id))
    at.button(key=state.key(Judge.IMPROVE_SAVE, winners[0]["id"])).click().run()
    _ok(at)
    versions = store.list_template_versions(template_id)
    assert len(versions) == before + 1
    assert "split" in (versions[-1].note or "")
    assert at.session_state[Judge.SECTION] == "Editor"
    assert at.session_state[Judge.VERSION] == versions[-1].id


def test_a_candidate_that_did_not_beat_the_start_is_not_offered(improve, world: World) -> None:
    at = improve()
    store, fake = world.store, world.fake
    dataset_id, *_ = demo_ids(store)
    # a useless optimiser and no few-shot candidates: nothing beats the start
    scripted = scripted_demo_judge(store)
    fake.reply = type(scripted)(
        base=scripted.base,
        items=scripted.items,
        optimizer_model=OPTIMIZER,
        optimizer_modes=("useless",),
        seed=scripted.seed,
    )
    at.number_input(key=_setting("fewshot_candidates")).set_value(0).run()
    at.button(key=Judge.IMPROVE_START).click().run()
    job = _wait(store, dataset_id)
    assert job.status == "done", job.error
    at.run()
    _ok(at)
    assert "none is offered for saving" in _text(at)
    assert not [b for b in at.button if str(b.key or "").startswith(Judge.IMPROVE_SAVE)]


def test_cancel_stops_the_job_and_keeps_what_is_done(improve, world: World) -> None:
    at = improve()
    store, fake = world.store, world.fake
    dataset_id, *_ = demo_ids(store)
    fake.latency = 0.05
    at.button(key=Judge.IMPROVE_START).click().run()
    _ok(at)
    deadline = time.monotonic() + 60
    while fake.count < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    at.run()
    at.button(key=Judge.IMPROVE_CANCEL).click().run()
    _ok(at)
    job = _wait(store, dataset_id)
    assert job.status == "cancelled"
    assert job.report is not None
    assert job.report["stopped"] == "cancelled"
    at.run()
    assert "Cancelled" in _text(at)
    assert at.button(key=Judge.IMPROVE_RESTART) is not None


def test_a_viewer_cannot_reach_improve(open_app: Callable[..., AppTest]) -> None:
    at = open_app(role="viewer", user="vic", page="judge")
    assert not [b for b in at.button if b.key == Judge.IMPROVE_START]
    assert not [s for s in at.segmented_control if s.key == Judge.SECTION]
