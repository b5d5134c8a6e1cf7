"""In a real browser: upload a Vertex-style file on the Calibrate page and see the heatmap."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.browser.conftest import wait_idle


def test_upload_and_see_heatmap(app_server, page, tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "prompt": [f"q{i}" for i in range(12)],
            "response": [f"a{i}" for i in range(12)],
            "fluency/human_rating": [1, 2, 3, 4, 5, 5, 4, 3, 2, 1, 5, 4],
            "fluency/score": [1, 3, 3, 4, 5, 5, 5, 3, 2, 2, 5, 4],
        }
    )
    path = tmp_path / "vertex_table.csv"
    frame.to_csv(path, index=False)
    page.goto(f"{app_server.url}/calibrate")  # single-user mode: no account yet
    page.get_by_text("Upload a file").click()
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    page.get_by_text("balanced accuracy").first.wait_for()
    wait_idle(page)
    heatmap = page.locator(".js-plotly-plot .heatmaplayer").first
    heatmap.wait_for(state="attached")
    page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    page.get_by_text("fluency").first.wait_for(timeout=30_000)
