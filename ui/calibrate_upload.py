"""The Calibrate page's upload mode: a quick look at a file with human and judge labels, saving
nothing. Every file goes through :func:`evalcore.workflows.calibrate.read_files` (the one engine);
a plain table first gets a form that names its label columns."""

from __future__ import annotations

import streamlit as st

from evalcore.errors import EvalcoreError
from evalcore.workflows import Session
from evalcore.workflows import calibrate as flow
from evalcore.workflows.calibrate import Calibration
from evalcore.workflows.datasets import UPLOAD_TYPES
from ui import state
from ui.calibrate_view import BASELINES, alt_test_section, show_headline
from ui.render import heatmaps, md_escape, metric_table, show_error
from ui.state import Calibrate as K
from ui.widgets import uploaded

HELP = (
    "Vertex metrics tables ({metric}/human_rating + {metric}/score, or the pairwise columns), "
    "long-format labels, or any table whose label columns you choose. Two files show side by side."
)


def _mapping_form(session: Session, name: str, data: bytes) -> flow.ColumnMapping | None:
    """For a plain table: which columns hold human and judge labels, and the item id."""
    columns = flow.file_columns(session, name, data)
    st.info(f"**{md_escape(name)}** is a plain table. Choose its label columns.")
    c1, c2, c3 = st.columns(3)
    human = c1.multiselect("Human label columns", columns, key=state.key(K.MAP_HUMAN, name))
    judge = c2.multiselect("Judge label columns", columns, key=state.key(K.MAP_JUDGE, name))
    item = c3.selectbox("Item id column", ["(row number)", *columns], key=state.key(K.MAP_ID, name))
    return flow.file_mapping(human, judge, None if item == "(row number)" else item)


def _show_metric(metric: str, results: list[tuple[str, Calibration]], titled: bool) -> None:
    """One metric of every file: the engine's table (files side by side), notes, matrices."""
    st.subheader(md_escape(metric))
    for name, calibration in results:
        if titled:
            st.caption(f"**{md_escape(name)}**")
        show_headline(flow.file_headline(calibration), state.key(K.FILE_HEADLINE, metric, name))
    first = results[0][1]
    st.caption(f"{first.kind} scale · humans: {flow.policy_name(first.policy_used)} · 95% "
               "bootstrap intervals · ★ best value")  # fmt: skip
    tables = [(name, c.table()) for name, c in results]
    metric_table(flow.combine(tables, kind=first.kind) if titled else tables[0][1],
                 key=state.key(K.FILE_TABLE, metric))  # fmt: skip
    panels = []
    for name, calibration in results:
        for note in calibration.notes():
            st.warning(md_escape(f"{name}: {note}" if titled else note), icon=":material/warning:")
        panels += [(f"{name} · {t}" if titled else t, r) for t, r in calibration.panels()]
    st.caption(BASELINES)
    if panels:
        if len({tuple(r.labels) for _, r in panels}) == 1:
            heatmaps(panels, key=state.key(K.FILE_HEAT, metric))
        else:
            for title, report in panels:
                heatmaps([(title, report)], key=state.key(K.FILE_HEAT, metric, title))
    for name, calibration in results:
        if calibration.data.human.shape[1] >= 3:
            st.markdown(
                f"**Can the judge replace an annotator?** {md_escape(name) if titled else ''}"
            )
            alt_test_section(calibration, state.key(K.FILE_ALT, metric, name))


def upload_mode(session: Session) -> None:
    files = uploaded("Files with human and judge labels", types=UPLOAD_TYPES, key=K.FILES,
                     multiple=True, help=HELP)  # fmt: skip
    if not files:
        st.info("Upload a file to see balanced accuracy, weighted F1, accuracy and Cohen's kappa "
                "with 95% intervals, and the confusion matrices, for every metric in it. Nothing "
                "is saved.")  # fmt: skip
        return
    c1, c2 = st.columns(2)
    policy = c1.selectbox("Human label from several annotators", flow.HUMAN_POLICIES, key=K.FILE_POLICY,
                          format_func=flow.policy_name, help="Used when a metric has several annotator columns.")  # fmt: skip
    scale = c2.text_input(
        "Scale (optional)", key=K.FILE_SCALE, placeholder="e.g. 1,2,3,4,5 or pass,fail",
        help="The labels in order. Declared, they are the axis of the matrices and weighted kappas "
        "even where nobody used one; without it, the axis is the labels the file uses.",
    )  # fmt: skip
    by_metric: dict[str, list[tuple[str, Calibration]]] = {}
    for name, data in files:
        try:
            (found,) = flow.read_files(session, [(name, data)], policy=str(policy), scale=scale)
            if found.needs_mapping or found.guessed:
                with st.expander(md_escape(f"Label columns of {name}, guessed from their names: "
                                 f"{found.guessed}. Open to choose others.")) if found.guessed else st.container():  # fmt: skip
                    mapping = _mapping_form(session, name, data)
                if mapping is not None:
                    (found,) = flow.read_files(session, [(name, data)], mappings={name: mapping},
                                               policy=str(policy), scale=scale)  # fmt: skip
        except EvalcoreError as exc:
            show_error(exc, title=name)
            continue
        for calibration in found.calibrations:
            by_metric.setdefault(calibration.data.criterion.name, []).append((name, calibration))
    for metric, results in by_metric.items():
        _show_metric(metric, results, titled=len(files) > 1)
