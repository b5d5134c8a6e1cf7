"""Confusion matrices lay out in a grid of at most three a row, titles over their own panels."""

from __future__ import annotations

from evalcore.metrics import CalibrationReport
from evalcore.report import confusion_heatmaps


def _panels(n: int) -> list[tuple[str, CalibrationReport]]:
    report = CalibrationReport.from_counts([[8, 2], [1, 9]], labels=["pass", "fail"], n_boot=0)
    return [(f"run {i}", report) for i in range(n)]


def test_five_panels_make_two_rows_of_three() -> None:
    fig = confusion_heatmaps(_panels(5), height=300).to_dict()
    layout = fig["layout"]
    assert layout["height"] == 600  # two rows of 300
    y = [tuple(layout[f"yaxis{'' if i == 0 else i + 1}"]["domain"]) for i in range(5)]
    x = [tuple(layout[f"xaxis{'' if i == 0 else i + 1}"]["domain"]) for i in range(5)]
    assert y[0] == y[1] == y[2]
    assert y[3] == y[4]
    assert y[3][1] < y[0][0]  # the second row is below the first
    assert x[3] == x[0]  # the fourth panel starts the second row under the first
    assert x[4] == x[1]
    # each title sits on top of its own panel
    titles = {a["text"]: a["y"] for a in layout["annotations"]}
    assert titles["run 0"] == y[0][1]
    assert titles["run 4"] == y[4][1]
    # the human axis is titled on the first panel of each row only
    assert layout["yaxis4"]["title"]["text"] == "human"
    assert layout["yaxis2"]["showticklabels"] is False


def test_three_panels_stay_in_one_row() -> None:
    layout = confusion_heatmaps(_panels(3), height=300).to_dict()["layout"]
    assert layout["height"] == 300
    assert tuple(layout["yaxis"]["domain"]) == (0.0, 1.0)
