"""Rating items: the annotator's queues, the item on screen, and every answer saved or kept.

Blind by construction: what this module returns comes from the store's queue calls
(:class:`~evalcore.store.AnnotationTask`: the item, its left/right order and the caller's own latest
answer) and never from judge results or other people's labels. The annotator is always the caller:
no function takes an annotator's name.

Answers: :func:`submit` saves one (a new revision; idempotent per base revision). When the database
cannot take it (unreachable or locked), the page keeps the :class:`Answer` and hands every kept one
to :func:`flush` with its next action; :func:`flush` says which were saved, which the database
refused for good (and why, in words), and which must still wait. Nothing is dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from evalcore.errors import EvalcoreError, StoreError
from evalcore.labels import Scale
from evalcore.store import (
    AnnotationFlag,
    AnnotationTask,
    CriterionRecord,
    DatasetRecord,
    QueueStatus,
    RevisionConflictError,
)
from evalcore.words import plural
from evalcore.workflows._session import Caller, Session, caller

__all__ = [
    "FLAG_TEXT",
    "AnnotationTask",
    "Answer",
    "Flush",
    "LabelKey",
    "Queues",
    "Screen",
    "after",
    "flush",
    "label_keys",
    "open_queue",
    "queues",
    "resume_position",
    "screen",
    "shown_choice",
    "submit",
]

Level = Literal["info", "success", "warning", "error"]

_PAIRWISE_TEXT: Final = {"A": ("A is better", "A"), "B": ("B is better", "B"), "TIE": ("Tie", "T")}
FLAG_TEXT: Final[dict[str, str]] = {
    "skip": "Skipped",
    "unsure": "Marked unsure",
    "broken": "Marked broken",
}


@dataclass(frozen=True)
class LabelKey:
    """One label button: the label as displayed, its text, its keyboard shortcut and what it means
    (the rubric's words for it, when the rubric has a line for it)."""

    label: str
    text: str
    shortcut: str | None
    meaning: str = ""


def _meanings(rubric: str, labels: Sequence[str]) -> dict[str, str]:
    """The rubric's words for each label: text that follows the label and a colon, an equals sign
    or a dash at the start of a line or after a sentence (``5: fully answers``, ``- pass = …``,
    ``A: reply A is better. B: …``), up to the next such label or the end of the line.

    >>> _meanings("5: all of it\\n1 - none. 10: more", ["1", "5", "10"])
    {'5': 'all of it', '1': 'none.', '10': 'more'}
    """
    alternatives = "|".join(re.escape(x) for x in sorted(labels, key=len, reverse=True))
    marker = re.compile(rf"(?:^|(?<=[.;]\s))\**({alternatives})\**\s*[:=–—-]\s*", re.IGNORECASE)
    by_lower = {x.lower(): x for x in labels}
    found: dict[str, str] = {}
    for raw in rubric.splitlines():
        line = raw.strip().lstrip("-*•").strip()
        hits = list(marker.finditer(line))
        if not hits:
            continue
        for hit, following in zip(hits, [*hits[1:], None], strict=True):
            label = by_lower.get(hit.group(1).lower())
            words = line[hit.end() : following.start() if following else None].strip()
            if label is not None and words and label not in found:
                found[label] = words.replace("**", "")
    return found


def label_keys(scale: Scale, rubric: str = "") -> list[LabelKey]:
    """The label buttons of a scale, in scale order, each with its shortcut and meaning.

    Pairwise choices use A, B and T. Other scales use digits: a label that is itself one digit keeps
    it (a 1–5 scale is typed 1–5), otherwise the n-th label is n (up to 9).

    >>> [(k.label, k.shortcut, k.meaning) for k in label_keys(
    ...     Scale(("pass", "fail"), "binary"), "pass: answers it\\nfail: does not")]
    [('pass', '1', 'answers it'), ('fail', '2', 'does not')]
    """
    labels = scale.display_labels
    own_digits = all(len(x) == 1 and x.isdigit() for x in labels)
    pairwise = dict(_PAIRWISE_TEXT) if scale.kind == "pairwise" else {}
    digits = [x if own_digits else (str(n) if n <= 9 else None) for n, x in enumerate(labels, 1)]
    meanings = {} if scale.kind == "pairwise" else _meanings(rubric or "", labels)
    return [
        LabelKey(x, *pairwise.get(x, (x, d)), meanings.get(x, ""))
        for x, d in zip(labels, digits, strict=True)
    ]


def shown_choice(label: str | None, swapped: bool) -> str | None:
    """A pairwise label as the annotator sees it (A = left), or back: the mapping is its own inverse.

    >>> shown_choice("A", True), shown_choice("TIE", True), shown_choice("B", False)
    ('B', 'TIE', 'B')
    """
    if swapped and label in ("A", "B"):
        return "B" if label == "A" else "A"
    return label


# --- choosing a queue ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Queues:
    """The datasets the caller may rate in a project (newest versions, plus an older one asked
    for by id) and the project's criteria."""

    datasets: tuple[DatasetRecord, ...]
    criteria: tuple[CriterionRecord, ...]

    def fitting(self, dataset: DatasetRecord) -> tuple[CriterionRecord, ...]:
        """The criteria that rate items of this dataset's kind (pointwise or pairwise)."""
        return tuple(c for c in self.criteria if c.kind == dataset.kind)


def queues(session: Session, project_id: int, *, also_dataset: int | None = None) -> Queues:
    """What the caller can rate in the project; ``also_dataset`` adds an older version of a
    dataset (opened from a link) when it belongs to the project."""
    who = caller(session)
    datasets = {d.id: d for d in who.store.list_datasets(project_id, latest_only=True)}
    if also_dataset is not None and also_dataset not in datasets:
        try:
            older = who.store.get_dataset(also_dataset)
        except EvalcoreError:
            older = None
        if older is not None and older.project_id == project_id:
            datasets[older.id] = older
    return Queues(tuple(datasets.values()), tuple(who.store.list_criteria(project_id)))


def open_queue(
    session: Session,
    dataset_id: int,
    criterion_id: int,
    *,
    previous: Iterable[tuple[int, int]] = (),
) -> list[tuple[int, int]]:
    """Claim the caller's items of this queue (a no-op while they hold open items), after giving
    back the open items of the queues in ``previous``; returns those of ``previous`` that could not
    be given back yet (the page tries again later; else their claims run out after the lease)."""
    who = caller(session)
    kept: list[tuple[int, int]] = []
    for earlier in previous:
        if earlier == (dataset_id, criterion_id):
            continue
        try:
            who.store.release_claims(earlier[0], earlier[1], who.name)
        except EvalcoreError:
            kept.append(earlier)
    who.store.ensure_queue(dataset_id, criterion_id, who.name)
    return kept


# --- the item on screen -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Screen:
    """What the rating area shows: the queue's status, the position, the item there (``None`` at
    the end of the queue) and the label keys."""

    status: QueueStatus
    position: int
    task: AnnotationTask | None
    criterion: CriterionRecord
    keys: tuple[LabelKey, ...]
    claimed: bool = False

    @property
    def held(self) -> int:
        """Items the caller holds (given minus given back)."""
        return self.status.total - self.status.released

    @property
    def empty(self) -> bool:
        """Nothing to rate: every item already has the annotators the project asks for."""
        return self.status.total == 0

    def progress_text(self) -> str:
        s = self.status
        team = "" if s.team_left is None else f" · {s.team_left} left for the team"
        return (
            f"**Item {self.position + 1} of {s.total}** · {s.done} labelled · "
            f"{s.skipped} skipped or flagged{team}"
        )

    def end_text(self) -> tuple[Level, str]:
        """What the end of the queue says: thanks when every held item has a label, else how many
        are left."""
        s = self.status
        if s.finished:
            everything = (
                "The one item in this queue has"
                if self.held == 1
                else f"All {self.held} items in this queue have"
            )
            team = (
                f" The team has {plural(s.team_left, 'item')} left to label." if s.team_left else ""
            )
            return "success", f"{everything} your label. Thank you!{team}"
        return "info", (
            f"You reached the end of the queue: {s.done} of {self.held} labelled, "
            f"{s.remaining} not answered yet and {s.skipped} skipped or flagged."
        )


NOTHING_TO_RATE: Final = (
    "There is nothing for you to rate here: every item already has the number of annotators this "
    "project asks for. Ask an admin of the project to raise that number if more labels are needed."
)


def screen(
    session: Session,
    dataset_id: int,
    criterion_id: int,
    position: int | None,
    *,
    team: bool = True,
) -> Screen:
    """The item at ``position`` of the caller's queue (``None``: where to resume), claiming the
    next batch first when the caller holds nothing open. ``team`` counts what the team has left
    (it reads every label of the dataset: a page that redraws often asks now and then)."""
    who = caller(session)
    name = who.name
    criterion = who.store.get_criterion(criterion_id)
    status = who.store.queue_status(dataset_id, criterion_id, name, team=team)
    claimed = False
    if status.total and status.remaining == 0:
        before = status.total
        status = who.store.ensure_queue(dataset_id, criterion_id, name)
        claimed = status.total > before
        if status.remaining and (position is None or position >= before):
            position = status.next_position
    if position is None:
        position = status.total if status.next_position is None else status.next_position
    position = max(0, min(int(position), status.total))
    task = (
        who.store.queue_item(dataset_id, criterion_id, name, position)
        if position < status.total
        else None
    )
    keys = tuple(label_keys(criterion.scale, criterion.rubric or ""))
    return Screen(status, position, task, criterion, keys, claimed)


def after(session: Session, dataset_id: int, criterion_id: int, position: int, total: int) -> int:
    """Where to go after an answer: the next unanswered item, wrapping round; the end when none."""
    who = caller(session)
    found = who.store.next_open_position(dataset_id, criterion_id, who.name, start=position + 1)
    if found is None and position > 0:
        found = who.store.next_open_position(dataset_id, criterion_id, who.name, start=0)
    return total if found is None else found


def resume_position(
    session: Session, dataset_id: int, criterion_id: int, *, include_skipped: bool
) -> int | None:
    """The first unanswered item (or, with ``include_skipped``, the first skipped one)."""
    who = caller(session)
    return who.store.next_open_position(
        dataset_id, criterion_id, who.name, start=0, include_skipped=include_skipped
    )


# --- answers ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One answer to an item of the caller's queue. Saving it twice is safe: a submit is
    idempotent per base revision."""

    dataset_id: int
    criterion_id: int
    item_id: int
    position: int
    label: str | None
    flag: AnnotationFlag | None = None
    comment: str | None = None
    base_revision: int = 0
    time_spent_s: float | None = None
    swapped: bool = False

    @property
    def key(self) -> tuple[int, int, int]:
        """(dataset, criterion, item): a newer answer to the same item replaces a kept one."""
        return (self.dataset_id, self.criterion_id, self.item_id)

    def same_as(self, task: AnnotationTask) -> bool:
        """Whether this is the answer already saved for ``task`` (nothing to write)."""
        return task.revision > 0 and (task.label, task.flag, task.comment) == (
            self.label,
            self.flag,
            self.comment,
        )

    def describe(self) -> str:
        """The answer in words, as the annotator sees it (pairwise labels on their sides)."""
        if self.label is not None:
            return f"Your label: {shown_choice(self.label, self.swapped)}"
        return FLAG_TEXT.get(self.flag or "skip", "Skipped")


@dataclass(frozen=True)
class Refusal:
    """An answer the database refused for good, and the words that say why."""

    answer: Answer
    level: Level
    message: str


@dataclass(frozen=True)
class Flush:
    """What :func:`flush` did with the kept answers."""

    saved: tuple[Answer, ...] = ()
    refused: tuple[Refusal, ...] = ()
    waiting: tuple[Answer, ...] = field(default=())

    @property
    def done(self) -> bool:
        """Nothing waits for the database any more."""
        return not self.waiting


UNAVAILABLE: Final = (
    "The database did not answer, so this answer is not saved yet. It is kept in this session "
    "and saved with your next action, or press Save now."
)


def unavailable(exc: EvalcoreError) -> bool:
    """Whether a store error means "the database could not be reached or was locked" (worth trying
    again) rather than a refusal of the answer (a conflict, an unknown item, a bad label)."""
    return type(exc) is StoreError and exc.__cause__ is not None


def _save(who: Caller, answer: Answer) -> None:
    who.store.submit_annotation(
        answer.item_id,
        answer.criterion_id,
        who.name,
        label=answer.label,
        base_revision=answer.base_revision,
        comment=answer.comment,
        flag=answer.flag,
        time_spent_s=answer.time_spent_s,
        display_swapped=answer.swapped,
    )


def submit(session: Session, answer: Answer) -> None:
    """Save one answer of the caller (a new revision of their label of the item)."""
    _save(caller(session), answer)


def flush(session: Session, answers: Sequence[Answer]) -> Flush:
    """Save ``answers`` (kept because the database did not take them), oldest first.

    An answer the database refuses for good (changed in another window, the item gone) comes back
    in ``refused`` with the words to show; the rest stop at the first answer the database still
    cannot take, and come back in ``waiting``, in order."""
    if not answers:
        return Flush()
    try:
        who = caller(session)
    except EvalcoreError as exc:
        if unavailable(exc):
            return Flush(waiting=tuple(answers))
        raise
    saved: list[Answer] = []
    refused: list[Refusal] = []
    for index, answer in enumerate(answers):
        try:
            _save(who, answer)
        except RevisionConflictError:
            refused.append(
                Refusal(
                    answer,
                    "warning",
                    f"Your answer to item {answer.position + 1} was not saved: the item was "
                    "changed in another window meanwhile. It now shows that answer; choose again "
                    "to change it.",
                )
            )
        except EvalcoreError as exc:
            if unavailable(exc):
                return Flush(tuple(saved), tuple(refused), tuple(answers[index:]))
            refused.append(
                Refusal(
                    answer,
                    "error",
                    f"Your answer to item {answer.position + 1} was not saved: {exc}",
                )
            )
        else:
            saved.append(answer)
    return Flush(tuple(saved), tuple(refused))
