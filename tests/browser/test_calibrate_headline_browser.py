"""In a real browser at 1440×900: the Calibrate page answers first. Each run's balanced accuracy and
kappa with intervals and its light sit above the fold, with the demo's three runs and with five; the
page never scrolls sideways; a run whose interval straddles the threshold shows an amber badge whose
words say so."""

from __future__ import annotations

import pytest

from evalcore.store import Store
from tests.browser.conftest import add_accounts, css, sign_in, wait_idle
from ui.state import Calibrate as K
from ui.state import key

WIDTH, HEIGHT = 1440, 900
CRITERION = "helpfulness"
#: Two more runs of the same criterion, one with a name long enough to be shortened.
EXTRA = (
    "an imported judge whose name is far too long to fit in the headline's first column",
    "imported copy",
)


#: The background colour of the badge whose text is the given word (the innermost element with
#: that text, or its nearest ancestor with a background), else the row's HTML for the message.
BADGE_COLOUR = """(row, word) => {
  const found = [...row.querySelectorAll('*')].filter(e => e.textContent.trim() === word);
  for (const e of found.reverse()) {
    for (let x = e; x && x !== row; x = x.parentElement) {
      const c = getComputedStyle(x).backgroundColor;
      if (c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') return c;
    }
  }
  const html = row.innerHTML;
  return html.slice(Math.max(0, html.indexOf(word) - 700), html.indexOf(word) + 100);
}"""


@pytest.fixture
def wide(browser):
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def _runs(db_url: str) -> list[int]:
    with Store.open(db_url) as store:
        project = store.list_projects()[0]
        criterion = next(c for c in store.list_criteria(project.id) if c.name == CRITERION)
        return [r.id for r in store.list_runs() if r.criterion_id == criterion.id]


def _add_runs(db_url: str) -> None:
    """Two imported runs of helpfulness with the labels of its last run (same items, same scale)."""
    with Store.open(db_url) as store:
        project = store.list_projects()[0]
        criterion = next(c for c in store.list_criteria(project.id) if c.name == CRITERION)
        last = [r for r in store.list_runs() if r.criterion_id == criterion.id][-1]
        results = store.results_frame(last.id)
        ok = results[results["status"] == "ok"].set_index("item_id")["label"]
        for name in EXTRA:
            store.import_judge_labels(last.dataset_id, criterion.id, name, ok)


def _open(page, url: str) -> None:
    sign_in(page, f"{url}/calibrate", "eve")
    page.locator(css(K.HEADLINE)).wait_for(timeout=90_000)
    wait_idle(page)


def _check_above_the_fold(page, run_ids: list[int]) -> list[str]:
    """Every run's headline row is within the first 900 px, with its numbers and light; the
    page has no horizontal scrollbar. Returns the rows' texts."""
    texts = []
    for run_id in run_ids:
        row = page.locator(css(key(K.HEADLINE, run_id)))
        row.wait_for()
        box = row.bounding_box()
        assert box is not None
        assert box["y"] >= 0
        assert box["y"] + box["height"] <= HEIGHT, (run_id, box)
        text = row.inner_text()
        assert text.count("[") >= 2, text  # balanced accuracy and kappa, each with its interval
        assert any(word in text for word in ("green", "amber", "red")), text
        texts.append(text)
    wide_page = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert wide_page[0] <= wide_page[1], wide_page
    return texts


def test_headline_above_the_fold_and_amber_says_so(app_server, wide) -> None:
    add_accounts(app_server.db_url, {"eve": "engineer"})
    _open(wide, app_server.url)
    run_ids = _runs(app_server.db_url)
    assert len(run_ids) == 3
    texts = _check_above_the_fold(wide, run_ids)
    # the demo's pro run: balanced accuracy 0.71 [0.63, 0.78] against the threshold 0.7
    amber = [t for t in texts if "amber" in t]
    assert amber, texts
    assert all("straddles" in t and "cannot tell" in t for t in amber)
    amber_id = next(i for i, t in zip(run_ids, texts, strict=True) if "amber" in t)
    row = wide.locator(css(key(K.HEADLINE, amber_id)))
    colour = row.evaluate(BADGE_COLOUR, "amber")
    assert colour.startswith("rgb"), colour
    red, green, blue = (float(x) for x in colour[colour.index("(") + 1 : -1].split(",")[:3])
    assert red > blue, colour  # an orange badge, not green, red or grey
    assert green > blue, colour


def test_five_runs_stay_above_the_fold(app_server, wide) -> None:
    add_accounts(app_server.db_url, {"eve": "engineer"})
    _add_runs(app_server.db_url)
    run_ids = _runs(app_server.db_url)
    assert len(run_ids) == 5
    _open(wide, app_server.url)
    texts = _check_above_the_fold(wide, run_ids)
    long = next(t for t in texts if t.startswith("an imported judge"))
    assert EXTRA[0] not in long  # shortened; the full name is in the row's tooltip
    assert "…" in long
