"""Issue 20, point 7 on the Judge page's workflow: a try, a run or an optimisation whose endpoint
cannot authenticate is refused before anything is saved, with the reason a try gives; a run's error
belongs to the attempt it came from; an engineer is told what to ask and whom, never sent to a page
their role cannot open."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pandas as pd
import pytest

from evalcore.errors import EvalcoreError
from evalcore.labels import PASS_FAIL
from evalcore.runs import execute_run, plan_run
from evalcore.testing import FakeOpenAI
from evalcore.workflows import Server, Session
from evalcore.workflows import improve as improve_flow
from evalcore.workflows import judge as flow
from tests.workflows.conftest import PASSWORD, People
from tests.workflows.test_judge_workflow import (
    KEY_ENV,
    N_ITEMS,
    TEMPLATE,
    World,
    _wait,
    build_world,
)

ASK_ROOT = "(this server's admins: root)"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def world(people: People, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> World:
    return build_world(people, fake, monkeypatch)


def _refusal(action: Callable[[], object]) -> str:
    with pytest.raises(EvalcoreError) as caught:
        action()
    return str(caught.value)


def _cases(w: World, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Endpoints that cannot authenticate, by why: the variable is not set on the server, the
    server's key policy refuses its name, or it names none where the host needs one."""
    store = w.store
    store.set_server_setting("allowed_key_names", ["LOCAL_TOKEN"])
    refused = store.upsert_endpoint(
        "refused", base_url=w.fake.base_url, api_key_env="LOCAL_TOKEN"
    ).id
    store.set_server_setting("allowed_key_names", [])  # allowed once, no longer
    monkeypatch.setenv("LOCAL_TOKEN", "set, but the policy refuses the name")
    return {
        "not set": store.upsert_endpoint(
            "unset", base_url=w.fake.base_url, api_key_env="UNSET_API_KEY"
        ).id,
        "refused by the policy": refused,
        "no key where the host needs one": store.upsert_endpoint(
            "hosted", base_url="https://api.openai.com/v1", api_key_env=None
        ).id,
    }


def test_a_run_that_cannot_authenticate_is_refused_before_it_exists_with_the_tries_reason(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    engineer = world.people.engineer()
    spec = flow.configure(engineer, "coherence", {})
    for why, endpoint_id in _cases(world, monkeypatch).items():
        tried = _refusal(
            lambda e=endpoint_id: flow.try_version(engineer, world.dataset, TEMPLATE, endpoint_id=e)
        )
        request = flow.RunRequest(world.dataset, world.version, endpoint_id)
        started = _refusal(lambda r=request: flow.start_run(engineer, r))
        assert started == tried, why
        assert ASK_ROOT in started, why  # an engineer learns whom to ask
        assert "UNSET_API_KEY" not in started, why
        assert "LOCAL_TOKEN" not in started, why
        metric = _refusal(
            lambda e=endpoint_id: flow.start_metric_run(
                engineer, world.people.project, world.dataset, spec, endpoint_id=e
            )
        )
        assert metric == tried, why
    messages = {
        why: _refusal(
            lambda e=endpoint_id: flow.start_run(
                world.people.admin(), flow.RunRequest(world.dataset, world.version, e)
            )
        )
        for why, endpoint_id in _cases(world, monkeypatch).items()
    }
    # nobody learns which variables exist: a refused name reads as a missing one
    unset, refused = messages["not set"], messages["refused by the policy"]
    assert unset.replace("'unset'", "'x'") == refused.replace("'refused'", "'x'")
    assert "not available on the server" in messages["not set"]
    assert "ask an admin to check endpoint 'unset'" in messages["not set"]
    assert messages["no key where the host needs one"] == (
        "endpoint 'hosted' names no API key variable, and api.openai.com answers only requests "
        "that carry a key; ask an admin to name the endpoint's key variable"
    )
    assert ASK_ROOT not in messages["not set"]  # an admin is not told to ask themselves
    assert world.store.list_runs() == []
    assert world.fake.count == 0


def test_a_resume_or_a_rerun_through_an_endpoint_that_cannot_authenticate_is_refused(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    engineer = world.people.engineer()
    run = flow.start_run(engineer, flow.RunRequest(world.dataset, world.version, world.endpoint))
    assert _wait(world.store, run.id) == "done"
    world.store.set_run_status(run.id, "interrupted", error="the run stopped before every item")
    monkeypatch.delenv(KEY_ENV)
    tried = _refusal(
        lambda: flow.try_version(engineer, world.dataset, TEMPLATE, endpoint_id=world.endpoint)
    )
    assert _refusal(lambda: flow.resume_run(engineer, run.id)) == tried
    assert world.store.get_run(run.id).status == "interrupted"  # left as it was


def test_a_resumed_run_that_finishes_shows_no_error_of_an_earlier_attempt(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a run planned by a script while the key is missing: its first attempt fails
    monkeypatch.delenv(KEY_ENV)
    run = plan_run(
        world.store,
        dataset_id=world.dataset,
        template_version_id=world.version,
        endpoint_id=world.endpoint,
    )
    execute_run(world.store, run.id)
    engineer = world.people.engineer()
    failed = flow.run_view(engineer, run.id)
    assert failed.run.status == "failed"
    assert failed.error is not None
    assert "not available on the server" in failed.error
    assert failed.can_resume
    # the key is set now: the resumed attempt finishes, and the page shows no banner of the first
    monkeypatch.setenv(KEY_ENV, "workflow-judge-secret")
    resumed = flow.resume_run(engineer, run.id)
    assert resumed.error is None
    assert _wait(world.store, run.id) == "done"
    view = flow.run_view(engineer, run.id)
    assert view.error is None
    assert view.progress_text == f"{N_ITEMS} of {N_ITEMS} results · done"


def test_an_optimisation_that_cannot_authenticate_is_refused_before_it_exists(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = world.store
    ids = [f"c{i}" for i in range(80)]
    truth = ["pass" if i % 2 else "fail" for i in range(80)]
    criterion = store.create_criterion(
        world.people.project, "grounded", kind="pointwise", scale=PASS_FAIL
    )
    dataset = store.save_dataset(
        world.people.project, "replies", pd.DataFrame({"item_id": ids, "response": ids})
    )
    store.import_labels(
        dataset.id, criterion.id, pd.DataFrame({"item_id": ids, "annotator": "a", "label": truth})
    )
    template = store.create_template(world.people.project, "grounded", criterion.id)
    grounded = {
        **TEMPLATE,
        "name": "grounded",
        "criterion": "grounded",
        "scale": ["pass", "fail"],
        "output": {"parser": "auto", "label_field": "label"},
    }
    version = store.save_template_version(template.id, grounded, author="eve")
    engineer = world.people.engineer()
    for why, endpoint_id in _cases(world, monkeypatch).items():
        tried = _refusal(
            lambda e=endpoint_id: flow.try_version(engineer, dataset.id, grounded, endpoint_id=e)
        )
        for judge, optimiser in ((endpoint_id, world.endpoint), (world.endpoint, endpoint_id)):
            request = improve_flow.ImproveRequest(
                dataset_id=dataset.id,
                criterion_id=criterion.id,
                version_id=version.id,
                endpoint_id=judge,
                optimizer_endpoint_id=optimiser,
                optimizer_model="fake-optimizer",
            )
            started = _refusal(lambda r=request: improve_flow.start(engineer, r))
            assert started == tried, why
    assert store.list_improve_jobs(dataset.id) == []
    assert world.fake.count == 0


# --- whom to ask --------------------------------------------------------------------------------------


def test_an_engineer_is_told_what_to_ask_and_whom_never_sent_to_a_page_they_cannot_open(
    world: World,
) -> None:
    store = world.store
    store.add_user("ada", role="admin", password=PASSWORD)
    store.add_user("pat", role="engineer", password=PASSWORD, projects=[])
    store.set_membership("pat", world.people.project, "admin")
    engineer, admin = world.people.engineer(), world.people.admin()
    found = flow.admins(engineer, world.people.project)
    assert (found.server, found.project) == (("ada", "root"), ("pat",))
    request = flow.RunRequest(world.dataset, world.version, world.endpoint)
    told = flow.estimate_run(engineer, request).notes
    assert told == ("No price for fake-judge: ask an admin of this server (ada or root) to add a "
                    "price for fake-judge.",)  # fmt: skip
    batch = flow.RunRequest(world.dataset, world.version, world.endpoint, mode="batch")
    assert (
        flow.estimate_run(engineer, batch)
        .notes[0]
        .endswith("ask an admin of this server (ada or root) to add a batch price for fake-judge.")
    )
    assert flow.estimate_run(admin, request).notes == (
        "No price for fake-judge: add one on the Settings page.",
    )
    help_text = flow.context(engineer, world.people.project).endpoint_help
    assert "ask an admin of this server (ada or root)" in help_text
    for text in (*told, help_text):
        assert "Settings" not in text
    assert "Settings page" in flow.context(admin, world.people.project).endpoint_help


@pytest.mark.postgres
def test_with_external_workers_the_key_is_the_workers_but_the_policy_still_holds(
    world: World, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if world.store.dialect != "postgresql":
        pytest.skip("external workers need PostgreSQL")
    server = Server(store=world.store, secrets={}, worker_options={"workers": "external"})
    engineer = Session(server, world.store.open_session("eve", method="password"))
    cases = _cases(world, monkeypatch)
    # the app has no UNSET_API_KEY, but `evalcore worker` processes have keys of their own
    run = flow.start_run(engineer, flow.RunRequest(world.dataset, world.version, cases["not set"]))
    assert run.status == "pending"
    for why in ("refused by the policy", "no key where the host needs one"):
        bad = flow.RunRequest(world.dataset, world.version, cases[why])
        with pytest.raises(EvalcoreError):
            flow.start_run(engineer, bad)
    assert [r.id for r in world.store.list_runs()] == [run.id]
    request.addfinalizer(lambda: server.worker.shutdown(wait=False))
