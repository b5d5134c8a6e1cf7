"""The judge side: templates and versions, endpoints, prices, runs, results and the reply cache.

Kept generic on purpose: the judge engine decides what a template's content or a result's details
hold; the store keeps them, hashes them, counts them and hands them back.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

import pandas as pd
from sqlalchemy import case, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from evalcore.errors import (
    ConfigError,
    DataError,
    DuplicateIdError,
    LabelOutOfScaleError,
    NotFoundError,
    StoreError,
    format_rows,
)
from evalcore.labels import Scale
from evalcore.secrets import check_base_url, check_headers, check_key_name
from evalcore.store._base import (
    BATCH_ROWS,
    IN_CHUNK,
    LOCK_TEMPLATE_VERSION,
    StoreBase,
    canonical_label,
    chunks,
    external_id,
    jsonable,
)
from evalcore.store._models import (
    Criterion,
    Dataset,
    Endpoint,
    Item,
    JudgeCache,
    JudgeResult,
    JudgeRun,
    JudgeTemplate,
    ModelPrice,
    Project,
    TemplateVersion,
    table_of,
    utcnow,
)
from evalcore.store._records import (
    RUN_STATUSES,
    TERMINAL_RUN_STATUSES,
    EndpointKind,
    EndpointRecord,
    JudgeResultInput,
    JudgeRunRecord,
    ModelPriceRecord,
    OrderMode,
    RunProgress,
    RunSource,
    RunStatus,
    TemplateRecord,
    TemplateVersionRecord,
    record_from_row,
)

__all__ = ["JudgeMixin", "check_api_key_env", "content_hash"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")


def content_hash(content: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a template's content (sorted keys, no spaces, UTF-8).

    >>> content_hash({"b": 1, "a": "x"}) == content_hash({"a": "x", "b": 1})
    True
    """
    try:
        text = json.dumps(
            content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise StoreError(f"A template's content must be plain JSON: {exc}") from exc
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_api_key_env(value: str | None, allowed: Iterable[str] = ()) -> str | None:
    """Accept the NAME of an environment variable or Streamlit secret that the server's key policy
    allows (:func:`evalcore.secrets.check_key_name`, with the extra names an admin ``allowed``);
    refuse anything like a key without repeating it. Blank means no key (a local server).

    >>> check_api_key_env("OPENAI_API_KEY")
    'OPENAI_API_KEY'
    """
    if value is None or not value.strip():
        return None
    name = value.strip()
    looks_like_key = (
        name.lower().startswith(("sk-", "sk_", "sess-", "bearer "))
        or not _ENV_NAME.match(name)
        or (len(name) >= 24 and "_" not in name and any(c.isdigit() for c in name))
    )
    if looks_like_key:
        raise ConfigError(
            "api_key_env takes the NAME of an environment variable or Streamlit secret (such as "
            "OPENAI_API_KEY), never the key itself; the value given looks like a key and was not "
            "saved."
        )
    return check_key_name(name, allowed)


def _check_extra(extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """An endpoint's extra settings as stored JSON, refused when any name or value at any depth
    carries a credential (:func:`evalcore.secrets.check_headers`)."""
    raw = dict(extra or {})
    check_headers(raw, path="extra")  # bounded walk first: jsonable recurses without a limit
    clean = cast(dict[str, Any], jsonable(raw))
    check_headers(clean, path="extra")
    headers = clean.get("headers")
    if headers is not None and not (
        isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values())
    ):
        raise ConfigError("extra.headers must map header names to text values.")
    return clean


#: The most base URLs one endpoint (a pool of replicas) may list.
MAX_BASE_URLS = 32


def check_base_urls(text: str, hosts: Iterable[str] = ()) -> str:
    r"""An endpoint's base URL, or a pool's URLs (one per line or separated by spaces), each
    checked by :func:`evalcore.secrets.check_base_url`; stored one per line, repeats dropped.

    >>> check_base_urls(" http://127.0.0.1:8001/v1\n\nhttp://127.0.0.1:8002/v1 ")
    'http://127.0.0.1:8001/v1\nhttp://127.0.0.1:8002/v1'
    """
    urls = list(dict.fromkeys(check_base_url(part, hosts) for part in text.split()))
    if len(urls) > MAX_BASE_URLS:
        raise ConfigError(f"An endpoint lists at most {MAX_BASE_URLS} base URLs.")
    joined = "\n".join(urls)
    if len(joined) > 1000:
        raise ConfigError("An endpoint's base URLs take at most 1000 characters in all.")
    return joined


def _names(value: Any) -> list[str]:
    """A server setting that lists names (a list of text, or one text), as a list."""
    if value is None:
        return []
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return [str(v).strip() for v in value if str(v).strip()]


def _template_record(row: JudgeTemplate) -> TemplateRecord:
    return record_from_row(TemplateRecord, row)


def _version_record(row: TemplateVersion) -> TemplateVersionRecord:
    return record_from_row(TemplateVersionRecord, row, content=dict(row.content))


def _endpoint_record(row: Endpoint) -> EndpointRecord:
    return record_from_row(EndpointRecord, row, extra=dict(row.extra or {}))


def _price_record(row: ModelPrice) -> ModelPriceRecord:
    return record_from_row(ModelPriceRecord, row)


def _run_record(row: JudgeRun) -> JudgeRunRecord:
    return record_from_row(JudgeRunRecord, row, settings=dict(row.settings or {}))


#: Columns of :meth:`JudgeMixin.results_frame`, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "item_pk",
    "item_id",
    "position",
    "order",
    "status",
    "label",
    "score",
    "confidence",
    "probabilities",
    "reason",
    "raw",
    "error",
    "tokens_in",
    "tokens_out",
    "cost",
    "latency_s",
    "attempts",
    "cache_key",
    "cached",
    "samples",
    "details",
    "created_at",
)


class JudgeMixin(StoreBase):
    if TYPE_CHECKING:  # from UsersMixin (evalcore/store/_users.py)

        def get_server_setting(self, key: str, default: Any = None) -> Any: ...

        def _record(self, session: Session, action: str, **facts: Any) -> None: ...

    # --- templates --------------------------------------------------------------------------

    def create_template(self, project_id: int, name: str, criterion_id: int) -> TemplateRecord:
        """A new, empty judge template for a criterion; save its content with
        :meth:`save_template_version`."""
        name = str(name or "").strip()
        if not name:
            raise ConfigError("A judge template needs a name.")
        message = f"Project {project_id} already has a judge template named {name!r}."
        try:
            with self._write() as s:
                self._get(s, Project, project_id, "Project")
                criterion = self._get(s, Criterion, criterion_id, "Criterion")
                if criterion.project_id != project_id:
                    raise NotFoundError(f"Criterion {criterion.name!r} belongs to another project.")
                taken = s.scalar(
                    select(JudgeTemplate.id).where(
                        JudgeTemplate.project_id == project_id, JudgeTemplate.name == name
                    )
                )
                if taken is not None:
                    raise StoreError(message)
                row = JudgeTemplate(project_id=project_id, name=name, criterion_id=criterion_id)
                s.add(row)
                s.flush()
                return _template_record(row)
        except IntegrityError as exc:
            raise StoreError(message) from exc

    def get_template(self, template_id: int) -> TemplateRecord:
        with self._read() as s:
            return _template_record(self._get(s, JudgeTemplate, template_id, "Judge template"))

    def list_templates(
        self, project_id: int, *, criterion_id: int | None = None
    ) -> list[TemplateRecord]:
        query = select(JudgeTemplate).where(JudgeTemplate.project_id == project_id)
        if criterion_id is not None:
            query = query.where(JudgeTemplate.criterion_id == criterion_id)
        with self._read() as s:
            return [_template_record(r) for r in s.scalars(query.order_by(JudgeTemplate.name))]

    def save_template_version(
        self,
        template_id: int,
        content: Mapping[str, Any],
        *,
        author: str,
        note: str | None = None,
        created_at: datetime | None = None,
    ) -> TemplateVersionRecord:
        """Save an edit of a template as its next immutable version.

        ``content`` is plain JSON (system and user text, output spec, model settings…); its hash is the
        SHA-256 of its canonical JSON. Saving content identical to the latest version returns that
        version instead of creating a new one. ``created_at`` (default now) is for importing a history.
        """
        digest = content_hash(content)
        stored = json.loads(json.dumps(content))
        with self._write() as s:
            self._get(s, JudgeTemplate, template_id, "Judge template")
            self._lock(s, LOCK_TEMPLATE_VERSION, template_id)
            latest = s.scalars(
                select(TemplateVersion)
                .where(TemplateVersion.template_id == template_id)
                .order_by(TemplateVersion.number.desc())
                .limit(1)
            ).first()
            if latest is not None and latest.content_hash == digest:
                return _version_record(latest)
            row = TemplateVersion(
                template_id=template_id,
                number=(latest.number if latest else 0) + 1,
                content_hash=digest,
                content=stored,
                author=str(author),
                note=note,
            )
            if created_at is not None:
                row.created_at = created_at
            s.add(row)
            s.flush()
            return _version_record(row)

    def list_template_versions(self, template_id: int) -> list[TemplateVersionRecord]:
        """Versions of a template, oldest first."""
        with self._read() as s:
            rows = s.scalars(
                select(TemplateVersion)
                .where(TemplateVersion.template_id == template_id)
                .order_by(TemplateVersion.number)
            )
            return [_version_record(r) for r in rows]

    def get_template_version(self, version_id: int) -> TemplateVersionRecord:
        with self._read() as s:
            return _version_record(self._get(s, TemplateVersion, version_id, "Template version"))

    # --- endpoints and prices ---------------------------------------------------------------

    def upsert_endpoint(
        self,
        name: str,
        *,
        kind: EndpointKind = "openai",
        base_url: str | None = None,
        api_key_env: str | None = None,
        api_version: str | None = None,
        default_model: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> EndpointRecord:
        """Create or replace the endpoint called ``name`` (admins only).

        ``api_key_env`` is the NAME of the environment variable or Streamlit secret that holds the
        key, and the server's key policy must allow it (``allowed_key_names``, see
        :mod:`evalcore.secrets`); the base URL must name a host of ``endpoint_hosts`` when that
        setting lists any, and ``extra`` (headers among it) may hold no credential at any depth.
        Anything refused raises :class:`ConfigError` and saves nothing; a saved change goes to
        the audit log without any header value.
        """
        name = str(name or "").strip()
        if not name:
            raise ConfigError("An endpoint needs a name.")
        if kind not in ("openai", "azure"):
            raise ConfigError(f"An endpoint is 'openai' or 'azure', not {kind!r}.")
        allowed = _names(self.get_server_setting("allowed_key_names", []))
        hosts = _names(self.get_server_setting("endpoint_hosts", []))
        url = check_base_urls(base_url, hosts) if base_url and base_url.strip() else None
        clean_extra = _check_extra(extra)
        values = {
            "kind": kind,
            "base_url": url,
            "api_key_env": check_api_key_env(api_key_env, allowed),
            "api_version": api_version or None,
            "default_model": default_model or None,
            "extra": clean_extra,
        }
        headers = clean_extra.get("headers") or {}
        detail = {
            "kind": kind,
            "base_url": url,
            "api_key_env": values["api_key_env"],
            "api_version": values["api_version"],
            "default_model": values["default_model"],
            "extra_keys": sorted(clean_extra),
            "header_names": sorted(headers),
        }
        table = table_of(Endpoint)
        with self._write() as s:
            existed = s.scalar(select(Endpoint.id).where(Endpoint.name == name)) is not None
            stmt = self._insert(table).values(name=name, created_at=utcnow(), **values)  # type: ignore[arg-type]
            s.execute(stmt.on_conflict_do_update(index_elements=["name"], set_=values))
            row = s.scalars(select(Endpoint).where(Endpoint.name == name)).one()
            detail["change"] = "updated" if existed else "created"
            self._record(s, "endpoint_changed", target=name, detail=detail)  # same transaction
            return _endpoint_record(row)

    def get_endpoint(self, endpoint_id: int) -> EndpointRecord:
        with self._read() as s:
            return _endpoint_record(self._get(s, Endpoint, endpoint_id, "Endpoint"))

    def get_endpoint_by_name(self, name: str) -> EndpointRecord:
        with self._read() as s:
            row = s.scalars(select(Endpoint).where(Endpoint.name == name.strip())).one_or_none()
            if row is None:
                raise NotFoundError(f"There is no endpoint named {name!r}.")
            return _endpoint_record(row)

    def list_endpoints(self) -> list[EndpointRecord]:
        with self._read() as s:
            return [
                _endpoint_record(r) for r in s.scalars(select(Endpoint).order_by(Endpoint.name))
            ]

    def set_model_price(
        self, model: str, *, input_per_mtok: float, output_per_mtok: float
    ) -> ModelPriceRecord:
        """Set the price of a model in US dollars per million input / output tokens."""
        model = str(model or "").strip()
        if not model:
            raise ConfigError("A price needs a model name.")
        prices = {
            "input_per_mtok": float(input_per_mtok),
            "output_per_mtok": float(output_per_mtok),
        }
        if any(not (p >= 0) for p in prices.values()):
            raise ConfigError(f"Prices of {model!r} cannot be negative or NaN.")
        now = utcnow()
        table = table_of(ModelPrice)
        with self._write() as s:
            stmt = self._insert(table).values(model=model, created_at=now, updated_at=now, **prices)  # type: ignore[arg-type]
            s.execute(
                stmt.on_conflict_do_update(
                    index_elements=["model"], set_={**prices, "updated_at": now}
                )
            )
            return _price_record(self._get(s, ModelPrice, model, "Model price"))

    def get_model_prices(self) -> dict[str, ModelPriceRecord]:
        """Every known price, by model name."""
        with self._read() as s:
            rows = s.scalars(select(ModelPrice).order_by(ModelPrice.model))
            return {r.model: _price_record(r) for r in rows}

    def delete_model_price(self, model: str) -> None:
        with self._write() as s:
            row = s.get(ModelPrice, model)
            if row is not None:
                s.delete(row)

    # --- runs -------------------------------------------------------------------------------

    def create_run(
        self,
        dataset_id: int,
        criterion_id: int,
        *,
        name: str,
        model: str | None = None,
        template_version_id: int | None = None,
        endpoint_id: int | None = None,
        settings: Mapping[str, Any] | None = None,
        order_mode: OrderMode = "single",
        seed: int | None = None,
        n_planned: int | None = None,
        source: RunSource = "run",
        created_at: datetime | None = None,
    ) -> JudgeRunRecord:
        """Register a pending judge run of a template version over a dataset.

        ``n_planned`` defaults to the number of items, twice that when ``order_mode="both"`` (every
        pairwise item judged in both orders). ``created_at`` (default now) is for importing a history.
        """
        if order_mode not in ("single", "both", "flip"):
            raise ConfigError(f"order_mode is 'single', 'both' or 'flip', not {order_mode!r}.")
        if source not in ("run", "import"):
            raise ConfigError(
                f"A run's source is 'run' or 'import', not {source!r} (a jury is made by "
                "create_jury_run)."
            )
        with self._write() as s:
            run = self._new_run(
                s,
                dataset_id,
                criterion_id,
                name=name,
                model=model,
                template_version_id=template_version_id,
                endpoint_id=endpoint_id,
                settings=settings,
                order_mode=order_mode,
                seed=seed,
                n_planned=n_planned,
                source=source,
            )
            if created_at is not None:
                run.created_at = created_at
                s.flush()
            return _run_record(run)

    def _new_run(
        self,
        s: Any,
        dataset_id: int,
        criterion_id: int,
        *,
        name: str,
        model: str | None,
        template_version_id: int | None,
        endpoint_id: int | None,
        settings: Mapping[str, Any] | None,
        order_mode: str,
        seed: int | None,
        n_planned: int | None,
        source: str,
        status: str = "pending",
    ) -> JudgeRun:
        dataset = self._get(s, Dataset, dataset_id, "Dataset")
        criterion = self._get(s, Criterion, criterion_id, "Criterion")
        if criterion.project_id != dataset.project_id:
            raise NotFoundError(
                f"Criterion {criterion.name!r} belongs to another project than dataset "
                f"{dataset.name!r}."
            )
        if template_version_id is not None:
            version = self._get(s, TemplateVersion, template_version_id, "Template version")
            template = self._get(s, JudgeTemplate, version.template_id, "Judge template")
            if template.criterion_id != criterion_id:
                raise ConfigError(
                    f"Template {template.name!r} judges another criterion than {criterion.name!r}."
                )
        if endpoint_id is not None:
            self._get(s, Endpoint, endpoint_id, "Endpoint")
        if n_planned is None:
            n_planned = dataset.n_items * (2 if order_mode == "both" else 1)
        run = JudgeRun(
            project_id=dataset.project_id,
            dataset_id=dataset_id,
            criterion_id=criterion_id,
            template_version_id=template_version_id,
            name=str(name).strip() or f"run of {criterion.name}",
            model=model,
            endpoint_id=endpoint_id,
            settings=jsonable(dict(settings or {})),
            order_mode=order_mode,
            seed=seed,
            status=status,
            n_planned=int(n_planned),
            source=source,
        )
        s.add(run)
        s.flush()
        return run

    def get_run(self, run_id: int) -> JudgeRunRecord:
        with self._read() as s:
            return _run_record(self._get(s, JudgeRun, run_id, "Judge run"))

    def list_runs(
        self,
        *,
        project_id: int | None = None,
        dataset_id: int | None = None,
        criterion_id: int | None = None,
        status: RunStatus | Sequence[RunStatus] | None = None,
    ) -> list[JudgeRunRecord]:
        """Runs matching every filter given, newest first."""
        query = select(JudgeRun)
        if project_id is not None:
            query = query.where(JudgeRun.project_id == project_id)
        if dataset_id is not None:
            query = query.where(JudgeRun.dataset_id == dataset_id)
        if criterion_id is not None:
            query = query.where(JudgeRun.criterion_id == criterion_id)
        if status is not None:
            wanted = [status] if isinstance(status, str) else list(status)
            query = query.where(JudgeRun.status.in_(wanted))
        with self._read() as s:
            rows = s.scalars(query.order_by(JudgeRun.created_at.desc(), JudgeRun.id.desc()))
            return [_run_record(r) for r in rows]

    def set_run_status(
        self, run_id: int, status: RunStatus, *, error: str | None = None
    ) -> JudgeRunRecord:
        """Move a run to ``status`` and return it as it now is.

        Entering ``running`` sets ``started_at`` (once) and the heartbeat; entering a final state
        (cancelled, done, failed, interrupted) sets ``finished_at``. A pending cancel request wins:
        a run in ``cancelling`` is not moved back to ``pending`` or ``running``. A run moved back to
        ``pending`` (resumed) starts a new attempt: the error of the attempt before is cleared, so
        an error always belongs to the attempt it came from.
        """
        if status not in RUN_STATUSES:
            raise ConfigError(f"Unknown run status {status!r}; one of {', '.join(RUN_STATUSES)}.")
        with self._write() as s:
            run = self._get(s, JudgeRun, run_id, "Judge run")
            if run.status == "cancelling" and status in ("pending", "running"):
                return _run_record(run)
            now = utcnow()
            run.status = status
            if status == "running":
                run.started_at = run.started_at or now
                run.heartbeat_at = now
                run.finished_at = None
            if status in TERMINAL_RUN_STATUSES:
                run.finished_at = now
            if status == "pending":
                run.error = None  # a new attempt
            if error is not None:
                run.error = error
            s.flush()
            return _run_record(run)

    def heartbeat(self, run_id: int) -> RunStatus:
        """Mark a run as alive now; returns its status so a worker sees a cancel request."""
        with self._write() as s:
            s.execute(update(JudgeRun).where(JudgeRun.id == run_id).values(heartbeat_at=utcnow()))
            status = s.scalar(select(JudgeRun.status).where(JudgeRun.id == run_id))
            if status is None:
                raise NotFoundError(f"Judge run {run_id} does not exist.")
            return cast(RunStatus, status)

    def request_cancel(self, run_id: int) -> JudgeRunRecord:
        """Ask the worker to stop a pending or running run (status ``cancelling``)."""
        with self._write() as s:
            run = self._get(s, JudgeRun, run_id, "Judge run")
            if run.status in ("pending", "running"):
                run.status = "cancelling"
                s.flush()
            return _run_record(run)

    def runs_to_resume(self, *, stale_after_s: float = 60.0) -> list[JudgeRunRecord]:
        """Runs a worker should (re)start: pending or running with no heartbeat for ``stale_after_s``.

        A stale ``cancelling`` run has nobody left to stop it; it is marked ``cancelled`` here.
        Oldest first.
        """
        now = utcnow()
        cutoff = now - timedelta(seconds=stale_after_s)
        stale = or_(JudgeRun.heartbeat_at.is_(None), JudgeRun.heartbeat_at < cutoff)
        with self._write() as s:
            s.execute(
                update(JudgeRun)
                .where(JudgeRun.status == "cancelling", stale)
                .values(status="cancelled", finished_at=now)
            )
            rows = s.scalars(
                select(JudgeRun)
                .where(JudgeRun.status.in_(("pending", "running")), stale)
                .order_by(JudgeRun.created_at, JudgeRun.id)
            )
            return [_run_record(r) for r in rows]

    # --- results ----------------------------------------------------------------------------

    def record_result(
        self,
        run_id: int,
        item_id: int,
        *,
        status: str,
        order: str = "AB",
        **fields: Any,
    ) -> None:
        """Record one judge outcome at once (its own transaction). See :meth:`record_results`."""
        result = JudgeResultInput(item_id=item_id, status=status, order=order, **fields)  # type: ignore[arg-type]
        self.record_results(run_id, [result])

    def record_results(self, run_id: int, results: Iterable[JudgeResultInput]) -> None:
        """Record judge outcomes in one transaction.

        One row per (run, item, order): recording a key again is a replay and leaves the first row,
        except that a ``failed`` row is replaced (a retried item that now succeeded). ``label`` is read
        on the criterion's scale and stored as canonical text. ``item_id`` is the database id of an item
        of the run's dataset.
        """
        batch = list(results)
        if not batch:
            return
        for r in batch:
            if r.status not in ("ok", "unparsed", "failed"):
                raise ConfigError(f"A result's status is ok, unparsed or failed, not {r.status!r}.")
            if r.order not in ("AB", "BA"):
                raise ConfigError(f"A result's order is 'AB' or 'BA', not {r.order!r}.")
        with self._write() as s:
            run = self._get(s, JudgeRun, run_id, "Judge run")
            criterion = self._get(s, Criterion, run.criterion_id, "Criterion")
            scale = Scale.from_dict(criterion.scale)
            wanted = sorted({r.item_id for r in batch})
            known: dict[int, str] = {}
            for group in chunks(wanted, IN_CHUNK):
                known.update(
                    s.execute(
                        select(Item.id, Item.external_id).where(
                            Item.id.in_(group), Item.dataset_id == run.dataset_id
                        )
                    ).all()
                )
            strangers = [i for i in wanted if i not in known]
            if strangers:
                raise NotFoundError(
                    f"Judge run {run_id}: items {strangers[:5]} are not in its dataset."
                )
            now = utcnow()
            # One row per key within the batch too: the first outcome, unless it failed and a
            # later one did not.
            chosen: dict[tuple[int, str], JudgeResultInput] = {}
            for r in batch:
                key = (r.item_id, r.order)
                if key not in chosen or (chosen[key].status == "failed" and r.status != "failed"):
                    chosen[key] = r
            rows = [_result_row(run_id, r, scale, known[r.item_id], now) for r in chosen.values()]
            self._upsert_results(s, rows)

    def _upsert_results(self, s: Any, rows: list[dict[str, Any]]) -> None:
        table = table_of(JudgeResult)
        stmt = self._insert(table)
        replace = {c: stmt.excluded[c] for c in rows[0] if c not in ("run_id", "item_id", "order")}
        stmt = stmt.on_conflict_do_update(
            index_elements=["run_id", "item_id", "order"],
            set_=replace,
            where=table.c.status == "failed",  # type: ignore[attr-defined]
        )
        conn = s.connection()
        for start in range(0, len(rows), BATCH_ROWS):
            conn.execute(stmt, rows[start : start + BATCH_ROWS])

    def finished_keys(self, run_id: int, *, include_failed: bool = False) -> set[tuple[int, str]]:
        """(item database id, order) of the results a resumed run need not redo.

        ``ok`` and ``unparsed`` results are final; ``failed`` ones are retried on resume unless
        ``include_failed``.
        """
        query = select(JudgeResult.item_id, JudgeResult.order).where(JudgeResult.run_id == run_id)
        if not include_failed:
            query = query.where(JudgeResult.status != "failed")
        with self._read() as s:
            return {(int(i), str(o)) for i, o in s.execute(query).all()}

    def run_progress(self, run_id: int) -> RunProgress:
        """Counts, tokens, cost and first/last result time of a run, aggregated in SQL."""

        def count(status: str) -> Any:
            return func.coalesce(func.sum(case((JudgeResult.status == status, 1), else_=0)), 0)

        with self._read() as s:
            planned = s.scalar(select(JudgeRun.n_planned).where(JudgeRun.id == run_id))
            if planned is None:
                raise NotFoundError(f"Judge run {run_id} does not exist.")
            row = s.execute(
                select(
                    count("ok"),
                    count("unparsed"),
                    count("failed"),
                    func.coalesce(func.sum(JudgeResult.tokens_in), 0),
                    func.coalesce(func.sum(JudgeResult.tokens_out), 0),
                    func.coalesce(func.sum(JudgeResult.cost), 0.0),
                    func.min(JudgeResult.created_at),
                    func.max(JudgeResult.created_at),
                ).where(JudgeResult.run_id == run_id)
            ).one()
        return RunProgress(
            run_id=run_id,
            planned=int(planned),
            ok=int(row[0]),
            unparsed=int(row[1]),
            failed=int(row[2]),
            tokens_in=int(row[3]),
            tokens_out=int(row[4]),
            cost=float(row[5]),
            first_at=row[6],
            last_at=row[7],
        )

    def first_failure(self, run_id: int) -> str | None:
        """The error of a run's first ``failed`` result in dataset order (``None``: none failed)."""
        with self._read() as s:
            return s.scalar(
                select(JudgeResult.error)
                .join(Item, Item.id == JudgeResult.item_id)
                .where(JudgeResult.run_id == run_id, JudgeResult.status == "failed")
                .order_by(Item.position, JudgeResult.order)
                .limit(1)
            )

    def results_frame(self, run_id: int) -> pd.DataFrame:
        """Every result of a run in dataset order, with the items' own ids (``item_id``).

        Columns: :data:`RESULT_COLUMNS` (``item_pk`` is the item's database id; ``probabilities``
        is a dict of label text → probability, or None; ``confidence`` the probability of the
        label, or None).
        """
        columns = [
            Item.id,
            Item.external_id,
            Item.position,
            *(getattr(JudgeResult, c) for c in RESULT_COLUMNS[3:]),
        ]
        with self._read() as s:
            self._get(s, JudgeRun, run_id, "Judge run")
            rows = s.execute(
                select(*columns)
                .join(Item, Item.id == JudgeResult.item_id)
                .where(JudgeResult.run_id == run_id)
                .order_by(Item.position, JudgeResult.order)
            ).all()
        return pd.DataFrame([tuple(r) for r in rows], columns=list(RESULT_COLUMNS))

    def import_judge_labels(
        self,
        dataset_id: int,
        criterion_id: int,
        name: str,
        labels: pd.Series,
        reasons: pd.Series | None = None,
        *,
        model: str | None = None,
    ) -> JudgeRunRecord:
        """Store a judge's labels read from a file as a finished run (``source="import"``).

        ``labels`` is indexed by the dataset's own item ids. Every item of the dataset gets a result:
        ``ok`` with its label, or ``failed`` with the error "missing in file" when the file has no
        label for it (so reports show the coverage). An id the dataset does not have, an id given
        twice or a label off the scale raises an error naming it and stores nothing.
        """
        ids = [external_id(v) for v in labels.index.tolist()]
        values = labels.tolist()
        reason_of: dict[str, Any] = {}
        if reasons is not None:
            reason_of = {
                str(external_id(k)): v for k, v in zip(reasons.index, reasons.tolist(), strict=True)
            }
        duplicated = pd.Series(ids).duplicated(keep=False)
        if duplicated.any():
            rows = [int(i) + 1 for i in duplicated[duplicated].index]
            first = ids[rows[0] - 1]
            raise DuplicateIdError(
                f"Judge labels {name!r}: item {first!r} appears more than once "
                f"({format_rows(rows)}); nothing was imported.",
                column="item_id",
                rows=rows,
                item_id=first,
            )
        with self._write() as s:
            dataset = self._get(s, Dataset, dataset_id, "Dataset")
            criterion = self._get(s, Criterion, criterion_id, "Criterion")
            scale = Scale.from_dict(criterion.scale)
            items = s.execute(
                select(Item.id, Item.external_id)
                .where(Item.dataset_id == dataset_id)
                .order_by(Item.position)
            ).all()
            id_of = {ext: pk for pk, ext in items}
            unknown = [n + 1 for n, ext in enumerate(ids) if ext is None or ext not in id_of]
            if unknown:
                first = ids[unknown[0] - 1]
                raise DataError(
                    f"Judge labels {name!r}: dataset {dataset.name!r} has no item {first!r} "
                    f"({format_rows(unknown)}); nothing was imported.",
                    column="item_id",
                    rows=unknown,
                    item_id=first,
                )
            given: dict[str, str | None] = {}
            for n, (ext, raw) in enumerate(zip(ids, values, strict=True), start=1):
                assert ext is not None
                try:
                    given[ext] = canonical_label(scale, raw, item=ext, row=n)
                except LabelOutOfScaleError as exc:
                    raise LabelOutOfScaleError(
                        f"Judge labels {name!r}: {exc.message}; nothing was imported.",
                        column="label",
                        rows=exc.rows,
                        item_id=ext,
                    ) from exc
            run = self._new_run(
                s,
                dataset_id,
                criterion_id,
                name=name,
                model=model,
                template_version_id=None,
                endpoint_id=None,
                settings={"imported": True},
                order_mode="single",
                seed=None,
                n_planned=len(items),
                source="import",
                status="done",
            )
            now = utcnow()
            run.started_at = now
            run.finished_at = now
            results = []
            for pk, ext in items:
                label = given.get(ext)
                reason = reason_of.get(ext)
                results.append(
                    JudgeResultInput(
                        item_id=pk,
                        status="ok" if label is not None else "failed",
                        label=label,
                        reason=None if reason is None or pd.isna(reason) else str(reason),
                        error=None if label is not None else "missing in file",
                    )
                )
            result_rows = [
                _result_row(run.id, r, scale, ext, now)
                for r, (_pk, ext) in zip(results, items, strict=True)
            ]
            if result_rows:
                self._upsert_results(s, result_rows)
                self._analyze(s, table_of(JudgeResult), len(result_rows))
            s.flush()
            return _run_record(run)

    # --- cache ------------------------------------------------------------------------------

    def cache_get(self, key: str) -> dict[str, Any] | None:
        """The cached reply payload for ``key``, or None."""
        with self._read() as s:
            response = s.scalar(select(JudgeCache.response).where(JudgeCache.key == key))
            return None if response is None else dict(response)

    def cache_get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The cached payloads of those ``keys`` that are cached."""
        wanted = sorted(set(keys))
        found: dict[str, dict[str, Any]] = {}
        with self._read() as s:
            for group in chunks(wanted, IN_CHUNK):
                for key, response in s.execute(
                    select(JudgeCache.key, JudgeCache.response).where(JudgeCache.key.in_(group))
                ).all():
                    found[key] = dict(response)
        return found

    def cache_put(self, key: str, model: str | None, response: Mapping[str, Any]) -> None:
        """Cache a reply payload under ``key``; an existing entry is kept as it is."""
        self.cache_put_many([(key, model, response)])

    def cache_put_many(self, entries: Iterable[tuple[str, str | None, Mapping[str, Any]]]) -> None:
        """Cache several ``(key, model, payload)`` replies in one transaction; existing keys are kept."""
        now = utcnow()
        rows: dict[str, dict[str, Any]] = {}
        for key, model, response in entries:
            if key not in rows:  # the first payload of a key wins, as in the table
                rows[key] = {
                    "key": key,
                    "model": model,
                    "response": jsonable(dict(response)),
                    "created_at": now,
                }
        if not rows:
            return
        stmt = self._insert(table_of(JudgeCache)).on_conflict_do_nothing(index_elements=["key"])
        batch = list(rows.values())
        with self._write() as s:
            conn = s.connection()
            for start in range(0, len(batch), BATCH_ROWS):
                conn.execute(stmt, batch[start : start + BATCH_ROWS])


def _probability(value: Any, what: str, item: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not 0.0 <= number <= 1.0:
        raise DataError(
            f"item {item!r}: {what} must be a probability between 0 and 1, not {value!r}",
            item_id=item,
        )
    return number


def _probabilities(value: Mapping[Any, Any] | None, scale: Scale, item: str) -> Any:
    """Label → probability as stored: labels as their canonical text on ``scale``."""
    if value is None:
        return None
    out: dict[str, float] = {}
    for label, p in value.items():
        text = canonical_label(scale, label, item=item)
        if text is None:
            raise DataError(f"item {item!r}: a probability names no label", item_id=item)
        out[text] = _probability(p, f"the probability of {text!r}", item)
    return out


def _result_row(
    run_id: int, r: JudgeResultInput, scale: Scale, item: str, now: Any
) -> dict[str, Any]:
    label = None if r.label is None else canonical_label(scale, r.label, item=item)
    confidence = None if r.confidence is None else _probability(r.confidence, "confidence", item)
    return {
        "run_id": run_id,
        "item_id": r.item_id,
        "order": r.order,
        "status": r.status,
        "label": label,
        "score": None if r.score is None else float(r.score),
        "reason": r.reason,
        "raw": r.raw,
        "error": r.error,
        "tokens_in": r.tokens_in,
        "tokens_out": r.tokens_out,
        "cost": None if r.cost is None else float(r.cost),
        "latency_s": None if r.latency_s is None else float(r.latency_s),
        "attempts": int(r.attempts),
        "cache_key": r.cache_key,
        "cached": bool(r.cached),
        "samples": None if r.samples is None else jsonable(list(r.samples)),
        "details": None if r.details is None else jsonable(dict(r.details)),
        "created_at": now,
        "probabilities": _probabilities(r.probabilities, scale, item),
        "confidence": confidence,
    }
