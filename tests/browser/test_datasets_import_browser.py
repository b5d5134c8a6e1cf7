"""In a real browser (issue 20): a multi-aspect file in the SummEval shape imports in one submit, x.5
scores handled by the user's choice; only item fields reach the judge; a file without its response is
refused naming its columns; a new endpoint has no key variable and an existing name asks first.

The files are synthetic, in the shapes of the public datasets (never the data itself).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from evalcore.runs import judge_items
from evalcore.store import Store
from tests.browser.conftest import AppServer, css, wait_idle
from tests.store.test_store_import import _aspects_file
from ui.state import Datasets, Settings

ASPECTS = ("coherence", "consistency", "fluency", "relevance")
JUDGES = ("gpt4", "gpt35", "llama2_70b")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, chromium_path: str) -> object:
    started = AppServer(tmp_path_factory.mktemp("import") / "evalcore.sqlite")
    yield started
    started.stop()


def settle(page) -> None:
    """Streamlit is idle and every widget has been drawn (no skeleton left)."""
    wait_idle(page)
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=stSkeleton]').length === 0",
        timeout=60_000,
    )


def _errors(page) -> list[str]:
    return page.locator("[data-testid='stAlertContentError']").all_inner_texts()


def _upload(page, url: str, path: Path) -> None:
    page.goto(f"{url}/datasets")  # single-user mode: no account yet
    page.get_by_role("tab", name="Upload").click()
    settle(page)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").first.set_input_files(str(path))
    page.locator(css(Datasets.SAVE)).wait_for(timeout=60_000)
    settle(page)


def test_a_summeval_shaped_file_imports_in_one_submit(server, page, tmp_path: Path) -> None:
    path = tmp_path / "summeval-shape.csv"
    path.write_bytes(_aspects_file(24, ASPECTS, JUDGES))
    _upload(page, server.url, path)
    # the plan: one criterion per aspect, its three experts and three judges; no error yet
    for aspect in ASPECTS:
        page.get_by_text(
            f"criterion {aspect} (new criterion, 1–5): annotators human_1, human_2, human_3; "
            "judges judge_gpt4, judge_gpt35, judge_llama2_70b"
        ).wait_for()
    assert _errors(page) == []
    page.get_by_text("round half up (2.5 → 3, 3.5 → 4)").click()
    page.locator(css(Datasets.SAVE) + " button").click()
    page.get_by_text("Saved 'summeval-shape' version 1 with 24 items").first.wait_for(
        timeout=90_000
    )
    settle(page)
    assert _errors(page) == []
    with Store.open(server.db_url) as store:
        project = store.list_projects()[0]
        dataset = store.get_dataset_by_name(project.id, "summeval-shape")
        runs = [r for r in store.list_runs(project_id=project.id) if r.dataset_id == dataset.id]
        for aspect in ASPECTS:
            criterion = store.get_criterion_by_name(project.id, aspect)
            matrix = store.annotation_matrix(dataset.id, criterion.id)
            assert list(matrix.columns) == ["human_1", "human_2", "human_3"]
            mine = sorted(r.name for r in runs if r.criterion_id == criterion.id)
            assert mine == sorted(f"imported: judge_{j}" for j in JUDGES)
        first = store.get_criterion_by_name(project.id, "coherence")
        gpt4 = next(
            r for r in runs if r.criterion_id == first.id and r.name == "imported: judge_gpt4"
        )
        assert store.results_frame(gpt4.id)["label"].tolist()[1] == "4"  # 3.5 rounded half up
        # only item fields reach the judge: no label, judge or aggregate column is a variable
        items, _ = judge_items(store, dataset.id)
        fields = set(items[0].fields)
    assert {"response", "context", "reference"} <= fields
    assert not {f for f in fields if f.startswith(("human_", "judge_"))}
    assert not fields & {"doc_id", "system_id"}
    # the Datasets tab says which columns are item fields and which are metadata
    page.get_by_role("tab", name="Datasets").click()
    settle(page)
    box = page.locator("[data-testid='stSelectbox']").filter(has_text="Look at the items of").first
    box.click()
    page.get_by_role("option", name="summeval-shape · v1 (pointwise, 24 items)").first.click()
    settle(page)
    page.get_by_text(
        "Item fields (the judge's variables; what annotators see): response, context, reference"
    ).first.wait_for()
    page.get_by_text(
        "metadata, shown to nobody: doc_id, system_id, human_coherence_mean"
    ).first.wait_for()


def test_a_file_without_its_response_is_refused_after_the_submit(
    server, page, tmp_path: Path
) -> None:
    path = tmp_path / "typo.csv"
    pd.DataFrame(
        {"id": ["a", "b"], "question": ["q1", "q2"], "answr": ["x", "y"], "rater_1": [1, 2]}
    ).to_csv(path, index=False)
    _upload(page, server.url, path)
    assert _errors(page) == []  # nothing said against the file before the user acts
    page.locator(css(Datasets.SAVE) + " button").click()
    page.get_by_text("no column is marked as the response").first.wait_for(timeout=60_000)
    [error] = _errors(page)
    assert "'answr'" in error
    assert "'question'" in error
    with Store.open(server.db_url) as store:
        assert store.list_datasets(store.list_projects()[0].id, name="typo") == []


def _new_endpoint(page, name: str, url: str) -> None:
    page.locator(f"{css(Settings.ENDPOINT)} input").click()
    page.get_by_role("option", name="New endpoint…").first.click()
    settle(page)
    key = page.locator(f"{css(Settings.EP_KEY_ENV)} input")
    assert key.input_value() == ""  # no key variable until one is chosen
    page.locator(f"{css(Settings.EP_NAME)} input").fill(name)
    page.locator(f"{css(Settings.EP_URL)} textarea").fill(url)
    page.locator(f"{css(Settings.EP_URL)} textarea").press("Control+Enter")
    settle(page)
    page.locator(css(Settings.EP_SAVE) + " button").click()
    settle(page)


def test_a_new_endpoint_under_an_existing_name_asks_first(server, page) -> None:
    page.goto(f"{server.url}/settings")
    page.locator(css(Settings.ENDPOINT)).wait_for(timeout=90_000)
    settle(page)
    _new_endpoint(page, "local vllm", "http://127.0.0.1:8000/v1")
    page.get_by_text("Saved endpoint 'local vllm'.").first.wait_for()
    _new_endpoint(page, "local vllm", "http://127.0.0.1:9000/v1")
    page.get_by_text("An endpoint named 'local vllm' exists already").first.wait_for()
    with Store.open(server.db_url) as store:
        assert store.get_endpoint_by_name("local vllm").base_url == "http://127.0.0.1:8000/v1"
    page.locator(css(Settings.EP_REPLACE) + " button").click()
    page.get_by_text("Saved endpoint 'local vllm'.").first.wait_for()
    with Store.open(server.db_url) as store:
        found = store.get_endpoint_by_name("local vllm")
        assert (found.base_url, found.api_key_env) == ("http://127.0.0.1:9000/v1", None)
