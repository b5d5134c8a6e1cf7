"""Session-state keys and their defaults.

Every key a page keeps in ``st.session_state`` is named here, so that pages and tests agree on them.
Who the user is lives on the server: the session keeps only the token of a server-side session
(:class:`App`), and every workflow call asks the database who it belongs to now. Nothing about the
user is read from or written to the URL.
"""

from __future__ import annotations

from typing import Final

# --- session-state keys --------------------------------------------------------------------------
# One convention for every page: a key is "<page>.<name>", declared once as a Final constant on the
# page's class below (widget keys and a page's own values alike). Keys made of parts (an item id, a
# metric name) come from ``key(Page.NAME, part, ...)``. Nothing outside this module spells a key.


def key(prefix: str, *parts: object) -> str:
    """A key made of parts under a page's prefix: ``key("calibrate", "heat", 3) == "calibrate.heat.3"``."""
    return ".".join((prefix, *(str(p) for p in parts)))


class App:
    """Who the user is and the current project (shared by every page)."""

    TOKEN: Final = "app.token"  # the signed-in session's token (the server keeps only its hash)
    HANDOFF: Final = "app.handoff"  # a one-time code the page posts to /auth/session (the cookie)
    DROPPED: Final = "app.dropped"  # the cookie's token once it ended here: not used again
    SIGNED_OUT: Final = "app.signed_out"  # signed out here: the page clears the cookie
    ENDED: Final = "app.ended"  # a callback found the session over: the next run signs in again
    NOTE: Final = "app.note"  # (level, text) shown once: on the sign-in page, or above a page
    OIDC_TRIED: Final = "app.oidc_tried"  # the identity provider's answer was used this session
    PROJECT_ID: Final = "app.project_id"
    PROJECT_PICKER: Final = "app.project_picker"  # the sidebar's project picker (widget)
    SIGN_IN: Final = "app.sign_in"  # the sign-in form
    SIGN_IN_NAME: Final = "app.sign_in_name"
    SIGN_IN_PASSWORD: Final = "app.sign_in_password"
    SIGN_IN_OIDC: Final = "app.sign_in_oidc"  # key(SIGN_IN_OIDC, provider): "Sign in with …"
    SIGN_OUT: Final = "app.sign_out"


class Annotate:
    """The Annotate page (Home sets DATASET / CRITERION to open a queue)."""

    DATASET: Final = "annotate.dataset"
    CRITERION: Final = "annotate.criterion"
    OPENED: Final = "annotate.opened"  # queues ensure_queue has run for in this session
    POSITION: Final = "annotate.position"  # {(dataset, criterion, annotator): queue position shown}
    SHOWN: Final = "annotate.shown"  # (queue, position, item id, monotonic time first shown)
    NOTICE: Final = "annotate.notice"  # (level, text) shown once above the item
    PENDING: Final = "annotate.pending"  # answers the database refused, kept until saved
    TEAM: Final = "annotate.team"  # {queue: (monotonic time, items the team has left)}
    # widgets
    DATASET_PICK: Final = "annotate.dataset_pick"  # its choice is kept in DATASET
    CRITERION_PICK: Final = "annotate.criterion_pick"  # its choice is kept in CRITERION
    JUMP: Final = "annotate.jump"  # the "go to item" box
    COMMENT: Final = "annotate.comment"  # one box, refilled with each item's own comment
    LABEL: Final = "annotate.label"  # key(LABEL, n): the n-th label button
    PREVIOUS: Final = "annotate.previous"
    NEXT: Final = "annotate.next"
    SKIP: Final = "annotate.skip"
    UNSURE: Final = "annotate.unsure"
    BROKEN: Final = "annotate.broken"
    RESUME: Final = "annotate.resume"
    SAVE_NOW: Final = "annotate.save_now"  # retries the answers in PENDING
    VIEW: Final = "annotate.view"  # item text "Formatted" or "Raw", kept for the session


class Datasets:
    """The Datasets page."""

    TAB: Final = "datasets.tab"
    # Datasets tab
    LIST: Final = "datasets.list"
    PREVIEW_PICK: Final = "datasets.preview_pick"
    PREVIEW: Final = "datasets.preview"
    # Upload tab: the plan of a file and the one form that corrects and imports it
    UPLOAD: Final = (
        "datasets.upload"  # key(UPLOAD, round): the uploader; key(UPLOAD, "roles", file)
    )
    UPLOAD_ROUND: Final = "datasets.upload_round"  # a new round empties the uploaders
    NAME: Final = "datasets.name"
    SAVE: Final = "datasets.save"  # the form's submit button
    # Criteria tab
    CRITERIA: Final = "datasets.criteria"
    CRIT_NAME: Final = "datasets.crit_name"
    CRIT_SCALE: Final = "datasets.crit_scale"
    CRIT_LABELS: Final = "datasets.crit_labels"
    CRIT_ORDERED: Final = "datasets.crit_ordered"
    CRIT_RUBRIC: Final = "datasets.crit_rubric"  # key(CRIT_RUBRIC, scale choice)
    CRIT_ADD: Final = "datasets.crit_add"
    # Labels tab (the same form, for a saved dataset)
    LAB_DATASET: Final = "datasets.lab_dataset"
    LAB_FILE: Final = "datasets.lab_file"  # key(LAB_FILE, round); key(LAB_FILE, "roles", file)
    LAB_IMPORT: Final = "datasets.lab_import"
    # Agreement tab
    AGREE_DATASET: Final = "datasets.agree_dataset"
    AGREE_CRITERION: Final = "datasets.agree_criterion"
    AGREE_HEAT: Final = "datasets.agree_heat"
    AGREE_COUNTS: Final = "datasets.agree_counts"
    # Export tab
    EXPORT_DATASET: Final = "datasets.export_dataset"
    EXPORT_CRITERION: Final = "datasets.export_criterion"
    EXPORT_FORMAT: Final = "datasets.export_format"
    EXPORT_PREVIEW: Final = "datasets.export_preview"
    EXPORT_DOWNLOAD: Final = "datasets.export_download"
    # Project tab
    NEW_PROJECT: Final = "datasets.new_project"
    NEW_PROJECT_DESC: Final = "datasets.new_project_desc"
    CREATE_PROJECT: Final = "datasets.create_project"
    PER_ITEM: Final = "datasets.per_item"
    PER_ITEM_SAVE: Final = "datasets.per_item_save"


class Judge:
    """The Judge page."""

    SECTION: Final = "judge.section"
    GOTO: Final = "judge.goto"  # widget values to set before the next run draws the widgets
    FLASH: Final = "judge.flash"  # (level, text) shown once after a rerun
    DATASET: Final = "judge.dataset"
    ENDPOINT: Final = "judge.endpoint"
    MODEL: Final = "judge.model"  # the model every try and run of the page uses
    # editor
    TEMPLATE: Final = "judge.template"
    VERSION: Final = "judge.version"
    LOADED: Final = "judge.loaded"  # the version id whose content the editor widgets hold
    NEW_NAME: Final = "judge.new_name"
    NEW_CRITERION: Final = "judge.new_criterion"
    CREATE: Final = "judge.create"
    SYSTEM: Final = "judge.system"
    USER: Final = "judge.user"
    RUBRIC: Final = "judge.rubric"
    DESCRIPTION: Final = "judge.description"
    PARSER: Final = "judge.parser"
    LABEL_FIELD: Final = "judge.label_field"
    REASON_FIELD: Final = "judge.reason_field"
    STRUCTURED: Final = "judge.structured"
    AGGREGATE: Final = "judge.aggregate"
    TEMPERATURE: Final = "judge.temperature"
    MAX_TOKENS: Final = "judge.max_tokens"
    SEED: Final = "judge.seed"
    N: Final = "judge.n"
    LOGPROBS: Final = "judge.logprobs"
    THRESHOLD: Final = "judge.threshold"
    NOTE: Final = "judge.note"
    SAVE: Final = "judge.save"
    PREVIEW_ITEM: Final = "judge.preview_item"
    PREVIEW: Final = "judge.preview"  # the preview shown last (the workflow reuses it unchanged)
    TRY: Final = "judge.try"
    TRIAL: Final = "judge.trial"  # (version id, the last "try on 5 items" of it)
    TRIAL_TABLE: Final = "judge.trial_table"
    DIFF_FROM: Final = "judge.diff_from"
    DIFF_TO: Final = "judge.diff_to"
    RESTORE_VERSION: Final = "judge.restore_version"
    RESTORE: Final = "judge.restore"
    HISTORY_TABLE: Final = "judge.history_table"
    # full runs
    LIMIT: Final = "judge.limit"
    CONCURRENCY: Final = "judge.concurrency"
    ORDER: Final = "judge.order"
    REPLICATE: Final = "judge.replicate"  # 0 reuses cached replies; 1, 2, … sample again
    SAMPLES_BY: Final = "judge.samples_by"  # "n" (one request) or "requests" (one per sample)
    MODE: Final = "judge.mode"  # "live" requests, or "batch" (the endpoint's Batch API)
    START: Final = "judge.start"
    RUN: Final = "judge.run"
    RUNS_TABLE: Final = "judge.runs_table"
    CANCEL: Final = "judge.cancel"
    RESUME: Final = "judge.resume"
    FILTER: Final = "judge.filter"
    RESULTS_TABLE: Final = "judge.results_table"
    INSPECT: Final = "judge.inspect"
    RERUN: Final = "judge.rerun_failed"
    DOWNLOAD: Final = "judge.download"
    # metric catalogue
    CATALOGUE: Final = "judge.catalogue"
    METRIC: Final = "judge.metric"
    METRIC_SETTING: Final = "judge.metric_setting"  # key(METRIC_SETTING, metric, setting)
    COPY: Final = "judge.copy"
    METRIC_RUN: Final = "judge.metric_run"
    METRIC_TRY: Final = "judge.metric_try"
    METRIC_TRIAL: Final = "judge.metric_trial"
    # improve (an optimisation of a template version from the human labels)
    IMPROVE_CRITERION: Final = "judge.improve_criterion"
    IMPROVE_VERSION: Final = "judge.improve_version"
    IMPROVE_MANUAL: Final = "judge.improve_manual"  # versions compared as hand-made candidates
    IMPROVE_OPT_ENDPOINT: Final = "judge.improve_opt_endpoint"
    IMPROVE_OPT_MODEL: Final = "judge.improve_opt_model"
    IMPROVE_SETTING: Final = "judge.improve_setting"  # key(IMPROVE_SETTING, name): a number box
    IMPROVE_ESTIMATE: Final = "judge.improve_estimate"
    IMPROVE_START: Final = "judge.improve_start"
    IMPROVE_JOB: Final = "judge.improve_job"
    IMPROVE_CANCEL: Final = "judge.improve_cancel"
    IMPROVE_RESTART: Final = "judge.improve_restart"
    IMPROVE_CANDIDATES: Final = "judge.improve_candidates"
    IMPROVE_DROPPED: Final = "judge.improve_dropped"  # the candidates dropped, with why
    IMPROVE_TEST: Final = "judge.improve_test"
    IMPROVE_SAVE: Final = "judge.improve_save"  # + the candidate id


class Calibrate:
    """The Calibrate page. In the browser's DOM a keyed element has the class ``st-key-<key>`` with
    every character but letters, digits, ``_`` and ``-`` as ``-`` (``.st-key-calibrate-table_box``)."""

    MODE: Final = "calibrate.mode"  # "Project" or "Upload a file"
    # upload mode
    FILES: Final = "calibrate.files"
    FILE_POLICY: Final = "calibrate.file_policy"
    FILE_SCALE: Final = "calibrate.file_scale"  # an optional declared scale, comma-separated
    MAP_HUMAN: Final = "calibrate.map_human"  # + file name: the mapping form's human columns
    MAP_JUDGE: Final = "calibrate.map_judge"  # + file name: its judge columns
    MAP_ID: Final = "calibrate.map_id"  # + file name: its item id column
    FILE_TABLE: Final = "calibrate.file_table"  # + metric: the side-by-side table of the files
    FILE_HEAT: Final = "calibrate.file_heat"  # + metric: their confusion matrices
    FILE_HEADLINE: Final = "calibrate.file_headline"  # + metric, file: the answer first
    # project mode: what to compare
    DATASET: Final = "calibrate.dataset"
    CRITERION: Final = "calibrate.criterion"
    RUNS: Final = "calibrate.runs"  # run ids to compare
    RUNS_FOR: Final = "calibrate.runs_for"  # the (dataset, criterion) RUNS was chosen for
    POLICY: Final = "calibrate.policy"
    BASELINE: Final = "calibrate.baseline"
    HEADLINE: Final = "calibrate.headline"  # the headline's container; + run id: a run's row
    MIN_SHARED: Final = "calibrate.min_shared"  # the ceiling's setting: fewest shared items
    LOO_TABLE: Final = "calibrate.loo_table"  # the ceiling without each annotator
    RATER_TABLE: Final = "calibrate.rater_table"  # Fleiss, Gwet, Krippendorff among all annotators
    SCORE_TABLE: Final = "calibrate.score_table"  # + run title: PPI++ label shares and mean score
    TABLE_BOX: Final = "calibrate.table_box"  # the side-by-side table's container
    TABLE: Final = "calibrate.table"
    VIEW: Final = "calibrate.view"
    # trust or escalate, label next (ui/calibrate_confidence.py)
    TRUST_RUN: Final = "calibrate.trust_run"
    TRUST_TARGET: Final = "calibrate.trust_target"
    TRUST_RISK: Final = "calibrate.trust_risk"
    TRUST_RELIABILITY: Final = "calibrate.trust_reliability"
    TRUST_COVERAGE: Final = "calibrate.trust_coverage"
    TRUST_ESCALATE: Final = "calibrate.trust_escalate"
    TRUST_NOTE: Final = "calibrate.trust_note"
    NEXT_N: Final = "calibrate.next_n"
    NEXT_METRIC: Final = "calibrate.next_metric"
    NEXT_QUEUE: Final = "calibrate.next_queue"
    # confusion matrices and their cells
    HEAT: Final = "calibrate.heat"
    PANEL_RUNS: Final = "calibrate.panel_runs"  # run id of each heatmap panel
    CELL_RUN: Final = "calibrate.cell_run"
    CELL_HUMAN: Final = "calibrate.cell_human"
    CELL_JUDGE: Final = "calibrate.cell_judge"
    CELL_ITEMS: Final = "calibrate.cell_items"
    CELL_ITEM: Final = "calibrate.cell_item"
    CELL_IDS: Final = "calibrate.cell_ids"  # item ids of the cell's table, in its order
    CELL_NAV: Final = "calibrate.cell_nav"  # + prev/next
    # disagreements
    DIS_WRONG: Final = "calibrate.dis_wrong"
    DIS_RIGHT: Final = "calibrate.dis_right"
    DIS_SORT: Final = "calibrate.dis_sort"  # the column the table is sorted by
    DIS_TABLE: Final = "calibrate.dis_table"
    DIS_ITEM: Final = "calibrate.dis_item"
    DIS_IDS: Final = "calibrate.dis_ids"  # item ids of the table in the order shown
    DIS_NAV: Final = "calibrate.dis_nav"  # + prev/next
    ITEM_BOX: Final = "calibrate.item"  # + item id: the open item's container
    # kind views and slices
    SWEEP: Final = "calibrate.sweep"
    BINARY_TABLE: Final = "calibrate.binary_table"
    PAIRWISE_TABLE: Final = "calibrate.pairwise_table"
    SLICE_COL: Final = "calibrate.slice_col"
    SLICE_METRIC: Final = "calibrate.slice_metric"
    SLICE_CHART: Final = "calibrate.slice_chart"
    SLICE_TABLE: Final = "calibrate.slice_table"
    # can the judge replace an annotator (Alt-Test), its agreement with itself, the rate estimate
    ALT: Final = "calibrate.alt"  # + run/epsilon/scoring/verdict/chart/table: the Alt-Test section
    FILE_ALT: Final = "calibrate.file_alt"  # + metric, then the parts of ALT: the upload's Alt-Test
    SELF_TABLE: Final = "calibrate.self_table"
    RATE_TABLE: Final = "calibrate.rate_table"  # + run id: the human-level rate of a binary run


class Reports:
    """The Reports page."""

    RATES: Final = "reports.rates"  # the human-level rate of every binary criterion
    SCORES: Final = "reports.scores"  # PPI++ label shares and mean scores of other scales
    RATERS: Final = "reports.raters"  # Fleiss, Gwet, Krippendorff of every criterion
    POLICY: Final = "reports.policy"
    SUMMARY: Final = "reports.summary"
    HIST_METRIC: Final = "reports.hist_metric"
    HISTORY: Final = "reports.history"
    SCOPE: Final = "reports.scope"  # the criterion the exports cover, or None for all
    FORMAT: Final = "reports.format"
    VERTEX_DATASET: Final = "reports.vertex_dataset"
    DL_HTML: Final = "reports.dl_html"
    DL_HUMAN: Final = "reports.dl_human"
    DL_RESULTS: Final = "reports.dl_results"
    DL_METRICS: Final = "reports.dl_metrics"
    DL_VERTEX: Final = "reports.dl_vertex"


class Settings:
    """The Settings page."""

    ENDPOINT: Final = "settings.endpoint"
    ENDPOINTS_TABLE: Final = "settings.endpoints_table"
    LOADED_ENDPOINT: Final = "settings.loaded_endpoint"
    EP_NAME: Final = "settings.ep_name"
    EP_KIND: Final = "settings.ep_kind"
    EP_URL: Final = "settings.ep_url"
    EP_KEY_ENV: Final = "settings.ep_key_env"
    EP_VERSION: Final = "settings.ep_version"
    EP_MODEL: Final = "settings.ep_model"
    EP_SAVE: Final = "settings.ep_save"
    EP_ERROR: Final = "settings.ep_error"
    EP_CONFIRM: Final = "settings.ep_confirm"  # the question asked before replacing an endpoint
    EP_REPLACE: Final = "settings.ep_replace"
    EP_CANCEL: Final = "settings.ep_cancel"
    PRICES: Final = "settings.prices"
    PRICES_SAVE: Final = "settings.prices_save"
    LOADED_PROJECT: Final = "settings.loaded_project"
    BALANCED_ACCURACY: Final = "settings.balanced_accuracy"
    KAPPA: Final = "settings.kappa"
    ANNOTATORS: Final = "settings.annotators"
    PROJECT_SAVE: Final = "settings.project_save"


class Admin:
    """The Admin page (server administrators only)."""

    USERS_TABLE: Final = "admin.users_table"
    USER: Final = "admin.user"  # the user the edit forms are for
    # add a user
    ADD: Final = "admin.add"
    ADD_NAME: Final = "admin.add_name"
    ADD_EMAIL: Final = "admin.add_email"
    ADD_ROLE: Final = "admin.add_role"
    ADD_PASSWORD: Final = "admin.add_password"
    ADD_PASSWORD2: Final = "admin.add_password2"
    # the chosen user
    ROLE: Final = "admin.role"
    ROLE_SAVE: Final = "admin.role_save"
    MEMBERSHIP: Final = "admin.membership"  # key(MEMBERSHIP, project id): role or "(none)"
    MEMBERSHIP_SAVE: Final = "admin.membership_save"
    DISABLE: Final = "admin.disable"
    RESET: Final = "admin.reset"
    RESET_PASSWORD: Final = "admin.reset_password"
    RESET_PASSWORD2: Final = "admin.reset_password2"
    # server settings
    KEY_NAMES: Final = "admin.key_names"
    HOSTS: Final = "admin.hosts"
    OIDC_RULES: Final = "admin.oidc_rules"
    SETTINGS_SAVE: Final = "admin.settings_save"
    # the audit log
    AUDIT_ACTION: Final = "admin.audit_action"
    AUDIT_LOG: Final = "admin.audit_log"


class Home:
    """The Home page."""

    RATE: Final = "home.rate"  # key(RATE, dataset id, criterion id): open that queue
