"""Pure metrics over label arrays: how well a judge agrees with people, and people with each other.

Every function takes array-likes of raw labels (list, tuple, NumPy array, pandas Series) and reads them
as :func:`evalcore.labels.normalize_label` does: ``"4"``, ``4`` and ``4.0`` are one label; None, NaN,
``pandas.NA``, ``""`` and ``"error"`` (any case) are missing. Two-array metrics drop every row where
either side is missing (Vertex AI semantics) and raise :class:`~evalcore.errors.MetricError` when no row
is left. ``labels=None`` means the union of observed labels (numbers sorted numerically, words as
strings); explicit ``labels`` fix the order (for example a scale's declared order) and must contain every
observed label.

Signatures follow scikit-learn: the label arrays first, keyword-only options after ``*``; symmetric
statistics name their arguments ``y1, y2``. Metrics that depend only on the confusion matrix are
computed from integer codes and counts, and their bootstrap intervals resample the count table, so
their cost does not grow with the number of rows.

Groups:

- judge vs humans: :func:`confusion_matrix`, :func:`confusion_labels`, :func:`accuracy`,
  :func:`balanced_accuracy`, :func:`weighted_f1`, :func:`cohen_kappa`, :func:`per_class_metrics`,
  :func:`spearman`, :func:`kendall_tau_b`, :func:`gwet_ac1`, :func:`calibrate`
  (-> :class:`CalibrationReport`);
- can the judge replace an annotator: :func:`alt_test` (-> :class:`AltTest`), :func:`alt_test_curve`,
  :func:`benjamini_yekutieli`; its alignment scores declared once in :data:`ALT_TEST_SCORING_DEFS`
  (:class:`AltTestScoring`, :func:`alt_test_scoring`, :func:`default_alt_test_scoring`);
- two judges: :func:`compare` (-> :class:`Comparison`), :func:`mcnemar_exact_p`,
  :func:`mcnemar_midp`, :func:`paired_difference_interval` (the accuracy difference);
- the judge's confidence (``y_true, y_pred, y_conf``): :func:`expected_calibration_error`,
  :func:`reliability_bins` (-> :class:`Reliability`), :func:`brier_score_loss`,
  :func:`multiclass_brier_score_loss`, :func:`fit_recalibration` (-> :class:`Recalibration`);
  trust or escalate: :func:`selective_threshold` (-> :class:`SelectiveThreshold`),
  :func:`selective_outcome`, :func:`coverage_curve`; what to label next: :func:`label_next`
  (-> :class:`LabelNext`). They take a confidence per item besides the two label arrays, so they
  sit beside the declared table rather than in it;
- the declared metric table: :data:`CALIBRATION_METRICS` (:class:`MetricDef`), :func:`metric_def`,
  :func:`metrics_for`, :func:`headline_kappa`, :func:`chance_table` (the chance level of a metric);
- conventions: :data:`CONVENTIONS` (reference package, convention and interval method of every
  figure; :func:`conventions_markdown` is the end of ``docs/metrics.md``);
- intervals: :func:`wilson_interval`, :func:`clopper_pearson_interval`,
  :func:`clopper_pearson_lower`, :func:`clopper_pearson_lower_bounds`, :func:`proportion_interval` (proportions); :func:`bootstrap_ci`, :func:`resample_table`, :func:`table_metric`;
- annotators: :func:`pairwise_cohen_kappa`, :func:`krippendorff_alpha`, :func:`krippendorff_alpha_ci`,
  :func:`aggregate_labels`; any number of raters with analytic standard errors (irrCAC's
  conventions): :func:`fleiss_kappa`, :func:`gwet_ac` (AC1, AC2), :func:`rater_agreement`
  (-> :class:`RaterAgreement`), :func:`rater_agreements` (several on one table), declared once in :data:`RATER_METRICS` (:func:`raters_for`);
- binary criteria: :func:`true_positive_rate`, :func:`true_negative_rate`,
  :func:`bias_corrected_rate`, :func:`corrected_pass_rate`, :func:`threshold_sweep`,
  :func:`best_threshold`; the human-level rate of unlabelled items: :func:`ppi_rate`,
  :func:`labelled_rate`, :func:`estimate_rate` (-> :class:`RateEstimates`); on scales of more
  labels the mean score and each label's share: :func:`ppi_mean`, :func:`labelled_mean`,
  :func:`estimate_scores` (-> :class:`ScoreEstimates`);
- pairwise position bias: :func:`position_consistency`, :func:`first_position_preference`,
  :func:`win_rates`;
- text: :func:`token_f1`, :func:`token_f1_scores`, :func:`factual_correctness_score`,
  :func:`summarization_score`, :func:`summarization_qa_score`, :func:`conciseness_score`.
"""

from evalcore.metrics._aggregate import aggregate_labels
from evalcore.metrics._agreement import (
    krippendorff_alpha,
    krippendorff_alpha_ci,
    pairwise_cohen_kappa,
)
from evalcore.metrics._alt_test import (
    ALT_TEST_SCORING_DEFS,
    ALT_TEST_SCORINGS,
    AltTest,
    AltTestAnnotator,
    AltTestScoring,
    alt_test,
    alt_test_curve,
    alt_test_scoring,
    benjamini_yekutieli,
    default_alt_test_scoring,
)
from evalcore.metrics._binary import (
    CorrectedPassRate,
    SweepPoint,
    best_threshold,
    bias_corrected_rate,
    corrected_pass_rate,
    threshold_sweep,
    true_negative_rate,
    true_positive_rate,
)
from evalcore.metrics._bootstrap import TABLE_METRICS, bootstrap_ci, resample_table, table_metric
from evalcore.metrics._classification import (
    ClassMetrics,
    accuracy,
    balanced_accuracy,
    cohen_kappa,
    confusion_labels,
    confusion_matrix,
    gwet_ac1,
    kendall_tau_b,
    per_class_metrics,
    spearman,
    weighted_f1,
)
from evalcore.metrics._compare import (
    Comparison,
    compare,
    mcnemar_exact_p,
    mcnemar_midp,
    paired_difference_interval,
)
from evalcore.metrics._confidence import (
    MIN_DECIDED,
    RECALIBRATION_METHODS,
    CoverageCurve,
    Recalibration,
    Reliability,
    SelectiveOutcome,
    SelectiveThreshold,
    ThresholdCandidate,
    brier_score_loss,
    coverage_curve,
    expected_calibration_error,
    fit_recalibration,
    multiclass_brier_score_loss,
    reliability_bins,
    selective_outcome,
    selective_threshold,
)
from evalcore.metrics._conventions import CONVENTIONS, Convention, conventions_markdown
from evalcore.metrics._declared import (
    CALIBRATION_METRICS,
    MetricDef,
    chance_table,
    headline_kappa,
    metric_def,
    metrics_for,
)
from evalcore.metrics._label_next import LabelCandidate, LabelNext, label_next
from evalcore.metrics._pairwise import first_position_preference, position_consistency, win_rates
from evalcore.metrics._proportion import (
    PROPORTION_METHODS,
    clopper_pearson_interval,
    clopper_pearson_lower,
    clopper_pearson_lower_bounds,
    proportion_interval,
    wilson_interval,
)
from evalcore.metrics._rate import (
    RateEstimate,
    RateEstimates,
    ScoreEstimates,
    estimate_rate,
    estimate_scores,
    labelled_mean,
    labelled_rate,
    ppi_mean,
    ppi_rate,
)
from evalcore.metrics._raters import (
    RATER_COEFFICIENTS,
    RATER_METRICS,
    RaterAgreement,
    RaterDef,
    fleiss_kappa,
    gwet_ac,
    rater_agreement,
    rater_agreements,
    raters_for,
)
from evalcore.metrics._report import CalibrationReport, calibrate
from evalcore.metrics._text import (
    conciseness_score,
    factual_correctness_score,
    summarization_qa_score,
    summarization_score,
    token_f1,
    token_f1_scores,
)

__all__ = [
    "ALT_TEST_SCORINGS",
    "ALT_TEST_SCORING_DEFS",
    "CALIBRATION_METRICS",
    "CONVENTIONS",
    "MIN_DECIDED",
    "PROPORTION_METHODS",
    "RATER_COEFFICIENTS",
    "RATER_METRICS",
    "RECALIBRATION_METHODS",
    "TABLE_METRICS",
    "AltTest",
    "AltTestAnnotator",
    "AltTestScoring",
    "CalibrationReport",
    "ClassMetrics",
    "Comparison",
    "Convention",
    "CorrectedPassRate",
    "CoverageCurve",
    "LabelCandidate",
    "LabelNext",
    "MetricDef",
    "RateEstimate",
    "RateEstimates",
    "RaterAgreement",
    "RaterDef",
    "Recalibration",
    "Reliability",
    "ScoreEstimates",
    "SelectiveOutcome",
    "SelectiveThreshold",
    "SweepPoint",
    "ThresholdCandidate",
    "accuracy",
    "aggregate_labels",
    "alt_test",
    "alt_test_curve",
    "alt_test_scoring",
    "balanced_accuracy",
    "benjamini_yekutieli",
    "best_threshold",
    "bias_corrected_rate",
    "bootstrap_ci",
    "brier_score_loss",
    "calibrate",
    "chance_table",
    "clopper_pearson_interval",
    "clopper_pearson_lower",
    "clopper_pearson_lower_bounds",
    "cohen_kappa",
    "compare",
    "conciseness_score",
    "confusion_labels",
    "confusion_matrix",
    "conventions_markdown",
    "corrected_pass_rate",
    "coverage_curve",
    "default_alt_test_scoring",
    "estimate_rate",
    "estimate_scores",
    "expected_calibration_error",
    "factual_correctness_score",
    "first_position_preference",
    "fit_recalibration",
    "fleiss_kappa",
    "gwet_ac",
    "gwet_ac1",
    "headline_kappa",
    "kendall_tau_b",
    "krippendorff_alpha",
    "krippendorff_alpha_ci",
    "label_next",
    "labelled_mean",
    "labelled_rate",
    "mcnemar_exact_p",
    "mcnemar_midp",
    "metric_def",
    "metrics_for",
    "multiclass_brier_score_loss",
    "paired_difference_interval",
    "pairwise_cohen_kappa",
    "per_class_metrics",
    "position_consistency",
    "ppi_mean",
    "ppi_rate",
    "proportion_interval",
    "rater_agreement",
    "rater_agreements",
    "raters_for",
    "reliability_bins",
    "resample_table",
    "selective_outcome",
    "selective_threshold",
    "spearman",
    "summarization_qa_score",
    "summarization_score",
    "table_metric",
    "threshold_sweep",
    "token_f1",
    "token_f1_scores",
    "true_negative_rate",
    "true_positive_rate",
    "weighted_f1",
    "wilson_interval",
    "win_rates",
]
