"""Access control in the store: every service call, made directly as each role, is allowed or
refused as the roles are described (issue 10, part 3), on SQLite and PostgreSQL.

The expectations below are written out by hand from the role descriptions, not derived from
``ROLE_PERMISSIONS``, so that a change to the rule table that changes what a role may do fails here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pytest

from evalcore.errors import PermissionDeniedError
from evalcore.labels import LIKERT_5
from evalcore.report import load_calibration_data
from evalcore.runs import create_jury, escalate, plan_run
from evalcore.store import RULES, Actor, GuardedStore, JudgeResultInput, Store

TEMPLATE = {
    "name": "t",
    "criterion": "helpful",
    "kind": "pointwise",
    "scale": [1, 2, 3, 4, 5],
    "system": "Rate how helpful an answer is from 1 to 5.",
    "user": "Answer: {{ response }}",
    "output": {"parser": "json", "label_field": "score"},
    "model": {"model": "m"},
}


def test_every_public_store_method_has_a_rule() -> None:
    public = {
        name
        for name, _ in inspect.getmembers(Store, predicate=inspect.isfunction)
        if not name.startswith("_")
    }
    assert sorted(public - set(RULES)) == []
    assert sorted(set(RULES) - public) == []  # no rule for a method that is gone


def test_a_method_without_a_rule_is_refused_for_everyone(store: Store) -> None:
    class Extended(Store):
        def new_method(self) -> int:
            return 1

    from evalcore.store._access import guard_methods

    class GuardedExtended(GuardedStore, Extended):  # type: ignore[misc]
        pass

    guard_methods(Extended, GuardedExtended)
    guarded = GuardedExtended.__new__(GuardedExtended)
    guarded.__dict__.update(store.__dict__)
    guarded.actor = Actor("root", "admin")
    with pytest.raises(PermissionDeniedError, match="no access rule"):
        guarded.new_method()


@dataclass
class World:
    store: Store
    project: int
    other_project: int
    dataset: int
    criterion: int
    run: int
    template: int
    version: int
    assigned_item: int  # in ana's queue
    other_item: int  # in bob's queue only
    endpoint: int


@pytest.fixture
def world(store: Store) -> World:
    project = store.create_project("p", settings={"annotators_per_item": 1})
    other = store.create_project("elsewhere")
    criterion = store.create_criterion(project.id, "helpful", kind="pointwise", scale=LIKERT_5)
    items = pd.DataFrame({"item_id": ["a", "b"], "response": ["first", "second"]})
    dataset = store.save_dataset(project.id, "answers", items)
    store.ensure_queue(dataset.id, criterion.id, "ana", limit=1)
    store.ensure_queue(dataset.id, criterion.id, "bob", limit=1)
    frame = store.items_frame(dataset.id)
    by_id = dict(zip(frame["item_id"], frame.index, strict=True))
    template = store.create_template(project.id, "t", criterion_id=criterion.id)
    version = store.save_template_version(
        template.id,
        TEMPLATE,
        author="eve",
    )
    endpoint = store.upsert_endpoint("fake", base_url="http://127.0.0.1:9/v1")
    run = store.create_run(dataset.id, criterion.id, name="r1", template_version_id=version.id)
    return World(
        store, project.id, other.id, dataset.id, criterion.id, run.id, template.id, version.id,
        int(by_id["a"]), int(by_id["b"]), endpoint.id,
    )  # fmt: skip


def _actors(w: World) -> dict[str, Actor]:
    return {
        "admin": Actor("root", "admin"),
        "project admin": Actor("pat", "engineer", {w.project: "admin"}),
        "engineer": Actor("eve", "engineer", {w.project: "engineer"}),
        "viewer": Actor("vic", "viewer", {w.project: "viewer"}),
        "annotator": Actor("ana", "annotator", {w.project: "annotator"}),
        "outsider": Actor("oscar", "engineer", {w.other_project: "engineer"}),
    }


EVERYONE = {"admin", "project admin", "engineer", "viewer", "annotator"}
READERS = {"admin", "project admin", "engineer", "viewer"}
MANAGERS = {"admin", "project admin", "engineer"}
ANNOTATORS = {"admin", "project admin", "engineer", "annotator"}

Call = Callable[[Store, World], Any]


def _own(name: str, store: Store) -> str:
    """A name of the acting user's own, so that each role's call creates a new thing."""
    return f"{name} by {store.acting.name if store.acting else 'nobody'}"


def _second_run(w: World) -> int:
    """Another run of the world's dataset and criterion, made by the trusted store."""
    return w.store.create_run(w.dataset, w.criterion, name="r2").id


def _jury(w: World) -> int:
    """A jury of the world's run and another, made by the trusted store."""
    return w.store.create_jury_run(
        w.dataset, w.criterion, name="jury", members=[w.run, _second_run(w)]
    ).id


def _confident_run(w: World) -> int:
    """A run whose verdicts carry a confidence, recorded by the trusted store."""
    run = w.store.create_run(w.dataset, w.criterion, name="confident")
    w.store.record_results(
        run.id,
        [
            JudgeResultInput(item_id=w.assigned_item, status="ok", label=3, confidence=0.4),
            JudgeResultInput(item_id=w.other_item, status="ok", label=5, confidence=0.9),
        ],
    )
    return run.id


def _order(w: World) -> str:
    """A saved (inactive) queue order of the world's queue, made by the trusted store."""
    w.store.save_queue_order(w.dataset, w.criterion, "saved", [w.other_item], activate=False)
    return "saved"


def _job(w: World) -> int:
    """A new optimisation job of the world's dataset, made by the trusted store."""
    return w.store.create_improve_job(w.dataset, w.criterion, w.version, settings={}).id


CASES: list[tuple[str, Call, set[str]]] = [
    ("list datasets", lambda s, w: s.list_datasets(w.project), EVERYONE),
    ("list criteria", lambda s, w: s.list_criteria(w.project), EVERYONE),
    ("get project", lambda s, w: s.get_project(w.project), EVERYONE),
    # a viewer reads every queue (and cannot annotate: see "open one's own queue")
    (
        "own queue status",
        lambda s, w: s.queue_status(w.dataset, w.criterion, "ana"),
        ANNOTATORS | READERS,
    ),
    (
        "own queue item",
        lambda s, w: s.queue_item(w.dataset, w.criterion, "ana", 0),
        ANNOTATORS | READERS,
    ),
    (
        "open one's own queue",
        lambda s, w: s.ensure_queue(w.dataset, w.criterion, s.acting.name if s.acting else "x"),
        ANNOTATORS,
    ),
    (
        "someone else's queue item",
        lambda s, w: s.queue_item(w.dataset, w.criterion, "bob", 0),
        READERS,
    ),
    (
        "label an item of one's own queue",
        lambda s, w: s.submit_annotation(
            w.assigned_item, w.criterion, "ana", label=4, base_revision=0
        ),
        ANNOTATORS,
    ),
    (
        "label an item of someone else's queue",
        lambda s, w: s.submit_annotation(
            w.other_item, w.criterion, "ana", label=4, base_revision=0
        ),
        MANAGERS,
    ),
    (
        "label as someone else",
        lambda s, w: s.submit_annotation(
            w.other_item, w.criterion, "bob", label=4, base_revision=0
        ),
        MANAGERS,
    ),
    (
        "history of one's own item",
        lambda s, w: s.annotation_history(w.assigned_item, w.criterion, annotator="ana"),
        ANNOTATORS | READERS,
    ),
    (
        "history of every annotator",
        lambda s, w: s.annotation_history(w.assigned_item, w.criterion),
        READERS,
    ),
    ("all items in full", lambda s, w: s.items_frame(w.dataset), READERS),
    ("one item outside the queue", lambda s, w: s.get_item(w.other_item), READERS),
    ("everyone's labels", lambda s, w: s.annotation_matrix(w.dataset, w.criterion), READERS),
    # annotator names and endpoints are server-wide: a reader or an engineer of any project
    ("the annotators", lambda s, w: s.list_annotators(), READERS | {"outsider"}),
    ("judge runs", lambda s, w: s.list_runs(project_id=w.project), READERS),
    ("judge results", lambda s, w: s.results_frame(w.run), READERS),
    ("templates", lambda s, w: s.list_templates(w.project), READERS),
    ("a template version", lambda s, w: s.get_template_version(w.version), READERS),
    (
        "calibration data",
        lambda s, w: load_calibration_data(s, w.dataset, w.criterion),
        READERS,
    ),
    (
        "export labels",
        lambda s, w: s.export_annotations(project_id=w.project),
        READERS,
    ),
    (
        "add a criterion",
        lambda s, w: s.create_criterion(
            w.project, _own("new", s), kind="pointwise", scale=LIKERT_5
        ),
        MANAGERS,
    ),
    (
        "save a dataset",
        lambda s, w: s.save_dataset(w.project, _own("more", s), pd.DataFrame({"item_id": ["z"]})),
        MANAGERS,
    ),
    (
        "import labels",
        lambda s, w: s.import_labels(
            w.dataset,
            w.criterion,
            pd.DataFrame({"item_id": ["a"], "annotator": ["imp"], "label": [3]}),
        ),
        MANAGERS,
    ),
    (
        "save a template version",
        lambda s, w: s.save_template_version(
            w.template,
            {**TEMPLATE, "system": f"Judge, {_own('version', s)}."},
            author="x",
        ),
        MANAGERS,
    ),
    (
        "plan a run",
        lambda s, w: plan_run(
            s,
            dataset_id=w.dataset,
            template_version_id=w.version,
            endpoint_id=w.endpoint,
            model="m",
        ),
        MANAGERS,
    ),
    ("cancel a run", lambda s, w: s.request_cancel(w.run), MANAGERS),
    ("the endpoints", lambda s, w: s.list_endpoints(), MANAGERS | {"outsider"}),
    (
        "project settings",
        lambda s, w: s.update_project_settings(w.project, {"annotators_per_item": 2}),
        {"admin", "project admin"},
    ),
    (
        "save an endpoint",
        lambda s, w: s.upsert_endpoint(_own("local", s), base_url=None),
        {"admin"},
    ),
    (
        "set a price",
        lambda s, w: s.set_model_price("m", input_per_mtok=1.0, output_per_mtok=2.0),
        {"admin"},
    ),
    ("create a project", lambda s, w: s.create_project(_own("new", s)), {"admin"}),
    # whom to ask for what only an admin may do: any member of the project may know
    ("the project's admins", lambda s, w: s.project_admins(w.project), EVERYONE),
    ("read prices", lambda s, w: s.get_model_prices(), EVERYONE | {"outsider"}),
    ("a run's batches", lambda s, w: s.run_batches(w.run), READERS),
    ("save a run's batches", lambda s, w: s.save_run_batches(w.run, []), MANAGERS),
    (
        "set a batch price",
        lambda s, w: s.set_batch_price("m", input_per_mtok=0.5, output_per_mtok=1.0),
        {"admin"},
    ),
    ("read batch prices", lambda s, w: s.get_batch_prices(), EVERYONE | {"outsider"}),
    ("a run's chunks", lambda s, w: s.run_chunks(w.run), READERS),
    ("the workers", lambda s, w: s.list_workers(), READERS | {"outsider"}),
    ("split a run into chunks", lambda s, w: s.plan_chunks(w.run, ["a"], size=1), set()),
    ("register a worker", lambda s, w: s.register_worker("w", host="h", pid=1), set()),
    (
        "start an optimisation",
        lambda s, w: s.create_improve_job(w.dataset, w.criterion, w.version, settings={}),
        MANAGERS,
    ),
    ("list optimisations", lambda s, w: s.list_improve_jobs(w.dataset), READERS),
    ("read an optimisation", lambda s, w: s.get_improve_job(w.dataset, _job(w)), READERS),
    (
        "save an optimisation's progress",
        lambda s, w: s.update_improve_job(w.dataset, _job(w), progress={"phase": "dev"}),
        MANAGERS,
    ),
    ("cancel an optimisation", lambda s, w: s.request_improve_cancel(w.dataset, _job(w)), MANAGERS),
    ("optimisations to resume", lambda s, w: s.improve_jobs_to_resume(), set()),
    ("claim a run's lease", lambda s, w: s.claim_lease("run", w.run, "w", lease_s=5), set()),
    ("renew a run's lease", lambda s, w: s.renew_lease("run", w.run, "w", lease_s=5), set()),
    ("release a run's lease", lambda s, w: s.release_lease("run", w.run, "w"), set()),
    ("jobs and their leases", lambda s, w: s.open_leases("improve"), set()),
    ("the sign-in locks", lambda s, w: s.sign_in_locks(), {"admin"}),
    ("lift sign-in locks", lambda s, w: s.clear_sign_in_locks("someone"), {"admin"}),
    (
        "save a jury run",
        lambda s, w: s.create_jury_run(
            w.dataset, w.criterion, name=_own("jury", s), members=[w.run, _second_run(w)]
        ),
        MANAGERS,
    ),
    (
        "make a jury of runs",
        lambda s, w: create_jury(s, [w.run, _second_run(w)], name=_own("jury", s)),
        MANAGERS,
    ),
    ("a jury's members", lambda s, w: s.jury_members(_jury(w)), READERS),
    (
        "save a queue order",
        lambda s, w: s.save_queue_order(
            w.dataset, w.criterion, _own("order", s), [w.other_item], reason="why"
        ),
        MANAGERS,
    ),
    (
        "activate a queue order",
        lambda s, w: s.activate_queue_order(w.dataset, w.criterion, _order(w)),
        MANAGERS,
    ),
    (
        "return a queue to dataset order",
        lambda s, w: s.deactivate_queue_order(w.dataset, w.criterion),
        MANAGERS,
    ),
    (
        "read a queue order and its reason",
        lambda s, w: s.get_queue_order(w.dataset, w.criterion, _order(w)),
        READERS,
    ),
    ("list queue orders", lambda s, w: s.list_queue_orders(w.dataset), READERS),
    (
        "the queue's active order",
        lambda s, w: s.active_queue_order(w.dataset, w.criterion),
        READERS,
    ),
    (
        "escalate a run's unsure verdicts",
        lambda s, w: escalate(s, _confident_run(w), threshold=0.5, name=_own("escalation", s)),
        MANAGERS,
    ),
]


@pytest.mark.parametrize(("what", "call", "allowed"), CASES, ids=[c[0] for c in CASES])
def test_each_role_is_allowed_or_refused(
    world: World, what: str, call: Call, allowed: set[str]
) -> None:
    for role, actor in _actors(world).items():
        guarded = world.store.acting_as(actor)
        if role in allowed:
            call(guarded, world)  # does not raise
            continue
        try:
            call(guarded, world)
        except PermissionDeniedError:
            continue
        pytest.fail(f"{what}: {role} was allowed")


def test_projects_are_listed_only_to_their_members(world: World) -> None:
    names = {
        role: sorted(p.name for p in world.store.acting_as(actor).list_projects())
        for role, actor in _actors(world).items()
    }
    assert names["admin"] == ["elsewhere", "p"]
    assert names["annotator"] == ["p"]
    assert names["outsider"] == ["elsewhere"]
    with pytest.raises(PermissionDeniedError):
        world.store.acting_as(_actors(world)["outsider"]).get_project_by_name("p")


def test_the_refusal_says_what_is_needed_and_the_role(world: World) -> None:
    annotator = world.store.acting_as(_actors(world)["annotator"])
    with pytest.raises(PermissionDeniedError, match=r"'read'.*annotator"):
        annotator.results_frame(world.run)
    outsider = world.store.acting_as(_actors(world)["outsider"])
    with pytest.raises(PermissionDeniedError, match="not a member"):
        outsider.list_datasets(world.project)


def test_the_worker_and_migrations_are_for_trusted_processes_only(world: World) -> None:
    admin = world.store.acting_as(_actors(world)["admin"])
    with pytest.raises(PermissionDeniedError, match="evalcore's own processes"):
        admin.runs_to_resume()
    system = world.store.acting_as(Actor.system("cli"))
    system.runs_to_resume()
    assert system.acting == Actor.system("cli")
    assert world.store.acting is None


def test_a_plain_store_is_trusted(world: World) -> None:
    world.store.authorize("admin", project_id=world.project)  # no actor: no check
    assert len(world.store.results_frame(world.run)) == 0


def test_the_admins_to_ask_are_the_servers_and_the_projects_enabled_ones(world: World) -> None:
    store = world.store
    store.add_user("root", role="admin", password="a long admin password")
    store.add_user("old", role="admin", password="a long admin password")
    store.add_user("pat", role="engineer", password="a long test password", projects=[])
    store.set_membership("pat", world.project, "admin")
    store.add_user("eve", role="engineer", password="a long test password")
    store.disable_user("old")
    found = store.acting_as(_actors(world)["annotator"]).project_admins(world.project)
    assert (found.server, found.project) == (("root",), ("pat",))
    assert store.project_admins(world.other_project).project == ()
