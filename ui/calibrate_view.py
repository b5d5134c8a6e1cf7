"""The Calibrate page's project mode: judge runs from the store against people, side by side.

Widgets and layout only. The data comes from :class:`evalcore.report.CalibrationLoader` (through
``ui/cache.py``, which keeps the pieces by id and data version and the computed views by version and
choices), the numbers from the one engine (:func:`evalcore.report.calibrate_runs`). Every
session-state key is a constant of :class:`ui.state.Calibrate`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from evalcore.errors import EvalcoreError
from evalcore.labels import format_label
from evalcore.report import (
    CHANCE_COLUMN,
    CONSTANT_COLUMN,
    HUMANS_COLUMN,
    Calibration,
    CalibrationData,
    DataVersion,
    alt_test_figure,
    alt_test_table,
    available_policies,
    binary_analysis,
    cell_from_selection,
    cell_items,
    default_scoring,
    item_detail,
    pairwise_analysis,
    pairwise_table,
    policy_name,
    rate_table,
    repeated_runs,
    run_alt_test,
    run_alt_test_curve,
    run_rate_estimate,
    runs_as_samples,
    self_agreement,
    self_agreement_table,
    slice_figure,
    slice_metrics,
    slice_text,
    threshold_figure,
)
from evalcore.store import CriterionRecord, DatasetRecord, JudgeRunRecord, Store
from evalcore.words import plural
from ui import cache, state
from ui.render import code_span, heatmaps, md_escape, metric_table, show_error
from ui.state import Calibrate as K

__all__ = ["alt_test_section", "cell_from_selection", "project_mode"]

VIEW_MATRICES = "Confusion matrices"
VIEW_DISAGREEMENTS = "Disagreements"
VIEW_THRESHOLDS = "Scores and thresholds"
VIEW_PAIRWISE = "Pairwise"
VIEW_SLICES = "Slices"
VIEW_ALT = "Replace an annotator?"
VIEW_SELF = "Self-agreement"

#: Rows of the disagreement table sent to the browser (the count of all of them is shown).
MAX_ROWS = 500


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
    c1, c2 = st.columns(2)
    dataset_ids = [d.id for d in with_runs]
    if st.session_state.get(K.DATASET) not in dataset_ids:
        # start on the dataset of the project's first criterion that has runs
        first = min(runs, key=lambda r: (r.criterion_id, r.created_at, r.id))
        st.session_state[K.DATASET] = first.dataset_id
    dataset_id = c1.selectbox(
        "Dataset",
        dataset_ids,
        format_func=lambda i: f"{datasets[i].name} v{datasets[i].version}",
        key=K.DATASET,
    )
    criteria = {c.id: c for c in store.list_criteria(project_id)}
    criterion_ids = sorted({r.criterion_id for r in runs if r.dataset_id == dataset_id})
    if st.session_state.get(K.CRITERION) not in criterion_ids:
        st.session_state[K.CRITERION] = criterion_ids[0]
    criterion_id = c2.selectbox(
        "Criterion",
        criterion_ids,
        format_func=lambda i: f"{criteria[i].name} ({criteria[i].scale.kind})",
        key=K.CRITERION,
    )
    mine = sorted(
        (r for r in runs if r.dataset_id == dataset_id and r.criterion_id == criterion_id),
        key=lambda r: (r.created_at, r.id),
    )
    by_id = {r.id: r for r in mine}
    pair = (dataset_id, criterion_id)
    if K.RUNS not in st.session_state or st.session_state.get(K.RUNS_FOR) != pair:
        st.session_state[K.RUNS] = [r.id for r in mine]  # a new pair: every run, oldest first
    else:
        st.session_state[K.RUNS] = [r for r in st.session_state[K.RUNS] if r in by_id]
    st.session_state[K.RUNS_FOR] = pair
    picked = st.multiselect(  # a row of its own, chips wrapping: every choice reads in full
        "Judge runs",
        list(by_id),
        format_func=lambda i: run_label(by_id[i]),
        key=K.RUNS,
        wrap=True,
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
    if st.session_state.get(K.POLICY) not in policies:
        st.session_state[K.POLICY] = "majority"
    policy = c1.selectbox(
        "Human label",
        policies,
        format_func=policy_name,
        key=K.POLICY,
        help=(
            "How several annotators' labels become the one human label of an item. The policy is "
            "part of every number below."
        ),
    )
    titles = {r.info.id: r.info.title for r in data.runs}
    ids = [r.id for r in runs]
    if st.session_state.get(K.BASELINE) not in ids:
        st.session_state[K.BASELINE] = ids[0]
    baseline = c2.selectbox(
        "Baseline run",
        ids,
        format_func=lambda i: titles.get(i, str(i)),
        key=K.BASELINE,
        help="Every other run is compared with this one: paired differences and McNemar's test.",
    )
    return str(policy), int(baseline)


# --- the views --------------------------------------------------------------------------------------


def overview(calibration: Calibration) -> None:
    """The side-by-side table, with the human ceiling as its reference column, and a note for
    every run that has nothing to compare."""
    data = calibration.data
    scale = data.scale
    st.caption(
        f"{scale.kind} scale ({md_escape(', '.join(scale.display_labels))}) · "
        f"{plural(len(data.items), 'item')} · {plural(len(data.annotators), 'annotator')} · "
        f"human label: {md_escape(calibration.policy_name)} · 95% bootstrap intervals · ★ best "
        "value of a row "
        "· Δ rows: paired difference from the baseline run, with McNemar's exact p"
    )
    try:
        table = calibration.table()
    except EvalcoreError as exc:
        show_error(exc)
        return
    with st.container(key=K.TABLE_BOX):  # the box's class finds the table in a browser
        metric_table(table, key=K.TABLE)
    for note in calibration.notes():  # a note quotes a run's name
        st.warning(md_escape(note), icon=":material/warning:")
    st.caption(baselines_caption())
    ceiling = calibration.ceiling
    if ceiling is None or ceiling.krippendorff_alpha is None:
        st.caption(
            "No human ceiling: it needs at least two annotators on the same items. Without it "
            "there is no telling how far the judges are from people rather than from 1.0."
        )
        return
    st.caption(
        f"**{HUMANS_COLUMN}**: how much the annotators agree with each other, on the "
        f"{plural(ceiling.n_items, 'item')} at least two of the {ceiling.n_annotators} rated (κ "
        f"{ceiling.kappa_weights or 'unweighted'}, mean over pairs of annotators; Krippendorff's "
        "α with its 95% interval). A judge near that line agrees with people as well as they "
        "agree with each other."
    )


def baselines_caption() -> str:
    """What the two reference columns of the table mean."""
    return (
        f"**{CONSTANT_COLUMN}**: a judge that always gives the humans' most frequent label. "
        f"**{CHANCE_COLUMN}**: a judge that guesses at random with the humans' label shares (its "
        "rows *share of …* are those shares). A judge is only useful where it clearly beats both."
    )


def alt_test_section(
    calibration: Calibration, prefix: str, cache_key: tuple[object, ...] | None = None
) -> None:
    """The Alt-Test of a run: can the judge stand in for one of the annotators? The winning rate and
    the advantage probability against epsilon as a chart, the per-annotator table and a plain
    verdict. ``prefix`` keys the widgets (the project mode's and each upload's own);
    ``cache_key`` (what the calibration was made of) keeps the result, else it is computed."""
    data = calibration.data
    if data.human.shape[1] < 3:
        st.info(
            "The Alt-Test asks whether the judge could replace one of the annotators. It needs "
            f"labels from at least three annotators on the same items; this criterion has "
            f"{plural(data.human.shape[1], 'annotator')}."
        )
        return
    titles = {r.info.id: r.title for r in calibration.runs}
    run_key, eps_key, scoring_key = (state.key(prefix, p) for p in ("run", "epsilon", "scoring"))
    if st.session_state.get(run_key) not in titles:
        st.session_state[run_key] = next(iter(titles))
    scorings = ["accuracy", "neg_rmse"]
    if st.session_state.get(scoring_key) not in scorings:
        st.session_state[scoring_key] = default_scoring(data.scale)
    c1, c2, c3 = st.columns([3, 2, 2])
    run_id = c1.selectbox("Judge run", list(titles), format_func=titles.get, key=run_key)
    epsilon = c2.slider(
        "ε (advantage granted to the judge)",
        0.0,
        0.3,
        0.2,
        0.01,
        key=eps_key,
        help="The paper suggests 0.2 against crowd workers and 0.1–0.15 against experts.",
    )
    scoring = c3.selectbox(
        "Alignment",
        scorings,
        format_func=lambda x: {"accuracy": "accuracy (share equal)", "neg_rmse": "−RMSE"}[x],
        key=scoring_key,
        help="How well a label agrees with the other annotators' labels on the item.",
    )
    try:
        if cache_key is None:
            result = run_alt_test(data, int(run_id), scoring=str(scoring), epsilon=float(epsilon))
            curve = run_alt_test_curve(data, int(run_id), scoring=str(scoring))
        else:
            result, curve = cache.alt_test(
                cache_key, int(run_id), str(scoring), float(epsilon), data
            )
    except EvalcoreError as exc:
        show_error(exc)
        return
    with st.container(key=state.key(prefix, "verdict")):
        if result.passed:
            st.success(result.verdict(), icon=":material/check_circle:")
        else:
            st.warning(result.verdict(), icon=":material/info:")
    st.plotly_chart(
        alt_test_figure(curve, epsilon=float(epsilon)),
        key=state.key(prefix, "chart"),
        config={"displaylogo": False},
    )
    st.dataframe(
        alt_test_table(result),
        key=state.key(prefix, "table"),
        hide_index=True,
        width="stretch",
        height="content",
    )
    st.caption(
        f"For each annotator in turn, each item they labelled is scored against the *other* "
        "annotators' labels, once with the judge's label and once with theirs; the judge wins an "
        "item when its label aligns at least as well (a tie counts for both). A one-sided t-test "
        f"asks whether the annotator's edge is below ε; Benjamini–Yekutieli at q = {result.q:g} "
        f"over the annotators. Items kept: {result.n_items} (the judge and at least "
        f"{result.min_annotators} annotators labelled them); annotators with fewer than "
        f"{result.min_items} of them are skipped. The judge passes when it beats at least half "
        "of the annotators (ω ≥ 0.5)."
    )


def self_agreement_view(calibration: Calibration, store: Store, version: DataVersion) -> None:
    """The judge's agreement with itself: across the samples of each run that kept several, and
    across repeated runs of the same template version; beside the humans' own agreement."""
    data = calibration.data
    entries = []
    for run in data.runs:
        samples = cache.run_samples(
            store, run.info.id, version.run(run.info.id), data.scale, data.items.index
        )
        found = self_agreement(samples, calibration.human, data.scale, labels=calibration.labels)
        if found is not None:
            entries.append((run.info.title, found))
    for name, group in repeated_runs(data.runs):
        found = self_agreement(
            runs_as_samples(group), calibration.human, data.scale, labels=calibration.labels
        )
        if found is not None:
            entries.append((f"{name} ({len(group)} runs)", found))
    if not entries:
        st.info(
            "No run kept several samples per item, and no template version was run twice. Set "
            "n > 1 in the template's model settings (at a temperature above 0), or run the same "
            "version again, to see whether the judge agrees with itself."
        )
        return
    ceiling = calibration.ceiling
    alpha = None if ceiling is None else ceiling.krippendorff_alpha
    st.dataframe(
        self_agreement_table(entries, kind=calibration.kind, ceiling=alpha),
        key=K.SELF_TABLE,
        width="stretch",
        height="content",
    )
    st.caption(
        "α across samples: Krippendorff's alpha with the samples as raters (1 = the judge always "
        "repeats itself), beside the annotators' alpha. *One sample*: the first sample's labels "
        "against the humans; *majority of samples*: the most frequent label of each item's "
        "samples (none on a tie). Repeated runs of one template version count as samples; give "
        "a repeated run its own replicate number (run setting `replicate`, `--replicate N`) so "
        "it is really sampled again: with the same number it is served from the reply cache, "
        "a copy of the first that agrees with it trivially."
    )


def rate_view(calibration: Calibration) -> None:
    """Binary criteria: the rate people would give the items only the judge labelled, three ways."""
    for run in calibration.compared:
        try:
            found = run_rate_estimate(calibration.data, run.info.id, calibration.human)
        except EvalcoreError as exc:
            st.caption(md_escape(f"{run.title}: {exc}"))
            continue
        st.markdown(
            f"**{md_escape(run.title)}**: the {md_escape(found.positive)} rate people would give, "
            "from the judge's labels "
            f"on {plural(found.ppi.n_unlabelled, 'unlabelled item')} and "
            f"{plural(found.ppi.n_labelled, 'labelled item')}"
        )
        st.dataframe(
            rate_table(found),
            key=state.key(K.RATE_TABLE, run.info.id),
            hide_index=True,
            width="stretch",
            height="content",
        )
        for note in found.notes:
            st.caption(md_escape(note))
    st.caption(
        "*labelled only*: the humans' share on the items they labelled (normal interval), the "
        "baseline to beat. *Rogan-Gladen*: the judge's share on the unlabelled items corrected "
        "by its TPR and TNR (bootstrap interval). *PPI++*: prediction-powered inference, the "
        "judge's share plus its mean error on the labelled items, weighted by the power-tuned λ "
        "(normal interval from both sets' variances)."
    )


def _on_heat_click() -> None:
    """A click on a confusion-matrix cell: select that cell (run, human label, judge label)."""
    cell = cell_from_selection(st.session_state.get(K.HEAT), st.session_state.get(K.PANEL_RUNS, []))
    if cell is not None:
        run_id, human, judge = cell
        st.session_state[K.CELL_RUN] = run_id
        st.session_state[K.CELL_HUMAN] = human
        st.session_state[K.CELL_JUDGE] = judge
        st.session_state.pop(K.CELL_ITEM, None)


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
    st.session_state[K.PANEL_RUNS] = [r.info.id for r in calibration.compared]
    st.caption("Rows: the humans' label; columns: the judge's. Click a cell to list its items.")
    heatmaps(panels, key=K.HEAT, selectable=True, on_select=_on_heat_click)
    titles = {r.info.id: r.title for r in calibration.compared}
    labels = [format_label(x) for x in calibration.labels]
    if st.session_state.get(K.CELL_RUN) not in titles:
        st.session_state[K.CELL_RUN] = next(iter(titles))
    for key in (K.CELL_HUMAN, K.CELL_JUDGE):
        if st.session_state.get(key) not in labels:
            st.session_state[key] = None  # no cell chosen yet
    c1, c2, c3 = st.columns([3, 1, 1])
    run_id = c1.selectbox("Cell of run", list(titles), format_func=titles.get, key=K.CELL_RUN)
    human = c2.selectbox("Human label", labels, key=K.CELL_HUMAN, placeholder="choose")
    judge = c3.selectbox("Judge label", labels, key=K.CELL_JUDGE, placeholder="choose")
    if human is None or judge is None:
        st.caption("Click a cell of a matrix (or choose its labels here) to list its items.")
        return
    items = cell_items(calibration, int(run_id), human, judge)
    st.markdown(
        f"**{plural(len(items), 'item')}** where people said **{md_escape(human)}** and "
        f"*{md_escape(titles[int(run_id)])}* said **{md_escape(judge)}**"
    )
    if items.empty:
        return
    shown = items.head(MAX_ROWS)
    if shown["score"].isna().all():  # scores are read for binary criteria
        shown = shown.drop(columns="score")
    ids = [int(i) for i in shown.index]
    st.session_state[K.CELL_IDS] = ids
    if len(items) > MAX_ROWS:
        st.caption(f"The first {MAX_ROWS} of them, in dataset order.")
    st.dataframe(
        shown.reset_index(drop=True),
        key=K.CELL_ITEMS,
        on_select=lambda: _pick_row(K.CELL_ITEMS, K.CELL_ITEM, K.CELL_IDS),
        selection_mode="single-row",
        hide_index=True,
        width="stretch",
        height=min(35 * (len(shown) + 1) + 3, 280),  # a list to scroll; the count is above
    )
    item_browser(
        store,
        calibration,
        ids,
        shown["item_id"].tolist(),
        K.CELL_ITEM,
        K.CELL_IDS,
        K.CELL_NAV,
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
        key=state.key(prefix, "prev"),
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
        key=state.key(prefix, "next"),
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
    with st.container(border=True, key=state.key(K.ITEM_BOX, item_pk)):
        st.markdown(f"**Item {code_span(item.external_id)}**")
        if item.metadata:
            st.caption(md_escape(" · ".join(f"{k}: {v}" for k, v in item.metadata.items())))
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
        st.markdown(f"**Humans** ({md_escape(calibration.policy_name)}): **{md_escape(shown)}**")
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
            st.markdown(f"**{md_escape(r.run)}**{order}: **{md_escape(verdict)}**{score}")
            if r.reason:
                st.text(r.reason)
            if r.error:
                st.caption(f"error: {md_escape(r.error)}")
            if r.raw:
                with st.expander("Raw reply"):
                    st.code(r.raw, language=None, wrap_lines=True)


def _key(calibration: Calibration, version: DataVersion) -> tuple[object, ...]:
    """What a view computed from ``calibration`` depends on (its cache key)."""
    return (
        version,
        tuple(r.info.id for r in calibration.runs),
        calibration.policy,
        calibration.baseline,
    )


def disagreement_view(calibration: Calibration, store: Store, version: DataVersion) -> None:
    """The disagreement table across all runs with the "X wrong, Y right" filters, sorted in Python
    (the grid's own sorting is off), so Previous/Next follow the order on the screen."""
    titles = {r.info.id: r.title for r in calibration.runs}
    options: list[int | None] = [None, *titles]
    for key in (K.DIS_WRONG, K.DIS_RIGHT):
        if st.session_state.get(key) not in options:
            st.session_state[key] = None
    c1, c2, c3 = st.columns(3)
    wrong = c1.selectbox(
        "Wrong by",
        options,
        format_func=lambda i: "(any run)" if i is None else titles[i],
        key=K.DIS_WRONG,
    )
    right = c2.selectbox(
        "Right by",
        options,
        format_func=lambda i: "(any run)" if i is None else titles[i],
        key=K.DIS_RIGHT,
        help="E.g. wrong by version 7 and right by version 6: what the new version broke.",
    )
    if wrong is not None and wrong == right:
        st.warning("A run cannot be wrong and right on the same item; choose two different runs.")
        return
    table = cache.disagreements(_key(calibration, version), wrong, right, calibration)
    worst = "worst first"
    sort = c3.selectbox("Sort by", [worst, *table.columns], key=K.DIS_SORT)
    if sort != worst and sort in table.columns:
        table = table.sort_values(sort, kind="stable", ascending=sort in ("item_id", "human"))
    ordinal = calibration.data.scale.is_ordinal
    order = (
        "the largest distance between a judge and the humans (scale steps), then how many runs "
        "are wrong"
        if ordinal
        else "how many runs are wrong"
    )
    st.markdown(
        f"**{plural(len(table), 'item')}**, sorted by "
        + (order if sort == worst else f"**{md_escape(sort)}**")
        + "."
        + (f" The first {MAX_ROWS} are shown." if len(table) > MAX_ROWS else "")
        + " Select a row to open the item; Previous and Next follow this order."
    )
    if table.empty:
        return
    shown = table.head(MAX_ROWS)
    ids = [int(i) for i in shown.index]
    st.session_state[K.DIS_IDS] = ids
    st.dataframe(
        shown.reset_index(drop=True),
        key=K.DIS_TABLE,
        on_select=lambda: _pick_row(K.DIS_TABLE, K.DIS_ITEM, K.DIS_IDS),
        # column selection turns the grid's header sorting off: the order is the one above
        selection_mode=["single-row", "single-column"],
        hide_index=True,
        width="stretch",
        height=320,
    )
    item_browser(
        store, calibration, ids, shown["item_id"].tolist(), K.DIS_ITEM, K.DIS_IDS, K.DIS_NAV
    )


def threshold_view(calibration: Calibration) -> None:
    """Binary criteria: balanced accuracy against the score threshold, TPR/TNR, corrected pass rate."""
    analyses = [binary_analysis(calibration, r.info.id) for r in calibration.compared]
    sweeps = [(a.run.title, a.points, a.best) for a in analyses if a.points]
    positive = analyses[0].positive if analyses else ""
    if sweeps:
        st.plotly_chart(threshold_figure(sweeps), key=K.SWEEP, config={"displaylogo": False})
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
    st.dataframe(pd.DataFrame(rows), key=K.BINARY_TABLE, width="stretch", height="content")
    st.caption(
        f"The corrected rate estimates the true share of {positive} among the items nobody "
        "labelled, from the judge's verdicts there and its TPR/TNR on the labelled items, with a "
        "95% bootstrap interval."
    )
    st.markdown("**The rate people would give the unlabelled items**")
    rate_view(calibration)


def _interval(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None or value != value:
        return "–"
    return f"{value:.3f}" + ("" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]")


def _percent(value: float, ci: tuple[float, float] | None) -> str:
    return f"{value:.1%}" + ("" if ci is None else f" [{ci[0]:.1%}, {ci[1]:.1%}]")


def pairwise_view(calibration: Calibration) -> None:
    """Pairwise criteria: win rates by humans and judge, position bias, human ties."""
    analyses = [pairwise_analysis(calibration, r.info.id) for r in calibration.compared]
    st.dataframe(pairwise_table(analyses), key=K.PAIRWISE_TABLE, width="stretch", height="content")
    st.caption(
        "A = the candidate (response A), B = the baseline. Position consistency: share of items "
        "with the same verdict when the responses are shown in either order (runs judged in both "
        "orders only); first-position preference: share of decided verdicts that chose the "
        "response shown first (0.5 = none)."
    )


def slice_view(calibration: Calibration, version: DataVersion, store: Store) -> None:
    """The same metrics per value of a metadata column, as a chart and a table. The ``(all)`` row is
    the main table's calibration: same engine, resamples and seed."""
    columns = list(calibration.data.dataset.metadata_columns)
    if not columns:
        st.info("This dataset has no metadata column to slice by.")
        return
    if st.session_state.get(K.SLICE_COL) not in columns:
        st.session_state[K.SLICE_COL] = columns[0]
    names = dict(slice_metrics(calibration.kind))
    c1, c2 = st.columns(2)
    column = c1.selectbox("Slice by", columns, key=K.SLICE_COL)
    metric = c2.selectbox("Metric", list(names), format_func=names.get, key=K.SLICE_METRIC)
    data = calibration.data.with_metadata(
        cache.metadata(store, calibration.data.dataset.id, column)
    )
    table = cache.slices(_key(calibration, version), column, calibration, data)
    st.plotly_chart(
        slice_figure(table, metric=metric, name=names[metric]),
        key=K.SLICE_CHART,
        config={"displaylogo": False},
    )
    st.dataframe(slice_text(table, metric), key=K.SLICE_TABLE, width="stretch", height="content")


#: The view of a scale kind of its own, shown between the disagreements and the slices.
KIND_VIEWS = {"binary": VIEW_THRESHOLDS, "pairwise": VIEW_PAIRWISE}


def views(calibration: Calibration) -> list[str]:
    """The views that apply to the criterion, in order."""
    own = [KIND_VIEWS[calibration.kind]] if calibration.kind in KIND_VIEWS else []
    return [VIEW_MATRICES, VIEW_DISAGREEMENTS, *own, VIEW_SLICES, VIEW_ALT, VIEW_SELF]


def project_mode(store: Store, project_id: int) -> None:
    """The whole project mode of the Calibrate page."""
    chosen = choose(store, project_id)
    if chosen is None:
        return
    dataset, criterion, runs = chosen
    run_ids = tuple(r.id for r in runs)
    try:
        data, version = cache.calibration_data(store, dataset.id, criterion.id, run_ids)
    except EvalcoreError as exc:
        show_error(exc)
        return
    if data.human.shape[1] == 0:
        st.info(
            f"Nobody has labelled **{md_escape(criterion.name)}** on **{md_escape(dataset.name)}** "
            "yet, so there is "
            "nothing to compare the judge with. Rate some items on the Annotate page."
        )
        st.page_link("pages/annotate.py", label="Go to Annotate", icon=":material/edit_note:")
        return
    policy, baseline = choose_policy_and_baseline(data, runs)
    try:
        calibration = cache.calibration(version, run_ids, policy, baseline, data)
    except EvalcoreError as exc:
        show_error(exc)
        return
    overview(calibration)
    options = views(calibration)
    if st.session_state.get(K.VIEW) not in options:
        st.session_state[K.VIEW] = VIEW_MATRICES
    view = st.segmented_control("View", options, key=K.VIEW, label_visibility="collapsed")
    if view == VIEW_MATRICES:
        matrices(calibration, store)
    elif view == VIEW_DISAGREEMENTS:
        disagreement_view(calibration, store, version)
    elif view == VIEW_THRESHOLDS:
        threshold_view(calibration)
    elif view == VIEW_PAIRWISE:
        pairwise_view(calibration)
    elif view == VIEW_SLICES:
        slice_view(calibration, version, store)
    elif view == VIEW_ALT:
        alt_test_section(calibration, K.ALT, _key(calibration, version))
    elif view == VIEW_SELF:
        self_agreement_view(calibration, store, version)
