"""The Annotate page with hostile text and a database that stops answering.

Item text never becomes an image or a link (formatted or raw), the formatted / raw choice is kept
for the session, and an answer the database cannot take is kept in the session and saved once the
database is back, exactly once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import event
from streamlit.testing.v1 import AppTest

from evalcore.labels import LIKERT_5
from evalcore.store import Store, create_store_engine
from evalcore.workflows import Server
from tests.pages.conftest import APP, sign_in
from ui import annotate_view, resources, state
from ui.render import WORD_JOINER
from ui.state import Annotate

PAYLOAD = (
    "Steps:\n\n- **first** ![pixel](http://attacker.example/p.png?d=1)\n"
    "- see [docs](https://attacker.example/docs) or <https://attacker.example/auto>\n"
    "- www.attacker.example and mail@attacker.example\n\n```\nx = [1](2)\n```"
)


def _seed(store: Store, prompt: str, n: int = 1) -> tuple[int, int]:
    project = store.list_projects()[0] if store.list_projects() else store.create_project("p")
    frame = pd.DataFrame(
        {
            "item_id": [f"i{k}" for k in range(n)],
            "prompt": [prompt] * n,
            "response": [f"answer {k}" for k in range(n)],
        }
    )
    dataset = store.save_dataset(project.id, "hostile", frame)
    criterion = store.create_criterion(project.id, "quality", kind="pointwise", scale=LIKERT_5)
    return dataset.id, criterion.id


def _open(ids: tuple[int, int], user: str = "zed") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    sign_in(at, user, "annotator")
    at.session_state[Annotate.DATASET], at.session_state[Annotate.CRITERION] = ids
    at.run()
    at.switch_page("pages/annotate.py")
    at.run()
    assert not at.exception, at.exception
    return at


def _prompt(at: AppTest) -> str:
    return str({e.label: e for e in at.expander}["Prompt"].markdown[0].value)


@pytest.fixture
def store(app_db: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    monkeypatch.setenv("EVALCORE_NO_DEMO", "1")
    db = Store.open(app_db)
    yield db
    db.close()


def test_formatted_item_text_keeps_lists_and_code_but_loads_and_links_nothing(
    app_db: str, store: Store
) -> None:
    at = _open(_seed(store, PAYLOAD))
    shown = _prompt(at)
    assert "- **first** \\[image: pixel\\]" in shown  # the list and the emphasis stay
    assert "docs (https:" + WORD_JOINER + "//attacker.example/docs)" in shown
    assert "![" not in shown
    assert "](" not in shown.split("```")[0]
    assert "<https" not in shown
    assert "https://" not in shown.split("```")[0]
    assert "www" + WORD_JOINER + ".attacker" in shown
    assert "mail@" + WORD_JOINER in shown
    assert "```\nx = [1](2)\n```" in shown  # code keeps its text as written


def test_raw_view_shows_the_text_as_written_and_is_kept_for_the_session(
    app_db: str, store: Store
) -> None:
    at = _open(_seed(store, PAYLOAD, n=2))
    at.segmented_control(key=Annotate.VIEW).set_value(annotate_view.RAW).run()
    shown = _prompt(at)
    assert "!\\[pixel\\](http:" + WORD_JOINER + "//" in shown  # every mark escaped
    assert "\\`\\`\\`" in shown  # not even code renders
    # rating the item moves on by keyboard-style buttons; the next item still shows raw
    at.button(key=state.key(Annotate.LABEL, 3)).click().run()
    assert not at.exception, at.exception
    assert "Item 2 of 2" in at.get("progress")[0].proto.text
    assert "!\\[pixel\\]" in _prompt(at)
    # another page and back: the choice is still raw
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/annotate.py").run()
    assert at.segmented_control(key=Annotate.VIEW).value == annotate_view.RAW
    assert "!\\[pixel\\]" in _prompt(at)


# --- the database stops answering while an annotator submits ----------------------------------


@pytest.fixture
def impatient_store(app_db: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """The app's store, on the same file, whose writers wait 50 ms for SQLite's lock instead of
    a minute (so that a held lock makes a submit fail at once, as an unreachable server would)."""
    engine = create_store_engine(app_db)

    @event.listens_for(engine, "connect")
    def _short_wait(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        dbapi_connection.execute("PRAGMA busy_timeout = 50")

    db = Store.open(engine)
    server = Server(store=db, secrets={})
    monkeypatch.setattr(resources, "server", lambda: server)
    yield db
    db.close()


class Locked:
    """Another connection that holds SQLite's write lock until released."""

    def __init__(self, url: str) -> None:
        self.conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        self.conn.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()


def _labels(store: Store, ids: tuple[int, int]) -> pd.DataFrame:
    return store.export_annotations(dataset_id=ids[0], criterion_id=ids[1])


@pytest.mark.parametrize("retry", ["save now", "next action"])
def test_an_answer_the_locked_database_refused_is_kept_and_saved_once_it_is_back(
    app_db: str, store: Store, impatient_store: Store, retry: str, tmp_path: Path
) -> None:
    ids = _seed(store, "plain text", n=3)
    at = _open(ids)
    lock = Locked(app_db)
    try:
        at.button(key=state.key(Annotate.LABEL, 3)).click().run()  # label 4 on item 1
        assert not at.exception, at.exception
        warnings = " ".join(str(w.value) for w in at.warning)
        assert "not saved yet" in warnings
        assert "kept in this session" in warnings
        assert "Item 1 of 3" in at.get("progress")[0].proto.text  # the item stays on screen
        assert "not saved yet" in " ".join(str(c.value) for c in at.caption)
        # a retry while the lock is still held keeps the answer
        at.button(key=Annotate.SAVE_NOW).click().run()
        assert "still does not answer" in " ".join(str(w.value) for w in at.warning)
        assert len(at.session_state[Annotate.PENDING]) == 1
    finally:
        lock.release()
    assert _labels(store, ids).empty  # nothing reached the database while it was locked
    if retry == "save now":
        at.button(key=Annotate.SAVE_NOW).click().run()
        assert "Saved" in " ".join(str(s.value) for s in at.success)
    else:
        at.button(key=Annotate.NEXT).click().run()
    assert not at.exception, at.exception
    assert not at.session_state[Annotate.PENDING]
    saved = _labels(store, ids)
    assert list(saved["label"]) == ["4"]
    assert list(saved["revision"]) == [1]
    assert not any(k == Annotate.SAVE_NOW for k in _button_keys(at))


def test_a_second_answer_while_locked_replaces_the_kept_one(
    app_db: str, store: Store, impatient_store: Store
) -> None:
    ids = _seed(store, "plain text", n=2)
    at = _open(ids)
    lock = Locked(app_db)
    try:
        at.button(key=state.key(Annotate.LABEL, 1)).click().run()  # 2, refused
        at.button(key=state.key(Annotate.LABEL, 4)).click().run()  # then 5, refused too
        assert len(at.session_state[Annotate.PENDING]) == 1
    finally:
        lock.release()
    at.button(key=state.key(Annotate.LABEL, 4)).click().run()  # 5 again: saved, and moves on
    assert not at.exception, at.exception
    saved = _labels(store, ids)
    assert list(saved["label"]) == ["5"]
    assert list(saved["revision"]) == [1]
    assert "Item 2 of 2" in at.get("progress")[0].proto.text


def _button_keys(at: AppTest) -> list[str]:
    return [str(b.key) for b in at.button]


Open = Callable[..., AppTest]
