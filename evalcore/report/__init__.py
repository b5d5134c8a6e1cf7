"""Calibration reports: judges against humans, figures and exports.

One engine: every source ends in a :class:`CalibrationData`, and :func:`calibrate_runs` turns it into
a :class:`Calibration` (every run's report with intervals and coverage, the paired difference from a
baseline run, the human ceiling) that every surface renders (:meth:`Calibration.table`).

- **files** (``evalcore calibrate``, the Calibrate page's upload mode): :func:`file_data` turns a
  :class:`~evalcore.data.LoadedFile` (any layout, or a column mapping) into one
  :class:`CalibrationData` per metric, its judge columns as runs;
- **the store** (the Calibrate and Reports pages, ``evalcore report``): :func:`load_calibration_data`
  reads items, human labels and judge results of a (dataset, criterion, runs) in a few bulk queries,
  and :class:`CalibrationLoader` does it piece by piece, reloading only what a new label or result
  changed (:class:`DataVersion`).

The label axis follows one rule: the declared scale when there is one, else the labels observed on
either side, in the scale's order (:attr:`CalibrationData.labels`). The metrics come from the
declared table :data:`evalcore.metrics.CALIBRATION_METRICS`. The drill-downs
  (:func:`cell_items`, :func:`item_detail`, :func:`disagreements`), the kind-specific views
  (:func:`binary_analysis`, :func:`pairwise_analysis`), slicing (:func:`slice_table`), the honest
  baselines (:meth:`Calibration.references`), whether the judge can stand in for an annotator
  (:func:`run_alt_test`), the human-level rate of unlabelled items (:func:`run_rate_estimate`; on
  other scales each label's share and the mean score, :func:`run_score_estimate`), the
  judge's agreement with itself (:func:`self_agreement`), the project
  summary with traffic lights (:func:`project_summary`, :func:`verdict`) and history
  (:func:`history_frame`) are pure functions over it.

Exports: :func:`build_report` / :func:`report_html` (a self-contained HTML file), :func:`table_bytes`
of :func:`human_labels_table`, :func:`judge_results_table` and :func:`metrics_table` (CSV, JSONL,
Parquet), and :func:`vertex_table` (Vertex AI's metrics-table layout). Figures are plain plotly
figures. This package never imports streamlit.
"""

from evalcore.report._calibration import (
    ALPHA_ROW,
    CHANCE_COLUMN,
    CONSTANT_COLUMN,
    FLEISS_ROW,
    HUMANS_COLUMN,
    REFERENCE_COLUMNS,
    Calibration,
    Coverage,
    References,
    RunCalibration,
    available_policies,
    calibrate_runs,
    cell_items,
    disagreements,
    human_label,
    policy_name,
    prevalence_row,
)
from evalcore.report._export import (
    EXPORT_FORMATS,
    VERTEX_PAIRWISE_WORDS,
    csv_safe,
    human_labels_table,
    judge_results_table,
    metrics_table,
    mime_type,
    table_bytes,
    vertex_table,
)
from evalcore.report._figures import (
    agreement_figure,
    alt_test_figure,
    cell_from_selection,
    confusion_heatmaps,
    history_figure,
    kappa_heatmap,
    normalized_rows,
    slice_figure,
    threshold_figure,
)
from evalcore.report._files import FILE_RUN_SOURCE, file_data, label_set_data, parse_scale
from evalcore.report._html import (
    CriterionSection,
    build_report,
    criterion_section,
    report_html,
    write_report,
)
from evalcore.report._incremental import CalibrationLoader
from evalcore.report._labelsets import (
    HUMAN_POLICIES,
    HumanCeiling,
    aggregate_human,
    human_ceiling,
)
from evalcore.report._load import (
    RESULT_STATUSES,
    CalibrationData,
    DataVersion,
    HumanLabel,
    ItemDetail,
    RunData,
    RunInfo,
    RunResult,
    RunVersion,
    check_selection,
    data_version,
    item_detail,
    load_calibration_data,
    load_human,
    load_items,
    load_metadata,
    load_run,
    run_infos,
    scale_codes,
)
from evalcore.report._self import (
    SelfAgreement,
    load_samples,
    repeated_runs,
    runs_as_samples,
    self_agreement,
    self_agreement_table,
)
from evalcore.report._standin import (
    ALT_TEST_EPSILONS,
    alt_test_table,
    default_scoring,
    rate_table,
    run_alt_test,
    run_alt_test_curve,
    run_rate_estimate,
    run_score_estimate,
    score_table,
)
from evalcore.report._summary import (
    AMBER_MARGIN,
    SUMMARY_METRICS,
    CriterionSummary,
    Light,
    ProjectSummary,
    ThresholdCheck,
    Verdict,
    history_frame,
    project_calibrations,
    project_summary,
    project_version,
    threshold_metric,
    verdict,
)
from evalcore.report._tables import (
    BASELINE_ROWS,
    BEST_MARK,
    SideBySide,
    combine,
    headline_rows,
    side_by_side,
)
from evalcore.report._views import (
    PairwiseAnalysis,
    ThresholdAnalysis,
    binary_analysis,
    pairwise_analysis,
    pairwise_table,
    slice_metrics,
    slice_table,
    slice_text,
)

__all__ = [
    "ALPHA_ROW",
    "ALT_TEST_EPSILONS",
    "AMBER_MARGIN",
    "BASELINE_ROWS",
    "BEST_MARK",
    "CHANCE_COLUMN",
    "CONSTANT_COLUMN",
    "EXPORT_FORMATS",
    "FILE_RUN_SOURCE",
    "FLEISS_ROW",
    "HUMANS_COLUMN",
    "HUMAN_POLICIES",
    "REFERENCE_COLUMNS",
    "RESULT_STATUSES",
    "SUMMARY_METRICS",
    "VERTEX_PAIRWISE_WORDS",
    "Calibration",
    "CalibrationData",
    "CalibrationLoader",
    "Coverage",
    "CriterionSection",
    "CriterionSummary",
    "DataVersion",
    "HumanCeiling",
    "HumanLabel",
    "ItemDetail",
    "Light",
    "PairwiseAnalysis",
    "ProjectSummary",
    "References",
    "RunCalibration",
    "RunData",
    "RunInfo",
    "RunResult",
    "RunVersion",
    "SelfAgreement",
    "SideBySide",
    "ThresholdAnalysis",
    "ThresholdCheck",
    "Verdict",
    "aggregate_human",
    "agreement_figure",
    "alt_test_figure",
    "alt_test_table",
    "available_policies",
    "binary_analysis",
    "build_report",
    "calibrate_runs",
    "cell_from_selection",
    "cell_items",
    "check_selection",
    "combine",
    "confusion_heatmaps",
    "criterion_section",
    "csv_safe",
    "data_version",
    "default_scoring",
    "disagreements",
    "file_data",
    "headline_rows",
    "history_figure",
    "history_frame",
    "human_ceiling",
    "human_label",
    "human_labels_table",
    "item_detail",
    "judge_results_table",
    "kappa_heatmap",
    "label_set_data",
    "load_calibration_data",
    "load_human",
    "load_items",
    "load_metadata",
    "load_run",
    "load_samples",
    "metrics_table",
    "mime_type",
    "normalized_rows",
    "pairwise_analysis",
    "pairwise_table",
    "parse_scale",
    "policy_name",
    "prevalence_row",
    "project_calibrations",
    "project_summary",
    "project_version",
    "rate_table",
    "repeated_runs",
    "report_html",
    "run_alt_test",
    "run_alt_test_curve",
    "run_infos",
    "run_rate_estimate",
    "run_score_estimate",
    "runs_as_samples",
    "scale_codes",
    "score_table",
    "self_agreement",
    "self_agreement_table",
    "side_by_side",
    "slice_figure",
    "slice_metrics",
    "slice_table",
    "slice_text",
    "table_bytes",
    "threshold_figure",
    "threshold_metric",
    "verdict",
    "vertex_table",
    "write_report",
]
