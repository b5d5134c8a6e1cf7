"""The Annotate page through AppTest: labels by button, revisions, pairwise order, blindness, resume."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from evalcore.demo.seed import ensure_demo
from evalcore.labels import LIKERT_5
from evalcore.store import Store
from tests.pages.conftest import APP, sign_in
from ui import state
from ui.state import Annotate

Open = Callable[..., AppTest]


@pytest.fixture
def store(app_db: str) -> Store:
    """The app's database, with the demo seeded (as the first page view would)."""
    db = Store.open(app_db)
    ensure_demo(db)
    return db


def _ids(store: Store, dataset: str, criterion: str) -> tuple[int, int]:
    project = store.list_projects()[0]
    return (
        store.get_dataset_by_name(project.id, dataset).id,
        store.get_criterion_by_name(project.id, criterion).id,
    )


def annotate(
    open_app: Open,
    store: Store | None = None,
    *,
    user: str = "zed",
    role: str = "annotator",
    dataset: str = "support-answers",
    criterion: str = "helpfulness",
) -> AppTest:
    """Open the app as ``user`` and go to the Annotate page on (dataset, criterion), as Home does."""
    at = open_app(role=role, user=user)
    db = store or Store.open(_db_url())
    at.session_state[Annotate.DATASET], at.session_state[Annotate.CRITERION] = _ids(
        db, dataset, criterion
    )
    at.switch_page("pages/annotate.py")
    at.run()
    assert not at.exception, at.exception
    return at


def _db_url() -> str:
    import os

    return os.environ["EVALCORE_DATABASE_URL"]


def queued(store: Store, position: int, user: str = "zed") -> str:
    """The own id of the item at ``position`` of ``user``'s support-answers/helpfulness queue
    (claims skip items the demo's annotators already gave their labels)."""
    task = store.queue_item(*_ids(store, "support-answers", "helpfulness"), user, position)
    assert task is not None
    return task.external_id


def progress(at: AppTest) -> str:
    return at.get("progress")[0].proto.text


def click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click().run()
    assert not at.exception, at.exception
    return at


def tree_text(at: AppTest) -> str:
    """Every string the page sent, whatever the element."""
    return "\n".join(str(getattr(node, "proto", "")) for node in at._tree)


def latest(store: Store, dataset: str, criterion: str, user: str) -> pd.DataFrame:
    dataset_id, criterion_id = _ids(store, dataset, criterion)
    frame = store.export_annotations(dataset_id=dataset_id, criterion_id=criterion_id)
    frame = frame.astype(object).where(frame.notna(), None)
    return frame[frame["annotator"] == user].reset_index(drop=True)


# --- label widgets and shortcuts ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dataset", "criterion", "labels", "keys"),
    [
        ("support-answers", "helpfulness", ["1", "2", "3", "4", "5"], list("12345")),
        ("support-answers", "groundedness", ["pass", "fail"], ["1", "2"]),
        ("reply-preference", "preference", ["A is better", "B is better", "Tie"], list("abt")),
    ],
)
def test_the_label_buttons_follow_the_scale_and_show_their_keys(
    open_app: Open, store: Store, dataset: str, criterion: str, labels: list[str], keys: list[str]
) -> None:
    at = annotate(open_app, store, dataset=dataset, criterion=criterion)
    buttons = [at.button(key=state.key(Annotate.LABEL, n)) for n in range(len(labels))]
    # each key says what its label means, in the rubric's words ("5 · correct, complete and ...")
    assert [b.label.split(" · ")[0] for b in buttons] == labels
    if criterion != "preference":
        assert all(" · " in b.label for b in buttons)
    assert [b.proto.shortcut.lower() for b in buttons] == keys
    nav = {k: at.button(key=k).proto.shortcut.lower() for k in (Annotate.PREVIOUS, Annotate.NEXT)}
    assert nav == {Annotate.PREVIOUS: "left", Annotate.NEXT: "right"}
    flags = [at.button(key=k).proto.shortcut.lower() for k in (Annotate.SKIP, Annotate.UNSURE)]
    assert flags == ["s", "u"]
    assert at.button(key=Annotate.BROKEN).proto.shortcut.lower() == "x"
    # the rubric stays on screen in the sidebar, beside every item
    rubric = store.get_criterion_by_name(store.list_projects()[0].id, criterion).rubric
    assert rubric.splitlines()[0] in "\n".join(m.value for m in at.sidebar.markdown)


# --- saving on each label -------------------------------------------------------------------------


def test_a_label_is_saved_at_once_and_the_next_item_shows(open_app: Open, store: Store) -> None:
    at = annotate(open_app, store)
    assert progress(at).startswith("**Item 1 of 20**")
    click(at, state.key(Annotate.LABEL, 3))
    saved = latest(store, "support-answers", "helpfulness", "zed")
    assert saved[["item_id", "revision", "label", "flag", "source"]].to_dict("records") == [
        {"item_id": queued(store, 0), "revision": 1, "label": "4", "flag": None, "source": "ui"}
    ]
    assert saved.loc[0, "time_spent_s"] >= 0
    assert progress(at).startswith("**Item 2 of 20** · 1 labelled")
    click(at, state.key(Annotate.LABEL, 0))
    assert progress(at).startswith("**Item 3 of 20** · 2 labelled")
    assert latest(store, "support-answers", "helpfulness", "zed")["label"].tolist() == ["4", "1"]


def test_a_comment_is_saved_with_the_label(open_app: Open, store: Store) -> None:
    at = annotate(open_app, store)
    at.text_input(key=Annotate.COMMENT).set_value("Polite, but misses the return window.").run()
    click(at, state.key(Annotate.LABEL, 2))
    saved = latest(store, "support-answers", "helpfulness", "zed")
    assert saved.loc[0, "comment"] == "Polite, but misses the return window."
    assert saved.loc[0, "label"] == "3"
    # the next item starts with an empty box; going back shows that item's own comment
    assert at.text_input(key=Annotate.COMMENT).value == ""
    click(at, Annotate.PREVIOUS)
    assert at.text_input(key=Annotate.COMMENT).value == "Polite, but misses the return window."


def test_skip_and_flags_are_saved_and_counted(open_app: Open, store: Store) -> None:
    at = annotate(open_app, store)
    click(at, Annotate.SKIP)
    click(at, Annotate.BROKEN)
    click(at, Annotate.UNSURE)  # no label yet: an unsure skip
    assert progress(at).startswith("**Item 4 of 20** · 0 labelled · 3 skipped or flagged")
    saved = latest(store, "support-answers", "helpfulness", "zed")
    assert saved[["label", "flag"]].to_dict("records") == [
        {"label": None, "flag": "skip"},
        {"label": None, "flag": "broken"},
        {"label": None, "flag": "unsure"},
    ]
    # unsure on a labelled item keeps the label and marks it
    click(at, state.key(Annotate.LABEL, 4))
    click(at, Annotate.PREVIOUS)
    click(at, Annotate.UNSURE)
    last = latest(store, "support-answers", "helpfulness", "zed").iloc[-1]
    assert (last["item_id"], last["revision"], last["label"], last["flag"]) == (
        queued(store, 3),
        2,
        "5",
        "unsure",
    )


def test_previous_and_a_change_make_a_new_revision(open_app: Open, store: Store) -> None:
    at = annotate(open_app, store)
    click(at, state.key(Annotate.LABEL, 3))
    click(at, state.key(Annotate.LABEL, 3))
    click(at, Annotate.PREVIOUS)
    assert progress(at).startswith("**Item 2 of 20**")
    assert "Your label: **4** · saved, revision 1" in [c.value for c in at.caption]
    assert at.button(key=state.key(Annotate.LABEL, 3)).proto.type == "primary"
    click(at, state.key(Annotate.LABEL, 1))  # change 4 -> 2
    history = latest(store, "support-answers", "helpfulness", "zed")
    second = history[history["item_id"] == queued(store, 1)]
    assert second[["revision", "label", "latest"]].to_dict("records") == [
        {"revision": 1, "label": "4", "latest": False},
        {"revision": 2, "label": "2", "latest": True},
    ]
    # after the change the page goes back to the first item not answered yet
    assert progress(at).startswith("**Item 3 of 20** · 2 labelled")
    # pressing the same label again on an unchanged item writes nothing new
    click(at, Annotate.PREVIOUS)
    click(at, state.key(Annotate.LABEL, 1))
    assert len(latest(store, "support-answers", "helpfulness", "zed")) == 3


def test_a_change_made_in_another_window_is_not_overwritten(open_app: Open, store: Store) -> None:
    at = annotate(open_app, store)
    dataset_id, criterion_id = _ids(store, "support-answers", "helpfulness")
    task = store.queue_item(dataset_id, criterion_id, "zed", 0)
    assert task is not None
    store.submit_annotation(task.item_id, criterion_id, "zed", label=5, base_revision=0)
    click(at, state.key(Annotate.LABEL, 0))  # this window still shows revision 0
    assert "changed in another window" in at.warning[0].value
    assert progress(at).startswith("**Item 1 of 20**")
    assert "Your label: **5** · saved, revision 1" in [c.value for c in at.caption]
    click(at, state.key(Annotate.LABEL, 0))
    assert latest(store, "support-answers", "helpfulness", "zed")["label"].tolist() == ["5", "1"]


def test_go_to_an_item_by_number(open_app: Open, store: Store) -> None:
    at = annotate(open_app, store)
    at.number_input(key=Annotate.JUMP).set_value(15).run()
    assert progress(at).startswith("**Item 15 of 20**")
    assert at.number_input(key=Annotate.JUMP).value is None  # the box empties after the jump


# --- pairwise ------------------------------------------------------------------------------------


def test_pairwise_shows_the_personal_order_and_maps_back_to_a_and_b(
    open_app: Open, store: Store
) -> None:
    at = annotate(open_app, store, dataset="reply-preference", criterion="preference")
    dataset_id, criterion_id = _ids(store, "reply-preference", "preference")
    tasks = [store.queue_item(dataset_id, criterion_id, "zed", p) for p in range(20)]
    swapped = next(t for t in tasks if t is not None and t.swapped)
    straight = next(t for t in tasks if t is not None and not t.swapped)
    for task, expected in ((swapped, "B"), (straight, "A")):
        at.number_input(key=Annotate.JUMP).set_value(task.position + 1).run()
        assert progress(at).startswith(f"**Item {task.position + 1} of 20**")
        left, right = task.response_a or "", task.response_b or ""
        if task.swapped:
            left, right = right, left
        panels = {e.label: e for e in at.expander}
        assert panels["Response A"].markdown[0].value.startswith(left[:40].replace("$", "\\$"))
        assert panels["Response B"].markdown[0].value.startswith(right[:40].replace("$", "\\$"))
        click(at, state.key(Annotate.LABEL, 0))  # "A is better": the response shown on the left
        record = store.annotation_history(task.item_id, criterion_id, annotator="zed")[-1]
        assert (record.label, record.display_swapped) == (expected, task.swapped)


# --- blind ---------------------------------------------------------------------------------------


def test_the_page_is_blind_to_judges_and_other_annotators(
    open_app: Open, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset_id, criterion_id = _ids(store, "reply-preference", "preference")
    others = store.export_annotations(dataset_id=dataset_id, criterion_id=criterion_id)
    first = others[(others["item_id"] == "rp-001") & others["comment"].notna()]
    assert len(first), "the demo has another annotator's comment on the first item"
    judge_text = []
    for run in store.list_runs(project_id=store.list_projects()[0].id):
        if run.dataset_id != dataset_id:
            continue
        results = store.results_frame(run.id)
        mine = results[results["item_id"] == "rp-001"]
        judge_text += [str(v) for v in mine["reason"].dropna()]
        judge_text += [str(v) for v in mine["raw"].dropna()]
    assert judge_text, "the demo has judge reasons for the first item"

    # nothing that reads judge results or other people's labels may even be called
    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("the Annotate page must not read judge or other annotators' data")

    for name in (
        "results_frame",
        "list_runs",
        "run_progress",
        "annotation_matrix",
        "annotator_label_counts",
        "export_annotations",
        "annotation_history",
        "items_frame",
    ):
        monkeypatch.setattr(Store, name, refuse)
    at = annotate(open_app, store, dataset="reply-preference", criterion="preference")
    assert progress(at).startswith("**Item 1 of 20**")
    text = tree_text(at)
    for comment in first["comment"]:
        assert comment not in text
    for reason in judge_text:
        assert reason[:60] not in text
    for name in ("ana", "ben", "chloe", "dev", "farah"):
        assert name not in text.lower().split()
    click(at, state.key(Annotate.LABEL, 2))  # rating still works with all of that refused
    assert progress(at).startswith("**Item 2 of 20**")


def test_markup_in_an_item_is_shown_as_text(open_app: Open, store: Store) -> None:
    at = open_app(role="annotator", user="zed")
    project = store.list_projects()[0]
    evil = '<script>alert("x")</script> and <img src=x onerror="alert(1)"> cost $5'
    dataset = store.save_dataset(
        project.id,
        "markup",
        pd.DataFrame({"item_id": ["m1"], "prompt": ["Hi"], "response": [evil]}),
    )
    criterion = store.create_criterion(project.id, "plain", kind="pointwise", scale=LIKERT_5)
    at.session_state[Annotate.DATASET], at.session_state[Annotate.CRITERION] = (
        dataset.id,
        criterion.id,
    )
    at.switch_page("pages/annotate.py")
    at.run()
    response = {e.label: e for e in at.expander}["Response"].markdown[0]
    # formatted by default: the tags' "<" and ">" and the dollar are escaped, so all show as text
    assert response.value == (
        '\\<script\\>alert("x")\\</script\\> and \\<img src=x onerror="alert(1)"\\> cost \\$5'
    )
    assert response.proto.allow_html is False
    assert not at.get("html")


# --- queue, progress and resume -------------------------------------------------------------------


def test_resume_where_the_annotator_left_off_in_a_new_session(open_app: Open, store: Store) -> None:
    at = annotate(open_app, store)
    for _ in range(3):
        click(at, state.key(Annotate.LABEL, 4))
    click(at, Annotate.SKIP)
    # a new browser: a new session with nothing in it but the identity and the URL
    again = AppTest.from_file(APP, default_timeout=120)
    sign_in(again, "zed", "annotator")
    again.query_params = dict(at.query_params)
    again.run()
    again.switch_page("pages/annotate.py")
    again.query_params = dict(at.query_params)
    again.run()
    assert not again.exception
    assert progress(again).startswith("**Item 5 of 20** · 3 labelled · 1 skipped")


def test_the_queue_is_kept_in_the_url(open_app: Open, store: Store) -> None:
    at = annotate(open_app, store, dataset="support-answers", criterion="groundedness")
    dataset_id, criterion_id = _ids(store, "support-answers", "groundedness")
    assert at.query_params["dataset"] == str(dataset_id)
    assert at.query_params["criterion"] == str(criterion_id)
    fresh = AppTest.from_file(APP, default_timeout=120)
    sign_in(fresh, "zed", "annotator")
    fresh.run()
    fresh.switch_page("pages/annotate.py")
    fresh.query_params = {"dataset": str(dataset_id), "criterion": str(criterion_id)}
    fresh.run()
    assert fresh.selectbox(key=Annotate.CRITERION_PICK).value == criterion_id
    assert [b.label.split(" · ")[0] for b in fresh.button][:2] == ["pass", "fail"]


def test_the_end_of_a_queue_says_so_and_offers_the_skipped_items(
    open_app: Open, store: Store
) -> None:
    at = open_app(role="annotator", user="zed")
    project = store.list_projects()[0]
    small = store.save_dataset(
        project.id,
        "three",
        pd.DataFrame({"item_id": ["x", "y", "z"], "response": ["one", "two", "three"]}),
    )
    criterion = store.get_criterion_by_name(project.id, "helpfulness")
    at.session_state[Annotate.DATASET], at.session_state[Annotate.CRITERION] = (
        small.id,
        criterion.id,
    )
    at.switch_page("pages/annotate.py")
    at.run()
    click(at, state.key(Annotate.LABEL, 4))
    click(at, Annotate.SKIP)
    click(at, state.key(Annotate.LABEL, 4))
    assert "2 of 3 labelled" in at.info[0].value
    click(at, Annotate.RESUME)
    assert progress(at).startswith("**Item 2 of 3**")
    click(at, state.key(Annotate.LABEL, 2))
    assert "All 3 items" in at.success[0].value


def test_nothing_to_rate_when_every_item_has_its_annotators(open_app: Open, store: Store) -> None:
    project = store.list_projects()[0]
    small = store.save_dataset(
        project.id, "one", pd.DataFrame({"item_id": ["x"], "response": ["one"]})
    )
    criterion = store.get_criterion_by_name(project.id, "helpfulness")
    store.update_project_settings(project.id, {"annotators_per_item": 1})
    store.ensure_queue(small.id, criterion.id, "someone else")
    at = open_app(role="annotator", user="zed")
    at.session_state[Annotate.DATASET], at.session_state[Annotate.CRITERION] = (
        small.id,
        criterion.id,
    )
    at.switch_page("pages/annotate.py")
    at.run()
    assert "nothing for you to rate" in at.info[0].value


@pytest.mark.parametrize("role", ["engineer", "admin"])
def test_every_role_can_annotate(open_app: Open, store: Store, role: str) -> None:
    at = annotate(open_app, store, user=f"{role}-1", role=role)
    click(at, state.key(Annotate.LABEL, 4))
    assert latest(store, "support-answers", "helpfulness", f"{role}-1")["label"].tolist() == ["5"]


def test_the_page_itself_checks_who_is_signed_in(app_db: str) -> None:
    at = AppTest.from_file(APP.replace("app.py", "pages/annotate.py"), default_timeout=60)
    at.run()
    # nobody signed in, and the server has no account: nothing of the page, only the refusal
    assert "evalcore users add" in at.error[0].value
    assert not at.button
    sign_in(at, "eve", "viewer").run()  # a viewer does not annotate
    assert "not available to your role" in at.error[0].value
    assert not [b for b in at.button if b.key.startswith(Annotate.LABEL)]  # no label buttons


def test_the_next_batch_is_claimed_when_the_last_one_is_answered(
    open_app: Open, store: Store
) -> None:
    project = store.list_projects()[0]
    store.update_project_settings(project.id, {"claim_batch": 2})
    at = annotate(open_app, store)
    assert progress(at).startswith("**Item 1 of 2** · 0 labelled")
    click(at, state.key(Annotate.LABEL, 3))
    click(at, state.key(Annotate.LABEL, 3))
    assert progress(at).startswith("**Item 3 of 4** · 2 labelled")
    assert "left for the team" in progress(at)


def test_another_queue_gives_the_open_items_of_the_first_back(open_app: Open, store: Store) -> None:
    project = store.list_projects()[0]
    store.update_project_settings(project.id, {"claim_batch": 3})
    at = annotate(open_app, store)
    click(at, state.key(Annotate.LABEL, 3))
    dataset_id, helpfulness = _ids(store, "support-answers", "helpfulness")
    groundedness = store.get_criterion_by_name(project.id, "groundedness").id
    at.selectbox(key=Annotate.CRITERION_PICK).set_value(groundedness).run()
    assert not at.exception
    status = store.queue_status(dataset_id, helpfulness, "zed")
    assert (status.total, status.done, status.released) == (3, 1, 2)
    assert store.queue_status(dataset_id, groundedness, "zed").total == 3
