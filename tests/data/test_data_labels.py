"""Labels: normalisation, scales, rounding, and the label errors with the file, column and rows named."""

from __future__ import annotations

import pandas as pd
import pytest

from evalcore.data import ColumnMapping, load_file, load_frame, round_scores_half_up
from evalcore.data._items import id_strings, text_values
from evalcore.errors import DataError, DuplicateIdError, LabelOutOfScaleError, MixedLabelTypesError
from evalcore.labels import LIKERT_5, PAIRWISE, PASS_FAIL, Scale

H = ColumnMapping(human=("h",))
HJ = ColumnMapping(human=("h",), judge=("j",))


def _labels(loaded, column="h", judges=False):
    """A label column as a list, missing as None (numbers come as float64 with NaN, words as
    objects with None)."""
    table = loaded.label_sets[0].judges if judges else loaded.label_sets[0].human
    column = table[column]
    if column.dtype == "float64":
        return [None if v != v else v for v in column.tolist()]
    return column.tolist()


def test_numeric_labels_are_a_float_array():
    loaded = load_file(b"h,j\n4,ERROR\n,5\n", name="f.csv", mapping=HJ)
    assert loaded.label_sets[0].human["h"].dtype == "float64"
    assert loaded.label_sets[0].judges["j"].dtype == "float64"


def test_one_and_one_point_zero_and_text_one_are_the_same_label():
    csv = load_file(b"h,j\n1,1.0\n2,2\n 1 ,3\n", name="c.csv", mapping=HJ)
    assert _labels(csv) == [1.0, 2.0, 1.0]
    assert _labels(csv, "j", judges=True) == [1.0, 2.0, 3.0]
    jsonl = load_file(
        b'{"h": 1, "j": "1"}\n{"h": 1.0, "j": 2}\n{"h": "2", "j": 3.0}\n',
        name="c.jsonl",
        mapping=HJ,
    )
    assert _labels(jsonl) == [1.0, 1.0, 2.0]
    assert all(isinstance(v, float) for v in _labels(jsonl))
    assert jsonl.label_sets[0].scale.display_labels == ["1", "2", "3"]


def test_error_and_empty_and_nan_become_none():
    loaded = load_file(b"h,j\n4,ERROR\nerror,5\n,Error\n3,4\n", name="e.csv", mapping=HJ)
    assert _labels(loaded) == [4.0, None, None, 3.0]
    assert _labels(loaded, "j", judges=True) == [None, 5.0, None, 4.0]
    frame = pd.DataFrame({"h": [1.0, float("nan"), None, 2.0]})
    assert _labels(load_frame(frame, mapping=H)) == [1.0, None, None, 2.0]
    objects = pd.DataFrame({"h": pd.Series([pd.NA, "", "2", 1], dtype=object)})
    assert _labels(load_frame(objects, mapping=H)) == [None, None, 2.0, 1.0]


def test_null_words_are_missing_among_numbers_but_words_among_words():
    loaded = load_file(b"h\n4\nNA\nnull\nN/A\n5\n", name="n.csv", mapping=H)
    assert _labels(loaded) == [4.0, None, None, None, 5.0]
    assert any("count as missing" in note for note in loaded.notes)
    words = load_file(b"h\nnone\nsome\nall\n", name="w.csv", mapping=H)
    assert _labels(words) == ["none", "some", "all"]


def test_pairwise_vocabularies_are_case_insensitive():
    content = b"h,j\nmodel_A,A\nMODEL_b,baseline\nTie,EQUAL\ncandidate,b\n"
    loaded = load_file(content, name="p.csv", mapping=HJ)
    label_set = loaded.label_sets[0]
    assert label_set.kind == "pairwise"
    assert label_set.scale == PAIRWISE
    assert _labels(loaded) == ["A", "B", "TIE", "A"]
    assert _labels(loaded, "j", judges=True) == ["A", "B", "TIE", "B"]


def test_unreadable_judge_answers_count_as_missing_with_a_note():
    loaded = load_file(
        b"h,j\nmodel_A,model_A\nmodel_B,invalid\ntie,Unparsed\n", name="p.csv", mapping=HJ
    )
    assert _labels(loaded, "j", judges=True) == ["A", None, None]
    assert loaded.notes == (
        "j: 2 unreadable judge answers ('Unparsed', 'invalid') count as missing",
    )


def test_boolean_labels_are_pass_and_fail():
    loaded = load_file(
        b'{"h": true, "j": "yes"}\n{"h": false, "j": "no"}\n', name="b.jsonl", mapping=HJ
    )
    assert loaded.label_sets[0].scale == PASS_FAIL
    assert _labels(loaded) == ["pass", "fail"]
    assert _labels(loaded, "j", judges=True) == ["pass", "fail"]


def test_declared_pass_fail_scale_reads_yes_no_and_ones_and_zeros():
    loaded = load_file(b"h,j\n1,yes\n0,no\n", name="b.csv", mapping=HJ, scales=PASS_FAIL)
    assert _labels(loaded) == ["pass", "fail"]
    assert _labels(loaded, "j", judges=True) == ["pass", "fail"]


def test_scale_is_inferred_from_humans_and_judges_together():
    loaded = load_file(b"h,j\n1,10\n5,3\n", name="s.csv", mapping=HJ)
    assert loaded.label_sets[0].scale.display_labels == [str(i) for i in range(1, 11)]


def test_label_outside_the_declared_scale_names_file_column_values_and_rows(write_file):
    rows = ["fluency/human_rating,fluency/score"]
    scores = ["3", "4", "5", "7", "1", "2", "3", "4", "9", "5", "1", "x"]
    rows += [f"3,{s}" for s in scores]
    path = write_file("run.csv", "\n".join(rows) + "\n")
    with pytest.raises(LabelOutOfScaleError) as info:
        load_file(path, scales={"fluency": LIKERT_5})
    assert str(info.value) == (
        f"{path}: fluency/score: 3 labels are not on the scale 1–5 (7, 9, 'x'); rows 4, 9, 12"
    )
    assert info.value.column == "fluency/score"
    assert info.value.rows == (4, 9, 12)
    assert info.value.source == str(path)


def test_out_of_scale_in_jsonl_names_file_lines():
    content = b'{"h": 1}\n\n{"h": 6}\n{"h": 2}\n'
    with pytest.raises(LabelOutOfScaleError, match=r"l\.jsonl: h: 1 labels are not on .*; line 3$"):
        load_file(content, name="l.jsonl", mapping=H, scales=LIKERT_5)


def test_pairwise_label_off_the_scale():
    with pytest.raises(LabelOutOfScaleError) as info:
        load_file(b"h\nA\nmaybe\n", name="p.csv", mapping=ColumnMapping(human="h", kind="pairwise"))
    assert str(info.value) == "p.csv: h: 1 labels are not on the scale A, B, TIE ('maybe'); row 2"


def test_mixed_label_types_name_the_column_and_rows():
    content = b"id,h\na,4\nb,good\nc,5\nd,3\ne,bad\n"
    with pytest.raises(MixedLabelTypesError) as info:
        load_file(content, name="m.csv", mapping=ColumnMapping(human="h"))
    message = str(info.value)
    assert message.startswith(
        "m.csv: h: labels mix numbers and words: 2 words ('good', 'bad') among numbers (4, 5, 3); "
        "rows 2, 5."
    )
    assert info.value.column == "h"
    assert info.value.rows == (2, 5)


def test_human_numbers_with_judge_words_are_mixed():
    with pytest.raises(MixedLabelTypesError) as info:
        load_file(b"h,j\n1,good\n2,bad\n", name="x.csv", mapping=HJ)
    assert "x.csv: metric 'label': h holds numbers (1, 2) but j holds words ('good', 'bad')" in str(
        info.value
    )
    assert info.value.column == "j"


def test_fractional_judge_scores():
    content = b"h,j\n3,3.5\n4,4\n2,2.5\n5,4.49\n"
    with pytest.raises(LabelOutOfScaleError) as info:
        load_file(content, name="f.csv", mapping=HJ, scales=LIKERT_5)
    assert "(3.5, 2.5, 4.49); rows 1, 3, 4" in str(info.value)
    assert "round_half_up=True" in str(info.value)
    inferred = load_file(content, name="f.csv", mapping=HJ)
    assert 3.5 in inferred.label_sets[0].scale.labels
    rounded = load_file(content, name="f.csv", mapping=HJ, scales=LIKERT_5, round_half_up=True)
    assert _labels(rounded, "j", judges=True) == [4.0, 4.0, 3.0, 4.0]
    assert rounded.notes == ("j: 3 fractional judge scores rounded half up",)
    assert _labels(rounded) == [3.0, 4.0, 2.0, 5.0]  # human labels are never rounded
    rounded_inferred = load_file(content, name="f.csv", mapping=HJ, round_half_up=True)
    assert rounded_inferred.label_sets[0].scale.display_labels == ["2", "3", "4", "5"]


def test_round_scores_half_up_helper():
    assert round_scores_half_up(pd.Series([0.5, 1.5, 2.5, -0.5])).tolist() == [1.0, 2.0, 3.0, 0.0]
    assert round_scores_half_up(pd.Series(["3.5", "tie", None])).tolist() == [4.0, "tie", None]


def test_declared_scale_with_half_steps_is_not_rounded():
    half = Scale((1.0, 1.5, 2.0), "ordinal")
    loaded = load_file(
        b"h,j\n1,1.5\n2,2\n", name="h.csv", mapping=HJ, scales=half, round_half_up=True
    )
    assert _labels(loaded, "j", judges=True) == [1.5, 2.0]


def test_duplicate_item_ids_name_the_column_and_rows():
    content = b"id,h\n7,1\n8,2\n007,3\n7,4\n8,5\n"
    with pytest.raises(DuplicateIdError) as info:
        load_file(content, name="d.csv", mapping=H)
    assert str(info.value) == (
        "d.csv: column 'id' repeats item ids: '7' on rows 1, 4; '8' on rows 2, 5. "
        "Item ids must be unique"
    )
    assert info.value.column == "id"
    assert info.value.rows == (1, 2, 4, 5)


def test_ids_are_text_whatever_the_file_type():
    loaded = load_file(b'{"id": 7, "h": 1}\n{"id": "007", "h": 2}\n', name="i.jsonl", mapping=H)
    assert loaded.items["item_id"].tolist() == ["7", "007"]
    floats = load_frame(pd.DataFrame({"id": [1.0, 2.0], "h": [1, 2]}), mapping=H)
    assert floats.items["item_id"].tolist() == ["1", "2"]


@pytest.mark.parametrize(
    "ids",
    [
        pd.Series([" a", "b ", None, "  "], dtype="str"),  # Arrow-backed text (CSV, Parquet)
        pd.Series([" a", "b ", None, "  "], dtype=object),  # Python strings (JSONL, by hand)
    ],
    ids=["str", "object"],
)
def test_text_ids_are_stripped_and_blank_is_missing_for_every_text_dtype(ids):
    assert id_strings(ids).tolist() == ["a", "b", None, None]


@pytest.mark.parametrize("dtype", ["str", object])
def test_text_fields_keep_their_words_and_blank_is_missing(dtype):
    values = text_values(pd.Series(["a", "", None, " b "], dtype=dtype))
    assert values.dtype == "str"
    assert values.fillna("<missing>").tolist() == ["a", "<missing>", "<missing>", " b "]


def test_a_text_field_with_numbers_goes_cell_by_cell():
    assert text_values(pd.Series(["a", 4.0, 2.5], dtype=object)).tolist() == ["a", "4", "2.5"]


def test_mixed_object_ids_go_cell_by_cell():
    ids = pd.Series([7, "x", 2.5, True, None], dtype=object)
    assert id_strings(ids).tolist() == ["7", "x", "2.5", "True", None]


def test_repeated_ids_are_found_in_a_large_table_with_their_rows():
    # 10,000 unique ids, then row 10,001 repeats the id of row 5 and row 10,002 that of row 9,999
    ids = [f"item-{i}" for i in range(1, 10_001)] + ["item-5", " item-9999 "]
    frame = pd.DataFrame({"id": ids, "h": [1] * len(ids)})
    with pytest.raises(DuplicateIdError) as info:
        load_frame(frame, source="big", mapping=H)
    assert info.value.rows == (5, 9999, 10001, 10002)
    assert "'item-5' on rows 5, 10001; 'item-9999' on rows 9999, 10002" in str(info.value)
    unique = load_frame(frame.iloc[:10_000], mapping=H)
    assert unique.items["item_id"].iloc[-1] == "item-10000"


def test_missing_item_id_is_an_error():
    with pytest.raises(DataError, match=r"e\.csv: column 'id' has no item id on row 2"):
        load_file(b"id,h\na,1\n,2\n", name="e.csv", mapping=H)


def test_a_metric_without_any_label_is_an_error():
    with pytest.raises(DataError, match="metric 'label' has no labels: h are empty"):
        load_file(b"id,h\na,\nb,error\n", name="e.csv", mapping=H)


def test_single_unknown_word_cannot_infer_a_scale():
    with pytest.raises(DataError, match="cannot infer a label scale"):
        load_file(b"h\nblue\nblue\n", name="w.csv", mapping=H)
    declared = Scale(("blue", "red"), "nominal")
    assert _labels(load_file(b"h\nblue\nblue\n", name="w.csv", mapping=H, scales=declared)) == [
        "blue",
        "blue",
    ]


@pytest.mark.parametrize("huge", [b"1" + b"0" * 400, b"1e400"])
def test_numbers_beyond_float_range_are_typed_errors(huge: bytes):
    content = (
        b'{"f/human_rating": 1, "f/score": 2}\n{"f/human_rating": 2, "f/score": ' + huge + b"}\n"
    )
    with pytest.raises(MixedLabelTypesError, match=r"f/score: labels mix numbers and words"):
        load_file(content, name="big.jsonl")
    with pytest.raises(LabelOutOfScaleError, match=r"big\.jsonl: f/score: 1 labels .*; line 2"):
        load_file(content, name="big.jsonl", scales=LIKERT_5)
