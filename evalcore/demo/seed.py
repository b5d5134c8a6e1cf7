"""Write the demo project into a store, so a first ``make run`` has every page alive.

:func:`ensure_demo` is what the dashboard calls on start: it seeds only a database that has no project
yet (set ``EVALCORE_NO_DEMO=1`` to start empty). :func:`seed_demo` writes a :class:`DemoProject` in any
case. Unlike the rest of :mod:`evalcore.demo`, this module talks to :mod:`evalcore.store`.
"""

from __future__ import annotations

import math
import os
from typing import Any

import pandas as pd

from evalcore.demo._build import build_demo
from evalcore.demo._types import DemoProject
from evalcore.store import JudgeResultInput, ProjectRecord, Store

__all__ = ["NO_DEMO_ENV", "ensure_demo", "seed_demo"]

#: Set to 1 to start the dashboard on an empty database.
NO_DEMO_ENV = "EVALCORE_NO_DEMO"

#: Endpoints a newcomer can point at; no key is stored. OpenAI's API (key variable OPENAI_API_KEY) is
#: the one the Judge page picks by default, with a note while the variable is not set; the local
#: Ollama server is an option for those who run one (start it with ``ollama serve``).
_ENDPOINTS: list[dict[str, Any]] = [
    {
        "name": "OpenAI",
        "kind": "openai",
        "base_url": "https://api.openai.com/v1",
        "api_key_env": "OPENAI_API_KEY",
        "default_model": "gpt-4o-mini",
    },
    {
        "name": "Local (Ollama)",
        "kind": "openai",
        "base_url": "http://localhost:11434/v1",
        "api_key_env": None,
        "default_model": "llama3.1",
    },
]


def _pass_fail(label: Any, score: Any) -> tuple[dict[str, float] | None, float | None]:
    """A pass/fail verdict's probabilities and confidence from its probability of pass (the
    demo's simulated logprobs); none for other scales or without a score."""
    score = _value(score)
    if label not in ("pass", "fail") or score is None:
        return None, None
    p = min(1.0, max(0.0, float(score)))
    probabilities = {"pass": p, "fail": round(1.0 - p, 6)}
    return probabilities, probabilities[label]


def _value(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if type(v).__name__ in ("NAType", "NaTType"):
        return None
    return v


def _time(value: Any) -> Any:
    return None if value is None else pd.Timestamp(value).to_pydatetime()


def seed_demo(store: Store, demo: DemoProject | None = None) -> ProjectRecord:
    """Write ``demo`` (default: :func:`build_demo`) into ``store`` and return its project.

    A project of the same name already there is returned untouched.
    """
    demo = demo or build_demo()
    for existing in store.list_projects():
        if existing.name == demo.project_name:
            return existing
    project = store.create_project(
        demo.project_name, description=demo.description, settings=demo.settings
    )
    datasets = {
        d.name: store.save_dataset(
            project.id,
            d.name,
            d.items,
            kind=d.kind,
            source_filename=f"{d.name}.demo",
            layout="demo",
        )
        for d in demo.datasets
    }
    criteria = {
        c.name: store.create_criterion(
            project.id, c.name, kind=c.kind, scale=c.scale, rubric=c.rubric
        )
        for c in demo.criteria
    }
    columns = ["item_id", "annotator", "label", "comment", "time_spent_s", "created_at"]
    for (dataset, criterion), group in demo.annotations.groupby(
        ["dataset", "criterion"], sort=False
    ):
        store.import_labels(datasets[dataset].id, criteria[criterion].id, group[columns])

    versions: dict[tuple[str, int], int] = {}
    for template in demo.templates:
        stored_template = store.create_template(
            project.id, template.name, criteria[template.criterion].id
        )
        for number, version in enumerate(template.versions, start=1):
            saved = store.save_template_version(
                stored_template.id,
                version.content,
                author=version.author,
                note=version.note,
                created_at=_time(version.created_at),
            )
            versions[(template.name, number)] = saved.id

    for run in demo.runs:
        dataset = datasets[run.dataset]
        criterion = criteria[run.criterion]
        results = run.results
        if run.template is None:
            labels = results.set_index("item_id")["label"]
            reasons = results.set_index("item_id")["reason"]
            store.import_judge_labels(
                dataset.id, criterion.id, run.name, labels, reasons, model=run.model
            )
            continue
        record = store.create_run(
            dataset.id,
            criterion.id,
            name=run.name,
            model=run.model,
            template_version_id=versions[(run.template, int(run.template_version or 1))],
            settings={"concurrency": 8, "recorded": "demo"},
            order_mode="both" if run.order_mode == "both" else "single",
            seed=7,
            n_planned=len(results),
            created_at=_time(run.created_at),
        )
        pks = store.items_frame(dataset.id)["item_id"]
        pk_of = {str(ext): int(pk) for pk, ext in pks.items()}
        store.record_results(
            record.id,
            [
                JudgeResultInput(
                    item_id=pk_of[str(row["item_id"])],
                    probabilities=_pass_fail(_value(row["label"]), row["score"])[0],
                    confidence=_pass_fail(_value(row["label"]), row["score"])[1],
                    status=row["status"],
                    order=row["order"],
                    label=_value(row["label"]),
                    score=_value(row["score"]),
                    reason=_value(row["reason"]),
                    raw=_value(row["raw"]),
                    error=_value(row["reason"]) if row["status"] == "failed" else None,
                    tokens_in=_value(row["tokens_in"]),
                    tokens_out=_value(row["tokens_out"]),
                    cost=_value(row["cost"]),
                    latency_s=_value(row["latency_s"]),
                )
                for row in results.to_dict("records")
            ],
        )
        store.set_run_status(record.id, "running")
        store.set_run_status(record.id, "done")

    for endpoint in _ENDPOINTS:
        store.upsert_endpoint(**endpoint)
    from evalcore.judge import DEFAULT_PRICES

    for model, (price_in, price_out) in DEFAULT_PRICES.items():
        store.set_model_price(model, input_per_mtok=price_in, output_per_mtok=price_out)
    return project


def ensure_demo(store: Store) -> ProjectRecord | None:
    """Seed the demo into an empty database (no project at all) unless ``EVALCORE_NO_DEMO`` is set."""
    if os.environ.get(NO_DEMO_ENV, "").strip() not in ("", "0"):
        return None
    if store.list_projects():
        return None
    return seed_demo(store)
