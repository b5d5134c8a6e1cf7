"""The convention of every statistic, declared once: its reference package, its definition choices and
its interval method with the reason. ``docs/metrics.md`` ends with :func:`conventions_markdown`, and
a test holds every declared metric (:data:`CALIBRATION_METRICS`, :data:`RATER_METRICS`) to an entry.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CONVENTIONS", "Convention", "conventions_markdown"]


@dataclass(frozen=True)
class Convention:
    """One figure: ``key`` (a declared metric's key, or a name for the others), where it is
    computed, the ``reference`` package it equals, the ``convention`` (definition choices), and its
    ``interval`` method with the reason for it."""

    group: str
    key: str
    name: str
    where: str
    reference: str
    convention: str
    interval: str


_BOOT = (
    "BCa bootstrap of the count table (one multinomial draw per resample, the same distribution as "
    "resampling items, 1,000 by default; bias correction and acceleration as scipy's "
    "`bootstrap(method='BCa')`, the jackknife taken over the table's cells): no standard variance "
    "formula is in common use, and BCa corrects the skew the percentile bootstrap shows at small n"
)
_ANALYTIC = (
    "BCa bootstrap, with irrCAC's standard error beside it (`se`); irrCAC's analytic interval "
    "value ± t(1 − α/2, n − 1) · SE, cut to [−1, 1], when no resample is drawn (`--n-boot 0`). At "
    "n = 40 with one dominant label (`bench/coverage.py`, 2,000 seeded tables) the percentile "
    "bootstrap's interval of kappa lies above the truth 4.8 % of the time and below it 1.8 % (93.4 % "
    "coverage), irrCAC's analytic one 6.95 % and 0.8 % (92.2 %), BCa 1.4 % and 1.6 % (97.0 %)"
)
_WILSON = (
    "Wilson score (statsmodels `proportion_confint(method='wilson')`): a proportion; unlike the Wald "
    "interval it never collapses to a point at 0 or n successes"
)
_AXIS = (
    "over the calibration's label axis: the declared scale, or for numbers the inferred one "
    "(whole numbers from the lowest to the highest), so a judge's figures never depend on the "
    "labels another column uses"
)
_JUDGE = "judge against humans (`CalibrationReport`, `evalcore calibrate`)"
_RATERS = "among annotators (`HumanCeiling.coefficients`, `rater_agreement`)"
_RATES = "unlabelled items (`estimate_rate`, `estimate_scores`, `evalcore estimate-rate`)"
_PAIRED = "two judges on the same items (`Comparison`)"

#: Every statistic's convention, in the order docs/metrics.md lists them.
CONVENTIONS: tuple[Convention, ...] = (
    Convention(
        _JUDGE,
        "accuracy_balanced",
        "balanced accuracy",
        "`balanced_accuracy`",
        "scikit-learn `balanced_accuracy_score` (Vertex's `accuracy_balanced`)",
        "mean recall over the labels the humans used; a label only the judge uses is left out",
        _BOOT,
    ),
    Convention(
        _JUDGE,
        "f1_score_balanced",
        "weighted F1",
        "`weighted_f1`",
        "scikit-learn `f1_score(average='weighted', zero_division=0)` (Vertex's "
        "`f1_score_balanced`)",
        "per-label F1 weighted by the humans' count",
        _BOOT,
    ),
    Convention(
        _JUDGE,
        "accuracy",
        "accuracy",
        "`accuracy`",
        "scikit-learn `accuracy_score`",
        "share of items with the humans' label",
        _WILSON,
    ),
    Convention(
        _JUDGE,
        "cohen_kappa",
        "Cohen's kappa",
        "`cohen_kappa`",
        "scikit-learn `cohen_kappa_score(labels=axis)`; SE: irrCAC `table.CAC.cohen` "
        "(Fleiss, Cohen and Everitt 1969 at the estimate, no finite-population correction)",
        _AXIS,
        _ANALYTIC,
    ),
    Convention(
        _JUDGE,
        "gwet_ac1",
        "Gwet's AC1",
        "`gwet_ac1`",
        "irrCAC `table.CAC.gwet` (value and Gwet's SE)",
        "chance agreement sum π(1 − π) / (k − 1) over the k labels of the axis; " + _AXIS,
        _ANALYTIC,
    ),
    Convention(
        _JUDGE,
        "cohen_kappa_linear",
        "Cohen's kappa (linear)",
        "`cohen_kappa(weights=...)`",
        "scikit-learn `cohen_kappa_score(weights='linear')`; SE irrCAC",
        "disagreement |i − j| over label positions; " + _AXIS,
        _ANALYTIC,
    ),
    Convention(
        _JUDGE,
        "cohen_kappa_quadratic",
        "Cohen's kappa (quadratic)",
        "`cohen_kappa(weights=...)`",
        "scikit-learn `cohen_kappa_score(weights='quadratic')`; SE irrCAC",
        "disagreement (i − j)² over label positions; " + _AXIS,
        _ANALYTIC,
    ),
    Convention(
        _JUDGE,
        "gwet_ac2_linear",
        "Gwet's AC2 (linear)",
        "`CalibrationReport`",
        "irrCAC `table.CAC(weights='linear').gwet`",
        "agreement weights 1 − |i − j| / (k − 1) over positions 1..k; " + _AXIS,
        _ANALYTIC,
    ),
    Convention(
        _JUDGE,
        "gwet_ac2_quadratic",
        "Gwet's AC2 (quadratic)",
        "`CalibrationReport`",
        "irrCAC `table.CAC(weights='quadratic').gwet`",
        "agreement weights 1 − (i − j)² / (k − 1)² over positions 1..k; " + _AXIS,
        _ANALYTIC,
    ),
    Convention(
        _JUDGE,
        "spearman",
        "Spearman",
        "`spearman`",
        "scipy `spearmanr`",
        "mid-ranks for ties, by label order",
        _BOOT,
    ),
    Convention(
        _JUDGE,
        "kendall_tau",
        "Kendall tau-b",
        "`kendall_tau_b`",
        "scipy `kendalltau` (variant b)",
        "by label order, corrected for ties",
        _BOOT,
    ),
    Convention(
        _JUDGE,
        "tpr",
        "true-positive rate",
        "`true_positive_rate`",
        "scikit-learn `recall_score`",
        "of the humans' positives",
        _WILSON,
    ),
    Convention(
        _JUDGE,
        "tnr",
        "true-negative rate",
        "`true_negative_rate`",
        "scikit-learn `recall_score` of the other label",
        "of the humans' negatives",
        _WILSON,
    ),
    Convention(
        _RATERS,
        "fleiss_kappa",
        "Fleiss' kappa",
        "`fleiss_kappa`",
        "irrCAC `raw.CAC.fleiss` (value and SE); on complete data statsmodels "
        "`fleiss_kappa(method='fleiss')`",
        "missing ratings allowed: p_a over items rated twice or more, the label shares over "
        "every item rated at least once",
        "analytic (t, n − 1; Gwet's linearised variance) beside the percentile bootstrap "
        "over items",
    ),
    Convention(
        _RATERS,
        "gwet_ac1",
        "Gwet's AC1 (any number of raters)",
        "`gwet_ac`",
        "irrCAC `raw.CAC.gwet`",
        "as Fleiss' kappa, chance agreement T / (q (q − 1)) · sum π(1 − π)",
        "analytic (t, n − 1) beside the percentile bootstrap over items",
    ),
    Convention(
        _RATERS,
        "gwet_ac2_linear",
        "Gwet's AC2 (linear)",
        "`gwet_ac(weights='linear')`",
        "irrCAC `raw.CAC(weights='linear').gwet`",
        "agreement weights 1 − |a − b| / R over the labels' values (numbers) or positions "
        "(words), R their range",
        "analytic (t, n − 1) beside the percentile bootstrap over items",
    ),
    Convention(
        _RATERS,
        "gwet_ac2_quadratic",
        "Gwet's AC2 (quadratic)",
        "`gwet_ac(weights='quadratic')`",
        "irrCAC `raw.CAC(weights='quadratic').gwet`",
        "agreement weights 1 − (a − b)² / R²",
        "analytic (t, n − 1) beside the percentile bootstrap over items",
    ),
    Convention(
        _RATERS,
        "krippendorff_alpha_nominal",
        "Krippendorff's alpha (nominal)",
        "`krippendorff_alpha`",
        "krippendorff `alpha`; SE irrCAC `raw.CAC.krippendorff`",
        "coincidence matrix over items rated twice or more",
        "analytic (t, n − 1) beside the percentile bootstrap over items",
    ),
    Convention(
        _RATERS,
        "krippendorff_alpha_ordinal",
        "Krippendorff's alpha (ordinal)",
        "`krippendorff_alpha(level='ordinal')`",
        "krippendorff `alpha`",
        "Krippendorff's ordinal distance (it depends on the marginals)",
        "percentile bootstrap over items: no analytic variance for this distance",
    ),
    Convention(
        _RATERS,
        "krippendorff_alpha_interval",
        "Krippendorff's alpha (interval)",
        "`krippendorff_alpha(level='interval')`",
        "krippendorff `alpha`; SE irrCAC with quadratic weights",
        "squared differences of the labels' values (numeric scales)",
        "analytic (t, n − 1) beside the percentile bootstrap over items",
    ),
    Convention(
        _RATERS,
        "mean_pairwise_kappa",
        "mean pairwise Cohen's kappa",
        "`pairwise_cohen_kappa`",
        "scikit-learn `cohen_kappa_score` per pair",
        "quadratic weights on ordinal scales, over the items each pair shares",
        "none (a summary of the pairwise table)",
    ),
    Convention(
        _RATES,
        "labelled_share",
        "labelled only (a share)",
        "`labelled_rate`",
        "statsmodels `proportion_confint(method='wilson')`",
        "the humans' share on the labelled items",
        _WILSON,
    ),
    Convention(
        _RATES,
        "labelled_mean",
        "labelled only (a mean score)",
        "`labelled_mean`",
        "ppi-python `classical_mean_ci`",
        "mean ± z · sd / sqrt(n), sd with ddof 0; cut to the scale",
        "normal, as the PPI++ row beside it, so the two compare like for like",
    ),
    Convention(
        _RATES,
        "rogan_gladen",
        "Rogan-Gladen",
        "`corrected_pass_rate`",
        "judgy `estimate_success_rate` (point estimate)",
        "(p_obs + TNR − 1) / (TPR + TNR − 1), clipped to [0, 1]",
        "percentile bootstrap resampling the labelled table and the unlabelled verdicts "
        "(judgy resamples the labelled rows only, 20,000 times, unseeded)",
    ),
    Convention(
        _RATES,
        "ppi",
        "PPI++ (rate, mean score, each label's share)",
        "`ppi_mean`",
        "ppi-python `ppi_mean_ci` and `ppi_mean_pointestimate` (lam=None)",
        "λ = cov(y, f) / ((1 + n/N) var(f ∪ g)) clipped to [0, 1], cov dividing by n, var "
        "by n + N − 1; SE² = var₀(λg)/N + var₀(y − λf)/n (ddof 0); a judge constant "
        "everywhere gives ppi-python NaN and evalcore λ = 0 (every λ gives the same "
        "figure); each share tunes its own λ",
        "normal, cut to the possible range; when it is a single point (ppi-python's own "
        "number, kept) the labelled items' Wilson interval is given beside it",
    ),
    Convention(
        _PAIRED,
        "diff_accuracy",
        "accuracy difference",
        "`paired_difference_interval`",
        "Newcombe (1998) method 10, from statsmodels' Wilson intervals",
        "b − a on the items both judges and the humans labelled",
        "Newcombe's hybrid score interval: pairs the two Wilson intervals, never collapses",
    ),
    Convention(
        _PAIRED,
        "mcnemar_p",
        "McNemar's test of the accuracy difference",
        "`mcnemar_exact_p`, `mcnemar_midp`",
        "statsmodels `mcnemar(exact=True)`; mid-p 2 (P(X ≤ m) − P(X = m)/2)",
        "exact-label accuracy: the same quantity as the interval beside it",
        "a test, not an interval; mid-p (`mid_p=True`) is less conservative",
    ),
    Convention(
        _PAIRED,
        "diff_accuracy_balanced",
        "balanced accuracy and weighted F1 differences",
        "`compare`",
        "scikit-learn's definitions, as above",
        "b − a",
        "paired percentile bootstrap of the (human, a, b) table",
    ),
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def conventions_markdown() -> str:
    """The statistics section of ``docs/metrics.md``."""
    lines = [
        "",
        "## Statistics: references, conventions and intervals",
        "",
        "Every figure evalcore reports equals its reference package to 1e-9 "
        "(`tests/metrics/test_metrics_references.py` compares them on fixed, seeded random, "
        "SummEval and PandaLM cases). Numeric labels without a declared scale sit at their "
        "values on the inferred scale. This section is generated from "
        "`evalcore.metrics.CONVENTIONS`.",
    ]
    group = None
    for c in CONVENTIONS:
        if c.group != group:
            group = c.group
            lines += [
                "",
                f"### {group[0].upper()}{group[1:]}",
                "",
                "| Figure | Function | Reference | Convention | Interval (why) |",
                "|---|---|---|---|---|",
            ]
        lines.append(
            f"| {_cell(c.name)} | {_cell(c.where)} | {_cell(c.reference)} | "
            f"{_cell(c.convention)} | {_cell(c.interval)} |"
        )
    return "\n".join(lines) + "\n"
