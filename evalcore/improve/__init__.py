"""Improving a judge from the human labels: a split that cannot leak, candidates, proof on test.

- :data:`OPTIMIZE_SETTINGS` (:class:`OptimizeSetting`, :func:`optimize_setting`): every setting of
  an optimisation declared once (name, label, default, bounds, step, help), read by
  :class:`OptimizeSettings`, the command line's options and the Judge page's form.
- :func:`make_split` (-> :class:`Split`; :class:`SplitTooSmallError`): a stratified, seeded
  dev/test split of the labelled items, refused when the test part would be too small to mean
  anything.
- :func:`optimize` (-> :class:`OptimizeReport`) with :class:`OptimizeSettings` (the settings a
  person chooses are declared in :data:`OPTIMIZE_SETTINGS`, with their bounds): few-shot
  candidates from dev items, rewrites proposed by an optimiser model from dev disagreements, and
  hand-edited templates, each a :class:`Candidate` judged on dev (:class:`CandidateResult`); the
  best few and the start judged on test (:class:`FinalistResult`); every candidate planned and not
  judged or not ranked is in the report with its reason (:class:`DroppedCandidate`), so the steps
  that ran always add up to the total shown; progress as :class:`ImproveProgress`;
  :func:`estimate_optimize` prices it beforehand. Every figure comes from the calibration engine
  (:func:`evalcore.metrics.calibrate` and the paired :func:`evalcore.metrics.compare`, at the
  settings' confidence), and the human ceiling is the Calibrate page's
  (:func:`evalcore.report.human_ceiling`).
- :func:`candidate_template_toml` and :func:`save_candidate` keep a candidate that beat the start,
  as a template file or a new template version whose note says how it was made.

Nothing that builds or chooses a candidate reads a test item: generation sees a
:class:`~evalcore.improve._candidates.DevView` of the dev items only, and test items are judged
after the finalists are chosen.

The settings table is imported with the package; the rest (the judge engine, numpy) when first
used, so that the command line can build its options from the table without loading them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from evalcore.improve._settings import (
    OPTIMIZE_SETTINGS,
    OptimizeSetting,
    OptimizeSettings,
    optimize_setting,
)

if TYPE_CHECKING:
    from evalcore.improve._candidates import Candidate, CandidateKind
    from evalcore.improve._optimize import (
        CandidateResult,
        DroppedCandidate,
        FinalistResult,
        ImproveProgress,
        OptimizeReport,
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
    "optimize_setting",
    "save_candidate",
    "test_half_width",
]

#: Where each name that is not imported with the package lives.
_LAZY = {
    "Candidate": "_candidates",
    "CandidateKind": "_candidates",
    "CandidateResult": "_optimize",
    "DroppedCandidate": "_optimize",
    "FinalistResult": "_optimize",
    "ImproveProgress": "_optimize",
    "OptimizeReport": "_optimize",
    "estimate_optimize": "_optimize",
    "optimize": "_optimize",
    "candidate_note": "_save",
    "candidate_template_toml": "_save",
    "save_candidate": "_save",
    "MIN_PER_CLASS": "_split",
    "Split": "_split",
    "SplitTooSmallError": "_split",
    "make_split": "_split",
    "test_half_width": "_split",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'evalcore.improve' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"evalcore.improve.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
