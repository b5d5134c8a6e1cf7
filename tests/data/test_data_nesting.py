"""Deep nesting in uploads: a ``DataError`` naming the file and the line, never a RecursionError.

Before, a JSON value nested just under the interpreter's recursion limit loaded, and broke later
(saving it, printing it); one nested deeper raised ``RecursionError`` in some paths (a CSV cell
holding a conversation). Now every JSON the loaders decode is bounded by
:data:`evalcore.limits.MAX_JSON_DEPTH` before it is decoded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.data import load_file, read_table
from evalcore.errors import MalformedFileError
from evalcore.limits import MAX_JSON_DEPTH
from evalcore.store import Store, load_upload, plan_upload, save_upload

ONE_OVER = MAX_JSON_DEPTH + 1


def _deep(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def _row(n: int, extra: str = "1") -> str:
    return f'{{"id": "{n}", "question": "q{n}", "answer": "a{n}", "extra": {extra}}}'


@pytest.mark.parametrize(
    "filler",
    [_deep(ONE_OVER), "[" * 100_000, '{"a": ' * 50_000],
    ids=["one-over-the-limit", "100k-brackets", "50k-objects"],
)
def test_a_deep_jsonl_line_is_named(filler: str) -> None:
    text = "\n".join([_row(1), "", _row(2, filler), _row(3)]) + "\n"
    with pytest.raises(MalformedFileError) as caught:
        load_file(text.encode(), name="deep.jsonl")
    assert str(caught.value).startswith(
        f"deep.jsonl: line 3: JSON nested deeper than {MAX_JSON_DEPTH} levels"
    )
    assert caught.value.rows == (3,)
    assert caught.value.source == "deep.jsonl"


def test_a_deep_value_in_a_json_array_names_its_line() -> None:
    rows = [json.loads(_row(n)) for n in range(1, 4)]
    text = json.dumps(rows, indent=1).replace('"extra": 1', '"extra": ' + _deep(ONE_OVER), 1)
    line = next(n for n, t in enumerate(text.split("\n"), start=1) if "[[" in t)
    with pytest.raises(MalformedFileError, match=f"^deep.json: line {line}: JSON nested deeper"):
        read_table(text.encode(), name="deep.json")
    single = '{"id": "1",\n "prompt": "p", "response": "r",\n "extra": ' + "[" * 100_000
    with pytest.raises(MalformedFileError, match=r"^one\.json: line 3: JSON nested deeper"):
        read_table(single.encode(), name="one.json")


def test_nesting_at_the_limit_loads() -> None:
    # the row object is one level: its field may hold the limit less one
    text = _row(1, _deep(MAX_JSON_DEPTH - 1)) + "\n" + _row(2) + "\n"
    loaded = load_file(text.encode(), name="ok.jsonl")
    assert len(loaded.items) == 2


def test_a_csv_cell_holding_a_deep_conversation_names_the_row() -> None:
    deep = json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}])
    hostile = '[{"role": "user", "content": ' + "[" * 100_000 + "}]"
    text = "id,messages\n1,{}\n2,{}\n".format(
        '"' + deep.replace('"', '""') + '"', '"' + hostile.replace('"', '""') + '"'
    )
    with pytest.raises(MalformedFileError) as caught:
        load_file(text.encode(), name="chat.csv")
    assert "chat.csv: messages on row 2 is JSON nested deeper than 64 levels" in str(caught.value)
    assert caught.value.rows == (2,)


def test_a_csv_cell_holding_deep_contexts_stays_text() -> None:
    deep = "[" * 5_000 + '"a"' + "]" * 5_000
    text = f"user_input,response,retrieved_contexts\nq,r,{deep}\n"
    loaded = load_file(text.encode(), name="ragas.csv")
    assert loaded.layout == "ragas"
    assert loaded.items["context"].iloc[0] == deep  # kept as the text it is, not decoded


def test_a_value_at_the_limit_is_saved_and_read_back(tmp_path: Path) -> None:
    # what loads must also survive being saved (json.dumps inside the store) and read back
    store = Store.open(f"sqlite:///{tmp_path / 'e.sqlite'}")
    project = store.create_project("p")
    deep = _deep(MAX_JSON_DEPTH - 1)
    text = _row(1, deep) + "\n" + _row(2) + "\n"
    loaded = load_upload(text.encode(), name="deep.jsonl")
    dataset = save_upload(
        store, project.id, "deep", plan_upload(loaded, kind="pointwise", targets={})
    )
    saved = store.items_frame(dataset.id)
    assert json.dumps(saved["extra"].iloc[0], separators=(",", ":")) == deep
    store.close()
