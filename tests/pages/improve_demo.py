"""The scripted fake judge for the demo project's groundedness labels (page and browser tests).

The demo's items carry no truth marker, so the scripted judge learns each item from a piece of its
reply text (unique in the dataset) and the people's majority label, read from the store.
"""

from __future__ import annotations

from collections import Counter

from evalcore.runs import improve_inputs
from evalcore.store import Store
from evalcore.testing import Scripted, ScriptedItem

OPTIMIZER: str = "fake-optimizer"
DATASET: str = "support-answers"
CRITERION: str = "groundedness"
TEMPLATE: str = "groundedness-judge"
KEY_CHARS = 80


def demo_ids(store: Store) -> tuple[int, int, int]:
    """The demo's (dataset id, criterion id, id of the newest groundedness template version)."""
    project = store.list_projects()[0]
    dataset = next(d for d in store.list_datasets(project.id) if d.name == DATASET)
    criterion = next(c for c in store.list_criteria(project.id) if c.name == CRITERION)
    template = next(t for t in store.list_templates(project.id) if t.name == TEMPLATE)
    return dataset.id, criterion.id, store.list_template_versions(template.id)[-1].id


def scripted_demo_judge(store: Store) -> Scripted:
    """A scripted judge and optimiser that know the demo's groundedness labels: "pass" is judged
    well already, "fail" only one time in five until a rule or an example about it is in the prompt."""
    dataset_id, criterion_id, _ = demo_ids(store)
    inputs = improve_inputs(store, dataset_id, criterion_id)
    keys = {i.item_id: str(i.fields.get("response") or "")[:KEY_CHARS] for i in inputs.items}
    counts = Counter(keys.values())
    items = [
        ScriptedItem(item_id, keys[item_id], str(label))
        for item_id, label in inputs.human.items()
        if keys.get(item_id) and counts[keys[item_id]] == 1
    ]
    return Scripted(
        base={"pass": 0.95, "fail": 0.2}, items=items, optimizer_model=OPTIMIZER, seed=3
    )
