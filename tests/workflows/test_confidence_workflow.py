"""The confidence workflow on the demo project in a real SQLite store: the trust-or-escalate view,
escalation into the annotation queue, "label next" and its queue order, and who is refused."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from evalcore.demo.seed import seed_demo
from evalcore.errors import ConfigError, PermissionDeniedError, SessionEndedError
from evalcore.store import JudgeResultInput, Store
from evalcore.workflows import Server, Session
from evalcore.workflows import confidence as C

PASSWORD = "a long workflow password"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo and its users seeded once; each test works on its own copy of the file."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    store = Store.open(f"sqlite:///{path}")
    project = seed_demo(store)
    other = store.create_project("elsewhere")
    for name, role in (("eve", "engineer"), ("dan", "engineer"), ("vic", "viewer"),
                       ("ana", "annotator")):  # fmt: skip
        store.add_user(name, role=role, password=PASSWORD, projects=[project.id])  # type: ignore[arg-type]
    store.add_user("oscar", role="engineer", password=PASSWORD, projects=[other.id])
    store.close()
    return path


@pytest.fixture
def server(seeded: Path, tmp_path: Path) -> Iterator[Server]:
    path = tmp_path / "demo.db"
    shutil.copy(seeded, path)
    opened = Server(store=Store.open(f"sqlite:///{path}"), secrets={})
    try:
        yield opened
    finally:
        opened.close()


def _session(server: Server, name: str) -> Session:
    return Session(server, server.store.open_session(name, method="password"))


def _grounded(server: Server) -> tuple[int, int, int, list[int]]:
    """(project, dataset, criterion, run ids) of the demo's groundedness runs."""
    store = server.store
    project = next(p for p in store.list_projects() if p.name != "elsewhere")
    criterion = next(c for c in store.list_criteria(project.id) if c.name == "groundedness")
    found = [r for r in store.list_runs(project_id=project.id) if r.criterion_id == criterion.id]
    found.sort(key=lambda r: (r.name.startswith("imported"), r.id))  # v1, v2, the legacy judge
    return project.id, found[0].dataset_id, criterion.id, [r.id for r in found]


def test_view_of_the_demo(server: Server) -> None:
    project, dataset, criterion, run_ids = _grounded(server)
    view = C.confidence(_session(server, "vic"), project, dataset, criterion, run_ids)
    assert "seeded split (seed 0)" in view.split
    by_title = {r.title: r for r in view.runs}
    legacy = by_title["imported: legacy-judge"]
    assert legacy.summary is None
    assert legacy.missing == C.NO_CONFIDENCE
    assert "--logprobs" in C.NO_CONFIDENCE
    v1 = next(r for t, r in by_title.items() if t.startswith("groundedness v1"))
    assert v1.summary is not None
    assert 0 < v1.summary.ece < 1
    assert v1.summary.brier_kind == "top-label"
    assert v1.threshold is not None
    assert v1.selective is not None
    sentence = v1.sentence or ""
    assert "of items at ≥ 90% agreement; people get the other" in sentence
    # the guarantee holds on test at least at the interval's upper end
    interval = v1.selective.test.interval
    assert interval is not None
    assert interval[1] >= 0.9
    assert v1.reliability is not None
    assert v1.coverage is not None
    assert v1.to_escalate > 0
    # the same data and settings come from the memo; other settings give another view
    again = C.confidence(_session(server, "eve"), project, dataset, criterion, run_ids)
    assert again.runs is view.runs  # the memo's, whoever asks
    assert (view.may_manage, again.may_manage) == (False, True)  # a viewer, an engineer
    stricter = C.confidence(
        _session(server, "eve"), project, dataset, criterion, run_ids, target_agreement=0.95
    )
    assert stricter is not view
    assert stricter.settings.target_agreement == 0.95


def test_settings_are_bounded(server: Server) -> None:
    project, dataset, criterion, run_ids = _grounded(server)
    eve = _session(server, "eve")
    for bad in ({"risk": 0.5}, {"target_agreement": 1.2}, {"bins": 2.5}, {"min_decided": 0}):
        with pytest.raises(ConfigError, match="must be"):
            C.confidence(eve, project, dataset, criterion, run_ids, **bad)  # type: ignore[arg-type]
    assert C.SETTINGS["min_decided"].default == 30


def test_escalate_puts_the_items_below_the_threshold_into_the_queue(server: Server) -> None:
    project, dataset, criterion, run_ids = _grounded(server)
    eve = _session(server, "eve")
    v1 = C.confidence(eve, project, dataset, criterion, run_ids).runs[0]
    assert v1.threshold is not None
    done = C.escalate(eve, project, dataset, criterion, v1.run_id)
    assert done.threshold == v1.threshold
    assert done.sent == v1.to_escalate == done.below + done.undecided
    active = server.store.active_queue_order(dataset, criterion)
    assert active is not None
    assert active.source == "escalation"
    order = server.store.get_queue_order(dataset, criterion, active.name)
    assert len(order.item_ids) == done.sent
    # the escalated items come out lowest confidence first after the undecided ones
    results = server.store.results_frame(v1.run_id).set_index("item_pk")
    below = [results.loc[pk, "confidence"] for pk in order.item_ids[done.undecided :]]
    assert below == sorted(below)
    assert max(below) < v1.threshold
    # an annotator's next claim is the first of them
    server.store.ensure_queue(dataset, criterion, "ana")
    task = server.store.queue_item(dataset, criterion, "ana", 0)
    assert task is not None
    assert task.item_id == order.item_ids[0]
    # a label given flows back: the item joins the split of the labelled items
    server.store.submit_annotation(
        task.item_id, criterion, "ana", label="pass", base_revision=task.revision
    )
    after = C.confidence(eve, project, dataset, criterion, run_ids).runs[0]
    assert after.selective is not None
    assert after.selective is not v1.selective
    parts = set(after.selective.dev_ids) | set(after.selective.test_ids)
    assert len(parts) == len(v1.selective.dev_ids) + len(v1.selective.test_ids) + 1


def test_the_count_on_the_button_is_what_escalating_sends_when_items_have_no_result(
    server: Server,
) -> None:
    """A run with no result on some unlabelled items: those are not the run's to escalate, and
    the count the page shows before the click is the count the click sends."""
    project, dataset, criterion, run_ids = _grounded(server)
    store = server.store
    v1 = store.results_frame(run_ids[0])
    matrix = store.annotation_matrix(dataset, criterion)
    labelled = set(matrix.index[matrix.notna().any(axis=1)].astype(str))
    unlabelled = v1[~v1["item_id"].astype(str).isin(labelled)]
    skipped = set(unlabelled["item_pk"].iloc[::2])  # every other unlabelled item: no result
    assert skipped
    partial = store.create_run(dataset, criterion, name="partial copy of v1")
    store.record_results(
        partial.id,
        [
            JudgeResultInput(
                item_id=int(row.item_pk),
                status=row.status,
                label=row.label,
                confidence=None if pd.isna(row.confidence) else float(row.confidence),
            )
            for row in v1.itertuples()
            if row.item_pk not in skipped
        ],
    )
    eve = _session(server, "eve")
    view = C.confidence(eve, project, dataset, criterion, [partial.id]).runs[0]
    assert view.threshold is not None
    done = C.escalate(eve, project, dataset, criterion, partial.id)
    assert done.sent == view.to_escalate > 0
    order = store.get_queue_order(
        dataset, criterion, store.active_queue_order(dataset, criterion).name
    )
    assert not skipped & set(order.item_ids)


def test_no_confidence_cannot_be_escalated(server: Server) -> None:
    project, dataset, criterion, run_ids = _grounded(server)
    legacy = run_ids[-1]
    with pytest.raises(ConfigError, match="logprobs"):
        C.escalate(_session(server, "eve"), project, dataset, criterion, legacy)


def test_label_next_proposes_a_batch_and_queues_it(server: Server) -> None:
    project, dataset, criterion, run_ids = _grounded(server)
    vic = _session(server, "vic")
    proposal = C.label_next(vic, project, dataset, criterion, run_ids[0], n=12)
    assert len(proposal.item_pks) == 12 == len(set(proposal.item_pks))
    assert proposal.sentence.startswith("label these 12 and ")
    assert "interval goes from ±" in proposal.sentence
    labelled = server.store.annotation_matrix(dataset, criterion)
    # items without a label, or without a majority yet (fewer than the 3 annotators per item)
    complete = set(labelled.index[labelled.notna().sum(axis=1) >= 3].astype(str))
    assert not complete & set(proposal.item_ids)
    assert C.label_metrics("binary")  # the headline kappa first
    with pytest.raises(ConfigError, match="no metric"):
        C.label_next(vic, project, dataset, criterion, run_ids[0], metric="nonsense")
    queued = C.queue_label_next(
        _session(server, "eve"), project, dataset, criterion, run_ids[0], n=12
    )
    assert queued == 12
    active = server.store.active_queue_order(dataset, criterion)
    assert active is not None
    assert active.source == "label_next"
    order = server.store.get_queue_order(dataset, criterion, active.name)
    assert order.item_ids == proposal.item_pks


def test_refusals(server: Server) -> None:
    project, dataset, criterion, run_ids = _grounded(server)
    store = server.store
    disabled = _session(server, "dan")
    store.disable_user("dan")
    ended = _session(server, "eve")
    store.end_session(ended.token or "")
    callers = {
        "viewer": _session(server, "vic"),
        "annotator": _session(server, "ana"),
        "outsider": _session(server, "oscar"),
        "disabled": disabled,
        "ended": ended,
    }
    commands = [
        lambda s: C.escalate(s, project, dataset, criterion, run_ids[0]),
        lambda s: C.queue_label_next(s, project, dataset, criterion, run_ids[0], n=5),
    ]
    reads = [
        lambda s: C.confidence(s, project, dataset, criterion, run_ids),
        lambda s: C.label_next(s, project, dataset, criterion, run_ids[0], n=5),
    ]
    for who, session in callers.items():
        wanted = SessionEndedError if who in ("disabled", "ended") else PermissionDeniedError
        for command in commands:
            with pytest.raises(wanted):
                command(session)
        if who != "viewer":
            for read in reads:
                with pytest.raises(wanted):
                    read(session)
    # the viewer reads; nothing was queued by anyone refused
    assert C.confidence(callers["viewer"], project, dataset, criterion, run_ids).runs
    assert store.active_queue_order(dataset, criterion) is None
    # a dataset of another project is not found under this one
    other = next(p for p in store.list_projects() if p.name == "elsewhere")
    with pytest.raises(Exception, match="not in project"):
        C.confidence(_session(server, "eve"), other.id, dataset, criterion, run_ids)
