"""Every ``st.cache_data`` and ``st.cache_resource`` of the dashboard, in one place.

Each function is a thin wrapper over one evalcore call, keyed by what the result depends on: the
database URL and ids of things that never change (a saved dataset, a criterion's scale), or the bytes
of an uploaded file. A function that reads project data takes the page's store (the signed-in user's
``GuardedStore``) and asks it first whether that user may read it (``store.authorize``): a cached
answer is never handed to someone the store would have refused. Pages and ``ui/*_view.py`` modules call these instead of decorating their own
functions, so what is cached, for how long and under which key can be read in one file. Sections are
grouped by the page that uses them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from evalcore import data as _data
from evalcore import report as _report
from evalcore import runs as _runs
from evalcore.demo.seed import ensure_demo
from evalcore.judge import JudgeItem
from evalcore.labels import Scale
from evalcore.report import HumanCeiling, human_ceiling
from evalcore.store import DatasetRecord, Store

# --- Resources (every page): one Store and one RunWorker per database and server process ---------


def secrets() -> Mapping[str, Any]:
    """Streamlit secrets as a plain mapping (empty without a secrets file). Kept in memory only."""
    try:
        return {str(k): v for k, v in st.secrets.items()}
    except Exception:  # no secrets.toml: keys come from the environment
        return {}


@st.cache_resource(show_spinner="Opening the database…")
def store(url: str) -> Store:
    """The store of ``url``: opened, migrated and (when empty) seeded with the demo once."""
    opened = Store.open(url)
    ensure_demo(opened)
    return opened


@st.cache_resource(show_spinner=False)
def worker(url: str) -> _runs.RunWorker:
    """The background worker of ``url``'s runs; runs left behind by a stopped server resume."""
    started = _runs.RunWorker(store(url), secrets=secrets())
    started.resume_stale()
    return started


def _url() -> str:
    from ui.resources import database_url

    return database_url()


# --- Calibrate's upload mode (the Datasets page reads files through evalcore.workflows.datasets) ---


@st.cache_data(max_entries=16, show_spinner=False)
def read_upload(name: str, data: bytes) -> pd.DataFrame:
    """An uploaded file's table as read (for the mapping form and the rows an error names)."""
    return _data.read_table(data, name=name)


# --- Annotate -------------------------------------------------------------------------------------


def dataset(acting: Store, dataset_id: int) -> DatasetRecord:
    """A saved dataset's record (immutable); needs ``open`` on its project."""
    acting.authorize("open", dataset_id=dataset_id)
    return _dataset(_url(), dataset_id)


@st.cache_data(max_entries=256, show_spinner=False)
def _dataset(url: str, dataset_id: int) -> DatasetRecord:
    """A dataset record (datasets are immutable, so cached by database and id)."""
    return store(url).get_dataset(dataset_id)


# --- Judge ----------------------------------------------------------------------------------------


def judge_items(acting: Store, dataset_id: int) -> list[JudgeItem]:
    """A dataset's items as the judge sees them; needs ``read``."""
    acting.authorize("read", dataset_id=dataset_id)
    return _judge_items(_url(), dataset_id)


@st.cache_data(max_entries=8, show_spinner=False)
def _judge_items(url: str, dataset_id: int) -> list[JudgeItem]:
    """A saved dataset's items as the judge sees them (immutable, so cached by database and id)."""
    return _runs.judge_items(store(url), dataset_id)[0]


# --- Calibrate ------------------------------------------------------------------------------------
# The loader keeps the pieces of calibration data by id and version (evalcore.report's service);
# computed views are kept as they are (st.cache_resource: never copied, never changed after they
# are made), keyed by the data's version and the choices they depend on.


@st.cache_resource(show_spinner=False)
def calibration_loader(url: str) -> _report.CalibrationLoader:
    """The incremental loader of ``url``'s calibration data (one per database and process)."""
    return _report.CalibrationLoader(store(url))


@st.cache_data(ttl=2, max_entries=32, show_spinner=False)
def _data_version(
    url: str, dataset_id: int, criterion_id: int, runs: tuple[int, ...]
) -> _report.DataVersion:
    """The data's version, asked again at most every 2 s (clicks in a row reuse it)."""
    return calibration_loader(url).version(dataset_id, criterion_id, runs)


def _authorize_calibration(
    acting: Store, dataset_id: int, criterion_id: int, runs: tuple[int, ...]
) -> None:
    acting.authorize("read", dataset_id=dataset_id, criterion_id=criterion_id)
    for run_id in runs:
        acting.authorize("read", run_id=run_id)


def data_version(
    acting: Store, dataset_id: int, criterion_id: int, runs: tuple[int, ...]
) -> _report.DataVersion:
    """The version of what a calibration of ``runs`` reads; needs ``read``."""
    _authorize_calibration(acting, dataset_id, criterion_id, runs)
    return _data_version(_url(), dataset_id, criterion_id, runs)


def calibration_data(
    acting: Store, dataset_id: int, criterion_id: int, runs: tuple[int, ...]
) -> tuple[_report.CalibrationData, _report.DataVersion]:
    """The calibration data of ``runs``, reloading only the pieces whose version changed; needs
    ``read`` on the dataset, the criterion and every run."""
    _authorize_calibration(acting, dataset_id, criterion_id, runs)
    url = _url()
    version = _data_version(url, dataset_id, criterion_id, runs)
    return calibration_loader(url).load(dataset_id, criterion_id, runs, version=version)


@st.cache_resource(max_entries=8, show_spinner="Computing the human ceiling…")
def calibration_ceiling(
    dataset_id: int, criterion_id: int, humans: int, _data: _report.CalibrationData
) -> HumanCeiling | bool:
    """The annotators' agreement, kept while only the policy, baseline or runs change (``False``:
    fewer than two annotators)."""
    if _data.human.shape[1] < 2:
        return False
    found = human_ceiling(_data.human, _data.scale, labels=_data.labels, n_boot=1000, seed=0)
    return False if found is None else found


@st.cache_resource(max_entries=16, show_spinner="Computing metrics and intervals…")
def calibration(
    version: _report.DataVersion,
    runs: tuple[int, ...],
    policy: str,
    baseline: int,
    _data: _report.CalibrationData,
) -> _report.Calibration:
    """Every run against the humans (one engine: the same call as the CLI and the report)."""
    known = calibration_ceiling(version.dataset_id, version.criterion_id, version.humans, _data)
    return _report.calibrate_runs(
        _data, policy=policy, baseline=baseline, ceiling=known, n_boot=1000, seed=0
    )


@st.cache_resource(max_entries=16, show_spinner=False)
def disagreements(
    calibration_key: tuple[Any, ...],
    wrong: int | None,
    right: int | None,
    _calibration: _report.Calibration,
) -> pd.DataFrame:
    """The disagreement table of a calibration with its filters (``calibration_key``: the data's
    version, the runs, the policy and the baseline the calibration was made of)."""
    return _report.disagreements(_calibration, wrong=wrong, right=right)


def metadata(acting: Store, dataset_id: int, column: str) -> pd.DataFrame:
    """One metadata column of a dataset's items (immutable, so cached by database and id)."""
    acting.authorize("read", dataset_id=dataset_id)
    return _metadata(_url(), dataset_id, column)


@st.cache_data(max_entries=8, show_spinner=False)
def _metadata(url: str, dataset_id: int, column: str) -> pd.DataFrame:
    return _report.load_metadata(store(url), dataset_id, [column])


@st.cache_resource(max_entries=8, show_spinner="Computing the slices…")
def slices(
    calibration_key: tuple[Any, ...],
    column: str,
    _calibration: _report.Calibration,
    _data: _report.CalibrationData,
) -> pd.DataFrame:
    """The metrics per value of a metadata column, with the calibration's policy, baseline,
    resamples and seed (so the ``(all)`` slice is the main table)."""
    c = _calibration
    return _report.slice_table(
        _data, column, policy=c.policy, baseline=c.baseline, n_boot=c.n_boot, seed=c.seed
    )


@st.cache_data(max_entries=16, show_spinner=False)
def uploaded_file(
    name: str, data: bytes, mapping: _data.ColumnMapping | None, scale: Scale | None = None
) -> _data.LoadedFile:
    """An uploaded file loaded in whatever layout it has (``mapping`` for a plain table), its labels
    on ``scale`` when one is declared."""
    return _data.load_file(data, name=name, mapping=mapping, scales=scale)


@st.cache_resource(max_entries=32, show_spinner="Computing metrics and intervals…")
def file_calibrations(
    name: str,
    data: bytes,
    mapping: _data.ColumnMapping | None,
    policy: str,
    scale: Scale | None = None,
) -> list[_report.Calibration]:
    """Every metric of an uploaded file through the one engine (nothing is saved)."""
    loaded = uploaded_file(name, data, mapping, scale)
    return [
        _report.calibrate_runs(d, policy=policy, n_boot=1000, seed=0)
        for d in _report.file_data(loaded, declared=scale is not None)
    ]


@st.cache_resource(max_entries=16, show_spinner="Running the Alt-Test…")
def alt_test(
    calibration_key: tuple[Any, ...],
    run_id: int,
    scoring: str,
    epsilon: float,
    _data: _report.CalibrationData,
) -> tuple[Any, pd.DataFrame]:
    """The Alt-Test of one run at ``epsilon`` and its curve over epsilon from 0 to 0.3
    (``calibration_key`` says which data it was made of)."""
    result = _report.run_alt_test(_data, run_id, scoring=scoring, epsilon=epsilon)
    curve = _report.run_alt_test_curve(_data, run_id, scoring=scoring)
    return result, curve


def run_samples(
    acting: Store, run_id: int, run_version: Any, scale: Scale, items: pd.Index
) -> pd.DataFrame:
    """Every sample's label of a run (items x samples; no columns when it kept none), read again
    when the run's version (``DataVersion.run(run_id)``) changes; needs ``read``."""
    acting.authorize("read", run_id=run_id)
    return _run_samples(_url(), run_id, run_version, scale, items)


@st.cache_data(max_entries=16, show_spinner="Reading the samples…")
def _run_samples(
    url: str, run_id: int, run_version: Any, _scale: Scale, _items: pd.Index
) -> pd.DataFrame:
    return _report.load_samples(store(url), run_id, _scale, _items)


# --- Reports --------------------------------------------------------------------------------------


def project_calibrations(
    acting: Store, project_id: int, policy: str, version: tuple[_report.DataVersion, ...]
) -> list[_report.Calibration]:
    """Every (criterion, dataset) of a project calibrated, keyed by the data's versions; needs
    ``read``."""
    acting.authorize("read", project_id=project_id)
    return _project_calibrations(_url(), project_id, policy, version)


@st.cache_resource(max_entries=8, show_spinner="Calibrating every criterion…")
def _project_calibrations(
    url: str, project_id: int, policy: str, version: tuple[_report.DataVersion, ...]
) -> list[_report.Calibration]:
    """Every (criterion, dataset) of a project calibrated, keyed by the data's versions."""
    return _report.project_calibrations(store(url), project_id, policy=policy, n_boot=1000)
