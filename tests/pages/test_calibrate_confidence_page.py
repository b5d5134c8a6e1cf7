"""The Calibrate page's "Trust or escalate" section on the demo project, through AppTest: the
sentence, the figures and ECE/Brier; escalation and a "label next" batch into the queue; a run
without confidences says how to get them (and still gets "label next"); a viewer sees no
buttons."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

from evalcore.store import Store
from evalcore.workflows import confidence as flow
from ui.state import Calibrate as K

V1 = "groundedness v1 (demo-judge-mini)"


@pytest.fixture
def app_db(demo_db: str) -> str:
    """The pages open the demo project (see conftest.py)."""
    return demo_db


def _grounded(open_app: Callable[..., AppTest], demo: Store, role: str = "engineer") -> AppTest:
    user = {"engineer": "eve", "viewer": "vic"}[role]
    at = open_app(role=role, user=user, page="calibrate")
    criterion = demo.get_criterion_by_name(1, "groundedness")
    at.selectbox(key=K.CRITERION).set_value(criterion.id).run()
    assert not at.exception, at.exception
    return at


def _markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_section_shows_the_sentence_figures_and_escalates(open_app, demo: Store) -> None:
    at = _grounded(open_app, demo)
    assert "Trust or escalate" in [h.value for h in at.subheader]
    text = _markdown(at)
    assert f"{V1} decides " in text
    assert "agreement; people get the other" in text
    assert len(at.get("plotly_chart")) >= 3  # the matrices, the reliability diagram, the curve
    labels = [m.label for m in at.metric]
    assert "ECE" in labels
    assert "Brier (top-label)" in labels
    captions = " ".join(c.value for c in at.caption)
    assert "Clopper–Pearson" in captions
    assert "Wilson" in captions
    # the inputs take the library's defaults
    assert at.number_input(key=K.TRUST_TARGET).value == flow.SETTINGS["target_agreement"].default
    assert at.number_input(key=K.TRUST_RISK).value == flow.SETTINGS["risk"].default
    button = at.button(key=K.TRUST_ESCALATE)
    assert button.label.startswith("Escalate the other ")
    wanted = int(button.label.split()[3])
    button.click().run()
    assert not at.exception, at.exception
    dataset = demo.get_dataset_by_name(1, "support-answers")
    criterion = demo.get_criterion_by_name(1, "groundedness")
    active = demo.active_queue_order(dataset.id, criterion.id)
    assert active is not None
    assert active.source == "escalation"
    assert len(demo.get_queue_order(dataset.id, criterion.id, active.name).item_ids) == wanted
    assert any("went to the annotation queue" in s.value for s in at.success)


def test_label_next_batch_is_queued(open_app, demo: Store) -> None:
    at = _grounded(open_app, demo)
    at.number_input(key=K.NEXT_N).set_value(8).run()
    assert not at.exception, at.exception
    text = _markdown(at)
    assert "Label these 8 and " in text
    at.button(key=K.NEXT_QUEUE).click().run()
    assert not at.exception, at.exception
    dataset = demo.get_dataset_by_name(1, "support-answers")
    criterion = demo.get_criterion_by_name(1, "groundedness")
    active = demo.active_queue_order(dataset.id, criterion.id)
    assert active is not None
    assert active.source == "label_next"
    assert len(demo.get_queue_order(dataset.id, criterion.id, active.name).item_ids) == 8


def test_a_run_without_confidence_says_how_to_get_them(open_app, demo: Store) -> None:
    at = _grounded(open_app, demo)
    legacy = next(r.id for r in demo.list_runs() if r.name == "imported: legacy-judge")
    at.selectbox(key=K.TRUST_RUN).set_value(legacy).run()
    assert not at.exception, at.exception
    assert any("--logprobs" in i.value for i in at.info)
    assert K.TRUST_ESCALATE not in {b.key for b in at.button}
    # what to label next needs only the labels, so it is offered for this run too
    assert "Label these 30 and " in _markdown(at)


def test_viewer_sees_the_section_without_buttons(open_app, demo: Store) -> None:
    at = _grounded(open_app, demo, role="viewer")
    assert f"{V1} decides " in _markdown(at)
    keys = {b.key for b in at.button}
    assert K.TRUST_ESCALATE not in keys
    assert K.NEXT_QUEUE not in keys
