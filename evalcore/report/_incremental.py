"""The versioned incremental loader: calibration data from the store, reloading only what changed.

A dashboard asks for the same (dataset, criterion, runs) on every click. :class:`CalibrationLoader`
keeps the pieces it has read (a dataset's items, the human labels of a pair, each run's results) and
their :class:`~evalcore.report.DataVersion`: adding a run to the comparison reads only that run; a
new label reloads only the human labels; a new result reloads only its run. Every load goes through
the same checks as :func:`~evalcore.report.load_calibration_data` and gives the same
:class:`~evalcore.report.CalibrationData`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from evalcore.report._load import (
    CalibrationData,
    DataVersion,
    RunData,
    check_selection,
    data_version,
    load_human,
    load_items,
    load_run,
    run_infos,
)
from evalcore.store import Store

__all__ = ["CalibrationLoader"]


class _Pieces:
    """A small least-recently-used map shared by the threads of a server."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = make()  # outside the lock: a slow read never blocks another session's hit
        with self._lock:
            self._values[key] = value
            while len(self._values) > self._size:
                self._values.popitem(last=False)
        return value


class CalibrationLoader:
    """Loads :class:`~evalcore.report.CalibrationData` from one store, piece by piece.

    ``load`` takes the version to load (default: asked now with
    :func:`~evalcore.report.data_version`); a caller that asks for the version less often (say at
    most every two seconds) passes it in. Pieces are kept per dataset (items), per (dataset,
    criterion, newest annotation) and per (run, its :class:`~evalcore.report.RunVersion`), at most
    ``size`` of each. Thread-safe; the pieces are never changed after they are made.
    """

    def __init__(self, store: Store, *, size: int = 32) -> None:
        self.store = store
        self._items = _Pieces(size)
        self._human = _Pieces(size)
        self._runs = _Pieces(size)

    def version(self, dataset_id: int, criterion_id: int, run_ids: Sequence[int]) -> DataVersion:
        """The data's version now (a few small queries)."""
        return data_version(self.store, dataset_id, criterion_id, run_ids)

    def load(
        self,
        dataset_id: int,
        criterion_id: int,
        run_ids: Sequence[int],
        *,
        version: DataVersion | None = None,
    ) -> tuple[CalibrationData, DataVersion]:
        """The calibration data of ``run_ids`` (in that order) and the version it was loaded at.

        Raises :class:`~evalcore.errors.EvalcoreError` when a run is not of the pair or the
        criterion is of another project.
        """
        store = self.store
        dataset, criterion, chosen = check_selection(store, dataset_id, criterion_id, run_ids)
        if version is None:
            version = self.version(dataset_id, criterion_id, run_ids)
        items: pd.DataFrame = self._items.get(dataset_id, lambda: load_items(store, dataset_id))
        human: pd.DataFrame = self._human.get(
            (dataset_id, criterion_id, version.humans),
            lambda: load_human(store, dataset_id, criterion, items.index),
        )
        runs = []
        for info in run_infos(store, chosen):
            loaded: RunData = self._runs.get(
                (dataset_id, info.id, version.run(info.id)),
                lambda info=info: load_run(store, info, criterion.scale, items.index),  # type: ignore[misc]
            )
            # the title depends on the runs shown together: the results are shared, the info is not
            runs.append(replace(loaded, info=info))
        return CalibrationData(dataset, criterion, items, human, tuple(runs)), version
