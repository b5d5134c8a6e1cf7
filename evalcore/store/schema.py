"""The store's tables, for read-only bulk queries by other evalcore layers.

Repository methods on :class:`~evalcore.store.Store` return dataclasses and are the way to read and
write one thing at a time. A few readers need columns of 10⁵ rows at once (the calibration loader in
:mod:`evalcore.report`), where building a dataclass per row would cost seconds; they compose SQLAlchemy
Core ``select()`` statements over these mapped classes and run them on ``store.engine``. Nothing outside
:mod:`evalcore.store` writes through them: every write goes through a ``Store`` method, which keeps the
invariants (revisions, idempotent submits, atomic saves).
"""

from evalcore.store._models import (
    Annotation,
    Annotator,
    Assignment,
    Criterion,
    Dataset,
    Item,
    JudgeResult,
    JudgeRun,
    Project,
    TemplateVersion,
)

__all__ = [
    "Annotation",
    "Annotator",
    "Assignment",
    "Criterion",
    "Dataset",
    "Item",
    "JudgeResult",
    "JudgeRun",
    "Project",
    "TemplateVersion",
]
