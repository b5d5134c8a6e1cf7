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

__all__ = [
    "HUMAN_POLICIES",
    "FileCalibration",
    "HumanCeiling",
    "JudgeCalibration",
    "aggregate_human",
    "calibrate_file",
    "calibrate_label_set",
    "confusion_heatmaps",
    "human_ceiling",
    "normalized_rows",
    "report_kind",
]
