"""Exports: human labels, judge results and metrics as CSV/JSONL/Parquet, and Vertex's metrics table.

Every table is a plain DataFrame first (so a notebook can use it) and bytes second
(:func:`table_bytes`, written by :func:`evalcore.data.write_table`, which reads every output back).
No API key is ever part of a run's record, so none can reach an export.

Every CSV evalcore writes goes through :func:`csv_safe` first, so a spreadsheet that opens it runs no
formula from a dataset, a label or a name (OWASP's advice on CSV injection); JSONL and Parquet keep
every value as it is.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from evalcore.data import write_table
from evalcore.errors import EvalcoreError
from evalcore.labels import format_label
from evalcore.report._calibration import Calibration
from evalcore.store import Store

__all__ = [
    "EXPORT_FORMATS",
    "VERTEX_PAIRWISE_WORDS",
    "csv_safe",
    "human_labels_table",
    "judge_results_table",
    "metrics_table",
    "table_bytes",
    "vertex_table",
]

#: The file formats of :func:`table_bytes`.
EXPORT_FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")

#: Vertex's pairwise words for evalcore's canonical choices (A = candidate, B = baseline).
VERTEX_PAIRWISE_WORDS: dict[str, str] = {"A": "CANDIDATE", "B": "BASELINE", "TIE": "TIE"}

_MIME = {
    "csv": "text/csv",
    "jsonl": "application/x-ndjson",
    "parquet": "application/vnd.apache.parquet",
}


# A spreadsheet evaluates a cell that starts with one of these (a tab or carriage return first hides
# the rest from a reader, and some spreadsheets skip it before they look).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# A string that is nothing but a decimal number ("-1", "+0.5", "-2e3") is that number to a
# spreadsheet, never a formula, so it is data and stays as written.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _safe_cell(value: object) -> object:
    if not isinstance(value, str) or not value.startswith(_FORMULA_START):
        return value
    return value if _PLAIN_NUMBER.fullmatch(value) else "'" + value


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell (and column name) that a spreadsheet would take for a formula
    prefixed with a single quote, as OWASP recommends against CSV injection.

    The rule: a *string* that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets
    a leading ``'``; the writer quotes every text cell. Numbers stay numbers (-0.5 in a float column is
    data), and so does a string that is only a decimal number ("-1", "+2.5"), which a spreadsheet
    reads as that number: a label such as "-1" therefore reads back as itself. Anything else, like
    ``-2+3`` or ``=HYPERLINK(...)``, reads back with its quote, which is what makes it safe.

    >>> csv_safe(pd.DataFrame({"t": ["=1+1", "-1", "- a list", "ok"], "n": [-0.5, 1, 2, 3]}))
            t    n
    0   '=1+1 -0.5
    1      -1  1.0
    2  '- a list  2.0
    3      ok  3.0
    """
    cells = {
        position: series.astype(object).map(_safe_cell)
        if series.dtype == object or isinstance(series.dtype, pd.StringDtype)
        else series
        for position, (_, series) in enumerate(frame.items())
    }
    out = pd.DataFrame(cells, index=frame.index)
    out.columns = pd.Index([_safe_cell(c) for c in frame.columns])
    return out


def table_bytes(frame: pd.DataFrame, fmt: str) -> bytes:
    """``frame`` as the bytes of a CSV, JSONL or Parquet file (UTF-8, no index). A CSV goes through
    :func:`csv_safe` (no cell runs as a formula in a spreadsheet); JSONL and Parquet hold every value
    exactly.

    >>> table_bytes(pd.DataFrame({"item_id": ["q1"], "label": [4.0]}), "jsonl")
    b'{"item_id": "q1", "label": 4.0}\\n'
    >>> print(table_bytes(pd.DataFrame({"comment": ["=HYPERLINK(1)"]}), "csv").decode(), end="")
    "comment"
    "'=HYPERLINK(1)"
    """
    if fmt not in EXPORT_FORMATS:
        raise EvalcoreError(f"cannot export as {fmt!r}; use {', '.join(EXPORT_FORMATS)}")
    buffer = io.BytesIO()
    write_table(csv_safe(frame) if fmt == "csv" else frame, buffer, fmt)
    return buffer.getvalue()


def mime_type(fmt: str) -> str:
    """The MIME type of an export format."""
    return _MIME[fmt]


def human_labels_table(store: Store, dataset_id: int, criterion_id: int) -> pd.DataFrame:
    """Every revision of every human label of a criterion on a dataset (``latest`` marks the one that
    counts): see :meth:`evalcore.store.Store.export_annotations`."""
    return store.export_annotations(dataset_id=dataset_id, criterion_id=criterion_id)


def _json_text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and np.isnan(value):
        return None
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def judge_results_table(store: Store, calibration: Calibration) -> pd.DataFrame:
    """Every result of the calibrated runs, one row per (run, item, order), with the run's name,
    template version and model beside the item's own id, status, label, score, reason and raw reply,
    tokens, cost and latency, the confidence and the probability of each label. ``samples``,
    ``details`` and ``probabilities`` are JSON text."""
    frames = []
    for run in calibration.runs:
        store.authorize("export", run_id=run.info.id)
        frame = store.results_frame(run.info.id).drop(columns=["item_pk", "position"])
        for column in ("samples", "details", "probabilities"):
            frame[column] = [_json_text(v) for v in frame[column].tolist()]
        frame.insert(0, "model", run.info.model)
        frame.insert(0, "template_version", run.info.version)
        frame.insert(0, "template", run.info.template)
        frame.insert(0, "run", run.title)
        frame.insert(0, "run_id", run.info.id)
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["run_id", "run", "template", "template_version", "model"])
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "criterion", calibration.data.criterion.name)
    out.insert(0, "dataset", calibration.data.dataset.name)
    return out


def metrics_table(calibrations: Calibration | Sequence[Calibration]) -> pd.DataFrame:
    """Every run's metrics (one row per run and metric, with interval, coverage and the comparison
    with the baseline run), and the humans' agreement, of one or several calibrations."""
    items = [calibrations] if isinstance(calibrations, Calibration) else list(calibrations)
    frames = [c.to_frame() for c in items]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _words(labels: pd.Series) -> list[str | None]:
    """Labels as people write them; a missing label stays missing (an empty cell, a JSON null),
    never the text ``nan``, which a reader would take for a label of its own."""
    return [None if pd.isna(v) else format_label(v) for v in labels.tolist()]


def vertex_table(
    store: Store,
    calibrations: Calibration | Sequence[Calibration],
    *,
    runs: dict[str, int] | None = None,
    words: Literal["vertex", "canonical"] = "vertex",
) -> pd.DataFrame:
    """Vertex AI's metrics-table layout of one dataset, one judge run per criterion.

    Columns: ``item_id``, ``prompt``, ``response`` (for pairwise data also
    ``baseline_model_response``), ``context`` and ``reference`` when the items have them, then per
    criterion ``{criterion}/human_rating``, ``{criterion}/score`` and ``{criterion}/explanation``
    (pointwise) or ``{criterion}/human_pairwise_choice``, ``{criterion}/pairwise_choice`` and
    ``{criterion}/explanation`` (pairwise). The human column is the calibration's policy label; the
    judge's is the run's label (the first presentation order), empty when it gave none (a failed
    or unparsed verdict is an empty cell, read back as missing, so the numbers survive the round
    trip). Pairwise
    choices use Vertex's words CANDIDATE/BASELINE/TIE (``words="canonical"``: A/B/TIE), which
    :func:`evalcore.data.load_file` reads back. ``runs`` picks the run per criterion name (default:
    each calibration's best run by balanced accuracy).
    """
    items = [calibrations] if isinstance(calibrations, Calibration) else list(calibrations)
    if not items:
        raise EvalcoreError("there is nothing to export")
    dataset = items[0].data.dataset
    if any(c.data.dataset.id != dataset.id for c in items):
        raise EvalcoreError("a Vertex metrics table holds one dataset; the calibrations differ")
    store.authorize("export", dataset_id=dataset.id)
    texts = store.items_frame(dataset.id)
    pairwise = dataset.kind == "pairwise"
    out = pd.DataFrame({"item_id": texts["item_id"].astype(object).to_numpy()}, index=texts.index)
    if "prompt" in texts.columns:
        out["prompt"] = texts["prompt"].to_numpy()
    if pairwise:
        out["response"] = texts["response_a"].to_numpy()
        out["baseline_model_response"] = texts["response_b"].to_numpy()
    else:
        out["response"] = texts["response"].to_numpy()
    for field in ("context", "reference"):
        if field in texts.columns and texts[field].notna().any():
            out[field] = texts[field].to_numpy()
    for calibration in items:
        name = calibration.data.criterion.name
        chosen = (runs or {}).get(name)
        if chosen is None:
            best = calibration.best()
            if best is None:
                continue
            chosen = best.info.id
        results = calibration.data.run(chosen).results
        reasons = store.results_frame(chosen)
        reasons = reasons[reasons["order"] == "AB"].set_index("item_pk")["reason"]
        human = calibration.human.reindex(out.index)
        judge = results["label"].reindex(out.index)
        explanation = reasons.reindex(out.index).where(judge.notna(), None)
        if calibration.data.scale.kind == "pairwise":
            mapping = (
                VERTEX_PAIRWISE_WORDS
                if words == "vertex"
                else {k: k for k in VERTEX_PAIRWISE_WORDS}
            )
            out[f"{name}/human_pairwise_choice"] = human.map(mapping).astype(object).to_numpy()
            out[f"{name}/pairwise_choice"] = judge.map(mapping).astype(object).to_numpy()
        elif calibration.data.scale.is_numeric:
            out[f"{name}/human_rating"] = human.astype(float).to_numpy()
            out[f"{name}/score"] = judge.astype(float).to_numpy()
        else:
            out[f"{name}/human_rating"] = _words(human)
            out[f"{name}/score"] = _words(judge)
        out[f"{name}/explanation"] = explanation.astype(object).to_numpy()
    return out.reset_index(drop=True)
