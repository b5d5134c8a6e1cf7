"""Calibration reports: judges against humans, figures and exports.

Two sources, one set of numbers (all from :mod:`evalcore.metrics`):

- **files** (``evalcore calibrate``, the Calibrate page's upload tab): :func:`calibrate_file` over a
  :class:`~evalcore.data.LoadedFile`;
- **the store** (the Calibrate and Reports pages, ``evalcore report``): :func:`load_calibration_data`
  reads items, human labels and judge results of a (dataset, criterion, runs) in a few bulk queries;
  :func:`calibrate_runs` turns them into a :class:`Calibration` (every run's report with intervals and
  coverage, the paired difference from a baseline run, the human ceiling); the drill-downs
  (:func:`cell_items`, :func:`item_detail`, :func:`disagreements`), the kind-specific views
  (:func:`binary_analysis`, :func:`pairwise_analysis`), slicing (:func:`slice_table`), the project
  summary with traffic lights (:func:`project_summary`, :func:`verdict`) and history
  (:func:`history_frame`) are pure functions over it.

Exports: :func:`build_report` / :func:`report_html` (a self-contained HTML file), :func:`table_bytes`
of :func:`human_labels_table`, :func:`judge_results_table` and :func:`metrics_table` (CSV, JSONL,
Parquet), and :func:`vertex_table` (Vertex AI's metrics-table layout). Figures are plain plotly
figures. This package never imports streamlit.
"""

from evalcore.report._calibration import (
    ALPHA_ROW,
    HUMANS_COLUMN,
    Calibration,
    Coverage,
    RunCalibration,
    available_policies,
    calibrate_runs,
    cell_items,
    disagreements,
    headline_kappa,
    human_label,
    policy_name,
)
from evalcore.report._export import (
    EXPORT_FORMATS,
    VERTEX_PAIRWISE_WORDS,
    human_labels_table,
    judge_results_table,
    metrics_table,
    mime_type,
    table_bytes,
    vertex_table,
)
from evalcore.report._figures import (
    agreement_figure,
    confusion_heatmaps,
    history_figure,
    normalized_rows,
    slice_figure,
    threshold_figure,
)
from evalcore.report._html import (
    CriterionSection,
    build_report,
    criterion_section,
    report_html,
    write_report,
)
from evalcore.report._labelsets import (
    HUMAN_POLICIES,
    FileCalibration,
    HumanCeiling,
    JudgeCalibration,
    aggregate_human,
    calibrate_file,
    calibrate_label_set,
    human_ceiling,
    report_kind,
)
from evalcore.report._load import (
    RESULT_STATUSES,
    CalibrationData,
    HumanLabel,
    ItemDetail,
    RunData,
    RunInfo,
    RunResult,
    data_version,
    item_detail,
    load_calibration_data,
    load_human,
    load_items,
    load_metadata,
    load_run,
    run_infos,
)
from evalcore.report._summary import (
    AMBER_MARGIN,
    CriterionSummary,
    Light,
    ProjectSummary,
    ThresholdCheck,
    Verdict,
    history_frame,
    project_calibrations,
    project_summary,
    threshold_metric,
    verdict,
)
from evalcore.report._tables import (
    BASELINE_ROWS,
    BEST_MARK,
    SideBySide,
    headline_rows,
    side_by_side,
)
from evalcore.report._views import (
    SLICE_METRICS,
    PairwiseAnalysis,
    ThresholdAnalysis,
    binary_analysis,
    pairwise_analysis,
    pairwise_table,
    slice_table,
    slice_text,
)

__all__ = [
    "ALPHA_ROW",
    "AMBER_MARGIN",
    "BASELINE_ROWS",
    "BEST_MARK",
    "EXPORT_FORMATS",
    "HUMANS_COLUMN",
    "HUMAN_POLICIES",
    "RESULT_STATUSES",
    "SLICE_METRICS",
    "VERTEX_PAIRWISE_WORDS",
    "Calibration",
    "CalibrationData",
    "Coverage",
    "CriterionSection",
    "CriterionSummary",
    "FileCalibration",
    "HumanCeiling",
    "HumanLabel",
    "ItemDetail",
    "JudgeCalibration",
    "Light",
    "PairwiseAnalysis",
    "ProjectSummary",
    "RunCalibration",
    "RunData",
    "RunInfo",
    "RunResult",
    "SideBySide",
    "ThresholdAnalysis",
    "ThresholdCheck",
    "Verdict",
    "aggregate_human",
    "agreement_figure",
    "available_policies",
    "binary_analysis",
    "build_report",
    "calibrate_file",
    "calibrate_label_set",
    "calibrate_runs",
    "cell_items",
    "confusion_heatmaps",
    "criterion_section",
    "data_version",
    "disagreements",
    "headline_kappa",
    "headline_rows",
    "history_figure",
    "history_frame",
    "human_ceiling",
    "human_label",
    "human_labels_table",
    "item_detail",
    "judge_results_table",
    "load_calibration_data",
    "load_human",
    "load_items",
    "load_metadata",
    "load_run",
    "metrics_table",
    "mime_type",
    "normalized_rows",
    "pairwise_analysis",
    "pairwise_table",
    "policy_name",
    "project_calibrations",
    "project_summary",
    "report_html",
    "report_kind",
    "run_infos",
    "side_by_side",
    "slice_figure",
    "slice_table",
    "slice_text",
    "table_bytes",
    "threshold_figure",
    "threshold_metric",
    "verdict",
    "vertex_table",
    "write_report",
]
