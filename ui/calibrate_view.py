"""The Calibrate page's project mode: judge runs from the store against people, side by side.

The page reads widgets and calls :mod:`evalcore.report`; this module holds the caching and the
renderers. Loaded data is cached with ``st.cache_data`` in pieces keyed by ids and a data version
(:func:`evalcore.report.data_version`, asked at most every 2 s): the items of a dataset, the human
labels of (dataset, criterion), and each run's results. Adding a run loads only that run; changing the
human policy or the baseline recomputes from memory; a new label or result changes the version and
reloads what changed. What is computed from the data (calibrations, disagreements, slices, the human
ceiling) is kept with ``st.cache_resource`` under the same keys, so a rerun that changes nothing of it
(opening an item, the next item) computes nothing.

Session-state keys (every widget has one, so tests and the browser can find it):

====================  ============================================================================
``cal_dataset``       dataset id
``cal_criterion``     criterion id
``cal_policy``        human-label policy: majority, median, mean or ``annotator:<name>``
``cal_runs``          run ids to compare (multiselect)
``cal_baseline``      the run the others are compared with
``cal_table_box``     the container of the side-by-side table (``.st-key-cal_table_box`` in the DOM)
``cal_view``          which view is open below the table (see ``VIEWS``)
``cal_heat``          the confusion matrices (a plotly chart; clicking a cell selects it)
``cal_heat_norm``     counts / row-normalised toggle
``cal_cell_run``,     the selected confusion-matrix cell: run id, human label and judge label
``cal_cell_human``,   (a click on a heatmap cell sets all three)
``cal_cell_judge``
``cal_cell_items``    the items of the cell (a table; selecting a row opens the item)
``cal_cell_item``     the item open in the cell (item database id); ``cal_cell_prev``/``_next`` move
``cal_dis_wrong``,    disagreement filters: "run X wrong" and "run Y right" (run id or ``None``)
``cal_dis_right``
``cal_dis_table``     the disagreement table (selecting a row opens the item)
``cal_dis_item``      the item open from the disagreements; ``cal_dis_prev``/``_next`` move
``cal_slice_col``     metadata column to slice by; ``cal_slice_metric`` the metric shown
====================  ============================================================================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from evalcore.errors import EvalcoreError
from evalcore.labels import format_label
from evalcore.report import (
    HUMANS_COLUMN,
    SLICE_METRICS,
    Calibration,
    CalibrationData,
    HumanCeiling,
    RunData,
    available_policies,
    binary_analysis,
    calibrate_runs,
    cell_items,
    data_version,
    disagreements,
    human_ceiling,
    item_detail,
    load_human,
    load_items,
    load_metadata,
    load_run,
    pairwise_analysis,
    pairwise_table,
    policy_name,
    run_infos,
    slice_figure,
    slice_table,
    slice_text,
    threshold_figure,
)
from evalcore.store import CriterionRecord, DatasetRecord, JudgeRunRecord, Store
from ui.render import heatmaps, metric_table, show_error

VIEW_MATRICES = "Confusion matrices"
VIEW_DISAGREEMENTS = "Disagreements"
VIEW_THRESHOLDS = "Scores and thresholds"
VIEW_PAIRWISE = "Pairwise"
VIEW_SLICES = "Slices"

#: Rows of the disagreement table sent to the browser (the count of all of them is shown).
MAX_ROWS = 500


# --- cached loading ------------------------------------------------------------------------------


@st.cache_data(max_entries=8, show_spinner=False)
def _items(url: str, dataset_id: int, _store: Store) -> pd.DataFrame:
    return load_items(_store, dataset_id)


@st.cache_data(max_entries=8, show_spinner=False)
def _human(
    url: str, dataset_id: int, criterion_id: int, version: tuple[Any, ...], _store: Store
) -> pd.DataFrame:
    criterion = _store.get_criterion(criterion_id)
    return load_human(_store, dataset_id, criterion, _items(url, dataset_id, _store).index)


@st.cache_data(max_entries=32, show_spinner=False)
def _run(
    url: str, run_id: int, dataset_id: int, version: tuple[Any, ...], _store: Store
) -> RunData:
    run = _store.get_run(run_id)
    info = run_infos(_store, [run])[0]
    criterion = _store.get_criterion(run.criterion_id)
    return load_run(_store, info, criterion.scale, _items(url, dataset_id, _store).index)


@st.cache_data(max_entries=8, show_spinner=False)
def _metadata(url: str, dataset_id: int, column: str, _store: Store) -> pd.DataFrame:
    return load_metadata(_store, dataset_id, [column])


# Computed views are kept as they are (st.cache_resource: no copy, no pickling); they are never
# changed after they are made.


@st.cache_resource(max_entries=8, show_spinner=False)
def _ceiling(
    url: str, dataset_id: int, criterion_id: int, version: tuple[Any, ...], _data: CalibrationData
) -> HumanCeiling | None:
    if _data.human.shape[1] < 2:
        return None
    return human_ceiling(_data.human, _data.scale, n_boot=1000, seed=0)


@st.cache_resource(max_entries=16, show_spinner=False)
def _calibration(
    url: str,
    version: tuple[Any, ...],
    policy: str,
    baseline: int,
    _data: CalibrationData,
    _ceiling: HumanCeiling | None,
) -> Calibration:
    made = calibrate_runs(_data, policy=policy, baseline=baseline, ceiling=False, n_boot=1000)
    return dataclasses.replace(made, ceiling=_ceiling)


@st.cache_resource(max_entries=16, show_spinner=False)
def _disagreements(
    url: str,
    version: tuple[Any, ...],
    policy: str,
    baseline: int,
    wrong: int | None,
    right: int | None,
    _cal: Calibration,
) -> pd.DataFrame:
    return disagreements(_cal, wrong=wrong, right=right)


@st.cache_resource(max_entries=8, show_spinner=False)
def _slices(
    url: str,
    version: tuple[Any, ...],
    policy: str,
    baseline: int,
    column: str,
    _data: CalibrationData,
) -> pd.DataFrame:
    return slice_table(_data, column, policy=policy, baseline=baseline, n_boot=500)


def _version_key(version: tuple[Any, ...], runs: Sequence[int]) -> tuple[Any, ...]:
    """What a computed view depends on: the data's fingerprint and the runs, in their order."""
    return (version, tuple(runs))


@st.cache_data(ttl=2, max_entries=32, show_spinner=False)
def _version(
    url: str, dataset_id: int, criterion_id: int, runs: tuple[int, ...], _store: Store
) -> tuple[Any, ...]:
    # asked again at most every 2 s: clicks in a row reuse it, a new label shows 2 s later
    return data_version(_store, dataset_id, criterion_id, runs)


def load(
    store: Store, dataset: DatasetRecord, criterion: CriterionRecord, runs: Sequence[int]
) -> tuple[CalibrationData, tuple[Any, ...]]:
    """The calibration data of the chosen runs (cached in pieces) and its version fingerprint."""
    url = store.url
    version = _version(url, dataset.id, criterion.id, tuple(runs), store)
    per_run = dict(version[3])
    items = _items(url, dataset.id, store)
    human = _human(url, dataset.id, criterion.id, version[2], store)
    loaded = tuple(_run(url, r, dataset.id, per_run.get(r, ()), store) for r in runs)
    data = CalibrationData(dataset, criterion, items, human, loaded)
    return data, (*version[:3], tuple(sorted(per_run.items())))


# --- choosing what to compare ----------------------------------------------------------------------


def run_label(run: JudgeRunRecord) -> str:
    """How a run is offered in the pickers: name, model, when, and its status if not done."""
    when = run.created_at.strftime("%Y-%m-%d")
    extra = "" if run.status == "done" else f" · {run.status}"
    return f"{run.name} · {when}{extra}"


def choose(
    store: Store, project_id: int
) -> tuple[DatasetRecord, CriterionRecord, list[JudgeRunRecord]] | None:
    """The dataset, criterion and runs pickers; ``None`` (with a hint shown) when nothing to compare."""
    runs = store.list_runs(project_id=project_id)
    if not runs:
        st.info("No judge run yet. Run a judge template on the Judge page, or import judge labels.")
        st.page_link("pages/judge.py", label="Go to the Judge page", icon=":material/gavel:")
        return None
    datasets = {d.id: d for d in store.list_datasets(project_id)}
    with_runs = [d for d in datasets.values() if any(r.dataset_id == d.id for r in runs)]
    c1, c2, c3 = st.columns([2, 2, 2])
    dataset_ids = [d.id for d in with_runs]
    if st.session_state.get("cal_dataset") not in dataset_ids:
        # start on the dataset of the project's first criterion that has runs
        first = min(runs, key=lambda r: (r.criterion_id, r.created_at, r.id))
        st.session_state["cal_dataset"] = first.dataset_id
    dataset_id = c1.selectbox(
        "Dataset",
        dataset_ids,
        format_func=lambda i: f"{datasets[i].name} v{datasets[i].version}",
        key="cal_dataset",
    )
    criteria = {c.id: c for c in store.list_criteria(project_id)}
    criterion_ids = sorted({r.criterion_id for r in runs if r.dataset_id == dataset_id})
    if st.session_state.get("cal_criterion") not in criterion_ids:
        st.session_state["cal_criterion"] = criterion_ids[0]
    criterion_id = c2.selectbox(
        "Criterion",
        criterion_ids,
        format_func=lambda i: f"{criteria[i].name} ({criteria[i].scale.kind})",
        key="cal_criterion",
    )
    mine = sorted(
        (r for r in runs if r.dataset_id == dataset_id and r.criterion_id == criterion_id),
        key=lambda r: (r.created_at, r.id),
    )
    by_id = {r.id: r for r in mine}
    pair = (dataset_id, criterion_id)
    if "cal_runs" not in st.session_state or st.session_state.get("_cal_runs_for") != pair:
        st.session_state["cal_runs"] = [r.id for r in mine]  # a new pair: every run, oldest first
    else:
        st.session_state["cal_runs"] = [r for r in st.session_state["cal_runs"] if r in by_id]
    st.session_state["_cal_runs_for"] = pair
    picked = c3.multiselect(
        "Judge runs",
        list(by_id),
        format_func=lambda i: run_label(by_id[i]),
        key="cal_runs",
        help="Template versions, models or imported judge columns; any number, side by side.",
    )
    if not picked:
        st.info("Choose at least one judge run.")
        return None
    return datasets[dataset_id], criteria[criterion_id], [by_id[r] for r in picked]


def choose_policy_and_baseline(
    data: CalibrationData, runs: Sequence[JudgeRunRecord]
) -> tuple[str, int]:
    c1, c2 = st.columns([2, 4])
    policies = available_policies(data.scale, data.annotators)
    if st.session_state.get("cal_policy") not in policies:
        st.session_state["cal_policy"] = "majority"
    policy = c1.selectbox(
        "Human label",
        policies,
        format_func=policy_name,
        key="cal_policy",
        help=(
            "How several annotators' labels become the one human label of an item. The policy is "
            "part of every number below."
        ),
    )
    titles = {r.info.id: r.info.title for r in data.runs}
    ids = [r.id for r in runs]
    if st.session_state.get("cal_baseline") not in ids:
        st.session_state["cal_baseline"] = ids[0]
    baseline = c2.selectbox(
        "Baseline run",
        ids,
        format_func=lambda i: titles.get(i, str(i)),
        key="cal_baseline",
        help="Every other run is compared with this one: paired differences and McNemar's test.",
    )
    return str(policy), int(baseline)


# --- the views --------------------------------------------------------------------------------------


def overview(calibration: Calibration) -> None:
    """The side-by-side table, with the human ceiling as its reference column."""
    data = calibration.data
    scale = data.scale
    st.caption(
        f"{scale.kind} scale ({', '.join(scale.display_labels)}) · {len(data.items)} items · "
        f"{len(data.annotators)} annotators · human label: {calibration.policy_name} · 95% "
        "bootstrap intervals · ★ best value of a row · Δ rows: paired difference from the baseline "
        "run, with McNemar's exact p"
    )
    try:
        table = calibration.table()
    except EvalcoreError as exc:
        show_error(exc)
        return
    with st.container(key="cal_table_box"):  # the box's class finds the table in a browser
        metric_table(table, key="cal_table")
    ceiling = calibration.ceiling
    if ceiling is None or ceiling.krippendorff_alpha is None:
        st.caption(
            "No human ceiling: it needs at least two annotators on the same items. Without it "
            "there is no telling how far the judges are from people rather than from 1.0."
        )
        return
    st.caption(
        f"**{HUMANS_COLUMN}**: how much the annotators agree with each other, on the "
        f"{ceiling.n_items} items at least two of the {ceiling.n_annotators} rated (κ "
        f"{ceiling.kappa_weights or 'unweighted'}, mean over pairs of annotators; Krippendorff's "
        "α with its 95% interval). A judge near that line agrees with people as well as they "
        "agree with each other."
    )


def cell_from_selection(selection: Any, run_ids: Sequence[int]) -> tuple[int, str, str] | None:
    """(run id, human label, judge label) of the confusion-matrix cell a chart selection points at.

    ``selection`` is the chart's state (``{"selection": {"points": [...]}}``); each cell's marker
    carries ``customdata`` = [panel index, human label, judge label, ...] and panel ``i`` shows
    ``run_ids[i]``. ``None`` when nothing (or nothing known) is selected.
    """
    points = ((selection or {}).get("selection") or {}).get("points") or []
    for point in points:
        custom = point.get("customdata")
        if isinstance(custom, list | tuple) and len(custom) >= 3:
            panel = int(custom[0])
            if 0 <= panel < len(run_ids):
                return run_ids[panel], str(custom[1]), str(custom[2])
    return None


def _on_heat_click() -> None:
    """A click on a confusion-matrix cell: select that cell (run, human label, judge label)."""
    cell = cell_from_selection(
        st.session_state.get("cal_heat"), st.session_state.get("_cal_panel_runs", [])
    )
    if cell is not None:
        run_id, human, judge = cell
        st.session_state["cal_cell_run"] = run_id
        st.session_state["cal_cell_human"] = human
        st.session_state["cal_cell_judge"] = judge
        st.session_state.pop("cal_cell_item", None)


def _pick_row(table_key: str, item_key: str, ids_key: str) -> None:
    event = st.session_state.get(table_key)
    rows = (event or {}).get("selection", {}).get("rows", []) if event else []
    ids = st.session_state.get(ids_key, [])
    if rows and 0 <= rows[0] < len(ids):
        st.session_state[item_key] = ids[rows[0]]


def _step(item_key: str, ids_key: str, delta: int) -> None:
    ids = st.session_state.get(ids_key, [])
    if not ids:
        return
    current = st.session_state.get(item_key)
    at = ids.index(current) if current in ids else 0
    st.session_state[item_key] = ids[max(0, min(len(ids) - 1, at + delta))]


def matrices(calibration: Calibration, store: Store) -> None:
    """Confusion matrices side by side; a click on a cell (or the pickers) lists its items."""
    panels = calibration.panels()
    if not panels:
        st.info("No run has an item with both a human label and a judge label yet.")
        return
    st.session_state["_cal_panel_runs"] = [r.info.id for r in calibration.compared]
    st.caption("Rows: the humans' label; columns: the judge's. Click a cell to list its items.")
    heatmaps(panels, key="cal_heat", selectable=True, on_select=_on_heat_click)
    titles = {r.info.id: r.title for r in calibration.compared}
    labels = [format_label(x) for x in calibration.labels]
    if st.session_state.get("cal_cell_run") not in titles:
        st.session_state["cal_cell_run"] = next(iter(titles))
    for key in ("cal_cell_human", "cal_cell_judge"):
        if st.session_state.get(key) not in labels:
            st.session_state[key] = None  # no cell chosen yet
    c1, c2, c3 = st.columns([3, 1, 1])
    run_id = c1.selectbox("Cell of run", list(titles), format_func=titles.get, key="cal_cell_run")
    human = c2.selectbox("Human label", labels, key="cal_cell_human", placeholder="choose")
    judge = c3.selectbox("Judge label", labels, key="cal_cell_judge", placeholder="choose")
    if human is None or judge is None:
        st.caption("Click a cell of a matrix (or choose its labels here) to list its items.")
        return
    items = cell_items(calibration, int(run_id), human, judge)
    st.markdown(
        f"**{len(items)} items** where people said **{human}** and "
        f"*{titles[int(run_id)]}* said **{judge}**"
    )
    if items.empty:
        return
    shown = items.head(MAX_ROWS)
    if shown["score"].isna().all():  # scores are read for binary criteria
        shown = shown.drop(columns="score")
    ids = [int(i) for i in shown.index]
    st.session_state["_cal_cell_ids"] = ids
    if len(items) > MAX_ROWS:
        st.caption(f"The first {MAX_ROWS} of them, in dataset order.")
    st.dataframe(
        shown.reset_index(drop=True),
        key="cal_cell_items",
        on_select=lambda: _pick_row("cal_cell_items", "cal_cell_item", "_cal_cell_ids"),
        selection_mode="single-row",
        hide_index=True,
        width="stretch",
        height=min(35 * (len(shown) + 1) + 3, 280),
    )
    item_browser(
        store,
        calibration,
        ids,
        shown["item_id"].tolist(),
        "cal_cell_item",
        "_cal_cell_ids",
        "cal_cell",
    )


def item_browser(
    store: Store,
    calibration: Calibration,
    ids: list[int],
    names: list[str],
    item_key: str,
    ids_key: str,
    prefix: str,
) -> None:
    """An item picker with previous/next buttons, and the open item in full."""
    if st.session_state.get(item_key) not in ids:
        st.session_state[item_key] = ids[0]
    name_of = dict(zip(ids, names, strict=True))
    place = {pk: n for n, pk in enumerate(ids, start=1)}
    c1, c2, c3 = st.columns([1, 4, 1], vertical_alignment="bottom")
    c1.button(
        "Previous",
        key=f"{prefix}_prev",
        on_click=_step,
        args=(item_key, ids_key, -1),
        icon=":material/arrow_back:",
        width="stretch",
    )
    pk = c2.selectbox(
        "Item",
        ids,
        format_func=lambda i: f"{name_of[i]}  ({place[i]} of {len(ids)})",
        key=item_key,
    )
    c3.button(
        "Next",
        key=f"{prefix}_next",
        on_click=_step,
        args=(item_key, ids_key, 1),
        icon=":material/arrow_forward:",
        width="stretch",
    )
    show_item(store, calibration, int(pk))


def show_item(store: Store, calibration: Calibration, item_pk: int) -> None:
    """Prompt, response(s), every human label with its comment, every run's label, reason and raw
    reply. Texts are shown as plain text, never as markdown or HTML."""
    data = calibration.data
    detail = item_detail(store, item_pk, data.criterion.id, [r.info for r in data.runs])
    item = detail.item
    with st.container(border=True, key=f"cal_item_{item_pk}"):
        st.markdown(f"**Item `{item.external_id}`**")
        if item.metadata:
            st.caption(" · ".join(f"{k}: {v}" for k, v in item.metadata.items()))
        fields = [("Prompt", item.prompt), ("Context", item.context), ("Reference", item.reference)]
        for name, text in fields:
            if text:
                st.markdown(f"**{name}**")
                st.text(text)
        if item.response_a is not None or item.response_b is not None:
            left, right = st.columns(2)
            with left:
                st.markdown("**Response A** (candidate)")
                st.text(item.response_a or "")
            with right:
                st.markdown("**Response B** (baseline)")
                st.text(item.response_b or "")
        elif item.response:
            st.markdown("**Response**")
            st.text(item.response)
        human = calibration.human.get(item_pk)
        shown = "none" if human is None or human != human else format_label(human)
        st.markdown(f"**Humans** ({calibration.policy_name}): **{shown}**")
        rows = [
            {
                "annotator": h.annotator,
                "label": h.label if h.label is not None else f"({h.flag})",
                "comment": h.comment or "",
            }
            for h in detail.humans
        ]
        if rows:
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        for r in detail.results:
            verdict = r.label if r.status == "ok" else r.status
            order = f" · order {r.order}" if r.order == "BA" else ""
            score = "" if r.score is None else f" · score {r.score:.3g}"
            st.markdown(f"**{r.run}**{order}: **{verdict}**{score}")
            if r.reason:
                st.text(r.reason)
            if r.error:
                st.caption(f"error: {r.error}")
            if r.raw:
                with st.expander("Raw reply"):
                    st.code(r.raw, language=None, wrap_lines=True)


def disagreement_view(
    calibration: Calibration, store: Store, url: str, version: tuple[Any, ...]
) -> None:
    """The disagreement table across all runs with the "X wrong, Y right" filters."""
    titles = {r.info.id: r.title for r in calibration.runs}
    options: list[int | None] = [None, *titles]
    for key in ("cal_dis_wrong", "cal_dis_right"):
        if st.session_state.get(key) not in options:
            st.session_state[key] = None
    c1, c2 = st.columns(2)
    wrong = c1.selectbox(
        "Wrong by",
        options,
        format_func=lambda i: "(any run)" if i is None else titles[i],
        key="cal_dis_wrong",
    )
    right = c2.selectbox(
        "Right by",
        options,
        format_func=lambda i: "(any run)" if i is None else titles[i],
        key="cal_dis_right",
        help="E.g. wrong by version 7 and right by version 6: what the new version broke.",
    )
    if wrong is not None and wrong == right:
        st.warning("A run cannot be wrong and right on the same item; choose two different runs.")
        return
    table = _disagreements(
        url, version, calibration.policy, int(calibration.baseline or 0), wrong, right, calibration
    )
    ordinal = calibration.data.scale.is_ordinal
    st.markdown(
        f"**{len(table)} items** "
        + (
            "sorted by the largest distance between a judge and the humans (scale steps), then by "
            "how many runs are wrong."
            if ordinal
            else "sorted by how many runs are wrong."
        )
        + (f" The first {MAX_ROWS} are shown." if len(table) > MAX_ROWS else "")
        + " Click a column to sort; select a row to open the item."
    )
    if table.empty:
        return
    shown = table.head(MAX_ROWS)
    ids = [int(i) for i in shown.index]
    st.session_state["_cal_dis_ids"] = ids
    st.dataframe(
        shown.reset_index(drop=True),
        key="cal_dis_table",
        on_select=lambda: _pick_row("cal_dis_table", "cal_dis_item", "_cal_dis_ids"),
        selection_mode="single-row",
        hide_index=True,
        width="stretch",
        height=320,
    )
    item_browser(
        store,
        calibration,
        ids,
        shown["item_id"].tolist(),
        "cal_dis_item",
        "_cal_dis_ids",
        "cal_dis",
    )


def threshold_view(calibration: Calibration) -> None:
    """Binary criteria: balanced accuracy against the score threshold, TPR/TNR, corrected pass rate."""
    analyses = [binary_analysis(calibration, r.info.id) for r in calibration.compared]
    sweeps = [(a.run.title, a.points, a.best) for a in analyses if a.points]
    positive = analyses[0].positive if analyses else ""
    if sweeps:
        st.plotly_chart(threshold_figure(sweeps), key="cal_sweep", config={"displaylogo": False})
    else:
        st.info("No run recorded a numeric score, so there is no threshold to sweep.")
    rows = {}
    for a in analyses:
        pr = a.pass_rate
        rows[a.run.title] = {
            "TPR (judge's labels)": _interval(a.tpr, a.tpr_ci),
            "TNR (judge's labels)": _interval(a.tnr, a.tnr_ci),
            "best threshold": "–" if a.best is None else f"{a.best.threshold:.3f}",
            "balanced accuracy there": "–" if a.best is None else f"{a.best.balanced_accuracy:.3f}",
            "unlabelled items judged": str(a.n_unlabelled),
            f"judge's {positive} rate there": "–" if pr is None else f"{pr.p_obs:.1%}",
            f"bias-corrected {positive} rate": "–" if pr is None else _percent(pr.theta, pr.ci),
            "note": a.note or "",
        }
    st.dataframe(pd.DataFrame(rows), key="cal_binary_table", width="stretch")
    st.caption(
        f"The corrected rate estimates the true share of {positive} among the items nobody "
        "labelled, from the judge's verdicts there and its TPR/TNR on the labelled items, with a "
        "95% bootstrap interval."
    )


def _interval(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None or value != value:
        return "–"
    return f"{value:.3f}" + ("" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]")


def _percent(value: float, ci: tuple[float, float] | None) -> str:
    return f"{value:.1%}" + ("" if ci is None else f" [{ci[0]:.1%}, {ci[1]:.1%}]")


def pairwise_view(calibration: Calibration) -> None:
    """Pairwise criteria: win rates by humans and judge, position bias, human ties."""
    analyses = [pairwise_analysis(calibration, r.info.id) for r in calibration.compared]
    st.dataframe(pairwise_table(analyses), key="cal_pairwise_table", width="stretch")
    st.caption(
        "A = the candidate (response A), B = the baseline. Position consistency: share of items "
        "with the same verdict when the responses are shown in either order (runs judged in both "
        "orders only); first-position preference: share of decided verdicts that chose the "
        "response shown first (0.5 = none)."
    )


def slice_view(calibration: Calibration, store: Store, url: str, version: tuple[Any, ...]) -> None:
    """The same metrics per value of a metadata column, as a chart and a table."""
    columns = list(calibration.data.dataset.metadata_columns)
    if not columns:
        st.info("This dataset has no metadata column to slice by.")
        return
    if st.session_state.get("cal_slice_col") not in columns:
        st.session_state["cal_slice_col"] = columns[0]
    metrics = [
        m for m, _ in SLICE_METRICS if m != "cohen_kappa_quadratic" or calibration.kind == "ordinal"
    ]
    names = dict(SLICE_METRICS)
    c1, c2 = st.columns(2)
    column = c1.selectbox("Slice by", columns, key="cal_slice_col")
    metric = c2.selectbox("Metric", metrics, format_func=names.get, key="cal_slice_metric")
    data = calibration.data.with_metadata(
        _metadata(url, calibration.data.dataset.id, column, store)
    )
    table = _slices(url, version, calibration.policy, int(calibration.baseline or 0), column, data)
    st.plotly_chart(
        slice_figure(table, metric=metric, name=names[metric]),
        key="cal_slice_chart",
        config={"displaylogo": False},
    )
    st.dataframe(slice_text(table, metric), key="cal_slice_table", width="stretch")


def views(calibration: Calibration) -> list[str]:
    """The views that apply to the criterion, in order."""
    out = [VIEW_MATRICES, VIEW_DISAGREEMENTS]
    if calibration.kind == "binary":
        out.append(VIEW_THRESHOLDS)
    if calibration.kind == "pairwise":
        out.append(VIEW_PAIRWISE)
    out.append(VIEW_SLICES)
    return out


def project_mode(store: Store, project_id: int) -> None:
    """The whole project mode of the Calibrate page."""
    chosen = choose(store, project_id)
    if chosen is None:
        return
    dataset, criterion, runs = chosen
    run_ids = [r.id for r in runs]
    try:
        data, version = load(store, dataset, criterion, run_ids)
    except EvalcoreError as exc:
        show_error(exc)
        return
    if data.human.shape[1] == 0:
        st.info(
            f"Nobody has labelled **{criterion.name}** on **{dataset.name}** yet, so there is "
            "nothing to compare the judge with. Rate some items on the Annotate page."
        )
        st.page_link("pages/annotate.py", label="Go to Annotate", icon=":material/edit_note:")
        return
    policy, baseline = choose_policy_and_baseline(data, runs)
    url = store.url
    ceiling = _ceiling(url, dataset.id, criterion.id, version[2], data)
    try:
        calibration = _calibration(
            url, _version_key(version, run_ids), policy, baseline, data, ceiling
        )
    except EvalcoreError as exc:
        show_error(exc)
        return
    overview(calibration)
    options = views(calibration)
    if st.session_state.get("cal_view") not in options:
        st.session_state["cal_view"] = VIEW_MATRICES
    view = st.segmented_control("View", options, key="cal_view", label_visibility="collapsed")
    key = _version_key(version, run_ids)
    if view == VIEW_MATRICES:
        matrices(calibration, store)
    elif view == VIEW_DISAGREEMENTS:
        disagreement_view(calibration, store, url, key)
    elif view == VIEW_THRESHOLDS:
        threshold_view(calibration)
    elif view == VIEW_PAIRWISE:
        pairwise_view(calibration)
    elif view == VIEW_SLICES:
        slice_view(calibration, store, url, key)
