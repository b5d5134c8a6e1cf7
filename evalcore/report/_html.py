"""The self-contained HTML report: one file a manager can open anywhere, offline.

plotly.js is inlined once in the page's head; every figure is its JSON (``<``, ``>`` and ``&``
written as ``\\u003c``… so nothing in the data can close a script) drawn by one ``Plotly.newPlot``
call. Every text that comes from the data (project, dataset, criterion, run and annotator names, labels,
prompts, responses, reasons, comments, metadata) goes through :func:`html.escape`, so a
``<script>`` in a response shows as text. No external resource is referenced: no ``<script src>``, no
stylesheet link, no font, no fetch.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from evalcore import __version__
from evalcore.errors import EvalcoreError
from evalcore.metrics import AltTest, RateEstimates, headline_kappa
from evalcore.report._calibration import (
    Calibration,
    available_policies,
    calibrate_runs,
    disagreements,
)
from evalcore.report._figures import (
    agreement_figure,
    alt_test_figure,
    confusion_heatmaps,
    history_figure,
    slice_figure,
    threshold_figure,
)
from evalcore.report._labelsets import HUMAN_POLICIES
from evalcore.report._load import ItemDetail, item_detail, load_calibration_data, load_metadata
from evalcore.report._standin import (
    alt_test_table,
    rate_table,
    run_alt_test,
    run_alt_test_curve,
    run_rate_estimate,
)
from evalcore.report._summary import ProjectSummary, history_frame, project_summary
from evalcore.report._views import (
    PairwiseAnalysis,
    ThresholdAnalysis,
    binary_analysis,
    pairwise_analysis,
    pairwise_table,
    slice_table,
    slice_text,
)
from evalcore.store import ProjectRecord, Store
from evalcore.words import plural

__all__ = [
    "CriterionSection",
    "build_report",
    "criterion_section",
    "report_html",
    "write_report",
]

#: Longest text (prompt, response, reason, raw reply) shown per item in the report, in characters.
MAX_TEXT = 2000

_LIGHTS = {
    "green": ("#1a7f37", "green: every 95% interval wholly at or above its threshold"),
    "amber": ("#b7791f", "amber: an interval straddles its threshold (the data cannot tell)"),
    "red": ("#c62828", "red: an interval wholly below its threshold"),
    "none": ("#777777", "no data"),
}

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1200px;
padding:0 1rem;color:#1f2328;line-height:1.45}
h1{font-size:1.7rem;margin-bottom:.2rem}h2{margin-top:2.5rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
h3{margin-top:1.6rem}.meta{color:#555;font-size:.9rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.88rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.best{font-weight:600;background:#eef7ee}
.light{display:inline-block;width:.9rem;height:.9rem;border-radius:50%;vertical-align:middle;margin-right:.35rem}
details{margin:.3rem 0 .8rem 0}summary{cursor:pointer}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.5rem;border-radius:4px;
font-size:.85rem;max-height:24rem;overflow:auto}
.figure{width:100%}.note{color:#555;font-size:.88rem}.warn{color:#8a5a00}
"""


def _e(value: object) -> str:
    """Escape any value for HTML text and attributes."""
    if value is None:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return "–"
    return html.escape(str(value), quote=True)


def _clip(text: str | None) -> str:
    if text is None:
        return ""
    return (
        text
        if len(text) <= MAX_TEXT
        else text[:MAX_TEXT] + f"… ({len(text) - MAX_TEXT} more characters)"
    )


def _table(frame: pd.DataFrame, *, index: bool = True, best: pd.DataFrame | None = None) -> str:
    head = "".join(
        f"<th>{_e(c)}</th>"
        for c in ([frame.index.name or ""] if index else []) + list(frame.columns)
    )
    rows = []
    for i, (key, row) in enumerate(frame.iterrows()):
        cells = [f"<th>{_e(key)}</th>"] if index else []
        for j, value in enumerate(row.tolist()):
            marked = best is not None and bool(best.iat[i, j])
            cells.append(
                f'<td class="best">{_e(value)}</td>' if marked else f"<td>{_e(value)}</td>"
            )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


class _Figures:
    """Numbers the figures of one page and turns each into a div and its ``Plotly.newPlot`` call."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, fig: go.Figure) -> str:
        self.count += 1
        name = f"figure-{self.count}"
        # plotly's JSON writer escapes <, > and & (\u003c...), so the data cannot end the script
        spec = fig.to_json(validate=False, pretty=False)
        return (
            f'<div id="{name}" class="figure"></div>'
            f'<script>(function(){{var f={spec};Plotly.newPlot("{name}",f.data,f.layout,'
            '{"displaylogo":false,"responsive":true});})();</script>'
        )


@dataclass(frozen=True, eq=False)
class CriterionSection:
    """What the report shows for one calibration: the tables and the drill-down items."""

    calibration: Calibration
    slice_column: str | None
    slices: pd.DataFrame | None
    binary: tuple[ThresholdAnalysis, ...]
    pairwise: tuple[PairwiseAnalysis, ...]
    disagreements: pd.DataFrame
    details: tuple[ItemDetail, ...]
    #: (run title, Alt-Test at the default epsilon, its curve over epsilon) of every compared run,
    #: when at least three annotators labelled the criterion
    alt_tests: tuple[tuple[str, AltTest, pd.DataFrame], ...] = ()
    #: (run title, the human-level rate estimates) of every compared run of a binary criterion
    rates: tuple[tuple[str, RateEstimates], ...] = ()


def criterion_section(
    store: Store,
    calibration: Calibration,
    *,
    slice_by: str | None = None,
    max_items: int = 25,
) -> CriterionSection:
    """Compute everything the report shows for one calibration (slices by ``slice_by`` if given, the
    ``max_items`` worst disagreements with their texts). Slices use the calibration's resamples and
    seed, so the ``(all)`` slice repeats the main table's intervals."""
    data = calibration.data
    slices = None
    if slice_by is not None:
        if slice_by not in data.dataset.metadata_columns:
            raise EvalcoreError(
                f"dataset {data.dataset.name!r} has no metadata column {slice_by!r} "
                f"(columns: {', '.join(data.dataset.metadata_columns) or 'none'})"
            )
        with_meta = data.with_metadata(load_metadata(store, data.dataset.id, [slice_by]))
        slices = slice_table(
            with_meta,
            slice_by,
            policy=calibration.policy,
            baseline=calibration.baseline,
            n_boot=calibration.n_boot,
            seed=calibration.seed,
        )
    binary: tuple[ThresholdAnalysis, ...] = ()
    pairwise: tuple[PairwiseAnalysis, ...] = ()
    if data.scale.kind == "binary":
        binary = tuple(binary_analysis(calibration, r.info.id) for r in calibration.compared)
    if data.scale.kind == "pairwise":
        pairwise = tuple(pairwise_analysis(calibration, r.info.id) for r in calibration.compared)
    worst = disagreements(calibration).head(max_items)
    infos = [r.info for r in calibration.runs]
    details = tuple(
        item_detail(store, int(pk), data.criterion.id, infos) for pk in worst.index.tolist()
    )
    alt_tests: list[tuple[str, AltTest, pd.DataFrame]] = []
    if data.human.shape[1] >= 3:
        for r in calibration.compared:
            try:
                result = run_alt_test(data, r.info.id)
                alt_tests.append((r.title, result, run_alt_test_curve(data, r.info.id)))
            except EvalcoreError:
                continue  # e.g. no item shared by the judge and two annotators
    rates: list[tuple[str, RateEstimates]] = []
    if data.scale.kind == "binary":
        for r in calibration.compared:
            try:
                rates.append((r.title, run_rate_estimate(data, r.info.id, calibration.human)))
            except EvalcoreError:
                continue  # no unlabelled item, or too few to estimate
    return CriterionSection(
        calibration,
        slice_by,
        slices,
        binary,
        pairwise,
        worst,
        details,
        tuple(alt_tests),
        tuple(rates),
    )


def _summary_html(summary: ProjectSummary) -> str:
    header = [
        "criterion",
        "dataset",
        "verdict",
        "best run",
        "n",
        "balanced accuracy",
        "Cohen's kappa",
        "weighted F1",
        "human ceiling (α / κ)",
        "checks",
    ]
    body = []
    for s, row in zip(summary.criteria, summary.table().to_dict("records"), strict=True):
        color, meaning = _LIGHTS[s.verdict.light]
        cells = []
        for key in header:
            if key == "verdict":
                cells.append(
                    f'<td title="{_e(meaning)}"><span class="light" '
                    f'style="background:{color}"></span>{_e(s.verdict.light)}</td>'
                )
            else:
                cells.append(f"<td>{_e(row.get(key))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    thresholds = ", ".join(f"{_e(k)} ≥ {v:g}" for k, v in summary.thresholds.items())
    legend = " · ".join(_e(meaning) for key, (_, meaning) in _LIGHTS.items() if key != "none")
    return (
        f"<p class='meta'>Thresholds of the project: {thresholds or 'none'}. {legend}. Cohen's kappa "
        "is quadratic-weighted on ordinal scales. Human ceiling: Krippendorff's alpha / mean pairwise "
        "kappa of the annotators.</p>"
        "<table><thead><tr>"
        + "".join(f"<th>{_e(h)}</th>" for h in header)
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )


def _item_html(detail: ItemDetail, row: pd.Series) -> str:
    item = detail.item
    parts = [f"<summary><b>{_e(item.external_id)}</b> · humans: {_e(row['human'])}"]
    for column in row.index:
        if column in ("item_id", "human", "wrong", "distance"):
            continue
        parts.append(f" · {_e(column)}: {_e(row[column])}")
    parts.append("</summary>")
    fields = [("prompt", item.prompt), ("context", item.context), ("reference", item.reference)]
    if item.response_a is not None or item.response_b is not None:
        fields += [("response A", item.response_a), ("response B", item.response_b)]
    else:
        fields.append(("response", item.response))
    for name, text in fields:
        if text:
            parts.append(f"<p><b>{_e(name)}</b></p><pre>{_e(_clip(text))}</pre>")
    if item.metadata:
        meta = ", ".join(f"{_e(k)}: {_e(v)}" for k, v in item.metadata.items())
        parts.append(f"<p class='note'>{meta}</p>")
    humans = "".join(
        f"<li>{_e(h.annotator)}: <b>{_e(h.label if h.label is not None else h.flag)}</b>"
        + (f" — {_e(h.comment)}" if h.comment else "")
        + "</li>"
        for h in detail.humans
    )
    parts.append(f"<p><b>Human labels</b></p><ul>{humans or '<li>none</li>'}</ul>")
    for r in detail.results:
        head = (
            f"{_e(r.run)} ({_e(r.order)}): <b>{_e(r.label if r.status == 'ok' else r.status)}</b>"
        )
        if r.score is not None:
            head += f" · score {r.score:.3g}"
        parts.append(f"<p>{head}</p>")
        if r.reason:
            parts.append(f"<pre>{_e(_clip(r.reason))}</pre>")
        if r.error:
            parts.append(f"<p class='note'>error: {_e(_clip(r.error))}</p>")
        if r.raw:
            parts.append(
                f"<details><summary>raw reply</summary><pre>{_e(_clip(r.raw))}</pre></details>"
            )
    return "<details>" + "".join(parts) + "</details>"


def _section_html(section: CriterionSection, figure: _Figures) -> str:
    c = section.calibration
    data = c.data
    scale = data.scale
    out = [f"<h2>{_e(data.criterion.name)} · {_e(data.dataset.name)} v{data.dataset.version}</h2>"]
    base = next((r.title for r in c.runs if r.info.id == c.baseline), None)
    out.append(
        f"<p class='meta'>{_e(scale.kind)} scale ({_e(', '.join(scale.display_labels))}) · "
        f"{plural(len(data.items), 'item')} · {plural(len(data.annotators), 'annotator')} · human label: "
        f"{_e(c.policy_name)} · baseline: {_e(base)} · 95% bootstrap intervals ({c.n_boot} "
        "resamples) · ★ best value of a row</p>"
    )
    if data.criterion.rubric:
        out.append(
            f"<details><summary>rubric</summary><pre>{_e(data.criterion.rubric)}</pre></details>"
        )
    if not c.compared:
        out.append("<p>No run has an item with both a human label and a judge label yet.</p>")
        return "".join(out)
    table = c.table()
    out.append(_table(table.text, best=table.best))
    out.extend(f"<p class='note'>{_e(note)}</p>" for note in c.notes())
    out.append(
        "<p class='note'><b>constant judge</b>: always the humans' most frequent label · "
        "<b>chance</b>: labels drawn at random with the humans' shares (the <i>share of …</i> "
        "rows). A judge is only useful where it clearly beats both.</p>"
    )
    ceiling = c.ceiling
    kappa_attr, kappa_name = headline_kappa(c.kind).key, headline_kappa(c.kind).name
    if ceiling is not None and ceiling.krippendorff_alpha is not None:
        ci = (
            f" [{ceiling.alpha_ci[0]:.2f}, {ceiling.alpha_ci[1]:.2f}]"
            if ceiling.alpha_ci is not None
            else ""
        )
        out.append(
            f"<p><b>Human ceiling</b> on the same items: Krippendorff's alpha "
            f"{ceiling.krippendorff_alpha:.3f}{ci}, mean pairwise {_e(kappa_name)} "
            f"{(ceiling.mean_pairwise_kappa or float('nan')):.3f} over {plural(ceiling.n_items, 'item')} "
            f"rated by at least two of the {plural(ceiling.n_kept, 'annotator')} kept.</p>"
        )
        if ceiling.left_out:
            out.append(
                f"<p class='note'>Left out of the ceiling, for sharing fewer than "
                f"{ceiling.min_shared} items with the others: {_e(', '.join(ceiling.left_out))}.</p>"
            )
        if ceiling.fragility is not None:
            out.append(f"<p class='warn'><b>Fragile ceiling</b>: {_e(ceiling.fragility)}.</p>")
    else:
        out.append(
            "<p class='note'>No human ceiling: fewer than two annotators rated the same items.</p>"
        )
    out.append(
        figure(
            agreement_figure(
                [
                    (r.title, getattr(r.report, kappa_attr), r.report.ci.get(kappa_attr))
                    for r in c.compared
                    if r.report
                ],
                metric=kappa_name,
                ceiling=None if ceiling is None else ceiling.mean_pairwise_kappa,
                ceiling_name="humans: mean pairwise κ",
                alpha=None if ceiling is None else ceiling.krippendorff_alpha,
            )
        )
    )
    panels = c.panels()
    height = 380 + 20 * len(scale.labels)
    out.append("<h3>Confusion matrices (rows: humans, columns: judge)</h3>")
    out.append(figure(confusion_heatmaps(panels, height=height, selectable=False)))
    out.append("<p class='note'>Row-normalised: the share of each human label.</p>")
    out.append(figure(confusion_heatmaps(panels, normalize=True, height=height, selectable=False)))
    if section.binary:
        out.append(
            f"<h3>Scores and thresholds (positive label: {_e(section.binary[0].positive)})</h3>"
        )
        sweeps = [(a.run.title, a.points, a.best) for a in section.binary if a.points]
        if sweeps:
            out.append(figure(threshold_figure(sweeps)))
        rows = {}
        for a in section.binary:
            pr = a.pass_rate
            rows[a.run.title] = {
                "TPR": _interval(a.tpr, a.tpr_ci),
                "TNR": _interval(a.tnr, a.tnr_ci),
                "best threshold": "–" if a.best is None else f"{a.best.threshold:.3f}",
                "balanced accuracy there": "–"
                if a.best is None
                else f"{a.best.balanced_accuracy:.3f}",
                "unlabelled items judged": str(a.n_unlabelled),
                "judge's raw pass rate there": "–" if pr is None else f"{pr.p_obs:.1%}",
                "bias-corrected pass rate": "–"
                if pr is None
                else _interval(pr.theta, pr.ci, percent=True),
                "note": a.note or "",
            }
        out.append(_table(pd.DataFrame(rows)))
    if section.rates:
        out.append("<h3>The rate people would give the unlabelled items</h3>")
        for title, found in section.rates:
            out.append(f"<p><b>{_e(title)}</b></p>")
            out.append(_table(rate_table(found)))
            out.extend(f"<p class='note'>{_e(note)}</p>" for note in found.notes)
        out.append(
            "<p class='note'>labelled only: the humans' share on the labelled items (the baseline) "
            "· Rogan-Gladen: the judge's share corrected by its TPR and TNR · PPI++: "
            "prediction-powered inference with the power-tuned λ.</p>"
        )
    if section.alt_tests:
        out.append("<h3>Can the judge replace an annotator? (Alt-Test)</h3>")
        for title, result, curve in section.alt_tests:
            out.append(f"<p><b>{_e(title)}</b>: {_e(result.verdict())}</p>")
            out.append(figure(alt_test_figure(curve, epsilon=result.epsilon, title=title)))
            out.append(_table(alt_test_table(result).set_index("annotator")))
    if section.pairwise:
        out.append("<h3>Pairwise: win rates and position bias</h3>")
        out.append(_table(pairwise_table(section.pairwise)))
    if section.slices is not None and section.slice_column is not None:
        out.append(f"<h3>By {_e(section.slice_column)}</h3>")
        out.append(figure(slice_figure(section.slices)))
        out.append(_table(slice_text(section.slices)))
    out.append("<h3>Disagreements (worst first)</h3>")
    if section.disagreements.empty:
        out.append("<p>Every run agrees with the humans on every item.</p>")
    else:
        out.append(
            f"<p class='note'>The {plural(len(section.disagreements), 'item')} where the judges are furthest "
            "from the humans; open one for its texts, every human label and every run's reason.</p>"
        )
        shown = section.disagreements
        for detail, (_, row) in zip(section.details, shown.iterrows(), strict=True):
            out.append(_item_html(detail, row))
    return "".join(out)


def _interval(value: float | None, ci: tuple[float, float] | None, *, percent: bool = False) -> str:
    if value is None or math.isnan(value):
        return "–"
    if percent:
        text = f"{value:.1%}"
        if ci is not None:
            text += f" [{ci[0]:.1%}, {ci[1]:.1%}]"
        return text
    text = f"{value:.3f}"
    if ci is not None and not (math.isnan(ci[0]) or math.isnan(ci[1])):
        text += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return text


def report_html(
    sections: Sequence[CriterionSection],
    *,
    project: ProjectRecord | None = None,
    summary: ProjectSummary | None = None,
    history: pd.DataFrame | None = None,
    title: str | None = None,
    generated_at: datetime | None = None,
) -> str:
    """The whole report as one HTML document (plotly.js inlined; opens offline)."""
    figure = _Figures()
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    heading = title or (f"Judge calibration · {project.name}" if project else "Judge calibration")
    body = [f"<h1>{_e(heading)}</h1>"]
    body.append(f"<p class='meta'>Made by evalcore {_e(__version__)} on {_e(when)}.</p>")
    if project is not None and project.description:
        body.append(f"<p>{_e(project.description)}</p>")
    if summary is not None and summary.criteria:
        body.append("<h2>Summary</h2>")
        body.append(_summary_html(summary))
    if history is not None and not history.empty:
        body.append("<h2>History</h2>")
        body.append(
            "<p class='note'>Balanced accuracy of each template version's runs over time (x: when "
            "the version was saved), with 95% intervals; one line per template and model.</p>"
        )
        body.append(figure(history_figure(history)))
    for section in sections:
        body.append(_section_html(section, figure))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{_e(heading)}</title><style>{_CSS}</style>"
        f"<script>{get_plotlyjs()}</script></head><body>" + "".join(body) + "</body></html>\n"
    )


def build_report(
    store: Store,
    project: str | int,
    *,
    criteria: Sequence[str] | None = None,
    dataset: str | None = None,
    policy: str = "majority",
    runs: Sequence[int | str] | None = None,
    baseline: int | str | None = None,
    slice_by: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    max_items: int = 25,
    title: str | None = None,
) -> str:
    """Make the HTML report of a project (by name or id): the summary with traffic lights, the history
    chart and one section per (criterion, dataset) with runs.

    ``criteria`` keeps the criteria named; ``dataset`` the dataset named (its newest version);
    ``runs`` the runs given by id or name (per criterion, those that match; a criterion none of them
    matches is left out); ``baseline`` the run the others are compared with (default the oldest).
    ``slice_by`` adds the metrics per value of that metadata column. Raises
    :class:`~evalcore.errors.EvalcoreError` with a readable message on any bad name.
    """
    if not policy.startswith("annotator:") and policy not in HUMAN_POLICIES:
        raise EvalcoreError(
            f"unknown human policy {policy!r}: use majority, median, mean or annotator:<name>"
        )
    record = _project(store, project)
    store.authorize("export", project_id=record.id)
    known = {c.name: c for c in store.list_criteria(record.id)}
    wanted = list(criteria) if criteria else list(known)
    unknown = [c for c in wanted if c not in known]
    if unknown:
        raise EvalcoreError(
            f"project {record.name!r} has no criterion {unknown[0]!r} "
            f"(criteria: {', '.join(sorted(known)) or 'none'})"
        )
    dataset_id = None
    if dataset is not None:
        names = {d.name for d in store.list_datasets(record.id)}
        if dataset not in names:
            raise EvalcoreError(
                f"project {record.name!r} has no dataset {dataset!r} "
                f"(datasets: {', '.join(sorted(names)) or 'none'})"
            )
        dataset_id = store.get_dataset_by_name(record.id, dataset).id
    all_runs = store.list_runs(project_id=record.id)
    run_keys = None if runs is None else {str(r) for r in runs}
    matched: set[str] = set()
    calibrations: list[Calibration] = []
    for name in wanted:
        criterion = known[name]
        mine = [r for r in all_runs if r.criterion_id == criterion.id]
        if dataset_id is not None:
            mine = [r for r in mine if r.dataset_id == dataset_id]
        if run_keys is not None:
            hits = [r for r in mine if str(r.id) in run_keys or r.name in run_keys]
            matched |= {str(r.id) for r in hits} | {r.name for r in hits}
            mine = hits
        for ds in sorted({r.dataset_id for r in mine}):
            chosen = sorted(
                (r for r in mine if r.dataset_id == ds), key=lambda r: (r.created_at, r.id)
            )
            data = load_calibration_data(store, ds, criterion.id, [r.id for r in chosen])
            if policy not in available_policies(data.scale, data.annotators):
                if policy.startswith("annotator:"):
                    raise EvalcoreError(
                        f"no annotator named {policy.removeprefix('annotator:')!r} labelled "
                        f"{name!r} (annotators: {', '.join(data.annotators) or 'none'})"
                    )
                if criteria is not None or policy not in ("median", "mean"):
                    raise EvalcoreError(
                        f"human policy {policy!r} does not apply to {name!r} ({data.scale.kind} "
                        f"scale; policies: {', '.join(available_policies(data.scale, data.annotators))})"
                    )
                usable = "majority"
            else:
                usable = policy
            base = None
            if baseline is not None:
                base = next(
                    (r.id for r in chosen if str(r.id) == str(baseline) or r.name == str(baseline)),
                    None,
                )
                if base is None:
                    raise EvalcoreError(
                        f"the baseline {baseline!r} is not one of the runs of {name!r}: "
                        + ", ".join(f"{r.id} ({r.name})" for r in chosen)
                    )
            calibrations.append(
                calibrate_runs(data, policy=usable, baseline=base, n_boot=n_boot, seed=seed)
            )
    if run_keys is not None:
        missing = sorted(run_keys - matched)
        if missing:
            ids = {known[n].id for n in wanted}
            raise EvalcoreError(
                f"no run {missing[0]!r} of {', '.join(wanted)}; runs: "
                + ", ".join(f"{r.id} ({r.name})" for r in all_runs if r.criterion_id in ids)
            )
    if not calibrations:
        raise EvalcoreError(
            f"project {record.name!r} has no judge run of {', '.join(wanted)} to report on"
        )
    summary = project_summary(store, record.id, policy=policy, calibrations=calibrations)
    sections = [
        criterion_section(
            store,
            c,
            slice_by=slice_by if slice_by in c.data.dataset.metadata_columns else None,
            max_items=max_items,
        )
        for c in calibrations
    ]
    if slice_by is not None and not any(s.slice_column for s in sections):
        raise EvalcoreError(f"no dataset of this report has a metadata column {slice_by!r}")
    return report_html(
        sections, project=record, summary=summary, history=history_frame(calibrations), title=title
    )


def _project(store: Store, project: str | int) -> ProjectRecord:
    if isinstance(project, int):
        return store.get_project(project)
    projects = store.list_projects()
    for p in projects:
        if p.name == project:
            return p
    raise EvalcoreError(
        f"there is no project named {project!r} "
        f"(projects: {', '.join(repr(p.name) for p in projects) or 'none'})"
    )


def write_report(path: str | Path, text: str) -> Path:
    """Write a report to ``path`` (UTF-8) and return the path."""
    target = Path(path)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise EvalcoreError(f"cannot write the report to {target}: {exc.strerror or exc}") from exc
    return target
