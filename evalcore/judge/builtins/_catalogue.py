"""The metric catalogue: structured entries for the Judge page, and ``docs/metrics.md``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from evalcore.judge._parse import scale_description
from evalcore.judge.builtins._registry import builtin_names, get_metric, list_metrics
from evalcore.judge.builtins._spec import MetricInput, MetricSpec
from evalcore.labels import format_label

__all__ = [
    "GROUP_NOTES",
    "GROUP_TITLES",
    "CatalogueEntry",
    "catalogue",
    "catalogue_markdown",
    "entry_facts",
]

#: Catalogue sections, in order.
GROUP_TITLES: dict[str, str] = {
    "quality": "AI-assisted quality (Azure AI evaluation)",
    "text": "Without a model",
    "vertex": "Vertex-style model-based metrics",
    "ragas": "RAGAS-style multi-step metrics",
    "safety": "Risk and safety (Azure AI evaluation)",
    "custom": "Your own metrics",
}

#: What each section adds beyond its metrics (shown under its heading in the doc).
GROUP_NOTES: dict[str, str] = {
    "quality": "Each judge replies with JSON holding a reason and a whole score from 1 to 5 "
    "(structured output); pass = score ≥ the threshold, 3 by default and changeable per metric "
    "(`--threshold`, `MetricSpec.with_threshold`). Single-turn rows use Azure's `question`, "
    "`context`, `answer` and `ground_truth`; conversations use `messages`, with "
    "`context.citations` on assistant turns.",
    "text": "",
    "vertex": "`pointwise_metric(name, rubric, scale)` and `pairwise_metric(name, rubric)` make "
    "more. Pairwise choices are A (the candidate `response`), B (the "
    "`baseline_model_response`) and TIE inside evalcore; half of the items are shown in the "
    "swapped order by default (`--order flip`; `both` asks both orders and "
    "`combine_orders` merges them). `to_vertex_table` writes `{metric}/score` or "
    "`{metric}/pairwise_choice` (CANDIDATE / BASELINE / TIE) with `{metric}/explanation`; "
    "`evalcore.data.load_file` reads it back, and `results_from_vertex` reads a table Vertex "
    "made.",
    "ragas": "Every intermediate (claims, verdicts, key phrases, questions, answers) is kept in "
    "each result's `details`; the final number is its `score` and pass/fail its `label`. A step "
    "whose reply cannot be read makes the item `unparsed`, naming the step, with what was found "
    "so far. Steps share the judge engine's client, retries and reply cache, so a re-run costs "
    "no request. Parameters: `--param mode=precision|recall|f1`, `beta=…`, `atomicity=low|high`, "
    "`coverage=low|high` (factual correctness), `coeff=…` (summarization).",
    "safety": "`defect_rate(labels, threshold)` is the share of labelled items at or above a "
    "level (unparsed items are excluded and counted); `inject_jailbreak(items, text)` puts a "
    "jailbreak in the first user turn and `jailbreak_comparison(plain, attacked, threshold)` "
    "gives both defect rates and their difference. Severity is an ordinal scale, calibrated "
    "against human severity labels like any other criterion.",
}

_KIND = {
    "template": "judge template (one request per item)",
    "pipeline": "multi-step pipeline (several requests per item; intermediates in `details`)",
    "function": "function (no model)",
}


@dataclass(frozen=True)
class CatalogueEntry:
    """One metric as the catalogue shows it (all text, ready to render)."""

    name: str
    title: str
    group: str
    origin: str
    kind: str
    description: str
    inputs: tuple[str, ...]
    conversation_inputs: tuple[str, ...]
    conversation_note: str
    scale: str
    reply: str
    threshold: str
    pass_rule: str
    example_inputs: tuple[tuple[str, str], ...]
    example_output: str
    version: str


def _input(item: MetricInput) -> str:
    text = f"{item.name} → `{item.field}`" if item.name != item.field else f"`{item.field}`"
    if item.description:
        text += f": {item.description}"
    return text + (" (optional)" if item.optional else "")


def _scale(spec: MetricSpec) -> tuple[str, str]:
    if spec.scores_numbers:
        return "score 0–1; label pass / fail at the threshold", "score, label and `details`"
    if spec.is_pairwise:
        return (
            "A (candidate `response`) / B (baseline) / TIE; CANDIDATE / BASELINE / TIE in a "
            "Vertex table",
            f'JSON `{{"reason": …, "{spec.template.label_field if spec.template else "choice"}": '
            '"A" | "B" | "TIE"}`',
        )
    field = spec.template.label_field if spec.template else "label"
    if spec.scale.is_numeric:
        return (
            f"{scale_description(spec.scale)} (ordinal)",
            f'JSON `{{"reason": …, "{field}": n}}`',
        )
    return (
        " < ".join(spec.scale.display_labels) + " (ordinal)",
        f'JSON `{{"reason": …, "{field}": level}}`',
    )


def _entry(spec: MetricSpec) -> CatalogueEntry:
    scale, reply = _scale(spec)
    example = spec.example
    return CatalogueEntry(
        name=spec.name,
        title=spec.title,
        group=spec.group,
        origin=spec.origin,
        kind=spec.kind,
        description=spec.description,
        inputs=tuple(_input(i) for i in spec.inputs),
        conversation_inputs=tuple(_input(i) for i in spec.conversation_inputs or ()),
        conversation_note=spec.conversation_note,
        scale=scale,
        reply=reply,
        threshold=format_label(spec.threshold) if spec.threshold is not None else "none",
        pass_rule=spec.pass_rule,
        example_inputs=example.inputs if example else (),
        example_output=example.output if example else "",
        version=spec.version,
    )


def catalogue(names: Iterable[str] | None = None) -> list[CatalogueEntry]:
    """Catalogue entries of the registered metrics (or of ``names``), grouped in section order.

    >>> [e.name for e in catalogue(["fluency", "f1_score"])]
    ['fluency', 'f1_score']
    """
    specs = list_metrics() if names is None else [get_metric(n) for n in names]
    order = {g: i for i, g in enumerate(GROUP_TITLES)}
    if names is None:
        specs.sort(key=lambda s: order.get(s.group, len(order)))
    return [_entry(s) for s in specs]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def entry_facts(e: CatalogueEntry) -> list[str]:
    """An entry's inputs, scale, reply and threshold as Markdown bullets (catalogue and Judge page)."""
    lines = ["- **Inputs**: " + "; ".join(e.inputs)]
    if e.conversation_inputs:
        lines.append("- **Or a conversation**: " + "; ".join(e.conversation_inputs))
    if e.conversation_note:
        lines.append(f"- **Conversations**: {e.conversation_note}")
    return [
        *lines,
        f"- **Scale**: {e.scale}",
        f"- **Reply**: {e.reply}",
        f"- **Threshold**: {e.threshold}; {e.pass_rule}",
    ]


def catalogue_markdown(names: Iterable[str] | None = None) -> str:
    """The catalogue as Markdown (``docs/metrics.md`` is this for the built-in metrics, followed by
    the reference, convention and interval of every statistic, :func:`evalcore.metrics.conventions_markdown`).

    Regenerate the file with ``evalcore judge metrics --format markdown > docs/metrics.md``.
    """
    entries = catalogue(builtin_names() if names is None else names)
    lines = [
        "# Metric catalogue",
        "",
        "<!-- Generated from the registry by `evalcore judge metrics --format markdown`; do not edit",
        "     by hand. tests/builtins/test_builtin_catalogue.py fails when it is stale. -->",
        "",
        "Every built-in metric is registered the way your own would be "
        "(`evalcore.judge.builtins.register_metric`). Template metrics are ordinary judge templates: "
        "copy one (`builtin_template(name)`), edit it, and compare the versions. Run any of them "
        "with `evalcore judge run DATASET --metric NAME` or from the Judge page. Inputs are named "
        "as the reference system names them, with the evalcore item field they are read from.",
        "",
        "| Metric | Measures | Kind | Scale | Threshold |",
        "|---|---|---|---|---|",
    ]
    for e in entries:
        lines.append(
            f"| [`{e.name}`](#{e.name}) | {_cell(e.description)} | {e.kind} | {_cell(e.scale)} "
            f"| {e.threshold} |"
        )
    group = None
    for e in entries:
        if e.group != group:
            group = e.group
            lines += ["", f"## {GROUP_TITLES.get(group, group)}"]
            if GROUP_NOTES.get(group):
                lines += ["", GROUP_NOTES[group]]
        version = f" · version `{e.version}`" if e.version else ""
        lines += [
            "",
            f'### <a id="{e.name}"></a>`{e.name}`: {e.title}',
            "",
            f"*{e.origin} · {_KIND[e.kind]}{version}*",
            "",
            e.description,
            "",
            *entry_facts(e),
        ]
        if e.example_inputs:
            lines += ["", "Example:", ""]
            lines += [f"- {k}: {_cell(v)}" for k, v in e.example_inputs]
            lines += [f"- → {_cell(e.example_output)}"]
    text = "\n".join(lines) + "\n"
    if names is None:  # the whole catalogue (docs/metrics.md) ends with the statistics' conventions
        from evalcore.metrics import conventions_markdown

        text += conventions_markdown()
    return text
