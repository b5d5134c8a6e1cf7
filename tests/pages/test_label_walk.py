"""A label's walk, measured: from an uploaded file to a confusion matrix on the Calibrate page.

The test runs the real page (AppTest) and records, with a profiler on the script's thread, every
function of this repository called below the upload mode's entry (``ui.calibrate_upload.upload_mode``)
until the matrix is drawn, leaving out the caller's session check (``evalcore.workflows.caller``, the
same for every call and no part of the label's way). ARCHITECTURE.md writes the walk out; this test
holds it to at most six packages and to one entry into ui/ (nothing below the workflow layer ever
calls back into the dashboard).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from ui import calibrate_upload
from ui.state import Calibrate as K

ROOT = Path(__file__).resolve().parents[2]
FILE = pd.DataFrame(  # Vertex's layout: a metric's human rating beside the judge's score
    {
        "prompt": [f"q{n}" for n in range(30)],
        "response": [f"a{n}" for n in range(30)],
        "fluency/human_rating": [1 + n % 5 for n in range(30)],
        "fluency/score": [1 + (n * 3) % 5 for n in range(30)],
    }
)


def _package(frame: FrameType) -> str | None:
    path = Path(frame.f_code.co_filename)
    if not path.is_relative_to(ROOT) or ".venv" in path.parts:
        return None
    parts = path.relative_to(ROOT).parts
    if parts[0] == "evalcore":
        return "evalcore." + parts[1].removesuffix(".py")
    return parts[0].removesuffix(".py")


class Walk:
    """A profiler that records the packages of the calls below ``upload_mode``."""

    def __init__(self) -> None:
        self.packages: list[str] = []
        self.entries = 0  # calls into ui/ from outside it, below the entry
        self._depth = 0  # > 0 while inside upload_mode
        self._skip = 0  # > 0 while inside a session check

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        name = frame.f_code.co_name
        if event == "call":
            package = _package(frame)
            if name == "upload_mode" and package == "ui":
                self._depth += 1
                self.entries += 1
            elif self._depth and name == "caller" and package == "evalcore.workflows":
                self._skip += 1
            elif self._depth and not self._skip and package is not None:
                outside = _package(frame.f_back) if frame.f_back is not None else None
                if package == "ui" and outside not in ("ui", "pages", None):
                    self.entries += 1
                self.packages.append(package)
        elif event == "return":
            package = _package(frame)
            if name == "upload_mode" and package == "ui":
                self._depth -= 1
            elif self._skip and name == "caller" and package == "evalcore.workflows":
                self._skip -= 1
        return None


def test_a_label_crosses_at_most_six_packages_and_enters_ui_once(
    single_user_app: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch
) -> None:
    at = single_user_app("calibrate")
    at.segmented_control(key=K.MODE).set_value("Upload a file").run()
    at.file_uploader(key=K.FILES).set_value(
        [("labels.csv", FILE.to_csv(index=False).encode(), "text/csv")]
    )
    walk = Walk()
    original = calibrate_upload.upload_mode

    def profiled(*args: Any, **kwargs: Any) -> None:  # on the script's own thread
        sys.setprofile(walk)
        try:
            original(*args, **kwargs)
        finally:
            sys.setprofile(None)

    monkeypatch.setattr(calibrate_upload, "upload_mode", profiled)
    at.run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == 1  # the confusion matrix was drawn
    crossed = sorted(set(walk.packages))
    assert len(crossed) <= 6, crossed
    assert walk.entries == 1
    assert {"evalcore.data", "evalcore.metrics", "evalcore.report", "ui"} <= set(crossed)
