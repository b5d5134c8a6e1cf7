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
- A queue is in dataset order, or in the order of its active queue order (``save_queue_order``:
  escalation, "label next"), whose reason annotators never see; a skip (label ``None`` with a flag) counts as skipped, not done, and
  resuming goes to the first untouched item before coming back to skipped ones.
- Judge results are one row per (run, item, order): recording again keeps the first row, except that
  a ``failed`` one is replaced; ``finished_keys`` leaves failed results out so a resumed run retries
  them.
- An endpoint stores the NAME of the variable that holds its API key, never a key.
- A run or an optimisation is carried out under a lease (``claim_lease``, ``renew_lease``,
  ``release_lease``, ``open_leases``): a worker that dies stops renewing it, and another takes the
  job over.
- Importing the package is light: the records (``DatasetRecord``, ``CriterionRecord``, ...) load at
  once, everything that needs SQLAlchemy (``Store``, the upload service, access rules) on first use,
  so a command that reads a file never pays for the database layer.

>>> from evalcore.store import Store
>>> store = Store.open("sqlite://")          # in memory, migrated to the newest schema
>>> project = store.create_project("demo")
>>> project.annotators_per_item
1
"""

import importlib
from typing import TYPE_CHECKING, Any

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
    ProjectAdmins,
    ProjectRecord,
    QueueStatus,
    ResultStatus,
    RunProgress,
    RunSource,
    RunStatus,
    SignInLockRecord,
    TemplateRecord,
    TemplateVersionContent,
    TemplateVersionRecord,
    UserRecord,
    VersionContent,
    parse_version_content,
)

if TYPE_CHECKING:
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
    from evalcore.store._juries import JuryMemberRecord
    from evalcore.store._leases import LEASE_KINDS, LeaseKind, LeaseRecord
    from evalcore.store._limits import ACCOUNT_LIMIT, CLIENT_LIMIT, PAIR_LIMIT, Limit
    from evalcore.store._migrate import head_revision
    from evalcore.store._oidc import OidcClaims
    from evalcore.store._passwords import (
        HASH_LIMIT_ENV,
        MIN_PASSWORD_LENGTH,
        MIN_STRENGTH,
        HashStats,
        PasswordCheck,
        check_password,
        hash_stats,
    )
    from evalcore.store._queue_orders import QUEUE_ORDER_SOURCES, QueueOrderRecord
    from evalcore.store._sessions import KEEP_ENDED
    from evalcore.store._splits import SplitRecord
    from evalcore.store._store import GuardedStore, Store
    from evalcore.store._upload import (
        MOSTLY_EMPTY,
        CheckedImport,
        CriterionPlan,
        ImportPlan,
        ImportResult,
        JudgeColumn,
        LabelImport,
        UploadPlan,
        apply_import,
        check_import,
        import_plan,
        imported_run_name,
        load_upload,
        offending_rows,
        plan_label_import,
        plan_upload,
        propose_import,
        roles_from_table,
        save_upload,
    )
    from evalcore.store._users import OIDC_MATCHES, check_oidc_rules
    from evalcore.store._workers import ChunkState, RunChunkRecord, WorkerRecord

#: The modules that hold the names loaded on first use (they import SQLAlchemy).
_HEAVY = (
    "_archive",
    "_access",
    "_base",
    "_batches",
    "_datasets",
    "_engine",
    "_improve",
    "_judge",
    "_juries",
    "_leases",
    "_limits",
    "_migrate",
    "_oidc",
    "_passwords",
    "_queue_orders",
    "_sessions",
    "_splits",
    "_store",
    "_upload",
    "_users",
    "_workers",
)


def __getattr__(name: str) -> Any:
    """Load a public name that needs SQLAlchemy the first time someone asks for it."""
    if name in __all__:
        for module_name in _HEAVY:
            module = importlib.import_module(f"evalcore.store.{module_name}")
            if name in vars(module):
                value = vars(module)[name]
                globals()[name] = value
                return value
    raise AttributeError(f"module 'evalcore.store' has no attribute {name!r}")


__all__ = [
    "ACCOUNT_LIMIT",
    "ANNOTATION_FLAGS",
    "BUILTIN_KEY",
    "CLIENT_LIMIT",
    "DATABASE_URL_ENV",
    "DEFAULT_MAX_ARCHIVE_MB",
    "DEFAULT_MAX_ARCHIVE_ROWS",
    "DEFAULT_THRESHOLDS",
    "HASH_LIMIT_ENV",
    "IMPROVE_STATUSES",
    "ITEM_FIELDS",
    "KEEP_ENDED",
    "LEASE_KINDS",
    "MAX_ARCHIVE_ENV",
    "MAX_ARCHIVE_RATIO",
    "MAX_ARCHIVE_ROWS_ENV",
    "MIN_PASSWORD_LENGTH",
    "MIN_STRENGTH",
    "MOSTLY_EMPTY",
    "OIDC_MATCHES",
    "PAIR_LIMIT",
    "PERMISSIONS",
    "QUEUE_ORDER_SOURCES",
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
    "CheckedImport",
    "ChunkState",
    "CriterionPlan",
    "CriterionRecord",
    "DatasetKind",
    "DatasetRecord",
    "EndpointKind",
    "EndpointRecord",
    "GuardedStore",
    "HashStats",
    "ImportPlan",
    "ImportResult",
    "ImportSummary",
    "ImproveJobRecord",
    "ImproveStatus",
    "ItemRecord",
    "JudgeColumn",
    "JudgeResultInput",
    "JudgeRunRecord",
    "JuryMemberRecord",
    "LabelImport",
    "LeaseKind",
    "LeaseRecord",
    "Limit",
    "MembershipRecord",
    "MetricVersionContent",
    "ModelPriceRecord",
    "OidcClaims",
    "OrderMode",
    "PasswordCheck",
    "Permission",
    "PresentationOrder",
    "ProjectAdmins",
    "ProjectRecord",
    "QueueOrderRecord",
    "QueueStatus",
    "ResultStatus",
    "RevisionConflictError",
    "Role",
    "RunBatchRecord",
    "RunChunkRecord",
    "RunProgress",
    "RunSource",
    "RunStatus",
    "SignInLockRecord",
    "SplitRecord",
    "Store",
    "TemplateRecord",
    "TemplateVersionContent",
    "TemplateVersionRecord",
    "UploadPlan",
    "UserRecord",
    "VersionContent",
    "WorkerRecord",
    "apply_import",
    "archived_cache_key",
    "check_api_key_env",
    "check_import",
    "check_oidc_rules",
    "check_password",
    "content_hash",
    "create_store_engine",
    "default_database_url",
    "hash_stats",
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
    "propose_import",
    "roles_from_table",
    "save_upload",
]
