"""Layouts: Vertex, Azure, Azure conversations, RAGAS, long-form labels and plain files with a mapping."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evalcore.data import (
    ColumnMapping,
    detect_layout,
    items_from_frame,
    labels_long,
    load_file,
    load_frame,
    suggest_mapping,
    write_table,
)
from evalcore.errors import DuplicateIdError, LayoutError, MalformedFileError, MissingColumnError
from evalcore.labels import LIKERT_5, PAIRWISE


@pytest.mark.parametrize(
    ("columns", "layout"),
    [
        (["prompt", "response", "fluency/human_rating", "fluency/score"], "vertex"),
        (["prompt", "response", "baseline_model_response", "q/pairwise_choice"], "vertex"),
        (["x/human_pairwise_choice"], "vertex"),
        (["question", "context", "answer", "ground_truth"], "azure"),
        (["Question", "Answer"], "azure"),
        (["query", "response", "context"], "azure"),
        (["messages"], "azure_conversation"),
        (["user_input", "response", "retrieved_contexts", "reference"], "ragas"),
        (["item_id", "annotator", "label", "criterion"], "long"),
        (["id", "text", "human_1", "judge_gpt"], "plain"),
        (["prompt", "fluency/explanation"], "plain"),
        ([], "plain"),
    ],
)
def test_detect_layout(columns, layout):
    assert detect_layout(columns) == layout


# --- Vertex ------------------------------------------------------------------------------------------


VERTEX_POINTWISE = """\
prompt,response,reference,topic,fluency/human_rating,fluency/score,fluency/explanation,coherence/human_rating,coherence/score
Say hi,Hello,Hi,greeting,5,5,Reads well,4,3
Count,"1, 2, 3",1 2 3,math,3,4.0,Some slips,2,2
Spell cat,kat,cat,spelling,1,2,Wrong,,error
"""


def test_vertex_pointwise_with_two_metrics(write_file):
    path = write_file("vertex.csv", VERTEX_POINTWISE)
    loaded = load_file(path)
    assert loaded.layout == "vertex"
    assert loaded.kind == "pointwise"
    assert loaded.n_rows == 3
    assert loaded.metrics == ("fluency", "coherence")
    assert loaded.items.columns.tolist() == ["item_id", "prompt", "response", "reference", "topic"]
    assert loaded.items["item_id"].tolist() == ["1", "2", "3"]
    assert loaded.items["response"].tolist() == ["Hello", "1, 2, 3", "kat"]

    fluency = loaded.label_set("fluency")
    assert fluency.kind == "pointwise"
    assert fluency.annotators == ("human",)
    assert fluency.judge_names == ("judge",)
    assert fluency.human["human"].tolist() == [5.0, 3.0, 1.0]
    assert fluency.judges["judge"].tolist() == [5.0, 4.0, 2.0]
    assert fluency.human.index.tolist() == ["1", "2", "3"]
    assert fluency.human.index.name == "item_id"
    assert fluency.explanations is not None
    assert fluency.explanations.tolist() == ["Reads well", "Some slips", "Wrong"]
    assert fluency.scale.display_labels == ["1", "2", "3", "4", "5"]

    coherence = loaded.label_set("coherence")
    # numbers travel as float64, NaN where missing
    assert coherence.human["human"].fillna(-1).tolist() == [4.0, 2.0, -1]
    assert coherence.judges["judge"].fillna(-1).tolist() == [3.0, 2.0, -1]
    assert coherence.explanations is None
    assert coherence.human.dtypes.tolist() == ["float64"]  # numbers travel as float arrays
    assert coherence.scale.display_labels == ["2", "3", "4"]


def test_vertex_pointwise_with_declared_scales(write_file):
    path = write_file("vertex.csv", VERTEX_POINTWISE)
    loaded = load_file(path, scales={"coherence": LIKERT_5})
    assert loaded.label_set("coherence").scale == LIKERT_5


VERTEX_PAIRWISE = """\
prompt,response,baseline_model_response,quality/human_pairwise_choice,quality/pairwise_choice,quality/explanation
Q1,cand 1,base 1,model_A,CANDIDATE,A is better
Q2,cand 2,base 2,tie,TIE,Same
Q3,cand 3,base 3,Model_B,BASELINE,B wins
Q4,cand 4,base 4,TIE,candidate,A
"""


def test_vertex_pairwise_with_mixed_vocabularies(write_file):
    loaded = load_file(write_file("pairs.csv", VERTEX_PAIRWISE))
    assert loaded.layout == "vertex"
    assert loaded.kind == "pairwise"
    assert loaded.items.columns.tolist() == ["item_id", "prompt", "response_a", "response_b"]
    assert loaded.items["response_a"].tolist()[0] == "cand 1"
    assert loaded.items["response_b"].tolist()[0] == "base 1"
    quality = loaded.label_set("quality")
    assert quality.kind == "pairwise"
    assert quality.scale == PAIRWISE
    assert quality.human["human"].tolist() == ["A", "TIE", "B", "TIE"]
    assert quality.judges["judge"].tolist() == ["A", "TIE", "B", "A"]


def test_vertex_several_annotators_and_judges(write_jsonl):
    path = write_jsonl(
        "many.jsonl",
        [
            {
                "id": "a",
                "response": "r",
                "f/human_rating_1": 4,
                "f/human_rating_2": 5,
                "f/human_rating/alice": 3,
                "f/score": 4,
                "f/score/gpt": 2,
            },
            {
                "id": "b",
                "response": "s",
                "f/human_rating_1": 1,
                "f/human_rating_2": None,
                "f/human_rating/alice": 2,
                "f/score": 1,
                "f/score/gpt": 5,
            },
        ],
    )
    label_set = load_file(path).label_set("f")
    assert label_set.annotators == ("human_1", "human_2", "alice")
    assert label_set.judge_names == ("judge", "gpt")
    assert label_set.human.loc["b"].fillna(-1).tolist() == [1.0, -1, 2.0]  # NaN where missing
    assert label_set.human.index.tolist() == ["a", "b"]


# --- Azure -------------------------------------------------------------------------------------------


def test_azure_single_turn(write_jsonl):
    path = write_jsonl(
        "azure.jsonl",
        [
            {
                "question": "Capital of France?",
                "context": "France...",
                "answer": "Paris",
                "ground_truth": "Paris",
                "lang": "en",
            },
            {"question": "2+2?", "context": "", "answer": "4", "ground_truth": "4", "lang": "en"},
        ],
    )
    loaded = load_file(path)
    assert loaded.layout == "azure"
    assert loaded.kind == "pointwise"
    assert loaded.label_sets == ()
    items = loaded.items
    assert items.columns.tolist() == [
        "item_id",
        "prompt",
        "response",
        "context",
        "reference",
        "lang",
    ]
    assert items["prompt"].tolist() == ["Capital of France?", "2+2?"]
    assert items["reference"].tolist() == ["Paris", "4"]
    assert pd.isna(items["context"].iloc[1])


def test_azure_conversation_with_citations(write_jsonl):
    messages = [
        {"role": "user", "content": "What is the return policy?"},
        {
            "role": "assistant",
            "content": "30 days.",
            "context": {"citations": [{"content": "Returns within 30 days.", "title": "Policy"}]},
        },
        {"role": "user", "content": "And for sale items?"},
        {
            "role": "assistant",
            "content": "14 days.",
            "context": {
                "citations": [{"content": "Sale items: 14 days."}, {"content": "Receipt needed."}]
            },
        },
    ]
    path = write_jsonl("chat.jsonl", [{"messages": messages, "channel": "web"}])
    loaded = load_file(path)
    assert loaded.layout == "azure_conversation"
    item = loaded.items.iloc[0]
    assert loaded.items.columns.tolist() == [
        "item_id",
        "prompt",
        "response",
        "context",
        "conversation",
        "channel",
    ]
    assert item["prompt"] == "And for sale items?"
    assert item["response"] == "14 days."
    assert item["context"] == "Returns within 30 days.\n\nSale items: 14 days.\n\nReceipt needed."
    assert json.loads(item["conversation"]) == messages


def test_azure_conversation_from_parquet_and_a_broken_one(tmp_path: Path):
    frame = pd.DataFrame(
        {"messages": [[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]]}
    )
    write_table(frame, tmp_path / "chat.parquet")
    item = load_file(tmp_path / "chat.parquet").items.iloc[0]
    assert (item["prompt"], item["response"]) == ("hi", "yo")
    bad = b'{"messages": [{"role": "user", "content": "a"}]}\n{"messages": "hello"}\n'
    with pytest.raises(MalformedFileError, match=r"bad\.jsonl: messages on line 2 is not a list"):
        load_file(bad, name="bad.jsonl")
    turn = b'{"messages": [{"role": "user", "content": "a"}, "hello"]}\n'
    with pytest.raises(MalformedFileError) as info:
        load_file(turn, name="turn.jsonl")
    assert str(info.value) == (
        "turn.jsonl: messages on line 1 has a turn 2 that is not an object; a conversation is a "
        "list of {role, content} turns"
    )
    assert (info.value.column, info.value.rows) == ("messages", (1,))


# --- RAGAS -------------------------------------------------------------------------------------------


RAGAS_RECORDS = [
    {
        "user_input": "Who wrote Hamlet?",
        "response": "Shakespeare",
        "retrieved_contexts": ["Hamlet is a tragedy.", "Written by Shakespeare."],
        "reference": "William Shakespeare",
    },
    {
        "user_input": "Boiling point?",
        "response": "100 C",
        "retrieved_contexts": [],
        "reference": "100 degrees Celsius",
    },
]


def _check_ragas(loaded):
    assert loaded.layout == "ragas"
    items = loaded.items
    assert items.columns.tolist() == [
        "item_id",
        "prompt",
        "response",
        "context",
        "reference",
        "retrieved_contexts",
    ]
    assert items["context"].iloc[0] == "Hamlet is a tragedy.\n\nWritten by Shakespeare."
    assert pd.isna(items["context"].iloc[1])
    assert items["retrieved_contexts"].tolist() == [
        ["Hamlet is a tragedy.", "Written by Shakespeare."],
        [],
    ]
    assert items["prompt"].iloc[1] == "Boiling point?"


def test_ragas_jsonl(write_jsonl):
    _check_ragas(load_file(write_jsonl("ragas.jsonl", RAGAS_RECORDS)))


def test_ragas_parquet(tmp_path: Path):
    write_table(pd.DataFrame(RAGAS_RECORDS), tmp_path / "ragas.parquet")
    _check_ragas(load_file(tmp_path / "ragas.parquet"))


def test_ragas_csv_with_python_list_text(write_file):
    # RAGAS's to_csv writes lists as Python reprs; JSON text is read as well.
    content = (
        "user_input,response,retrieved_contexts,reference\n"
        "Who wrote Hamlet?,Shakespeare,\"['Hamlet is a tragedy.', 'Written by Shakespeare.']\","
        "William Shakespeare\n"
        "Boiling point?,100 C,[],100 degrees Celsius\n"
    )
    _check_ragas(load_file(write_file("ragas.csv", content)))


# --- long format ---------------------------------------------------------------------------------------


LONG = """\
item_id,prompt,annotator,criterion,label,comment
q1,First,ann1,fluency,4,
q1,First,ann2,fluency,5,nice
q2,Second,ann1,fluency,2,
q1,First,ann1,preference,model_A,
q2,Second,ann2,preference,tie,
"""


def test_long_format_pivots_per_criterion(write_file):
    loaded = load_file(write_file("long.csv", LONG))
    assert loaded.layout == "long"
    assert loaded.n_rows == 5
    assert loaded.items.to_dict("list") == {"item_id": ["q1", "q2"], "prompt": ["First", "Second"]}
    assert loaded.metrics == ("fluency", "preference")
    fluency = loaded.label_set("fluency")
    assert fluency.annotators == ("ann1", "ann2")
    assert fluency.judge_names == ()
    assert fluency.human.to_dict("index") == {
        "q1": {"ann1": 4.0, "ann2": 5.0},
        "q2": {"ann1": 2.0, "ann2": None},
    }
    preference = loaded.label_set("preference")
    assert preference.kind == "pairwise"
    assert loaded.kind == "pairwise"
    assert preference.human.to_dict("index") == {
        "q1": {"ann1": "A", "ann2": None},
        "q2": {"ann1": None, "ann2": "TIE"},
    }


def test_long_format_with_mapped_column_names():
    frame = pd.DataFrame(
        {"doc": ["a", "a", "b"], "rater": ["x", "y", "x"], "grade": ["pass", "fail", "pass"]}
    )
    mapping = ColumnMapping(item_id="doc", annotator="rater", label="grade", metric="correct")
    loaded = load_frame(frame, source="grades", mapping=mapping)
    assert loaded.metrics == ("correct",)
    assert loaded.label_sets[0].human.loc["a"].tolist() == ["pass", "fail"]
    assert loaded.label_sets[0].scale.kind == "binary"


def test_long_format_duplicate_label_names_rows(write_file):
    content = LONG + "q1,First,ann2,fluency,3,again\n"
    path = write_file("dups.csv", content)
    with pytest.raises(DuplicateIdError) as info:
        load_file(path)
    assert str(info.value).startswith(
        f"{path}: item 'q1', annotator 'ann2', criterion 'fluency' has more than one label, "
        "on rows 2, 6"
    )
    assert info.value.rows == (2, 6)


def test_labels_long_round_trip(write_file):
    loaded = load_file(write_file("long.csv", LONG))
    table = labels_long(loaded.label_set("fluency"))
    assert table.to_dict("records") == [
        {"item_id": "q1", "annotator": "ann1", "label": 4.0},
        {"item_id": "q1", "annotator": "ann2", "label": 5.0},
        {"item_id": "q2", "annotator": "ann1", "label": 2.0},
    ]


# --- plain with a mapping ------------------------------------------------------------------------------


PLAIN = """\
uid,question,output,rater_a,rater_b,rater_c,gpt_judge,notes
x1,Hi?,Hello,4,4,5,4,first
x2,Bye?,Ciao,2,,1,3,
x3,Why?,Because,5,5,5,5,last
"""


def test_plain_file_with_a_mapping_and_several_annotators(write_file):
    mapping = ColumnMapping(
        item_id="uid",
        prompt="question",
        response="output",
        human=("rater_a", "rater_b", "rater_c"),
        judge=("gpt_judge",),
        metric="helpfulness",
    )
    loaded = load_file(write_file("plain.csv", PLAIN), mapping=mapping)
    assert loaded.layout == "plain"
    assert loaded.items.columns.tolist() == ["item_id", "prompt", "response", "notes"]
    assert loaded.items["item_id"].tolist() == ["x1", "x2", "x3"]
    label_set = loaded.label_set("helpfulness")
    assert label_set.n_items == 3
    assert label_set.annotators == ("rater_a", "rater_b", "rater_c")
    assert label_set.human.loc["x2"].fillna(-1).tolist() == [2.0, -1, 1.0]  # NaN where missing
    assert label_set.judges["gpt_judge"].tolist() == [4.0, 3.0, 5.0]
    assert labels_long(label_set, judges=True)["annotator"].unique().tolist() == ["gpt_judge"]


def test_plain_file_without_a_mapping_is_a_layout_error(write_file):
    path = write_file("plain.csv", PLAIN)
    with pytest.raises(LayoutError) as info:
        load_file(path)
    message = str(info.value)
    assert message.startswith(
        f"{path}: the columns (uid, question, output, rater_a, rater_b, rater_c, gpt_judge, notes) "
        "match no known layout"
    )
    assert "{metric}/human_rating" in message
    assert "column mapping" in message


def test_mapping_naming_a_missing_column(write_file):
    path = write_file("plain.csv", PLAIN)
    with pytest.raises(MissingColumnError) as info:
        load_file(path, mapping=ColumnMapping(prompt="question", human=("rater_z",)))
    assert str(info.value) == (
        f"{path}: the mapping names column 'rater_z' (as human) but there is no such column; "
        "the columns are: uid, question, output, rater_a, rater_b, rater_c, gpt_judge, notes"
    )
    assert info.value.column == "rater_z"


def test_items_keyed_by_row_number_without_an_id_column():
    loaded = load_file(b"text,h\nhello,1\nbye,2\n", name="n.csv", mapping=ColumnMapping(human="h"))
    assert loaded.items["item_id"].tolist() == ["1", "2"]
    assert loaded.label_sets[0].human.index.tolist() == ["1", "2"]


def test_id_and_idx_columns_key_items():
    loaded = load_file(b'{"idx": 7, "answer": "x", "question": "q"}\n', name="i.jsonl")
    assert loaded.items["item_id"].tolist() == ["7"]
    assert "idx" not in loaded.items.columns


def test_mapping_adds_a_label_set_to_a_known_layout(write_jsonl):
    path = write_jsonl(
        "qa.jsonl",
        [
            {"question": "a", "answer": "b", "human_score": 3, "judge_score": 4},
            {"question": "c", "answer": "d", "human_score": 1, "judge_score": 1},
        ],
    )
    loaded = load_file(path, mapping=ColumnMapping(human="human_score", judge="judge_score"))
    assert loaded.layout == "azure"
    assert loaded.items.columns.tolist() == ["item_id", "prompt", "response"]
    assert loaded.label_sets[0].judges["judge_score"].tolist() == [4.0, 1.0]


def test_metadata_that_shadows_a_canonical_name_is_renamed():
    frame = pd.DataFrame({"prompt": ["old"], "question": ["new"], "h": [1]})
    items = items_from_frame(frame, ColumnMapping(prompt="question"))
    assert items.to_dict("records") == [
        {"item_id": "1", "prompt": "new", "prompt_original": "old", "h": 1}
    ]


def test_items_from_frame_long_form():
    frame = pd.DataFrame(
        {
            "item_id": [1, 1, 2],
            "annotator": ["a", "b", "a"],
            "label": [1, 2, 3],
            "response": ["x", "x", "y"],
        }
    )
    assert items_from_frame(frame).to_dict("list") == {
        "item_id": ["1", "2"],
        "response": ["x", "y"],
    }


def test_label_set_lookup_names_the_metrics(write_file):
    loaded = load_file(write_file("vertex.csv", VERTEX_POINTWISE))
    with pytest.raises(KeyError, match="fluency"):
        loaded.label_set("nope")


# --- suggest_mapping ----------------------------------------------------------------------------------


def test_suggest_mapping_for_a_pairwise_file():
    columns = [
        "item_id",
        "prompt",
        "instruction",
        "response_a",
        "response_b",
        "human_1",
        "human_2",
        "human_n_agree",
        "judge_gpt_choice",
        "judge_gpt_raw",
        "judge_gpt_reason",
    ]
    mapping = suggest_mapping(pd.DataFrame(columns=columns))
    assert mapping.item_id == "item_id"
    assert mapping.prompt == "prompt"
    assert mapping.response is None
    assert (mapping.response_a, mapping.response_b) == ("response_a", "response_b")
    assert mapping.human == ("human_1", "human_2")
    assert mapping.judge == ("judge_gpt_choice",)
    assert mapping.kind == "pairwise"


def test_suggest_mapping_for_rag_and_long_files():
    rag = suggest_mapping(
        pd.DataFrame(columns=["ID", "User_Input", "Answer", "retrieved_contexts", "ground_truth"])
    )
    assert (rag.item_id, rag.prompt, rag.response, rag.context, rag.reference) == (
        "ID",
        "User_Input",
        "Answer",
        "retrieved_contexts",
        "ground_truth",
    )
    long = suggest_mapping(pd.DataFrame(columns=["item_id", "annotator", "criterion", "label"]))
    assert (long.annotator, long.label, long.criterion, long.human) == (
        "annotator",
        "label",
        "criterion",
        (),
    )
    assert long.is_long


def test_column_mapping_validates_its_fields():
    with pytest.raises(ValueError, match="kind"):
        ColumnMapping(kind="ranking")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ColumnMapping(prompt=3)  # type: ignore[arg-type]
    assert ColumnMapping(human=["a", "b"]).human == ("a", "b")  # type: ignore[arg-type]
