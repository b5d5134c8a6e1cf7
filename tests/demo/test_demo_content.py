"""The embedded demo project: deterministic, well-formed and written in the project's own words."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import jinja2
import jinja2.meta
import jinja2.sandbox
import pandas as pd
import pytest

from evalcore.demo import DemoProject, build_demo, demo_summary
from evalcore.labels import Scale

DEMO_PACKAGE = Path(__file__).resolve().parents[2] / "evalcore" / "demo"
RESULT_COLUMNS = [
    "item_id",
    "order",
    "status",
    "label",
    "score",
    "reason",
    "raw",
    "tokens_in",
    "tokens_out",
    "latency_s",
    "cost",
]


@pytest.fixture(scope="module")
def demo() -> DemoProject:
    return build_demo()


def _assert_same(one: DemoProject, two: DemoProject) -> None:
    assert one.project_name == two.project_name
    assert one.settings == two.settings
    for a, b in zip(one.datasets, two.datasets, strict=True):
        assert (a.name, a.kind, a.fields, a.metadata, a.created_at) == (
            b.name,
            b.kind,
            b.fields,
            b.metadata,
            b.created_at,
        )
        pd.testing.assert_frame_equal(a.items, b.items)
    assert one.criteria == two.criteria
    assert one.templates == two.templates
    pd.testing.assert_frame_equal(one.annotations, two.annotations)
    for a, b in zip(one.runs, two.runs, strict=True):
        assert (a.name, a.template, a.template_version, a.created_at) == (
            b.name,
            b.template,
            b.template_version,
            b.created_at,
        )
        pd.testing.assert_frame_equal(a.results, b.results)


# --- determinism and sizes ---------------------------------------------------------------------


def test_the_same_seed_gives_the_same_project(demo: DemoProject) -> None:
    _assert_same(demo, build_demo(7))


def test_another_seed_gives_other_labels_but_the_same_shape(demo: DemoProject) -> None:
    other = build_demo(11)
    assert not demo.annotations["label"].equals(other.annotations["label"])
    assert not demo.datasets[0].items["response"].equals(other.datasets[0].items["response"])
    assert [d.name for d in other.datasets] == [d.name for d in demo.datasets]
    assert [r.name for r in other.runs] == [r.name for r in demo.runs]


def test_sizes(demo: DemoProject) -> None:
    points, pairs = demo.dataset("support-answers"), demo.dataset("reply-preference")
    assert (points.kind, pairs.kind) == ("pointwise", "pairwise")
    assert 160 <= len(points.items) <= 300
    assert 120 <= len(pairs.items) <= 300
    assert 4 <= len(demo.annotators) <= 5
    assert [c.name for c in demo.criteria] == ["helpfulness", "groundedness", "preference"]
    assert all(len(t.versions) >= 2 for t in demo.templates)
    assert demo.project_name == "Northwind support demo"
    assert demo.settings == {
        "annotators_per_item": 3,
        "thresholds": {"balanced_accuracy": 0.7, "cohen_kappa": 0.5},
    }


def test_summary_counts_agree_with_the_project(demo: DemoProject) -> None:
    summary = demo_summary(demo)
    assert summary["annotations"] == len(demo.annotations)
    assert summary["datasets"]["support-answers"]["items"] == len(demo.datasets[0].items)
    assert set(summary["runs"]) == {r.name for r in demo.runs}
    for run in demo.runs:
        counts = summary["runs"][run.name]
        assert counts["ok"] + counts["unparsed"] + counts["failed"] == len(run.results)
    assert summary["template_versions"] == sum(len(t.versions) for t in demo.templates)
    json.dumps(summary)  # JSON-ready


# --- datasets ----------------------------------------------------------------------------------


def test_dataset_columns(demo: DemoProject) -> None:
    points, pairs = demo.datasets
    assert list(points.items.columns) == ["item_id", *points.fields, *points.metadata]
    assert points.fields == ("prompt", "response", "context", "reference")
    assert points.metadata == ("topic", "source_model")
    assert list(pairs.items.columns) == ["item_id", *pairs.fields, *pairs.metadata]
    assert pairs.fields == ("prompt", "response_a", "response_b", "context")
    assert pairs.metadata == ("topic", "model_a", "model_b")
    for dataset, prefix in ((points, "sa"), (pairs, "rp")):
        ids = dataset.items["item_id"]
        assert ids.is_unique
        assert ids.str.fullmatch(prefix + r"-\d{3}").all()
        for column in dataset.fields:
            assert dataset.items[column].str.strip().str.len().gt(0).all(), column


def test_metadata_has_a_handful_of_values(demo: DemoProject) -> None:
    points, pairs = demo.datasets
    assert 5 <= points.items["topic"].nunique() <= 6
    assert 2 <= points.items["source_model"].nunique() <= 3
    assert set(pairs.items["topic"]) == set(points.items["topic"])
    assert (pairs.items["model_a"] != pairs.items["model_b"]).all()


def test_texts_are_varied(demo: DemoProject) -> None:
    points, pairs = demo.datasets
    assert points.items["response"].nunique() >= 100
    assert points.items["prompt"].nunique() >= 30
    assert (pairs.items["response_a"] != pairs.items["response_b"]).all()
    lengths = points.items["response"].str.len()
    assert lengths.min() < 40 < 250 < lengths.max()  # one-liners and full answers
    for run in demo.runs:
        if run.template is not None:
            reasons = run.results["reason"].dropna()
            assert reasons.nunique() >= 30, run.name


def _every_text(demo: DemoProject) -> list[str]:
    texts = [demo.project_name, demo.description]
    for dataset in demo.datasets:
        texts.append(dataset.description)
        for column in dataset.items.columns:
            texts.extend(dataset.items[column].astype(str))
    for criterion in demo.criteria:
        texts += [criterion.rubric, criterion.description]
    for template in demo.templates:
        for version in template.versions:
            texts += [json.dumps(version.content), version.note, version.author]
    texts.extend(demo.annotations["comment"].dropna())
    for run in demo.runs:
        texts += [run.name, run.description]
        texts.extend(run.results["reason"].dropna())
        texts.extend(run.results["raw"].dropna())
    return texts


REAL_NAMES = re.compile(
    r"\b(amazon|rei|patagonia|north face|columbia|arc'?teryx|osprey|salomon|merrell|vibram|"
    r"gore-?tex|nikwax|msr|jetboil|coleman|therm-?a-?rest|big agnes|black diamond|petzl|garmin|"
    r"sawyer|katadyn|decathlon|fedex|ups|usps|dhl|royal mail|paypal|visa|mastercard|stripe|"
    r"openai|anthropic|google|microsoft|meta|gpt-?\d|claude|gemini|llama|mistral|honda|ridgeline)\b",
    re.IGNORECASE,
)


def test_no_text_names_a_real_company_or_model(demo: DemoProject) -> None:
    hits = sorted({m.group(0) for text in _every_text(demo) for m in REAL_NAMES.finditer(text)})
    assert hits == []


# --- criteria and annotations ------------------------------------------------------------------


def test_criteria(demo: DemoProject) -> None:
    kinds = {c.name: (c.kind, c.scale.kind, c.dataset) for c in demo.criteria}
    assert kinds == {
        "helpfulness": ("pointwise", "ordinal", "support-answers"),
        "groundedness": ("pointwise", "binary", "support-answers"),
        "preference": ("pairwise", "pairwise", "reply-preference"),
    }
    for criterion in demo.criteria:
        lines = criterion.rubric.splitlines()
        assert 3 <= len(lines) <= 8, criterion.name


def test_every_annotation_label_is_on_its_scale(demo: DemoProject) -> None:
    scales: dict[str, Scale] = {c.name: c.scale for c in demo.criteria}
    for criterion, label in zip(
        demo.annotations["criterion"], demo.annotations["label"], strict=True
    ):
        assert scales[criterion].coerce(label) == label
        assert isinstance(label, float if criterion == "helpfulness" else str)


def test_annotations_point_at_items_of_the_criterion_dataset(demo: DemoProject) -> None:
    notes = demo.annotations
    for criterion in demo.criteria:
        own = notes[notes["criterion"] == criterion.name]
        assert (own["dataset"] == criterion.dataset).all()
        assert set(own["item_id"]) <= set(demo.dataset(criterion.dataset).items["item_id"])
    assert set(notes["annotator"]) == set(demo.annotators)


def test_no_annotator_labels_an_item_twice_on_a_criterion(demo: DemoProject) -> None:
    keys = demo.annotations[["criterion", "item_id", "annotator"]]
    assert not keys.duplicated().any()


def test_a_quarter_of_the_pointwise_items_is_unlabelled(demo: DemoProject) -> None:
    items = demo.dataset("support-answers").items["item_id"]
    labelled = set(
        demo.annotations.loc[demo.annotations["dataset"] == "support-answers", "item_id"]
    )
    share = 1 - len(labelled) / len(items)
    assert 0.2 <= share <= 0.3


def test_two_to_three_annotators_per_labelled_item(demo: DemoProject) -> None:
    per_item = demo.annotations.groupby(["criterion", "item_id"]).size()
    assert per_item.between(2, 3).all()
    assert 2.2 <= per_item.mean() <= 2.7


def test_humans_use_tie_on_a_tenth_to_a_fifth_of_pairs(demo: DemoProject) -> None:
    choices = demo.annotations.loc[demo.annotations["criterion"] == "preference", "label"]
    assert 0.10 <= (choices == "TIE").mean() <= 0.20


def test_comments_times_and_dates(demo: DemoProject) -> None:
    notes = demo.annotations
    comments = notes["comment"].dropna()
    assert 0.02 <= len(comments) / len(notes) <= 0.15
    assert comments.map(lambda c: isinstance(c, str) and c.strip() != "").all()
    assert notes["comment"].map(lambda c: c is None or isinstance(c, str)).all()
    assert notes["time_spent_s"].between(4, 240).all()
    assert 12 <= notes["time_spent_s"].median() <= 40
    stamps = notes["created_at"]
    assert str(stamps.dt.tz) == "UTC"
    assert stamps.dt.normalize().nunique() >= 3
    templates = [v.created_at for t in demo.templates for v in t.versions]
    assert min(r.created_at for r in demo.runs) < stamps.min()
    assert all(t.tzinfo is not None for t in templates)


# --- templates ---------------------------------------------------------------------------------

TEMPLATE_KEYS = {"name", "criterion", "kind", "scale", "system", "user", "output", "model"}


def test_template_content_shape(demo: DemoProject) -> None:
    for template in demo.templates:
        criterion = demo.criterion(template.criterion)
        for version in template.versions:
            content = version.content
            assert set(content) == TEMPLATE_KEYS
            assert (content["name"], content["criterion"], content["kind"]) == (
                template.name,
                criterion.name,
                criterion.kind,
            )
            assert [criterion.scale.coerce(x) for x in content["scale"]] == list(
                criterion.scale.labels
            )
            assert content["output"] == {
                "parser": "json",
                "label_field": {"helpfulness": "score", "groundedness": "label"}.get(
                    criterion.name, "choice"
                ),
                "reason_field": "reason",
                "structured": True,
            }
            model = content["model"]
            assert set(model) == {"model", "temperature", "max_tokens", "seed", "n", "logprobs"}
            assert model["n"] == 1
            assert model["model"].startswith("demo-judge")
            assert version.author
            assert version.note
        first, second = template.versions
        assert first.content["user"] != second.content["user"]
        assert first.created_at < second.created_at


def test_template_variables_are_fields_of_the_dataset(demo: DemoProject) -> None:
    env = jinja2.sandbox.SandboxedEnvironment(undefined=jinja2.StrictUndefined)
    for template in demo.templates:
        dataset = demo.dataset(demo.criterion(template.criterion).dataset)
        for version in template.versions:
            for part in ("system", "user"):
                text = version.content[part]
                variables = jinja2.meta.find_undeclared_variables(env.parse(text))
                assert variables <= set(dataset.fields), (template.name, part, variables)
            item = dataset.items.iloc[0].to_dict()
            rendered = env.from_string(version.content["user"]).render(**item)
            reply = "response" if dataset.kind == "pointwise" else "response_b"
            assert item[reply] in rendered


# --- runs --------------------------------------------------------------------------------------


def test_every_criterion_has_two_template_versions_run(demo: DemoProject) -> None:
    for criterion in demo.criteria:
        versions = {r.template_version for r in demo.runs if r.criterion == criterion.name}
        assert {1, 2} <= versions, criterion.name
        names = {t.name for t in demo.templates if t.criterion == criterion.name}
        runs = [r for r in demo.runs if r.criterion == criterion.name and r.template is not None]
        assert {r.template for r in runs} <= names


def test_runs_cover_every_item_once_per_order(demo: DemoProject) -> None:
    for run in demo.runs:
        assert list(run.results.columns) == RESULT_COLUMNS, run.name
        items = demo.dataset(run.dataset).items["item_id"]
        orders = ["AB", "BA"] if run.order_mode == "both" else ["AB"]
        assert sorted(run.results["order"].unique()) == orders
        for order in orders:
            own = run.results[run.results["order"] == order]
            assert own["item_id"].is_unique
            assert set(own["item_id"]) == set(items)


def test_results_are_consistent(demo: DemoProject) -> None:
    for run in demo.runs:
        scale = demo.criterion(run.criterion).scale
        results = run.results
        ok = results[results["status"] == "ok"]
        assert set(results["status"]) <= {"ok", "unparsed", "failed"}
        assert results.loc[results["status"] != "ok", "label"].isna().all(), run.name
        assert all(scale.coerce(label) == label for label in ok["label"]), run.name
        if run.criterion == "groundedness" and run.template is not None:
            assert ok["score"].between(0, 1).all()
            assert ((ok["score"] >= 0.5) == (ok["label"] == "pass")).all()
        elif run.criterion == "helpfulness":
            assert ok["score"].between(1, 5).all()
            assert ((ok["score"] - ok["label"].astype(float)).abs() < 1).all()
        else:
            assert results["score"].isna().all()


def test_ok_replies_parse_and_unparsed_ones_do_not(demo: DemoProject) -> None:
    for run in demo.runs:
        if run.template is None:
            continue
        scale = demo.criterion(run.criterion).scale
        field = {"helpfulness": "score", "groundedness": "label"}.get(run.criterion, "choice")
        for row in run.results.itertuples():
            if row.status == "ok":
                reply = json.loads(row.raw)
                assert reply["reason"] == row.reason
                said = scale.coerce(reply[field])
                if row.order == "BA":
                    said = {"A": "B", "B": "A"}.get(said, said)
                assert said == row.label
            elif row.status == "unparsed":
                assert row.raw
                assert row.reason is None
                assert _parse(row.raw, field, scale) is None, row.raw
            else:
                assert row.raw is None
                assert row.reason  # the error message
                assert row.tokens_out == 0
                assert row.cost == 0


def _parse(raw: str, field: str, scale: Scale) -> object:
    try:
        return scale.coerce(json.loads(raw)[field])
    except (ValueError, KeyError, TypeError):
        return None


def test_a_few_replies_are_unparsed_or_failed(demo: DemoProject) -> None:
    for run in demo.runs:
        if run.template is None:
            continue
        share = run.results["status"].value_counts(normalize=True)
        assert 0.005 <= share.get("unparsed", 0) <= 0.06, run.name
        assert share.get("failed", 0) <= 0.02, run.name
    failed = pd.concat(r.results for r in demo.runs)["status"].eq("failed").sum()
    assert failed >= 5


def test_usage_is_recorded(demo: DemoProject) -> None:
    for run in demo.runs:
        ok = run.results[run.results["status"] == "ok"]
        if run.template is None:
            assert ok[["tokens_in", "tokens_out", "latency_s", "cost"]].isna().all().all()
            continue
        assert (ok["tokens_in"] > ok["tokens_out"]).all()
        assert (ok["latency_s"] > 0).all()
        assert (ok["cost"] > 0).all()
    pro = [r for r in demo.runs if r.model == "demo-judge-pro"]
    mini = [r for r in demo.runs if r.model == "demo-judge-mini" and r.criterion == "helpfulness"]
    assert pro
    assert pro[0].results["cost"].sum() > 5 * mini[0].results["cost"].sum()


def test_the_imported_run_comes_from_a_file(demo: DemoProject) -> None:
    imported = [r for r in demo.runs if r.template is None]
    assert len(imported) == 1
    run = imported[0]
    assert run.name.startswith("imported:")
    assert run.template_version is None
    status = run.results["status"].value_counts()
    assert status["ok"] >= 0.9 * len(run.results)
    assert 1 <= status.get("unparsed", 0) <= 0.1 * len(run.results)
    assert (run.results.loc[run.results["status"] == "unparsed", "raw"] == "").all()


def test_the_both_order_run_records_the_swapped_verdict_in_the_original_frame(
    demo: DemoProject,
) -> None:
    both = [r for r in demo.runs if r.order_mode == "both"]
    assert len(both) == 1
    assert both[0].criterion == "preference"
    swapped = both[0].results
    swapped = swapped[(swapped["order"] == "BA") & swapped["label"].isin(["A", "B"])]
    shown = swapped["raw"].map(lambda raw: json.loads(raw)["choice"])
    assert (shown != swapped["label"]).all()


# --- the package ------------------------------------------------------------------------------


def test_demo_imports_only_the_standard_library_numpy_pandas_labels_and_errors() -> None:
    allowed = {"numpy", "pandas", "evalcore.labels", "evalcore.errors", "evalcore.demo"}
    bad = []
    # seed.py is the one module that writes the demo into a store; the demo itself is plain data
    for path in (p for p in DEMO_PACKAGE.glob("*.py") if p.name != "seed.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "__future__":
                    continue
                if not any(name == a or name.startswith(a + ".") for a in allowed):
                    bad.append(f"{path.name}: {name}")
    assert bad == []
