"""Persistence for evalcore: SQLAlchemy 2 models, Alembic migrations and a repository facade.

Everything goes through :class:`Store`, which returns frozen dataclasses (never ORM rows) and pandas
DataFrames, and commits every write before returning. SQLite is the default (a file in the user data
directory, in WAL mode, with ``BEGIN IMMEDIATE`` write transactions so that several writer processes
wait for each other instead of failing); PostgreSQL is used through a ``postgresql+psycopg://`` URL.
The same code runs on both. ``Store.open`` upgrades the schema to the newest Alembic revision under a
database-wide lock.

Rules worth knowing:

- Database ids (``int``) are what methods take; ``external_id`` / the ``item_id`` column of a
  DataFrame is the id the dataset's file gave the item. ``items_frame(...).index`` holds the database
  ids.
- Annotations are never updated: a change is a new revision and the latest counts. A submit is
  idempotent on (annotator, item, criterion, base revision); a different answer on a replaced base
  revision raises :class:`RevisionConflictError`.
- A queue is in dataset order; a skip (label ``None`` with a flag) counts as skipped, not done, and
  resuming goes to the first untouched item before coming back to skipped ones.
- Judge results are one row per (run, item, order): recording again keeps the first row, except that
  a ``failed`` one is replaced; ``finished_keys`` leaves failed results out so a resumed run retries
  them.
- An endpoint stores the NAME of the variable that holds its API key, never a key.

>>> store = Store.open("sqlite://")          # in memory, migrated to the newest schema
>>> project = store.create_project("demo")
>>> project.annotators_per_item
1
"""

from evalcore.store._access import (
    PERMISSIONS,
    ROLE_LABELS,
    ROLE_PERMISSIONS,
    ROLES,
    RULES,
    Actor,
    Permission,
    Role,
)
from evalcore.store._archive import (
    DEFAULT_MAX_ARCHIVE_MB,
    DEFAULT_MAX_ARCHIVE_ROWS,
    MAX_ARCHIVE_ENV,
    MAX_ARCHIVE_RATIO,
    MAX_ARCHIVE_ROWS_ENV,
    ArchiveSummary,
    archived_cache_key,
    max_archive_bytes,
    max_archive_rows,
)
from evalcore.store._base import RevisionConflictError
from evalcore.store._batches import RunBatchRecord
from evalcore.store._datasets import ITEM_FIELDS
from evalcore.store._engine import DATABASE_URL_ENV, create_store_engine, default_database_url
from evalcore.store._improve import IMPROVE_STATUSES, ImproveJobRecord, ImproveStatus
from evalcore.store._judge import RESULT_COLUMNS, check_api_key_env, content_hash
from evalcore.store._migrate import head_revision
from evalcore.store._records import (
    ANNOTATION_FLAGS,
    BUILTIN_KEY,
    DEFAULT_THRESHOLDS,
    RUN_STATUSES,
    TERMINAL_RUN_STATUSES,
    AnnotationFlag,
    AnnotationRecord,
    AnnotationSource,
    AnnotationTask,
    AnnotatorRecord,
    CriterionRecord,
    DatasetKind,
    DatasetRecord,
    EndpointKind,
    EndpointRecord,
    ImportSummary,
    ItemRecord,
    JudgeResultInput,
    JudgeRunRecord,
    MembershipRecord,
    MetricVersionContent,
    ModelPriceRecord,
    OrderMode,
    PresentationOrder,
    ProjectRecord,
    QueueStatus,
    ResultStatus,
    RunProgress,
    RunSource,
    RunStatus,
    TemplateRecord,
    TemplateVersionContent,
    TemplateVersionRecord,
    UserRecord,
    VersionContent,
    parse_version_content,
)
from evalcore.store._splits import SplitRecord
from evalcore.store._store import GuardedStore, Store
from evalcore.store._upload import (
    JudgeColumn,
    LabelImport,
    UploadPlan,
    import_plan,
    imported_run_name,
    load_upload,
    offending_rows,
    plan_label_import,
    plan_upload,
    save_upload,
)
from evalcore.store._users import check_oidc_rules
from evalcore.store._workers import ChunkState, RunChunkRecord, WorkerRecord

__all__ = [
    "ANNOTATION_FLAGS",
    "BUILTIN_KEY",
    "DATABASE_URL_ENV",
    "DEFAULT_MAX_ARCHIVE_MB",
    "DEFAULT_MAX_ARCHIVE_ROWS",
    "DEFAULT_THRESHOLDS",
    "IMPROVE_STATUSES",
    "ITEM_FIELDS",
    "MAX_ARCHIVE_ENV",
    "MAX_ARCHIVE_RATIO",
    "MAX_ARCHIVE_ROWS_ENV",
    "PERMISSIONS",
    "RESULT_COLUMNS",
    "ROLES",
    "ROLE_LABELS",
    "ROLE_PERMISSIONS",
    "RULES",
    "RUN_STATUSES",
    "TERMINAL_RUN_STATUSES",
    "Actor",
    "AnnotationFlag",
    "AnnotationRecord",
    "AnnotationSource",
    "AnnotationTask",
    "AnnotatorRecord",
    "ArchiveSummary",
    "ChunkState",
    "CriterionRecord",
    "DatasetKind",
    "DatasetRecord",
    "EndpointKind",
    "EndpointRecord",
    "GuardedStore",
    "ImportSummary",
    "ImproveJobRecord",
    "ImproveStatus",
    "ItemRecord",
    "JudgeColumn",
    "JudgeResultInput",
    "JudgeRunRecord",
    "LabelImport",
    "MembershipRecord",
    "MetricVersionContent",
    "ModelPriceRecord",
    "OrderMode",
    "Permission",
    "PresentationOrder",
    "ProjectRecord",
    "QueueStatus",
    "ResultStatus",
    "RevisionConflictError",
    "Role",
    "RunBatchRecord",
    "RunChunkRecord",
    "RunProgress",
    "RunSource",
    "RunStatus",
    "SplitRecord",
    "Store",
    "TemplateRecord",
    "TemplateVersionContent",
    "TemplateVersionRecord",
    "UploadPlan",
    "UserRecord",
    "VersionContent",
    "WorkerRecord",
    "archived_cache_key",
    "check_api_key_env",
    "check_oidc_rules",
    "content_hash",
    "create_store_engine",
    "default_database_url",
    "head_revision",
    "import_plan",
    "imported_run_name",
    "load_upload",
    "max_archive_bytes",
    "max_archive_rows",
    "offending_rows",
    "parse_version_content",
    "plan_label_import",
    "plan_upload",
    "save_upload",
]
