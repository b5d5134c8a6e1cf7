"""Small hand-built stores for the report tests, on SQLite and (where storage is involved) PostgreSQL.

The ``tiny`` world, whose numbers the tests work out by hand:

- dataset ``tiny``: items q0..q7, metadata ``topic`` = a (q0-q3) / b (q4-q7);
- criterion ``fluency`` on a 1-3 ordinal scale;
- annotators: ana labels q0..q6 = 1, 2, 3, 3, 1, 2, 3 (q1 first as 3, then revised to 2, with a
  comment); ben labels q0..q3 = 1, 2, 2, 3; carl skipped q0 (a skip is no label);
  majority: q0 1, q1 2, q2 none (3 vs 2), q3 3, q4 1, q5 2, q6 3, q7 none;
- runs of template ``fluency-judge``: v1 labels q0..q7 = 1, 3, 2, 3, 3, unparsed, 3, 1 with scores;
  v2 labels q0..q6 = 1, 2, 3, 2, 1, 2, failed and has no result for q7.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from evalcore.labels import PAIRWISE, PASS_FAIL, Scale
from evalcore.store import JudgeResultInput, Store

BACKENDS = ["sqlite", "postgresql"]


def _admin(url: str) -> sa.Engine:
    return sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database URL on each backend (PostgreSQL skips without a server)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'report.sqlite'}"
        return
    server = request.getfixturevalue("postgres_url")
    name = f"evalcore_r_{uuid.uuid4().hex[:16]}"
    engine = _admin(server)
    with engine.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    engine.dispose()
    try:
        yield make_url(server).set(database=name).render_as_string(hide_password=False)
    finally:
        engine = _admin(server)
        with engine.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        engine.dispose()


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = Store.open(store_url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    """SQLite only: for the pure functions, where the backend does not matter."""
    opened = Store.open(f"sqlite:///{tmp_path / 'pure.sqlite'}")
    try:
        yield opened
    finally:
        opened.close()


@dataclass(frozen=True)
class Tiny:
    store: Store
    project_id: int
    dataset_id: int
    criterion_id: int
    v1: int
    v2: int
    pk: dict[str, int]


V1_LABELS = ["1", "3", "2", "3", "3", None, "3", "1"]
V1_SCORES = [1.2, 2.8, 2.1, 2.9, 2.6, None, 3.0, 1.1]
V2_LABELS = ["1", "2", "3", "2", "1", "2", None]


def build_tiny(store: Store, *, xss: bool = False) -> Tiny:
    """The tiny world (see the module). ``xss`` puts HTML and script payloads into its texts."""
    payload = "<script>alert(1)</script>"
    project = store.create_project(
        "tiny project", settings={"thresholds": {"balanced_accuracy": 0.6, "cohen_kappa": 0.3}}
    )
    items = pd.DataFrame(
        {
            "item_id": [f"q{i}" for i in range(8)],
            "prompt": [f"question {i}?" for i in range(8)],
            "response": [(payload if xss and i == 4 else f"answer {i}") for i in range(8)],
            "topic": ["a"] * 4 + ([payload if xss else "b"] * 4),
        }
    )
    dataset = store.save_dataset(project.id, "tiny", items)
    criterion = store.create_criterion(
        project.id,
        "fluency",
        kind="pointwise",
        scale=Scale.likert(1, 3),
        rubric="<b>bold</b> rubric" if xss else "Is it fluent?",
    )
    pk = {ext: int(i) for i, ext in store.items_frame(dataset.id)["item_id"].items()}
    labels = pd.DataFrame(
        {
            "item_id": [f"q{i}" for i in range(7)] + [f"q{i}" for i in range(4)],
            "annotator": ["ana"] * 7 + ["ben"] * 4,
            "label": [1, 3, 3, 3, 1, 2, 3, 1, 2, 2, 3],
        }
    )
    store.import_labels(dataset.id, criterion.id, labels)
    # ana revises q1 from 3 to 2 (the latest revision counts), with a comment
    store.submit_annotation(
        pk["q1"],
        criterion.id,
        "ana",
        label=2,
        base_revision=1,
        comment=("<img src=x onerror=alert(2)>" if xss else "on second thought, a 2"),
    )
    store.submit_annotation(
        pk["q0"], criterion.id, "carl", label=None, flag="skip", base_revision=0
    )
    template = store.create_template(project.id, "fluency-judge", criterion.id)
    runs = []
    for number, (labels_of, scores) in enumerate(
        ((V1_LABELS, V1_SCORES), (V2_LABELS, [None] * len(V2_LABELS))), start=1
    ):
        version = store.save_template_version(
            template.id,
            {"user": f"Rate the fluency, version {number}."},
            author="eve",
            created_at=datetime(2025, 5, number, tzinfo=UTC),
        )
        run = store.create_run(
            dataset.id,
            criterion.id,
            name=(f"<i>v{number}</i>" if xss and number == 2 else f"v{number}"),
            model="tiny-model",
            template_version_id=version.id,
            created_at=datetime(2025, 5, number, 12, tzinfo=UTC),
        )
        results = []
        for i, label in enumerate(labels_of):
            status = "ok" if label is not None else ("unparsed" if number == 1 else "failed")
            results.append(
                JudgeResultInput(
                    item_id=pk[f"q{i}"],
                    status=status,  # type: ignore[arg-type]
                    label=label,
                    score=scores[i],
                    reason=(payload if xss and i == 4 else f"reason {number}.{i}"),
                    raw=f'{{"score": {label}}}' if label else "no score here",
                    error=None if status != "failed" else "HTTP 500",
                )
            )
        store.record_results(run.id, results)
        store.set_run_status(run.id, "done")
        runs.append(run.id)
    return Tiny(store, project.id, dataset.id, criterion.id, runs[0], runs[1], pk)


@pytest.fixture
def tiny(store: Store) -> Tiny:
    return build_tiny(store)


@pytest.fixture
def tiny_sqlite(sqlite_store: Store) -> Tiny:
    return build_tiny(sqlite_store)


@dataclass(frozen=True)
class Binary:
    store: Store
    dataset_id: int
    criterion_id: int
    run_id: int


def build_binary(store: Store) -> Binary:
    """Ten items: q0..q5 labelled pass, pass, pass, fail, fail, fail by one annotator; the judge says
    pass, pass, fail, fail, fail, pass with scores 0.9, 0.8, 0.4, 0.3, 0.2, 0.6; on the unlabelled
    q6..q9 it says pass, pass, fail, fail."""
    project = store.create_project("binary project")
    items = pd.DataFrame({"item_id": [f"q{i}" for i in range(10)], "response": ["r"] * 10})
    dataset = store.save_dataset(project.id, "answers", items)
    criterion = store.create_criterion(project.id, "grounded", kind="pointwise", scale=PASS_FAIL)
    store.import_labels(
        dataset.id,
        criterion.id,
        pd.DataFrame(
            {
                "item_id": [f"q{i}" for i in range(6)],
                "annotator": "ana",
                "label": ["pass", "pass", "pass", "fail", "fail", "fail"],
            }
        ),
    )
    pk = {ext: int(i) for i, ext in store.items_frame(dataset.id)["item_id"].items()}
    verdicts = ["pass", "pass", "fail", "fail", "fail", "pass", "pass", "pass", "fail", "fail"]
    scores = [0.9, 0.8, 0.4, 0.3, 0.2, 0.6, 0.9, 0.7, 0.1, 0.2]
    run = store.create_run(dataset.id, criterion.id, name="grounded v1")
    store.record_results(
        run.id,
        [
            JudgeResultInput(item_id=pk[f"q{i}"], status="ok", label=v, score=s)
            for i, (v, s) in enumerate(zip(verdicts, scores, strict=True))
        ],
    )
    return Binary(store, dataset.id, criterion.id, run.id)


@dataclass(frozen=True)
class Pairwise:
    store: Store
    dataset_id: int
    criterion_id: int
    single: int
    both: int


def build_pairwise(store: Store) -> Pairwise:
    """Five pairwise items p0..p4 labelled A, B, TIE, A, B by one annotator. Run ``both`` says
    A, B, A, A, A in the AB order and A, A, TIE, B, A in the BA order (mapped back); run ``single``
    says A, B, TIE, A, A in the AB order only."""
    project = store.create_project("pairwise project")
    items = pd.DataFrame(
        {
            "item_id": [f"p{i}" for i in range(5)],
            "prompt": ["which is better?"] * 5,
            "response_a": [f"A{i}" for i in range(5)],
            "response_b": [f"B{i}" for i in range(5)],
        }
    )
    dataset = store.save_dataset(project.id, "pairs", items, kind="pairwise")
    criterion = store.create_criterion(project.id, "preference", kind="pairwise", scale=PAIRWISE)
    store.import_labels(
        dataset.id,
        criterion.id,
        pd.DataFrame(
            {
                "item_id": [f"p{i}" for i in range(5)],
                "annotator": "ana",
                "label": ["A", "B", "TIE", "A", "B"],
            }
        ),
    )
    pk = {ext: int(i) for i, ext in store.items_frame(dataset.id)["item_id"].items()}
    single = store.create_run(dataset.id, criterion.id, name="single")
    store.record_results(
        single.id,
        [
            JudgeResultInput(item_id=pk[f"p{i}"], status="ok", label=v, reason=f"because {i}")
            for i, v in enumerate(["A", "B", "TIE", "A", "A"])
        ],
    )
    both = store.create_run(dataset.id, criterion.id, name="both", order_mode="both")
    store.record_results(
        both.id,
        [
            JudgeResultInput(item_id=pk[f"p{i}"], status="ok", label=v, order="AB")
            for i, v in enumerate(["A", "B", "A", "A", "A"])
        ]
        + [
            JudgeResultInput(item_id=pk[f"p{i}"], status="ok", label=v, order="BA")
            for i, v in enumerate(["A", "A", "TIE", "B", "A"])
        ],
    )
    return Pairwise(store, dataset.id, criterion.id, single.id, both.id)
