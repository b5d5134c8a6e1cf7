"""The Calibrate page's headline (:func:`evalcore.workflows.calibrate.headline`) without Streamlit,
on the demo project: a row per run with its intervals and light, the ceiling and the constant judge,
and refusals."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from evalcore.demo.seed import seed_demo
from evalcore.errors import PermissionDeniedError, SessionEndedError
from evalcore.store import DEFAULT_THRESHOLDS
from evalcore.workflows import calibrate as flow
from tests.workflows.conftest import People


@pytest.fixture
def demo(people: People) -> tuple[People, flow.Selection]:
    store = people.server.store
    project = seed_demo(store)
    for name, role in (("eve", "engineer"), ("vic", "viewer"), ("ana", "annotator"),
                       ("dan", "engineer")):  # fmt: skip
        store.set_membership(name, project.id, role)  # type: ignore[arg-type]
    people.project = project.id
    found = flow.choices(people.engineer(), project.id)
    criterion = next(c for c in found.criteria.values() if c.name == "helpfulness")
    dataset = next(d for d in found.datasets if found.runs_of(d.id, criterion.id))
    runs = tuple(r.id for r in found.runs_of(dataset.id, criterion.id))
    return people, flow.Selection(dataset.id, criterion.id, runs)


def test_headline_rows_carry_intervals_and_lights(demo: tuple[People, flow.Selection]) -> None:
    people, sel = demo
    found = flow.headline(people.session("vic"), sel)
    assert found is not None
    assert [r.run_id for r in found.rows] == list(sel.runs)
    assert found.kappa_name == "Cohen's kappa (quadratic)"
    assert found.thresholds == {"balanced_accuracy": 0.7, "cohen_kappa": 0.5}
    best = next(r for r in found.rows if r.title == "helpfulness v2 (demo-judge-pro)")
    # the demo's best helpfulness run: balanced accuracy 0.71 [0.63, 0.78] straddles 0.7
    assert best.balanced_accuracy.text == "0.71 [0.63, 0.78]"
    assert best.light == "amber"
    assert "balanced accuracy's interval [0.63, 0.78] straddles 0.70" in best.words
    assert best.n_compared <= best.n_human
    for row in found.rows:
        ba = row.balanced_accuracy
        assert ba.value is not None
        assert ba.ci is not None
        low, high = ba.ci
        if row.light == "green":
            assert low >= 0.7
        if high < 0.7:
            assert row.light == "red"
    # the ceiling is the annotators' own agreement; the constant judge's kappa is 0 by definition
    assert found.ceiling_kappa is not None
    assert found.ceiling_kappa.value == pytest.approx(0.88, abs=0.01)
    assert found.ceiling_alpha is not None
    assert found.ceiling_alpha.ci is not None
    assert found.constant_kappa == pytest.approx(0.0)
    # a constant judge is right on every item of one class only: BA = 1 / number of classes seen
    assert found.constant_balanced_accuracy is not None
    assert 0 < found.constant_balanced_accuracy <= 0.5
    assert "straddles" in found.rule


def test_short_names_keep_short_titles_and_cut_long_ones() -> None:
    assert flow.short_name("v2") == "v2"
    cut = flow.short_name("a" * 40, 10)
    assert cut == "a" * 9 + "…"
    assert len(cut) == 10


def test_headline_is_refused_to_outsiders_and_ended_sessions(
    demo: tuple[People, flow.Selection],
) -> None:
    people, sel = demo
    with pytest.raises(PermissionDeniedError):
        flow.headline(people.session("oscar"), sel)
    ended = people.session("eve")
    people.server.store.end_session(ended.token or "")
    with pytest.raises(SessionEndedError):
        flow.headline(ended, sel)
    disabled = people.session("dan")
    people.server.store.disable_user("dan")
    with pytest.raises(SessionEndedError):
        flow.headline(disabled, sel)


def test_score_estimates_and_rater_coefficients(demo: tuple[People, flow.Selection]) -> None:
    people, sel = demo
    found = flow.scores(people.session("vic"), sel)
    assert len(found) == len(sel.runs)
    for view in found:
        assert view.error is None
        assert view.table is not None
        assert "mean score" in view.table.astype(str).to_string()
    headline = flow.headline(people.session("vic"), sel)
    assert headline is not None
    raters = headline.coefficients()
    assert raters is not None
    assert any(str(c).startswith("Fleiss") for c in raters["coefficient"])
    # a larger min_shared is a different ceiling (its own memo entry), with the setting kept
    strict = flow.headline(people.session("vic"), replace(sel, min_shared=100_000))
    assert strict is not None
    assert strict.ceiling is not None
    assert strict.ceiling.min_shared == 100_000
    assert strict.ceiling.fragile


def test_a_file_gets_the_same_headline_against_the_default_thresholds(people: People) -> None:
    """Upload mode: one row per judge column of the file, the light against the defaults."""
    # 20 items; the judge agrees with the one annotator on 16: pass 10/10 right, fail 6/10 right
    rows = ["id,human,judge"]
    rows += [f"p{i},pass,pass" for i in range(10)]
    rows += [f"f{i},fail,{'fail' if i < 6 else 'pass'}" for i in range(10)]
    data = ("\n".join(rows) + "\n").encode()
    mapping = flow.file_mapping(["human"], ["judge"], "id")
    (found,) = flow.read_files(
        people.engineer(), [("labels.csv", data)], mappings={"labels.csv": mapping}
    )
    (calibration,) = found.calibrations
    headline = flow.file_headline(calibration)
    assert headline is not None
    assert headline.thresholds == DEFAULT_THRESHOLDS
    (row,) = headline.rows
    assert row.short == "judge"
    # balanced accuracy = (10/10 + 6/10) / 2 = 0.8, the same as the file's table
    assert row.balanced_accuracy.value == pytest.approx(0.8)
    assert calibration.table().values.loc["balanced accuracy", "judge"] == pytest.approx(0.8)
    # 0.8 on 20 items: the interval reaches below the 0.8 threshold, so never green
    assert row.balanced_accuracy.ci is not None
    assert row.balanced_accuracy.ci[0] < 0.8
    assert row.light != "green"
    assert headline.rule.startswith("Thresholds by default (a file has no project): ")
    assert headline.ceiling is None  # one annotator: no ceiling


def _aspects_file(n: int = 12) -> bytes:
    """A file in the shape of SummEval's (two aspects, two experts and two judges on each), made
    up here: the experts agree with each other, judge_a agrees with them, judge_b says 3 always."""
    rows = []
    for i in range(n):
        score = 1 + i % 5
        rows.append(
            {
                "doc": f"d{i}",
                "summary": f"summary {i}",
                **{f"human_{aspect}_{k}": score for aspect in ("tone", "clarity") for k in (1, 2)},
                **{f"judge_a_{aspect}": score for aspect in ("tone", "clarity")},
                **{f"judge_b_{aspect}": 3 for aspect in ("tone", "clarity")},
            }
        )
    return pd.DataFrame(rows).to_csv(index=False).encode()


def test_a_plain_file_is_read_with_the_columns_guessed_from_their_names(people: People) -> None:
    (found,) = flow.read_files(people.engineer(), [("aspects.csv", _aspects_file())])
    assert not found.needs_mapping
    assert found.guessed == (
        "tone: 2 human columns, 2 judge columns; clarity: 2 human columns, 2 judge columns"
    )
    by_metric = {c.data.criterion.name: c for c in found.calibrations}
    assert sorted(by_metric) == ["clarity", "tone"]
    tone = by_metric["tone"]
    assert tone.data.human.shape[1] == 2  # the two experts, not one pooled set
    values = tone.table().values
    judges = [c for c in values.columns if c.startswith("judge")]
    assert len(judges) == 2
    # judge_a gives the experts' score on every item: balanced accuracy 1
    ba = values.loc["balanced accuracy", judges]
    assert sorted(ba.round(6).tolist()) == [
        0.2,
        1.0,
    ]  # judge_b: right on the 3s only, 1 of 5 classes
    # the same file with the columns named by hand is read as the user says, not as guessed
    mapping = flow.file_mapping(["human_tone_1"], ["judge_b_tone"], "doc")
    (chosen,) = flow.read_files(
        people.engineer(), [("aspects.csv", _aspects_file())], mappings={"aspects.csv": mapping}
    )
    assert chosen.guessed is None
    assert [c.data.criterion.name for c in chosen.calibrations] == ["label"]


def test_a_plain_file_without_guessable_label_columns_asks_for_them(people: People) -> None:
    plain = pd.DataFrame({"a1": [1, 2, 3, 4], "a2": [1, 2, 2, 4], "j": [1, 3, 3, 4]})
    (found,) = flow.read_files(
        people.engineer(), [("plain.csv", plain.to_csv(index=False).encode())]
    )
    assert found.needs_mapping
    assert found.guessed is None
    assert found.calibrations == ()
