"""The Calibrate page's project mode: judge runs from the store against people, side by side.

Widgets and layout only: every table, figure and drill-down comes from
:mod:`evalcore.workflows.calibrate`, which checks the caller at each call. Every session-state key is
a constant of :class:`ui.state.Calibrate`.
"""

from __future__ import annotations

from typing import Any, Final

import pandas as pd
import streamlit as st

from evalcore.words import plural
from evalcore.workflows import Session
from evalcore.workflows import calibrate as flow
from evalcore.workflows.calibrate import Calibration, Selection
from ui import state
from ui.calibrate_confidence import confidence_section
from ui.render import badge, code_span, heatmaps, md_escape, metric_table
from ui.state import Calibrate as K
from ui.widgets import choose

VIEW_MATRICES, VIEW_DISAGREEMENTS, VIEW_SLICES = "Confusion matrices", "Disagreements", "Slices"
VIEW_THRESHOLDS, VIEW_PAIRWISE = "Scores and thresholds", "Pairwise"
VIEW_ALT, VIEW_SELF = "Replace an annotator?", "Self-agreement"
#: The view of a scale kind of its own, shown between the disagreements and the slices.
KIND_VIEWS: Final = {"binary": VIEW_THRESHOLDS, "pairwise": VIEW_PAIRWISE}
#: Rows of a drill-down table sent to the browser (the count of all of them is shown).
MAX_ROWS: Final = 500

BASELINES = (
    f"**{flow.CONSTANT_COLUMN}**: a judge that always gives the humans' most frequent label. "
    f"**{flow.CHANCE_COLUMN}**: a judge that guesses at random with the humans' label shares (its "
    "rows *share of …* are those shares). A judge is only useful where it clearly beats both."
)


# --- choosing what to compare --------------------------------------------------------------------------


def choose_selection(session: Session, project_id: int) -> Selection | None:
    """The dataset, criterion and runs pickers; ``None`` (with a hint shown) when nothing to compare."""
    found = flow.choices(session, project_id)
    if not found.runs:
        st.info("No judge run yet. Run a judge template on the Judge page, or import judge labels.")
        return None
    datasets = {d.id: d for d in found.datasets}
    choose(K.DATASET, list(datasets), found.default_dataset)
    c1, c2 = st.columns(2)
    dataset_id = c1.selectbox("Dataset", list(datasets), key=K.DATASET,
                              format_func=lambda i: f"{datasets[i].name} v{datasets[i].version}")  # fmt: skip
    criteria = found.criteria_of(dataset_id)
    choose(K.CRITERION, criteria, criteria[0])
    criterion_id = c2.selectbox(
        "Criterion", criteria, key=K.CRITERION,
        format_func=lambda i: f"{found.criteria[i].name} ({found.criteria[i].scale.kind})",
    )  # fmt: skip
    mine = {r.id: r for r in found.runs_of(dataset_id, criterion_id)}
    if K.RUNS not in st.session_state or st.session_state.get(K.RUNS_FOR) != (
        dataset_id,
        criterion_id,
    ):
        st.session_state[K.RUNS] = list(mine)  # a new pair: every run, oldest first
    else:
        st.session_state[K.RUNS] = [r for r in st.session_state[K.RUNS] if r in mine]
    st.session_state[K.RUNS_FOR] = (dataset_id, criterion_id)
    picked = st.multiselect(
        "Judge runs", list(mine), key=K.RUNS, wrap=True, format_func=lambda i: flow.run_label(mine[i]),
        help="Template versions, models or imported judge columns; any number, side by side.",
    )  # fmt: skip
    if not picked:
        st.info("Choose at least one judge run.")
        return None
    return Selection(dataset_id, criterion_id, tuple(picked),
                     st.session_state.get(K.POLICY, "majority"), st.session_state.get(K.BASELINE),
                     int(st.session_state.get(K.MIN_SHARED, flow.MIN_SHARED)))  # fmt: skip


def policy_and_baseline(view: flow.ProjectView) -> None:
    """The human-policy and baseline pickers (their values are used on the next run's selection,
    and the workflow settles on valid ones)."""
    c1, c2 = st.columns([2, 4])
    st.session_state[K.POLICY] = view.selection.policy
    c1.selectbox(
        "Human label", list(view.policies), format_func=flow.policy_name, key=K.POLICY,
        help="How several annotators' labels become the one human label of an item. The policy "
        "is part of every number below.",
    )  # fmt: skip
    st.session_state[K.BASELINE] = view.selection.baseline
    c2.selectbox(
        "Baseline run", list(view.selection.runs), key=K.BASELINE,
        format_func=lambda i: view.titles.get(i, str(i)),
        help="Every other run is compared with this one: paired differences and McNemar's test.",
    )  # fmt: skip


# --- the headline: each run's answer first ---------------------------------------------------------------

#: Widths of the headline's columns: run, balanced accuracy, kappa, light and its words.
HEAD_WIDTHS: Final = (3, 2, 2, 7)


def show_headline(found: flow.Headline | None, key: str) -> None:
    """One compact row per run: balanced accuracy and kappa with their intervals, the light and the
    words saying which bound decided it; the humans' ceiling and a constant judge under them."""
    if found is None:
        return
    with st.container(key=key, gap="small"):
        for column, text in zip(st.columns(HEAD_WIDTHS), ("Run", "Balanced accuracy",
                                md_escape(found.kappa_name), "Verdict (95% intervals)"), strict=True):  # fmt: skip
            column.caption(f"**{text}**")
        for row in found.rows:
            cells = st.container(key=state.key(key, row.run_id)).columns(HEAD_WIDTHS)
            cells[0].markdown(f"**{md_escape(row.short)}**", help=md_escape(row.title))
            cells[1].markdown(row.balanced_accuracy.text)
            cells[2].markdown(row.kappa.text)
            cells[3].markdown(badge(row.light, row.words), help=md_escape(row.checks))
        parts = []
        if found.ceiling_kappa is not None:
            parts.append(f"**humans among themselves**: κ {found.ceiling_kappa.text} (mean over "
                         f"pairs), Krippendorff's α {found.ceiling_alpha.text if found.ceiling_alpha else '–'}")  # fmt: skip
        if found.constant_balanced_accuracy is not None:
            kappa = "–" if found.constant_kappa is None else f"{found.constant_kappa:.2f}"
            parts.append(f"**{flow.CONSTANT_COLUMN}** (always the most frequent human label): "
                         f"balanced accuracy {found.constant_balanced_accuracy:.2f}, κ {kappa}")  # fmt: skip
        st.caption(" · ".join(parts) or "No human ceiling: it needs two annotators on the same items.")  # fmt: skip
        st.caption(md_escape(found.rule))
        if found.ceiling is not None and found.ceiling.fragility is not None:
            st.caption(f":orange[**Fragile ceiling**: {md_escape(found.ceiling.fragility)}.]")


def ceiling_section(found: flow.Headline | None) -> None:
    """Who the ceiling leaves out (the setting), and how much each annotator moves it."""
    with st.expander("Human ceiling: who counts and how steady it is"):
        st.number_input("Fewest items an annotator must share with the others", min_value=1,
                        value=flow.MIN_SHARED, step=1, key=K.MIN_SHARED,
                        help="Annotators sharing fewer are left out of the ceiling (not of the human label).")  # fmt: skip
        ceiling = None if found is None else found.ceiling
        if found is None or ceiling is None:
            st.caption("No ceiling: it needs two annotators on the same items.")
            return
        st.caption(f"Left out (fewer than {ceiling.min_shared} shared items): {md_escape(', '.join(ceiling.left_out) or 'nobody')}.")  # fmt: skip
        table = found.leave_one_out()
        if table is not None:
            st.dataframe(table, key=K.LOO_TABLE, hide_index=True, height="content")
        coefficients = found.coefficients()
        if coefficients is not None:
            st.dataframe(coefficients, key=K.RATER_TABLE, hide_index=True, height="content")
            st.caption("Agreement among all annotators at once; intervals at 95%.")
        st.caption(md_escape(ceiling.fragility or "Not fragile: no annotator moves α by more than "
                             "its interval's half-width, and three or more are kept."))  # fmt: skip


# --- the views ------------------------------------------------------------------------------------------


def overview(calibration: Calibration) -> None:
    """The side-by-side table with the human ceiling as its reference column, and notes."""
    data, scale = calibration.data, calibration.data.scale
    st.caption(
        f"{scale.kind} scale ({md_escape(', '.join(scale.display_labels))}) · "
        f"{plural(len(data.items), 'item')} · {plural(len(data.annotators), 'annotator')} · "
        f"human label: {md_escape(calibration.policy_name)} · 95% bootstrap intervals · ★ best "
        "value of a row · Δ rows: paired difference from the baseline run, with McNemar's exact p"
    )
    with st.container(key=K.TABLE_BOX):  # the box's class finds the table in a browser
        metric_table(calibration.table(), key=K.TABLE)
    for note in calibration.notes():  # a note quotes a run's name
        st.warning(md_escape(note), icon=":material/warning:")
    st.caption(BASELINES)
    ceiling = calibration.ceiling
    if ceiling is None or ceiling.krippendorff_alpha is None:
        st.caption(
            "No human ceiling: it needs at least two annotators on the same items. Without it "
            "there is no telling how far the judges are from people rather than from 1.0."
        )
        return
    st.caption(
        f"**{flow.HUMANS_COLUMN}**: how much the annotators agree with each other, on the "
        f"{plural(ceiling.n_items, 'item')} at least two of the {ceiling.n_kept} kept rated (κ "
        f"{ceiling.kappa_weights or 'unweighted'}, mean over pairs of annotators; Krippendorff's "
        "α with its 95% interval). A judge near that line agrees with people as well as they "
        "agree with each other."
    )


def alt_test_section(calibration: Calibration, prefix: str, session: Session | None = None,
                     sel: Selection | None = None) -> None:  # fmt: skip
    """Can the judge stand in for one of the annotators? The curve over ε, the per-annotator table
    and a plain verdict. ``prefix`` keys the widgets (the project's, or each upload's own)."""
    if calibration.data.human.shape[1] < 3:
        st.info(
            "The Alt-Test asks whether the judge could replace one of the annotators. It needs "
            "labels from at least three annotators on the same items; this criterion has "
            f"{plural(calibration.data.human.shape[1], 'annotator')}."
        )
        return
    titles = {r.info.id: r.title for r in calibration.runs}
    run_key, eps_key, scoring_key = (state.key(prefix, p) for p in ("run", "epsilon", "scoring"))
    choose(run_key, list(titles), next(iter(titles)))
    choose(scoring_key, list(flow.ALT_TEST_SCORINGS), flow.default_scoring(calibration))
    c1, c2, c3 = st.columns([3, 2, 2])
    run_id = c1.selectbox("Judge run", list(titles), format_func=titles.get, key=run_key)
    epsilon = c2.slider("ε (advantage granted to the judge)", 0.0, 0.3, 0.2, 0.01, key=eps_key,
                        help="The paper suggests 0.2 against crowd workers and 0.1–0.15 against experts.")  # fmt: skip
    scoring = c3.selectbox("Alignment", list(flow.ALT_TEST_SCORINGS), key=scoring_key,
                           format_func=flow.ALT_TEST_SCORINGS.get,
                           help="How well a label agrees with the other annotators' labels on the item.")  # fmt: skip
    found = flow.alt_test(session, sel, int(run_id), str(scoring), float(epsilon),
                          calibration=calibration if session is None else None)  # fmt: skip
    with st.container(key=state.key(prefix, "verdict")):
        show = st.success if found.result.passed else st.warning
        show(
            f"{found.result.sentence()}\n\n{found.result.verdict()}",
            icon=":material/check_circle:" if found.result.passed else ":material/info:",
        )
    st.plotly_chart(found.figure, key=state.key(prefix, "chart"), config={"displaylogo": False})
    st.dataframe(
        found.table,
        key=state.key(prefix, "table"),
        hide_index=True,
        width="stretch",
        height="content",
    )
    r = found.result
    st.caption(
        "For each annotator in turn, each item they labelled is scored against the *other* "
        "annotators' labels, once with the judge's label and once with theirs; the judge wins an "
        "item when its label aligns at least as well (a tie counts for both). A one-sided t-test "
        f"asks whether the annotator's edge is below ε; Benjamini–Yekutieli at q = {r.q:g} over "
        f"the annotators. Items kept: {r.n_items} (the judge and at least {r.min_annotators} "
        f"annotators labelled them); annotators with fewer than {r.min_items} of them are skipped. "
        "The judge passes when it beats at least half of the annotators (ω ≥ 0.5)."
    )


def _pick_row(table_key: str, item_key: str, ids_key: str) -> None:
    event = st.session_state.get(table_key)
    rows = (event or {}).get("selection", {}).get("rows", []) if event else []
    ids = st.session_state.get(ids_key, [])
    if rows and 0 <= rows[0] < len(ids):
        st.session_state[item_key] = ids[rows[0]]


def _step(item_key: str, ids_key: str, delta: int) -> None:
    ids = st.session_state.get(ids_key, [])
    if ids:
        current = st.session_state.get(item_key)
        at = ids.index(current) if current in ids else 0
        st.session_state[item_key] = ids[max(0, min(len(ids) - 1, at + delta))]


def _on_heat_click() -> None:
    """A click on a confusion-matrix cell: select that cell (run, human label, judge label)."""
    cell = flow.matrix_cell(st.session_state.get(K.HEAT), st.session_state.get(K.PANEL_RUNS, []))
    if cell is not None:
        (
            st.session_state[K.CELL_RUN],
            st.session_state[K.CELL_HUMAN],
            st.session_state[K.CELL_JUDGE],
        ) = cell
        st.session_state.pop(K.CELL_ITEM, None)


def _drill(
    session: Session,
    sel: Selection,
    table: pd.DataFrame,
    keys: tuple[str, str, str, str],
    height: int,
) -> None:
    """A drill-down table (a row opens its item) and the item browser under it."""
    table_key, item_key, ids_key, nav = keys
    shown = table.head(MAX_ROWS)
    ids = [int(i) for i in shown.index]
    st.session_state[ids_key] = ids
    st.dataframe(
        shown.reset_index(drop=True), key=table_key, selection_mode=["single-row", "single-column"],
        on_select=lambda: _pick_row(table_key, item_key, ids_key),
        hide_index=True, width="stretch", height=height,
    )  # fmt: skip
    names = dict(zip(ids, shown["item_id"].tolist(), strict=True))
    choose(item_key, ids, ids[0])
    c1, c2, c3 = st.columns([1, 4, 1], vertical_alignment="bottom")
    c1.button("Previous", key=state.key(nav, "prev"), on_click=_step, args=(item_key, ids_key, -1),
              icon=":material/arrow_back:", width="stretch")  # fmt: skip
    pk = c2.selectbox("Item", ids, key=item_key,
                      format_func=lambda i: f"{names[i]}  ({ids.index(i) + 1} of {len(ids)})")  # fmt: skip
    c3.button("Next", key=state.key(nav, "next"), on_click=_step, args=(item_key, ids_key, 1),
              icon=":material/arrow_forward:", width="stretch")  # fmt: skip
    show_item(session, sel, int(pk))


def show_item(session: Session, sel: Selection, item_pk: int) -> None:
    """Prompt, response(s), every human label with its comment, every run's label, reason and raw
    reply. Texts are shown as plain text, never as markdown or HTML."""
    found = flow.item(session, sel, item_pk)
    detail, item = found.detail, found.detail.item
    with st.container(border=True, key=state.key(K.ITEM_BOX, item_pk)):
        st.markdown(f"**Item {code_span(item.external_id)}**")
        if item.metadata:
            st.caption(md_escape(" · ".join(f"{k}: {v}" for k, v in item.metadata.items())))
        for name, text in (
            ("Prompt", item.prompt),
            ("Context", item.context),
            ("Reference", item.reference),
        ):
            if text:
                st.markdown(f"**{name}**")
                st.text(text)
        if item.response_a is not None or item.response_b is not None:
            left, right = st.columns(2)
            left.markdown("**Response A** (candidate)")
            left.text(item.response_a or "")
            right.markdown("**Response B** (baseline)")
            right.text(item.response_b or "")
        elif item.response:
            st.markdown("**Response**")
            st.text(item.response)
        st.markdown(f"**Humans** ({md_escape(found.policy)}): **{md_escape(found.human)}**")
        rows = [{"annotator": h.annotator, "label": h.label if h.label is not None else f"({h.flag})",
                 "comment": h.comment or ""} for h in detail.humans]  # fmt: skip
        if rows:
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        for r in detail.results:
            order = f" · order {r.order}" if r.order == "BA" else ""
            score = "" if r.score is None else f" · score {r.score:.3g}"
            st.markdown(
                f"**{md_escape(r.run)}**{order}: **{md_escape(r.label if r.status == 'ok' else r.status)}**{score}"
            )
            if r.reason:
                st.text(r.reason)
            if r.error:
                st.caption(f"error: {md_escape(r.error)}")
            if r.raw:
                with st.expander("Raw reply"):
                    st.code(r.raw, language=None, wrap_lines=True)


def matrices(session: Session, sel: Selection, calibration: Calibration) -> None:
    """Confusion matrices side by side; a click on a cell (or the pickers) lists its items."""
    panels = calibration.panels()
    if not panels:
        st.info("No run has an item with both a human label and a judge label yet.")
        return
    st.session_state[K.PANEL_RUNS] = [r.info.id for r in calibration.compared]
    st.caption("Rows: the humans' label; columns: the judge's. Click a cell to list its items.")
    heatmaps([(flow.short_name(t), r) for t, r in panels], key=K.HEAT, selectable=True,
             on_select=_on_heat_click)  # fmt: skip
    if any(flow.short_name(t) != t for t, _ in panels):
        st.caption("Runs, in order: " + " · ".join(md_escape(t) for t, _ in panels))
    titles = {r.info.id: r.title for r in calibration.compared}
    labels = [flow.label_text(x) for x in calibration.labels]
    choose(K.CELL_RUN, list(titles), next(iter(titles)))
    for key in (K.CELL_HUMAN, K.CELL_JUDGE):
        choose(key, labels, None)  # no cell chosen yet
    c1, c2, c3 = st.columns([3, 1, 1])
    run_id = c1.selectbox("Cell of run", list(titles), format_func=titles.get, key=K.CELL_RUN)
    human = c2.selectbox("Human label", labels, key=K.CELL_HUMAN, placeholder="choose")
    judge = c3.selectbox("Judge label", labels, key=K.CELL_JUDGE, placeholder="choose")
    if human is None or judge is None:
        st.caption("Click a cell of a matrix (or choose its labels here) to list its items.")
        return
    items = flow.cell(session, sel, int(run_id), human, judge)
    st.markdown(f"**{plural(len(items), 'item')}** where people said **{md_escape(human)}** and "
                f"*{md_escape(titles[int(run_id)])}* said **{md_escape(judge)}**")  # fmt: skip
    if not items.empty:
        if items["score"].isna().all():  # scores are read for binary criteria
            items = items.drop(columns="score")
        _drill(session, sel, items, (K.CELL_ITEMS, K.CELL_ITEM, K.CELL_IDS, K.CELL_NAV), 280)


def disagreement_view(session: Session, sel: Selection, calibration: Calibration) -> None:
    """The disagreement table with the "X wrong, Y right" filters, sorted here (the grid's own
    sorting is off), so Previous/Next follow the order on the screen."""
    titles = {r.info.id: r.title for r in calibration.runs}
    options: list[int | None] = [None, *titles]
    for key in (K.DIS_WRONG, K.DIS_RIGHT):
        choose(key, options, None)
    c1, c2, c3 = st.columns(3)
    name = lambda i: "(any run)" if i is None else titles[i]  # noqa: E731
    wrong = c1.selectbox("Wrong by", options, format_func=name, key=K.DIS_WRONG)
    right = c2.selectbox("Right by", options, format_func=name, key=K.DIS_RIGHT,
                         help="E.g. wrong by version 7 and right by version 6: what the new version broke.")  # fmt: skip
    if wrong is not None and wrong == right:
        st.warning("A run cannot be wrong and right on the same item; choose two different runs.")
        return
    table = flow.disagreements(session, sel, wrong, right)
    worst = "worst first"
    sort = c3.selectbox("Sort by", [worst, *table.columns], key=K.DIS_SORT)
    if sort != worst and sort in table.columns:
        table = table.sort_values(sort, kind="stable", ascending=sort in ("item_id", "human"))
    order = ("the largest distance between a judge and the humans (scale steps), then how many runs are wrong"
             if calibration.data.scale.is_ordinal else "how many runs are wrong")  # fmt: skip
    st.markdown(
        f"**{plural(len(table), 'item')}**, sorted by "
        + (order if sort == worst else f"**{md_escape(sort)}**") + "."
        + (f" The first {MAX_ROWS} are shown." if len(table) > MAX_ROWS else "")
        + " Select a row to open the item; Previous and Next follow this order."
    )  # fmt: skip
    if not table.empty:
        _drill(session, sel, table, (K.DIS_TABLE, K.DIS_ITEM, K.DIS_IDS, K.DIS_NAV), 320)


def threshold_view(session: Session, sel: Selection) -> None:
    found = flow.thresholds(session, sel)
    if found.figure is not None:
        st.plotly_chart(found.figure, key=K.SWEEP, config={"displaylogo": False})
    else:
        st.info("No run recorded a numeric score, so there is no threshold to sweep.")
    st.dataframe(found.table, key=K.BINARY_TABLE, width="stretch", height="content")
    st.caption(
        f"The corrected rate estimates the true share of {md_escape(found.positive)} among the "
        "items nobody labelled, from the judge's verdicts there and its TPR/TNR on the labelled "
        "items, with a 95% bootstrap interval."
    )
    st.markdown("**The rate people would give the unlabelled items**")
    for rate in flow.rates(session, sel):
        if rate.error is not None:
            st.caption(md_escape(rate.error))
            continue
        st.markdown(
            f"**{md_escape(rate.title)}**: the {md_escape(rate.positive)} rate people would give, "
            f"from the judge's labels on {plural(rate.n_unlabelled, 'unlabelled item')} and "
            f"{plural(rate.n_labelled, 'labelled item')}"
        )
        st.dataframe(rate.table, key=state.key(K.RATE_TABLE, rate.title), hide_index=True,
                     width="stretch", height="content")  # fmt: skip
        for note in rate.notes:
            st.caption(md_escape(note))


def score_view(session: Session, sel: Selection) -> None:
    """Each run's estimate of the label shares (and mean score) people would give the items only
    the judge labelled: labelled-only and PPI++."""
    for found in flow.scores(session, sel):
        if found.error is not None or found.table is None:
            st.caption(md_escape(found.error or ""))
            continue
        st.markdown(f"**{md_escape(found.title)}**: {plural(found.n_unlabelled, 'unlabelled item')}, "
                    f"{plural(found.n_labelled, 'labelled item')}")  # fmt: skip
        st.dataframe(found.table, key=state.key(K.SCORE_TABLE, found.title), hide_index=True,
                     height="content")  # fmt: skip
        for note in found.notes:
            st.caption(md_escape(note))


def slice_view(session: Session, sel: Selection) -> None:
    found = flow.slices(
        session, sel, st.session_state.get(K.SLICE_COL), st.session_state.get(K.SLICE_METRIC)
    )
    if not found.columns:
        st.info(md_escape(found.note) or "This dataset has no metadata column to slice by.")
        return
    choose(K.SLICE_COL, list(found.columns), found.columns[0])
    c1, c2 = st.columns(2)
    column = c1.selectbox("Slice by", list(found.columns), key=K.SLICE_COL)
    c2.selectbox("Metric", list(found.metrics), format_func=found.metrics.get, key=K.SLICE_METRIC)
    if found.table is None or column != st.session_state.get(K.SLICE_COL):
        found = flow.slices(session, sel, column, st.session_state.get(K.SLICE_METRIC))
    if found.note:
        st.caption(md_escape(found.note))
    st.plotly_chart(found.figure, key=K.SLICE_CHART, config={"displaylogo": False})
    st.dataframe(found.text, key=K.SLICE_TABLE, width="stretch", height="content")


def self_view(session: Session, sel: Selection) -> None:
    table = flow.self_agreement(session, sel)
    if table is None:
        st.info(
            "No run kept several samples per item, and no template version was run twice. Set "
            "n > 1 in the template's model settings (at a temperature above 0), or run the same "
            "version again, to see whether the judge agrees with itself."
        )
        return
    st.dataframe(table, key=K.SELF_TABLE, width="stretch", height="content")
    st.caption(
        "α across samples: Krippendorff's alpha with the samples as raters (1 = the judge always "
        "repeats itself), beside the annotators' alpha. *One sample*: the first sample's labels "
        "against the humans; *majority of samples*: the most frequent label of each item's "
        "samples (none on a tie). Repeated runs of one template version count as samples; give "
        "a repeated run its own replicate number (run setting `replicate`, `--replicate N`) so it "
        "is really sampled again: with the same number it is served from the reply cache."
    )


def project_mode(session: Session, project_id: int) -> None:
    """The whole project mode of the Calibrate page."""
    sel = choose_selection(session, project_id)
    if sel is None:
        return
    view = flow.project_view(session, sel)
    if view.calibration is None:
        st.info(f"Nobody has labelled **{md_escape(view.criterion.name)}** on "
                f"**{md_escape(view.dataset.name)}** yet, so there is nothing to compare the judge "
                "with. Rate some items on the Annotate page.")  # fmt: skip
        return
    sel, calibration = view.selection, view.calibration
    show_headline(found := flow.headline(session, sel), K.HEADLINE)
    policy_and_baseline(view)
    ceiling_section(found)
    overview(calibration)  # below the fold: counts, coverage, label shares and every metric
    with st.expander("What people would say about the unlabelled items (PPI++)"):
        score_view(session, sel)
    own = [KIND_VIEWS[calibration.kind]] if calibration.kind in KIND_VIEWS else []
    options = [VIEW_MATRICES, VIEW_DISAGREEMENTS, *own, VIEW_SLICES, VIEW_ALT, VIEW_SELF]
    choose(K.VIEW, options, VIEW_MATRICES)
    shown: Any = st.segmented_control("View", options, key=K.VIEW, label_visibility="collapsed")
    draw = {
        VIEW_MATRICES: lambda: matrices(session, sel, calibration),
        VIEW_DISAGREEMENTS: lambda: disagreement_view(session, sel, calibration),
        VIEW_THRESHOLDS: lambda: threshold_view(session, sel),
        VIEW_PAIRWISE: lambda: st.dataframe(flow.pairwise(session, sel), key=K.PAIRWISE_TABLE,
                                            width="stretch", height="content"),
        VIEW_SLICES: lambda: slice_view(session, sel),
        VIEW_ALT: lambda: alt_test_section(calibration, K.ALT, session, sel),
        VIEW_SELF: lambda: self_view(session, sel),
    }  # fmt: skip
    draw.get(shown, draw[VIEW_MATRICES])()
    if shown == VIEW_PAIRWISE:
        st.caption(
            "A = the candidate (response A), B = the baseline. Position consistency: share of items "
            "with the same verdict when the responses are shown in either order (runs judged in "
            "both orders only); first-position preference: share of decided verdicts that chose "
            "the response shown first (0.5 = none)."
        )
    confidence_section(session, project_id, sel, calibration.kind)
