"""Keeping a candidate: as a template file, or as a new immutable version in the store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalcore.errors import ConfigError
from evalcore.improve._candidates import Candidate
from evalcore.improve._optimize import OptimizeReport

if TYPE_CHECKING:
    from evalcore.store import Store, TemplateVersionRecord

__all__ = ["candidate_note", "candidate_template_toml", "save_candidate"]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _interval(value: tuple[float, float] | None) -> str:
    return "" if value is None else f" [{value[0]:.3f}, {value[1]:.3f}]"


def candidate_note(candidate: Candidate, report: OptimizeReport) -> str:
    """How ``candidate`` was made and how it did: split, kind, examples, optimiser model, dev and
    test figures (the note of a saved version, and the header of its template file)."""
    split = report.split
    lines = [
        f"made by evalcore's optimiser: {candidate.kind} candidate {candidate.id}",
        f"split {split.name!r} (seed {split.seed}, test share {split.test_share}, "
        f"{len(split.dev)} dev / {len(split.test)} test items)",
    ]
    if candidate.examples:
        lines.append("examples (dev item ids): " + ", ".join(candidate.examples))
    if candidate.optimizer_model:
        lines.append(f"optimiser model: {candidate.optimizer_model}")
    dev = next((c for c in report.candidates if c.candidate.id == candidate.id), None)
    if dev is not None:
        lines.append(
            f"dev {report.metric}: {_fmt(dev.dev.get(report.metric))}{_interval(dev.dev_interval)}"
            f" (start {_fmt(report.start.dev.get(report.metric))})"
        )
    final = next((f for f in report.finalists if f.candidate.id == candidate.id), None)
    if final is not None:
        lines.append(
            f"test {report.metric}: {_fmt(final.test)}{_interval(final.test_interval)} "
            f"(start {_fmt(report.start_test.test)}); difference {_fmt(final.difference)}"
            f"{_interval(final.difference_interval)}, McNemar p {_fmt(final.mcnemar_p)}"
        )
    return "\n".join(lines)


def _finalist_that_beats(candidate: Candidate, report: OptimizeReport) -> None:
    final = next((f for f in report.finalists if f.candidate.id == candidate.id), None)
    if final is None or not final.beats_start:
        raise ConfigError(
            f"candidate {candidate.id} did not beat the starting version on test, so it is not "
            "offered for saving"
        )


def candidate_template_toml(candidate: Candidate, report: OptimizeReport) -> str:
    """The candidate as a template file (``best.toml``), headed by comments saying how it was
    made; refuses a candidate that did not beat the start on test."""
    _finalist_that_beats(candidate, report)
    header = "\n".join(f"# {line}" for line in candidate_note(candidate, report).splitlines())
    return f"{header}\n{candidate.template.to_toml()}"


def save_candidate(
    store: Store,
    template_id: int,
    candidate: Candidate,
    report: OptimizeReport,
    *,
    author: str,
) -> TemplateVersionRecord:
    """Save ``candidate`` as the next immutable version of template ``template_id``, its note
    recording how it was made (:func:`candidate_note`); only a finalist that beat the start."""
    _finalist_that_beats(candidate, report)
    content: dict[str, Any] = candidate.template.content_dict()
    return store.save_template_version(
        template_id, content, author=author, note=candidate_note(candidate, report)
    )
