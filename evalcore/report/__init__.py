"""Calibration reports: judges against humans, figures and exports.

File mode (a table with human and judge columns) lives here beside the store-backed dashboard views;
both are built from :mod:`evalcore.metrics`.
"""

from evalcore.report._figures import confusion_heatmaps, normalized_rows
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
from evalcore.report._tables import BEST_MARK, SideBySide, headline_rows, side_by_side

__all__ = [
    "BEST_MARK",
    "HUMAN_POLICIES",
    "FileCalibration",
    "HumanCeiling",
    "JudgeCalibration",
    "SideBySide",
    "aggregate_human",
    "calibrate_file",
    "calibrate_label_set",
    "confusion_heatmaps",
    "headline_rows",
    "human_ceiling",
    "normalized_rows",
    "report_kind",
    "side_by_side",
]
