"""The Annotate page's pieces: which queue, and the rating area that shows one item at a time.

Everything shown comes from :mod:`evalcore.workflows.annotate` (blind by construction); every
answer goes through it too. This module keeps only what belongs to the browser session: the position
shown, when the item appeared, and answers the database could not take yet (kept here and handed back
to ``annotate.flush`` with the next action, which decides what is saved, refused or still waiting).

Speed: the rating area is a fragment (a label reruns only it) and every label is saved in the button's
callback, before the next item renders.
"""

from __future__ import annotations

import time
from typing import Any, Final

import streamlit as st

from evalcore.words import plural
from evalcore.workflows import Session
from evalcore.workflows import annotate as flow
from evalcore.workflows.annotate import AnnotationTask, Answer, Queues, Screen, shown_choice
from ui import state
from ui.render import md_escape, show_text
from ui.state import Annotate
from ui.widgets import callback, fragment, note, show_note

#: Keyboard shortcuts of the navigation buttons (the label keys come from the workflow).
PREVIOUS_KEY: Final = "Left"
NEXT_KEY: Final = "Right"
SKIP_KEY: Final = "S"
UNSURE_KEY: Final = "U"
BROKEN_KEY: Final = "X"
UNSURE_HELP: Final = (
    "Keep your label and mark it unsure; without a label, the item comes back later."
)
BROKEN_HELP: Final = "The item cannot be rated (garbled, empty, wrong language…)."
FORMATTED, RAW = "Formatted", "Raw"
#: URL query parameters that keep the chosen queue across a reload.
DATASET_PARAM, CRITERION_PARAM = "dataset", "criterion"
#: Seconds between two counts of what the team has left (it reads every label of the dataset).
TEAM_EVERY_S: Final = 15.0

Queue = tuple[int, int]  # (dataset id, criterion id)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# --- choosing the queue ------------------------------------------------------------------------------


def _restore(persistent: str, widget: str, param: str, options: list[int]) -> None:
    """Before a picker renders: its value from the session, else the URL, else the first option."""
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


def _sync(persistent: str, widget: str) -> None:
    st.session_state[persistent] = st.session_state.get(widget)


def choose_queue(session: Session, project_id: int) -> tuple[Queues, int, int]:
    """The dataset and criterion pickers and the "go to item" box; stops the page with a hint when
    there is nothing to rate. Returns the queues and the chosen (dataset, criterion)."""
    wanted = _int(st.session_state.get(Annotate.DATASET)) or _int(
        st.query_params.get(DATASET_PARAM)
    )
    found = flow.queues(session, project_id, also_dataset=wanted)
    datasets = {d.id: d for d in found.datasets}
    if not datasets:
        st.info("There is no dataset to rate yet. A prompt engineer adds one on the Datasets page.")
        st.stop()
    left, right, jump = st.columns([3, 3, 1])
    _restore(Annotate.DATASET, Annotate.DATASET_PICK, DATASET_PARAM, list(datasets))
    dataset_id = left.selectbox(
        "Dataset",
        list(datasets),
        format_func=lambda i: f"{datasets[i].name} (v{datasets[i].version}, {datasets[i].kind})",
        key=Annotate.DATASET_PICK,
        on_change=_sync,
        args=(Annotate.DATASET, Annotate.DATASET_PICK),
    )
    fitting = {c.id: c for c in found.fitting(datasets[dataset_id])}
    if not fitting:
        right.info(f"No {datasets[dataset_id].kind} criterion exists yet: nothing to rate here.")
        st.stop()
    _restore(Annotate.CRITERION, Annotate.CRITERION_PICK, CRITERION_PARAM, list(fitting))
    criterion_id = right.selectbox(
        "Criterion",
        list(fitting),
        format_func=lambda i: fitting[i].name,
        key=Annotate.CRITERION_PICK,
        on_change=_sync,
        args=(Annotate.CRITERION, Annotate.CRITERION_PICK),
    )
    jump.number_input(
        "Go to item",
        min_value=1,
        value=None,
        step=1,
        key=Annotate.JUMP,
        placeholder="number",
        on_change=_jump,
        args=((dataset_id, criterion_id), session),
    )
    return found, dataset_id, criterion_id


def show_rubric(found: Queues, criterion_id: int) -> None:
    """The rubric in the sidebar, drawn once per queue (outside the rating fragment)."""
    criterion = next(c for c in found.criteria if c.id == criterion_id)
    with st.sidebar.container(border=True):
        st.markdown(f"**Rubric · {md_escape(criterion.name)}**")
        show_text(
            criterion.rubric or "No rubric was written for this criterion.", formatted=formatted()
        )


def open_queue(session: Session, queue: Queue) -> None:
    """Claim the caller's items of this queue once per session, giving back the open items of the
    queue they were on before."""
    opened: set[Queue] = st.session_state.setdefault(Annotate.OPENED, set())
    if queue in opened:
        return
    kept = flow.open_queue(session, *queue, previous=sorted(opened))
    opened.intersection_update(kept)
    opened.add(queue)


# --- session-side state: position, clock, kept answers ------------------------------------------------


def _positions() -> dict[Queue, int]:
    return st.session_state.setdefault(Annotate.POSITION, {})  # type: ignore[no-any-return]


def pending() -> dict[tuple[int, int, int], Answer]:
    """Answers the database did not take yet, by (dataset, criterion, item): the newest wins."""
    return st.session_state.setdefault(Annotate.PENDING, {})  # type: ignore[no-any-return]


def _seconds_on(queue: Queue, position: int, item_id: int) -> float | None:
    shown = st.session_state.get(Annotate.SHOWN)
    if shown is None or tuple(shown[:3]) != (queue, position, item_id):
        return None
    return round(time.monotonic() - float(shown[3]), 3)


def save_pending(session: Session) -> flow.Flush:
    """Hand every kept answer to the workflow; keep what must still wait, show what was refused."""
    kept = pending()
    outcome = flow.flush(session, list(kept.values()))
    for answer in outcome.saved:
        kept.pop(answer.key, None)
    for refusal in outcome.refused:
        kept.pop(refusal.answer.key, None)
        note(refusal.level, refusal.message, key=Annotate.NOTICE)
    return outcome


@callback
def _save_now(session: Session) -> None:
    if save_pending(session).done:
        note(
            "success",
            "Saved: every answer of this session is in the database.",
            key=Annotate.NOTICE,
        )
    else:
        note(
            "warning",
            "The database still does not answer. Your answers stay kept here.",
            key=Annotate.NOTICE,
        )


@callback
def _answer(session: Session, screen: Screen, label: str | None, flag: str | None) -> None:
    """Button callback: save one answer (a new revision), then move on; runs before the rerun.
    When the database cannot take it, the answer is kept and the item stays on screen."""
    task = screen.task
    queue = (screen.status.dataset_id, screen.status.criterion_id)
    if task is None or _positions().get(queue) != screen.position:
        return  # a second press that arrived after the first had already moved on
    answer = Answer(
        *queue,
        task.item_id,
        screen.position,
        label,
        flag,  # type: ignore[arg-type]
        str(st.session_state.get(Annotate.COMMENT) or "").strip() or None,
        task.revision,
        _seconds_on(queue, screen.position, task.item_id),
        task.swapped,
    )
    kept = pending()
    if answer.same_as(task):
        kept.pop(answer.key, None)  # the answer that is saved already: nothing to write
    else:
        kept[answer.key] = answer
    outcome = save_pending(session)
    if not outcome.done:
        note("warning", flow.UNAVAILABLE, key=Annotate.NOTICE)
    elif not any(r.answer.key == answer.key for r in outcome.refused):
        _positions()[queue] = flow.after(session, *queue, screen.position, screen.status.total)


@callback
def _go(session: Session, queue: Queue, position: int, target: int) -> None:
    save_pending(session)  # a kept answer is retried with every action
    if _positions().get(queue) == position:
        _positions()[queue] = target


@callback
def _jump(queue: Queue, session: Session) -> None:
    save_pending(session)
    value = _int(st.session_state.get(Annotate.JUMP))
    if value is not None:
        _positions()[queue] = value - 1
    st.session_state[Annotate.JUMP] = None


@callback
def _resume(session: Session, queue: Queue, include_skipped: bool) -> None:
    save_pending(session)
    found = flow.resume_position(session, *queue, include_skipped=include_skipped)
    if found is not None:
        _positions()[queue] = found


# --- drawing -------------------------------------------------------------------------------------------


def formatted() -> bool:
    """Whether item text shows its Markdown formatting (never images or links), or raw."""
    return bool(st.session_state.get(Annotate.VIEW, FORMATTED) == FORMATTED)


def _panel(title: str, text: str | None, *, expanded: bool = True) -> None:
    with st.expander(title, expanded=expanded):
        show_text(text, formatted=formatted())


def _show_item(task: AnnotationTask, kind: str) -> None:
    """The context folds (closed when long) so that the response stays in view."""
    _panel("Prompt", task.prompt)
    if task.context is not None:
        _panel("Context", task.context, expanded=len(task.context) <= 600)
    if task.reference is not None:
        _panel("Reference answer", task.reference, expanded=False)
    if kind == "pairwise":
        left, right = (
            (task.response_b, task.response_a)
            if task.swapped
            else (task.response_a, task.response_b)
        )
        col_a, col_b = st.columns(2)
        with col_a:
            _panel("Response A", left)
        with col_b:
            _panel("Response B", right)
    else:
        _panel("Response", task.response)


def _own_answer(task: AnnotationTask, kept: Answer | None) -> str:
    if kept is not None:
        return f"{md_escape(kept.describe())} · not saved yet, kept in this session"
    if task.revision == 0:
        return "Not answered yet."
    unsure = " (unsure)" if task.flag == "unsure" else ""
    text = (
        flow.FLAG_TEXT.get(task.flag or "skip", "Skipped")
        if task.label is None
        else f"Your label: **{md_escape(shown_choice(task.label, task.swapped))}**{unsure}"
    )
    return f"{text} · saved, revision {task.revision}"


def _controls(session: Session, screen: Screen) -> None:
    """The label buttons (each with the rubric's words for it), the other actions and the comment
    (stable keys, so moving to the next item updates these widgets instead of rebuilding them)."""
    task = screen.task
    assert task is not None
    queue = (screen.status.dataset_id, screen.status.criterion_id)
    position = screen.position
    kept = pending().get((*queue, task.item_id))
    current = shown_choice(task.label if kept is None else kept.label, task.swapped)
    st.caption(_own_answer(task, kept))
    for n, choice in enumerate(screen.keys):
        st.button(
            md_escape(f"{choice.text} · {choice.meaning}" if choice.meaning else choice.text),
            key=state.key(Annotate.LABEL, n),
            shortcut=choice.shortcut,
            type="primary" if choice.label == current else "secondary",
            width="stretch",
            on_click=_answer,
            args=(session, screen, shown_choice(choice.label, task.swapped), None),
        )
    labelled = task.revision > 0 and task.label is not None
    with st.container(horizontal=True, gap="small"):
        st.button("Previous", key=Annotate.PREVIOUS, shortcut=PREVIOUS_KEY, disabled=position == 0,
                  on_click=_go, args=(session, queue, position, position - 1))  # fmt: skip
        st.button("Next", key=Annotate.NEXT, shortcut=NEXT_KEY, on_click=_go,
                  args=(session, queue, position, position + 1))  # fmt: skip
        # skipping a labelled item moves on and keeps its label
        st.button(
            "Skip",
            key=Annotate.SKIP,
            shortcut=SKIP_KEY,
            on_click=_go if labelled else _answer,
            args=(session, queue, position, position + 1)
            if labelled
            else (session, screen, None, "skip"),
        )
        flags = (
            ("Unsure", Annotate.UNSURE, UNSURE_KEY, "unsure", task.label, UNSURE_HELP),
            ("Broken item", Annotate.BROKEN, BROKEN_KEY, "broken", None, BROKEN_HELP),
        )
        for text, key, shortcut, flag, label, help_text in flags:
            st.button(text, key=key, shortcut=shortcut, help=help_text,
                      type="primary" if task.flag == flag else "secondary",
                      on_click=_answer, args=(session, screen, label, flag))  # fmt: skip
    st.text_input(
        "Comment (optional, saved with the label)",
        key=Annotate.COMMENT,
        placeholder="Tab leaves this box, then use the keys",
    )


def _show_pending(session: Session) -> None:
    """While answers wait for the database: how many, and a button that saves them now."""
    kept = pending()
    if not kept:
        return
    items = ", ".join(str(a.position + 1) for a in kept.values())
    with st.container(border=True):
        st.warning(
            f"{plural(len(kept), 'answer')} not saved yet (item {items}): the database did not "
            "answer. They are kept in this session and saved with your next action.",
            icon=":material/cloud_off:",
        )
        st.button(
            "Save now", key=Annotate.SAVE_NOW, type="primary", on_click=_save_now, args=(session,)
        )


def _team_due(queue: Queue) -> bool:
    counted: dict[Queue, float] = st.session_state.setdefault(Annotate.TEAM, {})
    due = time.monotonic() - counted.get(queue, -TEAM_EVERY_S) >= TEAM_EVERY_S
    if due:
        counted[queue] = time.monotonic()
    return due


def _finished(session: Session, screen: Screen) -> None:
    level, text = screen.end_text()
    (st.success if level == "success" else st.info)(text)
    queue = (screen.status.dataset_id, screen.status.criterion_id)
    open_items, skipped = screen.status.remaining, screen.status.skipped
    with st.container(horizontal=True, gap="small"):
        st.button("Previous", key=Annotate.PREVIOUS, shortcut=PREVIOUS_KEY, on_click=_go,
                  args=(session, queue, screen.position, screen.position - 1))  # fmt: skip
        if open_items or skipped:
            back = (
                "Go to the first unanswered item" if open_items else "Go back to the skipped items"
            )
            st.button(back, key=Annotate.RESUME, type="primary", on_click=_resume,
                      args=(session, queue, not open_items))  # fmt: skip


@fragment
def rating_area(session: Session, queue: Queue, kind: str) -> None:
    """One item of the caller's queue, the label keys and the other actions (a fragment)."""
    _show_pending(session)
    positions = _positions()
    screen = flow.screen(session, *queue, positions.get(queue), team=_team_due(queue))
    if screen.empty:
        st.info(flow.NOTHING_TO_RATE)
        return
    positions[queue] = screen.position
    show_note(Annotate.NOTICE)
    task = screen.task
    if task is None:
        _finished(session, screen)
        return
    shown = st.session_state.get(Annotate.SHOWN)
    if shown is None or tuple(shown[:3]) != (queue, screen.position, task.item_id):
        # a new item on screen: its clock starts, and the comment box shows its own comment
        st.session_state[Annotate.SHOWN] = (queue, screen.position, task.item_id, time.monotonic())
        st.session_state[Annotate.COMMENT] = task.comment or ""
    held = screen.held
    st.progress(min(1.0, screen.status.done / held) if held else 1.0, text=screen.progress_text())
    item_col, rate_col = st.columns([5, 2] if kind == "pairwise" else [3, 2], gap="medium")
    with item_col:
        st.segmented_control(
            "Show item text", (FORMATTED, RAW), key=Annotate.VIEW, default=FORMATTED, required=True,
            persist_state="session",
            help="Formatted renders lists, code and emphasis (never images or links); raw shows "
            "the text exactly as written.",
        )  # fmt: skip
        _show_item(task, kind)
    with rate_col:
        _controls(session, screen)
