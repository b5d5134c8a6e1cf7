"""Improving a judge from the human labels: a split that cannot leak, candidates, proof on test.

- :func:`make_split` (-> :class:`Split`; :class:`SplitTooSmallError`): a stratified, seeded
  dev/test split of the labelled items, refused when the test part would be too small to mean
  anything.
- :func:`optimize` (-> :class:`OptimizeReport`) with :class:`OptimizeSettings` (the settings a
  person chooses are declared in :data:`OPTIMIZE_SETTINGS`, with their bounds): few-shot
  candidates from dev items, rewrites proposed by an optimiser model from dev disagreements, and
  hand-edited templates, each a :class:`Candidate` judged on dev (:class:`CandidateResult`); the
  best few and the start judged on test (:class:`FinalistResult`); every candidate planned and not
  judged or not ranked is in the report with its reason (:class:`DroppedCandidate`), so the steps
  that ran always add up to the total shown; progress as
  :class:`ImproveProgress`; :func:`estimate_optimize` prices it beforehand.
- :func:`candidate_template_toml` and :func:`save_candidate` keep a candidate that beat the start,
  as a template file or a new template version whose note says how it was made.

Nothing that builds or chooses a candidate reads a test item: generation sees a
:class:`~evalcore.improve._candidates.DevView` of the dev items only, and test items are judged
after the finalists are chosen.
"""

from evalcore.improve._candidates import Candidate, CandidateKind
from evalcore.improve._optimize import (
    OPTIMIZE_SETTINGS,
    CandidateResult,
    DroppedCandidate,
    FinalistResult,
    ImproveProgress,
    OptimizeReport,
    OptimizeSetting,
    OptimizeSettings,
    estimate_optimize,
    optimize,
)
from evalcore.improve._save import candidate_note, candidate_template_toml, save_candidate
from evalcore.improve._split import (
    MIN_PER_CLASS,
    Split,
    SplitTooSmallError,
    make_split,
    test_half_width,
)

__all__ = [
    "MIN_PER_CLASS",
    "OPTIMIZE_SETTINGS",
    "Candidate",
    "CandidateKind",
    "CandidateResult",
    "DroppedCandidate",
    "FinalistResult",
    "ImproveProgress",
    "OptimizeReport",
    "OptimizeSetting",
    "OptimizeSettings",
    "Split",
    "SplitTooSmallError",
    "candidate_note",
    "candidate_template_toml",
    "estimate_optimize",
    "make_split",
    "optimize",
    "save_candidate",
    "test_half_width",
]
