"""In a real browser: a new annotator rates by keyboard only, reloads, and resumes where they left off."""

from __future__ import annotations

import pandas as pd

from evalcore.store import Store
from tests.browser.conftest import add_accounts, sign_in, wait_idle

KEYS = ["4", "2", "5", "5", "1", "3", "4", "4", "2", "5"]


def _queue_ids(app_server: object) -> tuple[int, int]:
    with Store.open(app_server.db_url) as store:  # type: ignore[attr-defined]
        project = store.list_projects()[0]
        return (
            store.get_dataset_by_name(project.id, "support-answers").id,
            store.get_criterion_by_name(project.id, "helpfulness").id,
        )


def _wait_item(page: object, number: int) -> None:
    page.get_by_text(f"Item {number} of 20").first.wait_for()  # type: ignore[attr-defined]
    wait_idle(page)


def test_rate_ten_items_by_keyboard_reload_and_resume(app_server, page) -> None:
    add_accounts(app_server.db_url, {"newcomer": "annotator"})  # seeds the demo first
    dataset_id, criterion_id = _queue_ids(app_server)
    url = f"{app_server.url}/annotate?dataset={dataset_id}&criterion={criterion_id}"
    sign_in(page, url, "newcomer")
    _wait_item(page, 1)
    for n, key in enumerate(KEYS, start=1):
        page.keyboard.press(key)
        _wait_item(page, n + 1)

    page.reload()  # a new Streamlit session, still signed in (the session cookie)
    _wait_item(page, 11)
    page.get_by_text("10 labelled").first.wait_for(timeout=30_000)

    with Store.open(app_server.db_url) as store:
        saved = store.export_annotations(dataset_id=dataset_id, criterion_id=criterion_id)
    mine = saved[saved["annotator"] == "newcomer"].reset_index(drop=True)
    assert len(mine) == 10
    assert mine["label"].tolist() == KEYS
    with Store.open(app_server.db_url) as store:  # the first ten items newcomer claimed
        claimed = [store.queue_item(dataset_id, criterion_id, "newcomer", p) for p in range(10)]
    assert mine["item_id"].tolist() == [t.external_id for t in claimed if t]
    assert mine["time_spent_s"].notna().all()
    assert (mine["source"] == "ui").all()

    # back one item with the arrow key, change the label: a new revision
    page.keyboard.press("ArrowLeft")
    _wait_item(page, 10)
    page.get_by_text("Your label: 5").first.wait_for()
    page.keyboard.press("1")
    _wait_item(page, 11)
    with Store.open(app_server.db_url) as store:
        saved = store.export_annotations(dataset_id=dataset_id, criterion_id=criterion_id)
    tenth = saved[(saved["annotator"] == "newcomer") & (saved["item_id"] == mine["item_id"][9])]
    assert tenth[["revision", "label", "latest"]].to_dict("records") == [
        {"revision": 1, "label": "5", "latest": False},
        {"revision": 2, "label": "1", "latest": True},
    ]


def test_markup_in_an_item_shows_as_text_and_never_runs(app_server, page) -> None:
    add_accounts(app_server.db_url, {"reader": "annotator"})
    evil = '<img src=x onerror="window.__xss = 1"> <script>window.__xss = 2</script> A $5 fee'
    with Store.open(app_server.db_url) as store:
        project = store.list_projects()[0]
        dataset = store.save_dataset(
            project.id,
            "markup-check",
            pd.DataFrame({"item_id": ["m1"], "prompt": ["Is **this** bold?"], "response": [evil]}),
        )
        criterion = store.get_criterion_by_name(project.id, "helpfulness")
    sign_in(
        page, f"{app_server.url}/annotate?dataset={dataset.id}&criterion={criterion.id}", "reader"
    )
    page.get_by_text("Item 1 of 1").first.wait_for()
    wait_idle(page)
    response = page.locator("[data-testid='stExpander']").filter(has_text="Response").first
    assert '<img src=x onerror="window.__xss = 1">' in response.inner_text()
    assert page.evaluate("() => window.__xss") is None
    assert page.locator("[data-testid='stExpander'] img").count() == 0
    prompt = page.locator("[data-testid='stExpander']").filter(has_text="Prompt").first
    assert prompt.locator("strong").inner_text() == "this"  # Markdown still renders
