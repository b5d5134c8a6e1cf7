"""The Judge page through AppTest, on the demo project and a fake OpenAI-compatible server.

The page's runs execute in the app's background worker (a real thread talking real HTTP to
:class:`evalcore.testing.FakeOpenAI`); tests wait for them through the store, as the page does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from evalcore import runs
from evalcore.judge.builtins import list_metrics
from evalcore.store import Store
from evalcore.testing import FakeOpenAI, Fault
from tests.pages.conftest import sign_in
from tests.runs.metric_replies import metric_reply
from ui import judge_view as view
from ui import state
from ui.state import Judge

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "PAGE_TEST_API_KEY"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(metric_reply).start()
    yield server
    server.stop()


@pytest.fixture
def store(app_db: str) -> Iterator[Store]:
    s = Store.open(app_db)
    yield s
    s.close()


@pytest.fixture
def judge(
    open_app: Callable[..., AppTest],
    store: Store,
    fake: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[..., AppTest]:
    """The Judge page with an endpoint on the fake server chosen (its key variable set)."""
    monkeypatch.setenv(KEY_ENV, "page-test-secret")

    def _open(**kwargs) -> AppTest:
        at = open_app(page="judge", **kwargs)
        endpoint = store.upsert_endpoint(
            "fake", base_url=fake.base_url, api_key_env=KEY_ENV, default_model="fake-judge"
        )
        at.run()  # the picker offers the new endpoint from the next run on
        at.selectbox(key=Judge.ENDPOINT).set_value(endpoint.id).run()
        assert at.session_state[Judge.ENDPOINT] == endpoint.id
        return _ok(at)

    return _open


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, at.exception
    return at


def _errors(at: AppTest) -> str:
    return " ".join(e.value for e in at.error)


def _table(at: AppTest, *columns: str) -> pd.DataFrame:
    """The one table on the page with these columns (AppTest keeps no key of a plain table)."""
    found = [d.value for d in at.dataframe if set(columns) <= set(d.value.columns)]
    assert len(found) == 1, f"{len(found)} tables with {columns}"
    return found[0]


def _results(at: AppTest) -> pd.DataFrame:
    return _table(at, "item_id", "status", "label", "raw", "cost")


def _template_id(store: Store, name: str) -> int:
    project = store.list_projects()[0]
    return next(t.id for t in store.list_templates(project.id) if t.name == name)


def _pick_template(at: AppTest, store: Store, name: str) -> int:
    template_id = _template_id(store, name)
    at.selectbox(key=Judge.TEMPLATE).set_value(template_id).run()
    _ok(at)
    return template_id


def _wait(store: Store, run_id: int, timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = store.get_run(run_id)
        if run.is_terminal:
            return run.status
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish: {store.get_run(run_id).status}")


def _dataset_id(store: Store, name: str) -> int:
    project = store.list_projects()[0]
    return next(d.id for d in store.list_datasets(project.id) if d.name == name)


# --- roles -------------------------------------------------------------------------------------------


def test_an_annotator_cannot_open_the_judge_page(open_app) -> None:
    at = open_app(role="annotator", user="ann")
    for page in ("judge",):  # the Settings page's own tests check it
        at.switch_page(f"pages/{page}.py").run()  # hidden from the menu, refused at the address
        assert "not available to your role" in _errors(at)
        assert not at.text_area
        # and the page itself refuses, even when reached directly
        direct = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=60)
        sign_in(direct, "ann", "annotator")
        direct.run()
        assert "not available to your role" in _errors(direct)
        assert not direct.text_area


def test_a_viewer_cannot_open_the_judge_page(open_app) -> None:
    at = open_app(role="viewer", user="mo", page="judge")
    assert "not available to your role" in _errors(at)
    assert not at.text_area


# --- the editor ----------------------------------------------------------------------------------------


def test_save_makes_a_new_version_and_an_unchanged_save_does_not(judge, store: Store) -> None:
    at = judge(user="eve")
    template_id = _pick_template(at, store, "helpfulness-judge")
    assert len(store.list_template_versions(template_id)) == 2
    user = at.text_area(key=Judge.USER)
    user.set_value(user.value + "\nAnswer in one sentence.").run()
    at.text_input(key=Judge.NOTE).set_value("one sentence").run()
    at.button(key=Judge.SAVE).click().run()
    _ok(at)
    versions = store.list_template_versions(template_id)
    assert [v.number for v in versions] == [1, 2, 3]
    assert (versions[-1].author, versions[-1].note) == ("eve", "one sentence")
    assert versions[-1].content["user"].endswith("Answer in one sentence.")
    assert "Saved version 3." in [s.value for s in at.success]
    # the editor now holds version 3; saving it again changes nothing
    assert at.session_state[Judge.VERSION] == versions[-1].id
    at.button(key=Judge.SAVE).click().run()
    _ok(at)
    assert len(store.list_template_versions(template_id)) == 3
    assert any("Nothing to save" in i.value for i in at.info)


def test_the_history_diffs_any_two_versions_and_restores_one(judge, store: Store) -> None:
    at = judge()
    template_id = _pick_template(at, store, "groundedness-judge")
    v1, v2 = store.list_template_versions(template_id)
    at.selectbox(key=Judge.DIFF_FROM).set_value(v1.id).run()
    at.selectbox(key=Judge.DIFF_TO).set_value(v2.id).run()
    diff = next(c for c in at.code if c.language == "diff").value
    assert "--- groundedness-judge v1" in diff
    assert "+++ groundedness-judge v2" in diff
    assert any(line.startswith("-") and not line.startswith("---") for line in diff.splitlines())
    at.selectbox(key=Judge.RESTORE_VERSION).set_value(v1.id).run()
    at.button(key=Judge.RESTORE).click().run()
    _ok(at)
    versions = store.list_template_versions(template_id)
    assert [v.number for v in versions] == [1, 2, 3]
    assert versions[-1].content == v1.content
    assert versions[-1].note == "restored version 1"
    # the editor shows the restored version
    assert at.session_state[Judge.VERSION] == versions[-1].id
    assert at.text_area(key=Judge.USER).value == v1.content["user"]


def test_the_preview_renders_and_names_a_missing_variable_and_item(judge, store: Store) -> None:
    at = judge()
    _pick_template(at, store, "helpfulness-judge")
    codes = [c.value for c in at.code if c.language != "diff"]
    first_item = at.selectbox(key=Judge.PREVIEW_ITEM).value
    assert codes, "the preview shows the rendered messages"
    at.text_area(key=Judge.USER).set_value("Answer: {{ response }}\nTopic: {{ topicc }}").run()
    _ok(at)
    errors = _errors(at)
    assert "topicc" in errors
    assert f"item {first_item}" in errors
    # the variables of the dataset are listed, metadata columns included
    variables = " ".join(m.value for m in at.markdown)
    assert "`topic`" in variables
    assert "`source_model`" in variables
    assert any("topicc" in w.value for w in at.warning)


def test_a_new_template_for_a_criterion(judge, store: Store) -> None:
    at = judge()
    at.selectbox(key=Judge.TEMPLATE).set_value(0).run()
    at.text_input(key=Judge.NEW_NAME).set_value("brief-judge").run()
    at.button(key=Judge.CREATE).click().run()
    _ok(at)
    template_id = _template_id(store, "brief-judge")
    [version] = store.list_template_versions(template_id)
    assert version.author == "eve"
    assert at.session_state[Judge.TEMPLATE] == template_id
    assert "{{ response }}" in at.text_area(key=Judge.USER).value


def test_copy_a_builtin_metric_into_the_project_and_edit_it(judge, store: Store) -> None:
    at = judge()
    at.segmented_control(key=Judge.SECTION).set_value("Metrics").run()
    at.selectbox(key=Judge.METRIC).set_value("coherence").run()
    _ok(at)
    at.text_input(key=state.key(Judge.METRIC_SETTING, "coherence", "copy_name")).set_value(
        "coherence-mine"
    ).run()
    at.button(key=Judge.COPY).click().run()
    _ok(at)
    template_id = _template_id(store, "coherence-mine")
    assert at.session_state[Judge.SECTION] == "Editor"
    assert at.session_state[Judge.TEMPLATE] == template_id
    [first] = store.list_template_versions(template_id)
    assert first.content["builtin"] == "coherence"
    # helpfulness is the demo's 1-5 criterion: the copy was offered it first
    project = store.list_projects()[0]
    criterion = store.get_criterion(store.get_template(template_id).criterion_id)
    assert criterion.name == "helpfulness"
    assert criterion.project_id == project.id
    # edit the copy: it keeps its link to the metric, and the diff against the original shows it
    system = at.text_area(key=Judge.SYSTEM)
    system.set_value(system.value + " Judge only the last paragraph.").run()
    at.text_input(key=Judge.THRESHOLD).set_value("4").run()
    at.button(key=Judge.SAVE).click().run()
    _ok(at)
    first, second = store.list_template_versions(template_id)
    assert second.content["builtin"] == "coherence"
    assert second.content["threshold"] == 4.0
    diff = next(c for c in at.code if c.language == "diff").value
    assert "+" in diff
    assert "Judge only the last paragraph." in diff
    assert "threshold: 3 → 4" in diff


def test_try_on_five_items_shows_raw_replies_and_parsed_labels(
    judge, store: Store, fake: FakeOpenAI
) -> None:
    at = judge()
    _pick_template(at, store, "helpfulness-judge")
    # an unsaved edit is what is tried
    at.text_area(key=Judge.USER).set_value("Reply to rate: {{ response }} expect=4").run()
    runs_before = len(store.list_runs())
    at.button(key=Judge.TRY).click().run()
    _ok(at)
    assert not at.error, _errors(at)
    table = _results(at)
    assert len(table) == 5
    assert table["status"].tolist() == ["ok"] * 5
    assert table["label"].tolist() == ["4"] * 5
    assert table["raw"].str.contains('"score"').all()
    assert fake.count == 5
    assert len(store.list_runs()) == runs_before  # nothing saved as a run
    # an engineer does not learn whether the variable is set, and never sees the key
    captions = " ".join(c.value for c in at.caption)
    assert f"`{KEY_ENV}` is set" not in captions
    assert "page-test-secret" not in captions
    admin = judge(role="admin", user="ada")
    _pick_template(admin, store, "helpfulness-judge")
    assert f"`{KEY_ENV}` is set" in " ".join(c.value for c in admin.caption)


def test_try_names_a_key_variable_that_is_not_set(
    judge, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = judge(role="admin", user="ada")  # only an admin learns whether a variable exists
    monkeypatch.delenv(KEY_ENV)
    _pick_template(at, store, "helpfulness-judge")
    assert f"`{KEY_ENV}` is not set" in " ".join(c.value for c in at.caption)
    at.button(key=Judge.TRY).click().run()
    _ok(at)
    assert "not available on the server" in _errors(at)


# --- full runs -----------------------------------------------------------------------------------------


def test_a_full_run_goes_on_in_the_worker_and_its_results_show(
    judge, store: Store, fake: FakeOpenAI
) -> None:
    fake.latency = 0.01
    at = judge()
    template_id = _pick_template(at, store, "helpfulness-judge")
    # the estimate comes first: every item needs a request, none is cached yet
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Results"] == "266"
    assert metrics["Requests"] == "266"
    assert metrics["Already cached"] == "0"
    at.button(key=Judge.START).click().run()
    _ok(at)
    assert at.session_state[Judge.SECTION] == "Runs"
    run_id = at.session_state[Judge.RUN]
    run = store.get_run(run_id)
    assert run.template_version_id == store.list_template_versions(template_id)[-1].id
    assert run.model == "demo-judge-mini"  # the template's own model setting
    assert _wait(store, run_id) == "done"
    at.run()
    _ok(at)
    assert at.progress[0].value == 100
    table = _results(at)
    assert len(table) == 266
    assert set(table["status"]) == {"ok"}
    assert {"label", "reason", "raw", "tokens", "latency_s"} <= set(table.columns)
    # unparsed and failed filters
    at.segmented_control(key=Judge.FILTER).set_value("Unparsed or failed").run()
    assert _results(at).empty
    # the runs list shows the new run with its status
    runs_table = _table(at, "run", "status", "done")
    assert runs_table.set_index("run").loc[run_id, "status"] == "done"
    # a second run of the same version is free: the estimate says so
    at.segmented_control(key=Judge.SECTION).set_value("Editor").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Already cached"] == "266"
    assert metrics["Requests"] == "0"


def test_a_run_can_be_cancelled_from_the_page(judge, store: Store, fake: FakeOpenAI) -> None:
    fake.latency = 0.2
    at = judge()
    _pick_template(at, store, "groundedness-judge")
    at.number_input(key=Judge.CONCURRENCY).set_value(1).run()
    at.button(key=Judge.START).click().run()
    _ok(at)
    run_id = at.session_state[Judge.RUN]
    deadline = time.monotonic() + 60
    while store.run_progress(run_id).finished < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    at.run()
    at.button(key=Judge.CANCEL).click().run()
    _ok(at)
    assert _wait(store, run_id) == "cancelled"
    at.run()
    _ok(at)
    done = store.run_progress(run_id).finished
    assert 2 <= done < 266
    assert len(_results(at)) == done
    # it can be resumed, and then finishes the rest
    fake.latency = 0.0
    at.button(key=Judge.RESUME).click().run()
    assert _wait(store, run_id) == "done"
    assert store.run_progress(run_id).finished == 266


def test_rerun_failed_items_of_a_recorded_run(judge, store: Store, fake: FakeOpenAI) -> None:
    at = judge()
    at.segmented_control(key=Judge.SECTION).set_value("Runs").run()
    project = store.list_projects()[0]
    recorded = next(
        r for r in store.list_runs(project_id=project.id) if r.name.startswith("helpfulness v1")
    )
    at.selectbox(key=Judge.RUN).set_value(recorded.id).run()
    at.segmented_control(key=Judge.FILTER).set_value("Failed").run()
    failed = _results(at)
    assert len(failed) == 2
    assert set(failed["status"]) == {"failed"}
    # the recorded run has no endpoint: the re-run goes to the one chosen on the page
    at.button(key=Judge.RERUN).click().run()
    _ok(at)
    new_id = at.session_state[Judge.RUN]
    assert new_id != recorded.id
    assert _wait(store, new_id) == "done"
    rerun = store.get_run(new_id)
    assert rerun.template_version_id == recorded.template_version_id
    assert sorted(store.results_frame(new_id)["item_id"]) == sorted(failed["item_id"])
    assert fake.count == 2


def test_a_failed_item_shows_its_error_and_can_be_rerun(
    judge, store: Store, fake: FakeOpenAI
) -> None:
    at = judge()
    _pick_template(at, store, "helpfulness-judge")
    items = store.items_frame(_dataset_id(store, "support-answers")).head(10)
    # an item whose response no other of the first ten shares
    bad = next(i for i in range(10) if (items["response"] == items.iloc[i]["response"]).sum() == 1)
    # a 400 is not retried: the item fails at once and the run goes on
    fake.faults = (Fault.status_code(400, match=str(items.iloc[bad]["response"])),)
    at.number_input(key=Judge.LIMIT).set_value(10).run()
    at.button(key=Judge.START).click().run()
    run_id = at.session_state[Judge.RUN]
    assert _wait(store, run_id) == "done"
    at.run()
    at.segmented_control(key=Judge.FILTER).set_value("Failed").run()
    failed = _results(at)
    assert failed["item_id"].tolist() == [str(items.iloc[bad]["item_id"])]
    assert "400" in failed["error"].iloc[0]
    fake.faults = ()
    at.button(key=Judge.RERUN).click().run()
    new_id = at.session_state[Judge.RUN]
    assert _wait(store, new_id) == "done"
    assert store.results_frame(new_id)["status"].tolist() == ["ok"]


# --- the metric catalogue ------------------------------------------------------------------------------


def test_the_catalogue_lists_every_registered_metric(judge) -> None:
    at = judge()
    at.segmented_control(key=Judge.SECTION).set_value("Metrics").run()
    _ok(at)
    table = _table(at, "metric", "measures")
    names = [s.name for s in list_metrics()]
    assert sorted(table["metric"]) == sorted(names)
    assert len(names) >= 17
    assert sorted(at.selectbox(key=Judge.METRIC).options) == sorted(
        f"{s.title} ({s.name})" for s in list_metrics()
    )
    at.selectbox(key=Judge.METRIC).set_value("factual_correctness").run()
    text = " ".join(m.value for m in at.markdown)
    assert "Inputs" in text
    assert "Threshold" in text
    assert (
        at.selectbox(key=state.key(Judge.METRIC_SETTING, "factual_correctness", "p_mode")).value
        == "f1"
    )


def _conversation(n: int) -> str:
    turns = [
        {"role": "user", "content": f"Can I return boots after {n} days?"},
        {
            "role": "assistant",
            "content": "Yes, within 30 days.",
            "context": {"citations": [{"id": "returns.md", "content": "Returns: 30 days."}]},
        },
    ]
    return json.dumps(turns)


def test_every_metric_runs_from_the_page(judge, store: Store) -> None:
    """Each metric of the catalogue runs on a small dataset carrying every input, through the
    page's "Run on" button, and finishes with a result per item (pipelines with intermediates)."""
    at = judge()
    project = store.list_projects()[0]
    n = 3
    points = pd.DataFrame(
        {
            "item_id": [f"m{i}" for i in range(n)],
            "prompt": [f"Can I return boots after {i} days?" for i in range(n)],
            "response": ["Yes. Northwind takes returns within 30 days."] * n,
            "context": ["Northwind accepts returns within 30 days of delivery."] * n,
            "reference": ["Returns are accepted within 30 days."] * n,
            "conversation": [_conversation(i) for i in range(n)],
        }
    )
    pairs = pd.DataFrame(
        {
            "item_id": [f"q{i}" for i in range(n)],
            "prompt": [f"Which reply is better? {i}" for i in range(n)],
            "response_a": ["Within 30 days."] * n,
            "response_b": ["I do not know."] * n,
        }
    )
    store.save_dataset(project.id, "metric-check", points, kind="pointwise")
    store.save_dataset(project.id, "pair-check", pairs, kind="pairwise")
    at.run()
    at.segmented_control(key=Judge.SECTION).set_value("Metrics").run()
    for spec in list_metrics():
        dataset = "pair-check" if spec.is_pairwise else "metric-check"
        at.selectbox(key=Judge.DATASET).set_value(_dataset_id(store, dataset)).run()
        at.segmented_control(key=Judge.SECTION).set_value("Metrics").run()
        at.selectbox(key=Judge.METRIC).set_value(spec.name).run()
        at.button(key=Judge.METRIC_RUN).click().run()
        _ok(at)
        assert not at.error, f"{spec.name}: {_errors(at)}"
        run_id = at.session_state[Judge.RUN]
        assert _wait(store, run_id) == "done", spec.name
        frame = store.results_frame(run_id)
        assert len(frame) == n, spec.name
        assert "failed" not in set(frame["status"]), spec.name
        if spec.kind == "pipeline":
            details = frame.iloc[0]["details"]
            details = details if isinstance(details, dict) else json.loads(details)
            wanted = "response_claims" if spec.name == "factual_correctness" else "keyphrases"
            assert details[wanted], spec.name
        at.run()
        _ok(at)
        assert len(_results(at)) == n


def test_a_metric_missing_an_input_is_refused_with_a_clear_message(judge, store: Store) -> None:
    at = judge()
    at.segmented_control(key=Judge.SECTION).set_value("Metrics").run()
    # the demo's answers have no conversation
    at.selectbox(key=Judge.METRIC).set_value("relevance_conversation").run()
    runs_before = len(store.list_runs())
    at.button(key=Judge.METRIC_RUN).click().run()
    _ok(at)
    errors = _errors(at)
    assert "conversation" in errors
    assert "missing" in errors
    assert len(store.list_runs()) == runs_before


def test_a_pipeline_metric_shows_its_intermediates_per_item(judge, store: Store) -> None:
    at = judge()
    at.segmented_control(key=Judge.SECTION).set_value("Metrics").run()
    at.selectbox(key=Judge.METRIC).set_value("summarization_score").run()
    at.button(key=Judge.METRIC_TRY).click().run()
    _ok(at)
    table = _results(at)
    assert len(table) == 5
    assert set(table["status"]) == {"ok"}
    shown = [j.value for j in at.json]
    assert any("keyphrases" in (j if isinstance(j, str) else json.dumps(j)) for j in shown)


def test_an_unsaved_edit_survives_a_look_at_another_section(judge, store: Store) -> None:
    at = judge()
    _pick_template(at, store, "helpfulness-judge")
    at.text_area(key=Judge.USER).set_value("Draft: {{ response }}").run()
    at.segmented_control(key=Judge.SECTION).set_value("Metrics").run()
    at.segmented_control(key=Judge.SECTION).set_value("Editor").run()
    _ok(at)
    assert at.text_area(key=Judge.USER).value == "Draft: {{ response }}"
    assert any("Unsaved changes" in c.value for c in at.caption)


def test_a_run_goes_on_while_the_user_is_on_another_page(
    judge, store: Store, fake: FakeOpenAI
) -> None:
    fake.latency = 0.02
    at = judge()
    _pick_template(at, store, "groundedness-judge")
    at.button(key=Judge.START).click().run()
    run_id = at.session_state[Judge.RUN]
    at.switch_page("pages/home.py").run()
    _ok(at)
    assert _wait(store, run_id) == "done"
    at.switch_page("pages/judge.py").run()
    _ok(at)
    # the page comes back to the run it showed, finished
    assert at.session_state[Judge.SECTION] == "Runs"
    assert at.session_state[Judge.RUN] == run_id
    assert len(_results(at)) == 266


# --- one model field, a default endpoint a newcomer expects, live runs ------------------------


def _markdown(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown)


def test_one_model_field_and_the_estimate_names_the_model_a_run_uses(judge, store: Store) -> None:
    at = judge()
    _pick_template(at, store, "helpfulness-judge")
    labels = [t.label for t in at.text_input]
    assert labels.count("Model") == 1
    assert "Model setting" not in labels
    # empty: the template's default model, and the estimate says so
    assert "model **demo-judge-mini** (the default" in _markdown(at)
    at.text_input(key=Judge.MODEL).set_value("fake-judge").run()
    _ok(at)
    assert "model **fake-judge** (typed in Model above)" in _markdown(at)
    at.button(key=Judge.START).click().run()
    _ok(at)
    assert store.get_run(at.session_state[Judge.RUN]).model == "fake-judge"


def test_the_default_endpoint_is_openai_with_a_note_while_its_key_is_not_set(
    open_app, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    engineer = _ok(open_app(page="judge"))
    chosen = store.get_endpoint(engineer.session_state[Judge.ENDPOINT])
    assert chosen.name == "OpenAI"  # hosted first for everyone
    assert "OPENAI_API_KEY` is" not in " ".join(c.value for c in engineer.caption)
    at = _ok(open_app(role="admin", user="ada", page="judge"))
    # the demo seeds "Local (Ollama)" too, which sorts first by name but needs a running server
    chosen = store.get_endpoint(at.session_state[Judge.ENDPOINT])
    assert (chosen.name, chosen.api_key_env) == ("OpenAI", "OPENAI_API_KEY")
    captions = " ".join(c.value for c in at.caption)
    assert "`OPENAI_API_KEY` is not set" in captions
    assert "local server" in captions

    monkeypatch.setenv("OPENAI_API_KEY", "sk-page-test")
    fresh = _ok(open_app(role="admin", user="ada", page="judge"))
    assert ":green[`OPENAI_API_KEY` is set]" in " ".join(c.value for c in fresh.caption)


def test_the_template_picker_offers_a_new_template_in_plain_words(judge, store: Store) -> None:
    at = judge()
    picker = at.selectbox(key=Judge.TEMPLATE)
    assert picker.format_func(0) == "New template…"


def test_the_runs_section_redraws_itself_only_while_a_run_is_going(
    judge, store: Store, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # record the timer the Runs section asks Streamlit for (the real st.fragment still runs)
    timers: list[float | None] = []
    real = st.fragment

    def recording(func=None, *, run_every=None):  # type: ignore[no-untyped-def]
        if func is not None and func.__name__ == "_runs_body":
            timers.append(run_every)
        return real(func, run_every=run_every)

    monkeypatch.setattr(st, "fragment", recording)
    fake.latency = 0.05
    at = judge()
    _pick_template(at, store, "groundedness-judge")
    at.button(key=Judge.START).click().run()
    _ok(at)
    run_id = at.session_state[Judge.RUN]
    assert timers
    assert timers[-1] == view.POLL_S  # the run is going: redrawn every POLL_S
    assert _wait(store, run_id) == "done"
    at.run()
    _ok(at)
    assert timers[-1] is None  # nothing is going: no timer
    assert len(_results(at)) == 266


# --- the draft is rendered only when it changed -----------------------------------------------------


def test_the_preview_renders_the_draft_only_when_it_changed(
    judge, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = runs.preview_messages

    def counted(content, item):
        calls.append(str(content.get("user", "")))
        return real(content, item)

    monkeypatch.setattr(runs, "preview_messages", counted)
    at = judge()
    _pick_template(at, store, "helpfulness-judge")
    rendered = len(calls)
    assert rendered >= 1
    # reruns that change nothing in the draft (a click elsewhere, a plain rerun) render nothing
    at.run()
    at.text_input(key=Judge.NOTE).set_value("just a note").run()
    _ok(at)
    assert len(calls) == rendered
    # a changed draft is rendered once, and a failure is kept as well
    at.text_area(key=Judge.USER).set_value("Answer: {{ response }} {{ nope }}").run()
    assert len(calls) == rendered + 1
    assert "nope" in _errors(at)
    at.run()
    assert len(calls) == rendered + 1
    assert "nope" in _errors(at)
    # another preview item is another render
    items = at.selectbox(key=Judge.PREVIEW_ITEM).options
    at.text_area(key=Judge.USER).set_value("Answer: {{ response }}").run()
    at.selectbox(key=Judge.PREVIEW_ITEM).set_value(items[1]).run()
    _ok(at)
    assert len(calls) == rendered + 3


def test_a_replicate_run_samples_again_and_the_estimate_says_so(
    judge, store: Store, fake: FakeOpenAI
) -> None:
    fake.latency = 0.01
    at = judge()
    _pick_template(at, store, "helpfulness-judge")
    at.button(key=Judge.START).click().run()
    first = at.session_state[Judge.RUN]
    assert _wait(store, first) == "done"
    at.segmented_control(key=Judge.SECTION).set_value("Editor").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Already cached"] == "266"  # replicate 0: every reply is in the cache
    at.number_input(key=Judge.REPLICATE).set_value(1).run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Already cached"] == "0"  # replicate 1 finds none of replicate 0's replies
    assert metrics["Requests"] == "266"
    sent_before = len(fake.requests)
    at.button(key=Judge.START).click().run()
    _ok(at)
    second = at.session_state[Judge.RUN]
    assert second != first
    assert store.get_run(second).settings["replicate"] == 1
    assert _wait(store, second) == "done"
    assert len(fake.requests) - sent_before == 266  # really sent again
