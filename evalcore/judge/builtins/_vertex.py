"""Vertex-style model-based metrics: pointwise with a rubric, pairwise against a baseline, and the
Vertex metrics-table columns (``{metric}/score``, ``{metric}/pairwise_choice``,
``{metric}/explanation``) in both directions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from evalcore.errors import ConfigError
from evalcore.judge._requests import OrderMode
from evalcore.judge._result import JudgeResult
from evalcore.judge._template import JudgeItem
from evalcore.judge.builtins._registry import get_metric, load_template_file
from evalcore.judge.builtins._spec import MetricExample, MetricInput, MetricSpec, blank
from evalcore.labels import LIKERT_5, Label, Scale, canonical_choice, format_label

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "VERTEX_CHOICES",
    "combine_orders",
    "pairwise_metric",
    "pointwise_metric",
    "results_from_vertex",
    "to_vertex_table",
]

#: evalcore's canonical pairwise choices and the words of Vertex's metrics table.
VERTEX_CHOICES: dict[str, str] = {"A": "CANDIDATE", "B": "BASELINE", "TIE": "TIE"}

PROMPT = MetricInput("prompt", "prompt", "the prompt the model answered")
RESPONSE = MetricInput("response", "response", "the model's response")
CANDIDATE = MetricInput("response", "response_a", "the candidate model's response (A)")
BASELINE = MetricInput("baseline_model_response", "response_b", "the baseline model's response (B)")


def pointwise_metric(
    name: str,
    rubric: str,
    scale: Scale = LIKERT_5,
    *,
    title: str = "",
    description: str = "",
    threshold: Label | None = None,
    inputs: Sequence[MetricInput] = (PROMPT, RESPONSE),
    example: MetricExample | None = None,
    group: str = "vertex",
    origin: str = "Vertex AI (pointwise)",
) -> MetricSpec:
    """A pointwise metric: the judge rates ``response`` (for ``prompt``) against ``rubric`` on
    ``scale``, replying ``{"reason", "score"}``. ``threshold`` defaults to the scale's middle label
    for numbers (3 on 1–5) and to none for words.

    >>> m = pointwise_metric("conciseness", "5 = no word wasted ... 1 = mostly padding.")
    >>> m.kind, m.threshold, m.template.rubric.startswith("5 =")
    ('template', 3.0, True)
    """
    base = load_template_file("vertex_pointwise")
    template = replace(
        base,
        name=name,
        criterion=name,
        scale=scale,
        rubric=rubric.strip(),
        description=description or base.description,
    )
    if threshold is None and scale.is_numeric:
        threshold = scale.labels[(len(scale.labels) - 1) // 2]
    return MetricSpec(
        name=name,
        title=title or name.replace("_", " ").capitalize(),
        description=description or f"Rates the response against the rubric of {name}.",
        kind="template",
        inputs=tuple(inputs),
        scale=scale,
        threshold=threshold,
        group=group,
        origin=origin,
        example=example,
        template=template,
    )


def pairwise_metric(
    name: str,
    rubric: str,
    *,
    title: str = "",
    description: str = "",
    order_mode: OrderMode = "flip",
    example: MetricExample | None = None,
    group: str = "vertex",
    origin: str = "Vertex AI (pairwise)",
) -> MetricSpec:
    """A pairwise metric: the judge compares the candidate ``response`` (A) with the
    ``baseline_model_response`` (B) against ``rubric`` and chooses A, B or TIE (CANDIDATE,
    BASELINE, TIE in Vertex's table). By default half of the items, chosen by the run's seed, are
    shown in the swapped order, as Vertex does (``order_mode="flip"``); ``"both"`` asks both orders.

    >>> pairwise_metric("pairwise_helpfulness", "Which response helps the user more?").scale.kind
    'pairwise'
    """
    base = load_template_file("vertex_pairwise")
    template = replace(
        base,
        name=name,
        criterion=name,
        rubric=rubric.strip(),
        description=description or base.description,
    )
    return MetricSpec(
        name=name,
        title=title or name.replace("_", " ").capitalize(),
        description=description or f"Compares the candidate with the baseline on {name}.",
        kind="template",
        inputs=(PROMPT, CANDIDATE, BASELINE),
        scale=template.scale,
        threshold=None,
        group=group,
        origin=origin,
        example=example,
        template=template,
        order_mode=order_mode,
    )


# --- results ---------------------------------------------------------------------------------------


def combine_orders(results: Iterable[JudgeResult]) -> dict[str, JudgeResult]:
    """One result per item from results in one or both orders (labels are in the item's frame).

    Both orders agreeing give that choice; disagreeing (position bias) give ``TIE``; when only one
    order has a label, it counts. The reasons are joined under ``[AB]`` / ``[BA]``.
    """
    by_item: dict[str, dict[str, JudgeResult]] = {}
    for result in results:
        by_item.setdefault(result.item_id, {})[result.order] = result
    out: dict[str, JudgeResult] = {}
    for item_id, orders in by_item.items():
        if len(orders) == 1:
            out[item_id] = next(iter(orders.values()))
            continue
        ab, ba = orders["AB"], orders["BA"]
        ok = [r for r in (ab, ba) if r.status == "ok"]
        reason = f"[AB] {ab.reason or ab.error}\n[BA] {ba.reason or ba.error}"
        if len(ok) == 2:
            label = ab.label if ab.label == ba.label else "TIE"
            out[item_id] = replace(ab, label=label, reason=reason)
        elif ok:
            out[item_id] = replace(ok[0], reason=reason)
        else:
            out[item_id] = replace(ab, reason=reason)
    return out


def _first(fields: Any, *names: str) -> Any:
    for name in names:
        value = fields.get(name)
        if not blank(value):
            return value
    return None


def to_vertex_table(
    items: Iterable[JudgeItem], results: Iterable[JudgeResult], metric: MetricSpec | str
) -> pd.DataFrame:
    """A Vertex metrics table of a run: one row per item, in the items' order.

    Columns: ``item_id``, ``prompt``, ``response`` (the candidate), ``baseline_model_response``
    (pairwise), ``context`` / ``reference`` when the items have them, and ``{metric}/score`` (the
    label; empty when the item is unparsed or failed) or ``{metric}/pairwise_choice``
    (``CANDIDATE`` / ``BASELINE`` / ``TIE``), with ``{metric}/explanation`` (the judge's reason, or
    the error). Results in both orders are combined with :func:`combine_orders`.
    :func:`evalcore.data.load_file` reads the table back; a Vertex user can add
    ``{metric}/human_rating`` to calibrate.
    """
    import pandas as pd

    spec = get_metric(metric) if isinstance(metric, str) else metric
    items = list(items)
    by_item = combine_orders(results)
    pairwise = spec.is_pairwise
    extras = [
        name
        for name in ("context", "reference")
        if any(not blank(i.fields.get(name)) for i in items)
    ]
    rows: list[dict[str, Any]] = []
    for item in items:
        fields = item.fields
        row: dict[str, Any] = {
            "item_id": item.item_id,
            "prompt": _first(fields, "prompt", "question", "query", "user_input"),
        }
        if pairwise:
            row["response"] = _first(fields, "response_a", "response")
            row["baseline_model_response"] = _first(fields, "response_b", "baseline_model_response")
        else:
            row["response"] = _first(fields, "response", "answer")
        for name in extras:
            row[name] = _first(fields, name)
        result = by_item.get(item.item_id)
        label = result.label if result is not None and result.status == "ok" else None
        if result is None:
            explanation = None
        elif result.status == "ok":
            explanation = result.reason
        else:
            explanation = f"{result.status}: {result.error}"
        if pairwise:
            row[f"{spec.name}/pairwise_choice"] = (
                VERTEX_CHOICES.get(str(label)) if label is not None else None
            )
        elif isinstance(label, float):
            row[f"{spec.name}/score"] = label
        else:
            row[f"{spec.name}/score"] = format_label(label) if label is not None else None
        row[f"{spec.name}/explanation"] = explanation
        rows.append(row)
    frame = pd.DataFrame(rows)
    score = f"{spec.name}/score"
    if score in frame and spec.scale.is_numeric:
        frame[score] = pd.to_numeric(frame[score], errors="coerce").astype("float64")
    return frame


def results_from_vertex(loaded: Any, metric: str, *, judge: str | None = None) -> list[JudgeResult]:
    """The judge column of a Vertex metrics table as :class:`~evalcore.judge.JudgeResult` objects.

    ``loaded`` is a :class:`evalcore.data.LoadedFile`; ``metric`` names its ``{metric}/…`` columns;
    ``judge`` picks a judge column when there are several (default: the first). A row without a
    judge label is ``unparsed``. Pairwise choices come back as ``A`` / ``B`` / ``TIE``.
    """
    label_set = loaded.label_set(metric)
    names = list(label_set.judge_names)
    if not names:
        raise ConfigError(f"{loaded.source} has no judge column for metric {metric!r}")
    column = judge or names[0]
    if column not in names:
        raise ConfigError(
            f"{loaded.source}: metric {metric!r} has no judge {column!r}; it has {names}"
        )
    explanations = label_set.explanations
    out: list[JudgeResult] = []
    for item_id, value in label_set.judges[column].items():
        reason = ""
        if explanations is not None and not blank(explanations.get(item_id)):
            reason = str(explanations[item_id])
        if blank(value):  # None, or NaN in a numeric label column
            out.append(
                JudgeResult(str(item_id), "AB", "unparsed", reason=reason, error="no judge label")
            )
            continue
        if label_set.kind == "pairwise":
            value = canonical_choice(value)
        out.append(JudgeResult(str(item_id), "AB", "ok", label=value, reason=reason))
    return out
