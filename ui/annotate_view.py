"""The Annotate page's pieces: which queue, and the rating area that shows one item at a time.

Blind by construction: what the rating area shows comes from :meth:`Store.queue_item` (the item, its
left/right order and this annotator's own latest answer) and :meth:`Store.queue_status`. Nothing here
reads judge results or other annotators' labels.

Claims: the store hands items out in batches (``Store.ensure_queue``); the rating area claims the next
batch when nothing open is left, and opening another queue gives the open items of the previous one
back (``Store.release_claims``; signing out does the same, in ui.identity).

Speed: the rating area is a fragment (a label reruns only it), reads one item per run, and every
label is committed by ``submit_annotation`` in the button's callback, before the next item renders.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from evalcore.errors import EvalcoreError, StoreError
from evalcore.labels import Scale
from evalcore.store import (
    AnnotationFlag,
    AnnotationTask,
    CriterionRecord,
    DatasetRecord,
    ProjectRecord,
    QueueStatus,
    RevisionConflictError,
    Store,
)
from evalcore.words import plural
from ui import cache, state
from ui.render import md_escape, show_error, show_text
from ui.resources import database_url, get_store
from ui.state import Annotate

Queue = tuple[int, int, str]  # (dataset id, criterion id, annotator)

#: Keyboard shortcuts of the navigation buttons (the label keys come from :func:`label_keys`).
PREVIOUS_KEY = "Left"
NEXT_KEY = "Right"
SKIP_KEY = "S"
UNSURE_KEY = "U"
BROKEN_KEY = "X"
UNSURE_HELP = "Keep your label and mark it unsure; without a label, the item comes back later."
BROKEN_HELP = "The item cannot be rated (garbled, empty, wrong language…)."

#: How item text is shown: its Markdown structure rendered (without images or links), or as written.
FORMATTED = "Formatted"
RAW = "Raw"
VIEWS = (FORMATTED, RAW)

#: URL query parameters that keep the chosen queue across a reload.
DATASET_PARAM = "dataset"
CRITERION_PARAM = "criterion"

# --- pure helpers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelKey:
    """One label button: the label as displayed on this screen, its text and its shortcut."""

    label: str
    text: str
    shortcut: str | None


_FLAG_TEXT = {"skip": "Skipped", "unsure": "Marked unsure", "broken": "Marked broken"}
_PAIRWISE_TEXT = {"A": ("A is better", "A"), "B": ("B is better", "B"), "TIE": ("Tie", "T")}


def label_keys(scale: Scale) -> list[LabelKey]:
    """The label buttons of a scale, in scale order, each with its keyboard shortcut.

    Pairwise choices use A, B and T. Other scales use digits: a label that is itself one digit keeps
    it (a 1–5 scale is typed 1–5), otherwise the n-th label is n (up to 9).

    >>> [(k.label, k.shortcut) for k in label_keys(Scale(("pass", "fail"), "binary"))]
    [('pass', '1'), ('fail', '2')]
    """
    labels = scale.display_labels
    own_digits = all(len(x) == 1 and x.isdigit() for x in labels)
    pairwise = {**_PAIRWISE_TEXT} if scale.kind == "pairwise" else {}
    digits = [x if own_digits else (str(n) if n <= 9 else None) for n, x in enumerate(labels, 1)]
    return [LabelKey(x, *pairwise.get(x, (x, d))) for x, d in zip(labels, digits, strict=True)]


def shown_choice(label: str | None, swapped: bool) -> str | None:
    """A pairwise label as the annotator sees it (A = left), or back: the mapping is its own inverse.

    >>> shown_choice("A", True), shown_choice("TIE", True), shown_choice("B", False)
    ('B', 'TIE', 'B')
    """
    if swapped and label in ("A", "B"):
        return "B" if label == "A" else "A"
    return label


# --- choosing the queue ---------------------------------------------------------------------------


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _sync_pick(persistent: str, widget: str) -> None:
    st.session_state[persistent] = st.session_state.get(widget)


def _restore(persistent: str, widget: str, param: str, options: Sequence[int]) -> None:
    """Before the picker renders: its value from the session, else the URL, else the first option."""
    wanted = _int(st.session_state.get(persistent))
    if wanted not in options:
        wanted = _int(st.query_params.get(param))
    if wanted not in options:
        wanted = options[0]
    st.session_state[persistent] = wanted
    if st.session_state.get(widget) != wanted:
        st.session_state[widget] = wanted
    if st.query_params.get(param) != str(wanted):
        st.query_params[param] = str(wanted)


def choose_queue(
    store: Store, project: ProjectRecord, annotator: str
) -> tuple[DatasetRecord, CriterionRecord]:
    """The dataset and criterion pickers and the "go to item" box; stops the page with a hint when
    there is nothing to rate."""
    datasets = {d.id: d for d in store.list_datasets(project.id, latest_only=True)}
    wanted = _int(st.session_state.get(Annotate.DATASET)) or _int(
        st.query_params.get(DATASET_PARAM)
    )
    if wanted is not None and wanted not in datasets:  # an older version, opened from a link
        try:
            older = cache.dataset(get_store(), wanted)
        except EvalcoreError:
            older = None
        if older is not None and older.project_id == project.id:
            datasets[older.id] = older
    if not datasets:
        st.info("There is no dataset to rate yet. A prompt engineer adds one on the Datasets page.")
        st.stop()
    criteria = store.list_criteria(project.id)
    left, right, jump = st.columns([3, 3, 1])
    _restore(Annotate.DATASET, Annotate.DATASET_PICK, DATASET_PARAM, list(datasets))
    dataset_id = left.selectbox(
        "Dataset",
        list(datasets),
        format_func=lambda i: f"{datasets[i].name} (v{datasets[i].version}, {datasets[i].kind})",
        key=Annotate.DATASET_PICK,
        on_change=_sync_pick,
        args=(Annotate.DATASET, Annotate.DATASET_PICK),
    )
    dataset = datasets[dataset_id]
    fitting = {c.id: c for c in criteria if c.kind == dataset.kind}
    if not fitting:
        right.info(f"No {dataset.kind} criterion exists yet, so there is nothing to rate here.")
        st.stop()
    _restore(Annotate.CRITERION, Annotate.CRITERION_PICK, CRITERION_PARAM, list(fitting))
    criterion_id = right.selectbox(
        "Criterion",
        list(fitting),
        format_func=lambda i: fitting[i].name,
        key=Annotate.CRITERION_PICK,
        on_change=_sync_pick,
        args=(Annotate.CRITERION, Annotate.CRITERION_PICK),
    )
    with jump:
        jump_box(dataset, fitting[criterion_id], annotator)
    return dataset, fitting[criterion_id]


def show_rubric(criterion: CriterionRecord) -> None:
    """The rubric in the sidebar: on screen beside every item, and drawn once per queue (outside
    the rating fragment, so moving to the next item does not redraw it)."""
    rubric = criterion.rubric or "No rubric was written for this criterion."
    with st.sidebar.container(border=True):
        st.markdown(f"**Rubric · {md_escape(criterion.name)}**")
        show_text(rubric, formatted=formatted())


def open_queue(store: Store, dataset: DatasetRecord, criterion: CriterionRecord, who: str) -> None:
    """Claim the annotator's items of this queue once per session (a no-op in the store while they
    hold open items), and give back the open items of the queue they were on before."""
    opened: set[tuple[str, int, int, str]] = st.session_state.setdefault(Annotate.OPENED, set())
    key = (database_url(), dataset.id, criterion.id, who)
    if key in opened:
        return
    for earlier in [k for k in opened if k[0] == key[0] and k[3] == who]:
        try:
            store.release_claims(earlier[1], earlier[2], who)
        except EvalcoreError:
            continue  # kept for a later try; else the claims run out on their own after the lease
        opened.discard(earlier)
    store.ensure_queue(dataset.id, criterion.id, who)
    opened.add(key)


# --- the rating area ------------------------------------------------------------------------------


def _positions() -> dict[Queue, int]:
    return st.session_state.setdefault(Annotate.POSITION, {})  # type: ignore[no-any-return]


def _notice(level: str, text: str) -> None:
    st.session_state[Annotate.NOTICE] = (level, text)


def _seconds_on(queue: Queue, position: int, item_id: int) -> float | None:
    shown = st.session_state.get(Annotate.SHOWN)
    if shown is None or tuple(shown[:3]) != (queue, position, item_id):
        return None
    return round(time.monotonic() - float(shown[3]), 3)


def _after(store: Store, queue: Queue, position: int, total: int) -> int:
    """Where to go after an answer: the next unanswered item, wrapping round; the end when none."""
    found = store.next_open_position(*queue, start=position + 1)
    if found is None and position > 0:
        found = store.next_open_position(*queue, start=0)
    return total if found is None else found


# --- answers the database could not take yet -------------------------------------------------------


@dataclass(frozen=True)
class PendingAnswer:
    """An answer the database did not take (it was unreachable or locked), kept in the session
    until it is saved. Saving it again is safe: a submit is idempotent per base revision."""

    queue: Queue
    position: int
    item_id: int
    label: str | None
    flag: AnnotationFlag | None
    comment: str | None
    base_revision: int
    time_spent_s: float | None
    swapped: bool

    def submit(self, store: Store) -> None:
        store.submit_annotation(
            self.item_id,
            self.queue[1],
            self.queue[2],
            label=self.label,
            base_revision=self.base_revision,
            comment=self.comment,
            flag=self.flag,
            time_spent_s=self.time_spent_s,
            display_swapped=self.swapped,
        )


UNAVAILABLE = (
    "The database did not answer, so this answer is not saved yet. It is kept in this session "
    "and saved with your next action, or press Save now."
)


def pending_answers() -> dict[tuple[Queue, int], PendingAnswer]:
    """This session's unsaved answers by (queue, item id): the newest answer to an item wins."""
    return st.session_state.setdefault(Annotate.PENDING, {})  # type: ignore[no-any-return]


def unavailable(exc: EvalcoreError) -> bool:
    """Whether a store error means "the database could not be reached or was locked" (worth
    retrying) rather than a refusal of this answer (a conflict, an unknown item, a bad label)."""
    return type(exc) is StoreError and exc.__cause__ is not None


def _flush() -> tuple[bool, set[tuple[Queue, int]]]:
    """Save the kept answers, oldest first: (whether none is left, the keys the database refused).

    An answer the database refuses for good (changed in another window, item gone) is dropped
    with a notice that says so; nothing is dropped silently. Stops at the first answer the database
    still cannot take."""
    pending = pending_answers()
    refused: set[tuple[Queue, int]] = set()
    if not pending:
        return True, refused
    store = get_store()
    for key, answer in list(pending.items()):
        try:
            answer.submit(store)
        except RevisionConflictError:
            refused.add(key)
            _notice(
                "warning",
                f"Your answer to item {answer.position + 1} was not saved: the item was changed "
                "in another window meanwhile. It now shows that answer; choose again to change it.",
            )
        except EvalcoreError as exc:
            if unavailable(exc):
                return False, refused
            refused.add(key)
            _notice("error", f"Your answer to item {answer.position + 1} was not saved: {exc}")
        del pending[key]
    return True, refused


def save_pending() -> bool:
    """Save the answers kept in this session; True when none is left (see :func:`_flush`)."""
    return _flush()[0]


def _save_now() -> None:
    if save_pending():
        _notice("success", "Saved: every answer of this session is in the database.")
    else:
        _notice("warning", "The database still does not answer. Your answers stay kept here.")


def _answer(
    queue: Queue,
    position: int,
    total: int,
    task: AnnotationTask,
    label: str | None,
    flag: AnnotationFlag | None,
) -> None:
    """Button callback: commit one answer (a new revision), then move on. Runs before the rerun.

    When the database cannot take it, the answer is kept in the session (see :class:`PendingAnswer`)
    and the item stays on screen."""
    positions = _positions()
    if positions.get(queue) != position:
        return  # a second press that arrived after the first had already moved on
    comment = str(st.session_state.get(Annotate.COMMENT) or "").strip() or None
    answer = PendingAnswer(
        queue,
        position,
        task.item_id,
        label,
        flag,
        comment,
        task.revision,
        _seconds_on(queue, position, task.item_id),
        task.swapped,
    )
    pending = pending_answers()
    key = (queue, task.item_id)
    if task.revision > 0 and (task.label, task.flag, task.comment) == (label, flag, comment):
        pending.pop(key, None)  # the answer that is saved already: nothing to write
    else:
        pending[key] = answer  # the newest answer to an item replaces one kept before
    saved, refused = _flush()
    if not saved:
        _notice("warning", UNAVAILABLE)
        return
    if key in refused:
        return
    try:
        positions[queue] = _after(get_store(), queue, position, total)
    except EvalcoreError:
        _notice("warning", "Saved. The next item cannot be found just now: press Next.")


def _go(queue: Queue, position: int, target: int) -> None:
    save_pending()  # a kept answer is retried with every action; moving on needs no database
    positions = _positions()
    if positions.get(queue) == position:
        positions[queue] = target


def _jump(queue: Queue) -> None:
    save_pending()
    value = _int(st.session_state.get(Annotate.JUMP))
    if value is not None:
        _positions()[queue] = value - 1
    st.session_state[Annotate.JUMP] = None


def jump_box(dataset: DatasetRecord, criterion: CriterionRecord, annotator: str) -> None:
    """A box to go straight to an item of the queue by its number (beside the queue pickers)."""
    st.number_input(
        "Go to item",
        min_value=1,
        value=None,
        step=1,
        key=Annotate.JUMP,
        placeholder="number",
        on_change=_jump,
        args=((dataset.id, criterion.id, annotator),),
    )


def _resume(queue: Queue, include_skipped: bool) -> None:
    store = get_store()
    save_pending()
    try:
        found = store.next_open_position(*queue, start=0, include_skipped=include_skipped)
    except EvalcoreError:
        _notice("warning", "The database did not answer. Try again in a moment.")
        return
    if found is not None:
        _positions()[queue] = found


def _show_notice() -> None:
    notice = st.session_state.pop(Annotate.NOTICE, None)
    if notice is None:
        return
    level, text = notice
    show = {"warning": st.warning, "success": st.success}.get(level, st.error)
    show(text, icon=":material/info:")


def _show_pending() -> None:
    """While answers wait for the database: how many, and a button that saves them now."""
    pending = pending_answers()
    if not pending:
        return
    items = ", ".join(str(a.position + 1) for a in pending.values())
    with st.container(border=True):
        st.warning(
            f"{plural(len(pending), 'answer')} not saved yet (item {items}): the database did not "
            "answer. They are kept in this session and saved with your next action.",
            icon=":material/cloud_off:",
        )
        st.button("Save now", key=Annotate.SAVE_NOW, type="primary", on_click=_save_now)


def formatted() -> bool:
    """Whether item text shows its Markdown formatting (the annotator's choice, kept for the
    session); raw shows it exactly as written. Neither loads an image or makes a link."""
    return bool(st.session_state.get(Annotate.VIEW, FORMATTED) == FORMATTED)


def view_switch() -> None:
    """The formatted / raw switch (no shortcut of its own: the rating keys stay as they are)."""
    st.segmented_control(
        "Show item text",
        VIEWS,
        key=Annotate.VIEW,
        default=FORMATTED,
        required=True,
        persist_state="session",
        help="Formatted renders lists, code and emphasis (never images or links); raw shows the "
        "text exactly as written.",
    )


def _panel(title: str, text: str | None, *, expanded: bool = True) -> None:
    with st.expander(title, expanded=expanded):
        show_text(text, formatted=formatted())


def _show_item(task: AnnotationTask, kind: str) -> None:
    _panel("Prompt", task.prompt)
    if task.context is not None:
        _panel("Context", task.context)
    if task.reference is not None:
        _panel("Reference answer", task.reference, expanded=False)
    if kind == "pairwise":
        left_text, right_text = (
            (task.response_b, task.response_a)
            if task.swapped
            else (task.response_a, task.response_b)
        )
        col_a, col_b = st.columns(2)
        with col_a:
            _panel("Response A", left_text)
        with col_b:
            _panel("Response B", right_text)
    else:
        _panel("Response", task.response)


def _own_answer(task: AnnotationTask, kept: PendingAnswer | None) -> str:
    if kept is not None:
        choice = _FLAG_TEXT.get(kept.flag or "skip", "Skipped")
        if kept.label is not None:
            choice = f"Your label: **{md_escape(shown_choice(kept.label, task.swapped))}**"
        return f"{choice} · not saved yet, kept in this session"
    if task.revision == 0:
        return "Not answered yet."
    unsure = " (unsure)" if task.flag == "unsure" else ""
    text = (
        _FLAG_TEXT.get(task.flag or "skip", "Skipped")
        if task.label is None
        else (f"Your label: **{md_escape(shown_choice(task.label, task.swapped))}**{unsure}")
    )
    return f"{text} · saved, revision {task.revision}"


def _controls(
    queue: Queue, position: int, total: int, task: AnnotationTask, criterion: CriterionRecord
) -> None:
    """The label buttons, the other actions, the comment and the rubric (stable keys throughout,
    so that moving to the next item updates these widgets instead of rebuilding them)."""
    kept = pending_answers().get((queue, task.item_id))
    current = shown_choice(task.label if kept is None else kept.label, task.swapped)
    st.caption(_own_answer(task, kept))
    with st.container(horizontal=True, gap="small"):
        for n, choice in enumerate(label_keys(criterion.scale)):
            st.button(
                md_escape(choice.text),
                key=state.key(Annotate.LABEL, n),
                shortcut=choice.shortcut,
                type="primary" if choice.label == current else "secondary",
                on_click=_answer,
                args=(queue, position, total, task, shown_choice(choice.label, task.swapped), None),
            )
    labelled = task.revision > 0 and task.label is not None
    with st.container(horizontal=True, gap="small"):
        st.button(
            "Previous",
            key=Annotate.PREVIOUS,
            shortcut=PREVIOUS_KEY,
            disabled=position == 0,
            on_click=_go,
            args=(queue, position, position - 1),
        )
        st.button(
            "Next",
            key=Annotate.NEXT,
            shortcut=NEXT_KEY,
            on_click=_go,
            args=(queue, position, position + 1),
        )
        # skipping a labelled item moves on and keeps its label
        st.button(
            "Skip",
            key=Annotate.SKIP,
            shortcut=SKIP_KEY,
            on_click=_go if labelled else _answer,
            args=(queue, position, position + 1)
            if labelled
            else (queue, position, total, task, None, "skip"),
        )
        flags = (
            ("Unsure", Annotate.UNSURE, UNSURE_KEY, "unsure", task.label, UNSURE_HELP),
            ("Broken item", Annotate.BROKEN, BROKEN_KEY, "broken", None, BROKEN_HELP),
        )
        for text, key, shortcut, flag, label, help_text in flags:
            st.button(
                text,
                key=key,
                shortcut=shortcut,
                help=help_text,
                type="primary" if task.flag == flag else "secondary",
                on_click=_answer,
                args=(queue, position, total, task, label, flag),
            )
    st.text_input(
        "Comment (optional, saved with the label)",
        key=Annotate.COMMENT,
        placeholder="Tab leaves this box, then use the keys",
    )


#: Seconds between two counts of what the team has left (it reads every label of the dataset).
TEAM_EVERY_S = 15.0


def _status(store: Store, queue: Queue) -> QueueStatus:
    """The annotator's queue status; what the team has left is counted again every
    :data:`TEAM_EVERY_S` seconds, and in between the last count is shown."""
    counted: dict[Queue, tuple[float, int | None]] = st.session_state.setdefault(Annotate.TEAM, {})
    last = counted.get(queue)
    fresh = last is not None and time.monotonic() - last[0] < TEAM_EVERY_S
    status = store.queue_status(*queue, team=not fresh)
    if last is not None and fresh:
        return dataclasses.replace(status, team_left=last[1])
    counted[queue] = (time.monotonic(), status.team_left)
    return status


def _team_text(status: QueueStatus) -> str:
    """ " · 150 left for the team": the items of the dataset that still need a label."""
    if status.team_left is None:
        return ""
    return f" · {status.team_left} left for the team"


def _finished(queue: Queue, status: QueueStatus) -> None:
    position = status.total
    open_items = status.remaining
    held = status.total - status.released
    if status.finished:
        everything = (
            "The one item in this queue has"
            if held == 1
            else f"All {held} items in this queue have"
        )
        team = (
            f" The team has {plural(status.team_left, 'item')} left to label."
            if status.team_left
            else ""
        )
        st.success(f"{everything} your label. Thank you!{team}")
    else:
        st.info(
            f"You reached the end of the queue: {status.done} of {held} labelled, "
            f"{open_items} not answered yet and {status.skipped} skipped or flagged."
        )
    back = "Go to the first unanswered item" if open_items else "Go back to the skipped items"
    with st.container(horizontal=True, gap="small"):
        st.button(
            "Previous",
            key=Annotate.PREVIOUS,
            shortcut=PREVIOUS_KEY,
            on_click=_go,
            args=(queue, position, position - 1),
        )
        if open_items or status.skipped:
            st.button(
                back,
                key=Annotate.RESUME,
                type="primary",
                on_click=_resume,
                args=(queue, not open_items),
            )


@st.fragment
def rating_area(dataset: DatasetRecord, criterion: CriterionRecord, annotator: str) -> None:
    """One item of the annotator's queue, the label buttons and the rubric (a fragment)."""
    store = get_store()
    queue: Queue = (dataset.id, criterion.id, annotator)
    _show_pending()
    try:
        status = _status(store, queue)
    except EvalcoreError as exc:
        show_error(exc, title="The queue cannot be read just now")
        return
    if status.total == 0:
        st.info(
            "There is nothing for you to rate here: every item already has the number of "
            "annotators this project asks for. A prompt engineer can raise that number on the "
            "Datasets page."
        )
        return
    positions = _positions()
    position = positions.get(queue)
    if status.remaining == 0:
        # Nothing open left: claim the next batch (a no-op when every item has its annotators).
        before = status.total
        try:
            status = store.ensure_queue(*queue)
        except EvalcoreError as exc:
            show_error(exc, title="The next items cannot be claimed just now")
            return
        if status.remaining and (position is None or position >= before):
            position = status.next_position
    if position is None:
        position = status.total if status.next_position is None else status.next_position
    position = max(0, min(int(position), status.total))
    positions[queue] = position
    _show_notice()
    try:
        task = store.queue_item(*queue, position) if position < status.total else None
    except EvalcoreError as exc:
        show_error(exc, title="The item cannot be read just now")
        return
    if task is None:
        _finished(queue, status)
        return
    shown = st.session_state.get(Annotate.SHOWN)
    if shown is None or tuple(shown[:3]) != (queue, position, task.item_id):
        # a new item on screen: its clock starts, and the comment box shows its own comment
        st.session_state[Annotate.SHOWN] = (queue, position, task.item_id, time.monotonic())
        st.session_state[Annotate.COMMENT] = task.comment or ""
    held = status.total - status.released
    st.progress(
        min(1.0, status.done / held) if held else 1.0,
        text=(
            f"**Item {position + 1} of {status.total}** · {status.done} labelled · "
            f"{status.skipped} skipped or flagged{_team_text(status)}"
        ),
    )
    wide = [5, 2] if dataset.kind == "pairwise" else [3, 2]
    item_col, rate_col = st.columns(wide, gap="medium")
    with item_col:
        view_switch()
        _show_item(task, dataset.kind)
    with rate_col:
        _controls(queue, position, status.total, task, criterion)
