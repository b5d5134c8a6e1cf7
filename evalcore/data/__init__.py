"""Loading and validating evaluation data: files in, items and label sets out.

Formats: CSV, TSV, JSONL (one object per line), JSON (an array of objects) and Parquet, from a path,
bytes or an uploaded file (:func:`read_table`). Layouts (:func:`detect_layout`): Vertex's metrics
table, Azure's single-turn and conversation formats, RAGAS samples, long-form labels, and any other
table with a :class:`ColumnMapping`. :func:`load_file` turns a file into a :class:`LoadedFile`: the
items (``item_id`` + canonical fields + metadata) and one :class:`LabelSet` per metric, human and judge
labels side by side on one scale.

Decisions worth knowing:

- **Empty cell = missing.** CSV cells are read as text; an empty cell is the only missing text, so an
  id ``"007"`` stays ``"007"`` and a response reading ``None`` keeps its words.
- **Labels** (see :mod:`evalcore.labels`): numbers are floats (``1``, ``1.0`` and ``"1"`` are one
  label); pairwise words become ``A``/``B``/``TIE``; ``None``, NaN, ``""`` and ``"error"`` are missing.
  ``NA``, ``N/A``, ``null``, ``none`` and ``nan`` are missing in a column of numbers or when the scale
  does not list them, but stay words in a column of words. Judge answers ``invalid``, ``unparsed`` or
  ``failed`` are missing, never wrong labels. Each such decision is listed in ``LoadedFile.notes``.
- **Where labels come from** without a mapping: Vertex-style ``{metric}/human_rating`` /
  ``{metric}/score`` (and pairwise) columns in any layout, and long-form files. Other label columns
  need a :class:`ColumnMapping` (:func:`suggest_mapping` guesses one). Label columns never appear in
  the items' metadata.
- **Errors** are :class:`~evalcore.errors.DataError` subclasses naming the file, the column and the
  first rows (1-based data rows; for JSONL, file lines).
- **Guessing** (:func:`guess_roles`): each column gets a :class:`ColumnRole` from its name: item
  fields, labels grouped by criterion with their annotator or judge (``human_<criterion>_<n>``,
  ``<criterion>_<annotator>``, ``judge_<model>_<criterion>``, Vertex, long format), a judge's
  reasons, aggregates and everything else as metadata; :func:`mapping_from_roles` turns the roles
  into an exact mapping with one :class:`LabelGroup` per criterion.
- **Fractional scores** (3.5 on 1–5): ``fractional=`` chooses (:data:`FRACTIONAL`) a finer scale,
  rounding half up or half to even, or refusing them.
- **Size**: files above :func:`max_upload_bytes` (``EVALCORE_MAX_UPLOAD_MB``, default 200) are refused
  before they are read; files with more than :func:`max_rows` rows (``EVALCORE_MAX_ROWS``, default
  2,000,000) or more than :func:`max_decoded_bytes` of decompressed Parquet data
  (``EVALCORE_MAX_DECODED_MB``, default four times the upload limit) are refused while they are
  read, Parquet from its footer before any data is decoded. Any other failure inside a loader,
  ``MemoryError`` included, is a :class:`~evalcore.errors.DataError` naming the file.

>>> from evalcore.data import load_file
>>> loaded = load_file(b'{"question": "2+2?", "answer": "4"}\\n', name="qa.jsonl")
>>> loaded.layout, loaded.items.columns.tolist()
('azure', ['item_id', 'prompt', 'response'])
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._guess import (
        CRITERION_WORDS,
        FIELD_ROLES,
        ROLE_TEXT,
        ROLES,
        ColumnRole,
        Role,
        guess_roles,
        mapping_from_roles,
    )
    from ._io import (
        DEFAULT_MAX_ROWS,
        DEFAULT_MAX_UPLOAD_MB,
        MAX_DECODED_ENV,
        MAX_ROWS_ENV,
        MAX_UPLOAD_ENV,
        Source,
        max_decoded_bytes,
        max_rows,
        max_upload_bytes,
        read_table,
        write_table,
    )
    from ._jsonl import (
        read_plain_jsonl,
    )
    from ._labels import (
        FINER_STEPS,
        FRACTIONAL,
        JUDGE_FAILURE_WORDS,
        NULL_WORDS,
        Fractional,
        finer_scale,
        round_half,
        round_scores_half_up,
        scale_text,
    )
    from ._layout import (
        CANONICAL_COLUMNS,
        ITEM_FIELDS,
        LAYOUTS,
        Kind,
        Layout,
        detect_layout,
    )
    from ._load import (
        LabelSet,
        LoadedFile,
        items_from_frame,
        labels_long,
        load_file,
        load_frame,
    )
    from ._mapping import (
        ColumnMapping,
        LabelGroup,
    )

__all__ = [
    "CANONICAL_COLUMNS",
    "CRITERION_WORDS",
    "DEFAULT_MAX_ROWS",
    "DEFAULT_MAX_UPLOAD_MB",
    "FIELD_ROLES",
    "FINER_STEPS",
    "FRACTIONAL",
    "ITEM_FIELDS",
    "JUDGE_FAILURE_WORDS",
    "LAYOUTS",
    "MAX_DECODED_ENV",
    "MAX_ROWS_ENV",
    "MAX_UPLOAD_ENV",
    "NULL_WORDS",
    "ROLES",
    "ROLE_TEXT",
    "ColumnMapping",
    "ColumnRole",
    "Fractional",
    "Kind",
    "LabelGroup",
    "LabelSet",
    "Layout",
    "LoadedFile",
    "Role",
    "Source",
    "detect_layout",
    "finer_scale",
    "guess_roles",
    "items_from_frame",
    "labels_long",
    "load_file",
    "load_frame",
    "mapping_from_roles",
    "max_decoded_bytes",
    "max_rows",
    "max_upload_bytes",
    "read_plain_jsonl",
    "read_table",
    "round_half",
    "round_scores_half_up",
    "scale_text",
    "suggest_mapping",
    "write_table",
]

#: Where each public name lives; its module (and pandas with it) loads the first time the name is
#: asked for, so reading a plain JSONL file (:func:`read_plain_jsonl`) never imports pandas.
_WHERE = {
    "CRITERION_WORDS": "_guess",
    "FIELD_ROLES": "_guess",
    "ROLE_TEXT": "_guess",
    "ROLES": "_guess",
    "ColumnRole": "_guess",
    "Role": "_guess",
    "guess_roles": "_guess",
    "mapping_from_roles": "_guess",
    "DEFAULT_MAX_ROWS": "_io",
    "DEFAULT_MAX_UPLOAD_MB": "_io",
    "MAX_DECODED_ENV": "_io",
    "MAX_ROWS_ENV": "_io",
    "MAX_UPLOAD_ENV": "_io",
    "Source": "_io",
    "max_decoded_bytes": "_io",
    "max_rows": "_io",
    "max_upload_bytes": "_io",
    "read_table": "_io",
    "write_table": "_io",
    "read_plain_jsonl": "_jsonl",
    "JUDGE_FAILURE_WORDS": "_labels",
    "NULL_WORDS": "_labels",
    "round_scores_half_up": "_labels",
    "FINER_STEPS": "_labels",
    "FRACTIONAL": "_labels",
    "Fractional": "_labels",
    "finer_scale": "_labels",
    "round_half": "_labels",
    "scale_text": "_labels",
    "CANONICAL_COLUMNS": "_layout",
    "ITEM_FIELDS": "_layout",
    "LAYOUTS": "_layout",
    "Kind": "_layout",
    "Layout": "_layout",
    "detect_layout": "_layout",
    "LabelSet": "_load",
    "LoadedFile": "_load",
    "items_from_frame": "_load",
    "labels_long": "_load",
    "load_file": "_load",
    "load_frame": "_load",
    "ColumnMapping": "_mapping",
    "suggest_mapping": "_guess",
    "LabelGroup": "_mapping",
}


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use."""
    module_name = _WHERE.get(name)
    if module_name is None:
        raise AttributeError(f"module 'evalcore.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"evalcore.data.{module_name}"), name)
    globals()[name] = value
    return value
