"""The Judge page's "Live / Batch" choice: a batch run through the fake server's Batch API."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from evalcore.runs import batch_progress, is_batch_run
from evalcore.store import Store
from evalcore.testing import FakeOpenAI
from tests.pages import test_judge_page as judge_page
from ui.state import Judge

# the Judge page tests' fixtures, found by name
fake = judge_page.fake
store = judge_page.store
judge = judge_page.judge
_ok, _pick_template, _wait = judge_page._ok, judge_page._pick_template, judge_page._wait


def _captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def test_a_batch_run_from_the_page(judge, store: Store, fake: FakeOpenAI) -> None:
    at = judge()
    _pick_template(at, store, "helpfulness-judge")
    at.selectbox(key=Judge.MODE).set_value("batch").run()
    _ok(at)
    assert "Batch price not set for demo-judge-mini" in _captions(at)
    store.set_batch_price("demo-judge-mini", input_per_mtok=0.1, output_per_mtok=0.4)
    at.run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Expected cost"].startswith("$")
    at.button(key=Judge.START).click().run()
    _ok(at)
    run_id = at.session_state[Judge.RUN]
    assert is_batch_run(store.get_run(run_id))
    assert _wait(store, run_id) == "done"
    assert fake.batch_calls("create") == 1
    assert all(r.batch_id for r in fake.requests)
    assert batch_progress(store, run_id).answered == 266
    at.run()
    _ok(at)
    assert "Batch mode: 1 batch (1 done) · 266 of 266 requests answered" in _captions(at)
