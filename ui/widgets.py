"""Widgets several pages use, written once: pickers kept for the session (a dataset picker among
them), file uploads, one-shot notices and jumps to other widget values, error boxes, a try's
results, and the guards that every widget callback and fragment runs under.

A callback or a fragment rerun does not pass through the router, so each goes through
:func:`callback` or :func:`fragment` here: an evalcore error is shown (never a stack trace), a session
that ended sends the browser to the sign-in page, and a refused action says the caller is no longer
allowed. The check itself is the workflow layer's, made at the moment of the call.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import streamlit as st

from evalcore.errors import EvalcoreError, PermissionDeniedError, SessionEndedError
from evalcore.words import plural
from evalcore.workflows.datasets import describe_dataset
from ui.render import md_escape, show_error
from ui.state import App

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.workflows.datasets import DatasetRecord
    from evalcore.workflows.judge import Trial

P = ParamSpec("P")
T = TypeVar("T")

NO_LONGER_ALLOWED = "You are no longer allowed to do this"

# --- pickers ---------------------------------------------------------------------------------------


def choose(key: str, options: Sequence[Any], default: Any) -> None:
    """Put ``default`` in a picker's state when its value is not one of ``options``."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default


def picker(
    where: Any, label: str, options: Sequence[Any], *, key: str, default: Any, **kwargs: Any
) -> Any:
    """A selectbox kept for the session, on ``default`` while its value is not one of ``options``."""
    choose(key, options, default)
    return where.selectbox(label, options, key=key, persist_state="session", **kwargs)


def dataset_picker(
    where: Any,
    datasets: Sequence[DatasetRecord],
    *,
    key: str,
    label: str = "Dataset",
    **kwargs: Any,
) -> DatasetRecord:
    """A picker of datasets by name, version, kind and size (on the first until one is chosen)."""
    by_id = {d.id: d for d in datasets}
    kwargs.setdefault("default", next(iter(by_id)))
    chosen = picker(where, label, list(by_id), key=key,
                    format_func=lambda i: describe_dataset(by_id[i]), **kwargs)  # fmt: skip
    return by_id[chosen]


def uploaded(
    label: str, *, types: Sequence[str], key: str, hint: str = "", multiple: bool = False,
    **kwargs: Any,
) -> list[tuple[str, bytes]]:  # fmt: skip
    """The (name, content) of each file uploaded in a file picker; ``hint`` shows while none is."""
    found = st.file_uploader(label, type=list(types), key=key, accept_multiple_files=multiple,
                             **kwargs)  # fmt: skip
    files = [] if found is None else found if isinstance(found, list) else [found]
    if not files and hint:
        st.caption(hint)
    return [(f.name, f.getvalue()) for f in files]


# --- notices ---------------------------------------------------------------------------------------

_SHOW = {"error": st.error, "warning": st.warning, "success": st.success}


def note(level: str, text: str, *, key: str = App.NOTE) -> None:
    """Keep a notice to show once, on the next run (``show_note`` with the same key)."""
    st.session_state[key] = (level, text)


def show_note(key: str = App.NOTE) -> None:
    """Show (and forget) the notice kept under ``key``; dataset text in it is shown as text."""
    kept = st.session_state.pop(key, None)
    if kept:
        level, text = kept
        _SHOW.get(level, st.info)(md_escape(text))


def flash(message: str, *, key: str = App.NOTE) -> None:
    """A success notice shown once, on the next run (``show_note`` with the same key)."""
    note("success", message, key=key)


def goto(keys: type, **values: Any) -> None:
    """Set widget values on the next run, before its widgets are drawn, and rerun now: each name
    is an attribute of the page's key class ``keys`` (``goto(Judge, run=3)``); ``apply_goto``."""
    st.session_state[keys.GOTO] = {getattr(keys, k.upper(), k): v for k, v in values.items()}  # type: ignore[attr-defined]
    st.rerun()


def apply_goto(keys: type) -> None:
    """Apply the values a previous run asked for; call before any widget of the page is drawn."""
    for key, value in (st.session_state.pop(keys.GOTO, None) or {}).items():  # type: ignore[attr-defined]
        st.session_state[key] = value


def show_data_error(exc: EvalcoreError, name: str, rows: pd.DataFrame | None, *, key: str) -> None:
    """A file's error in full, the ``rows`` it names as they are in the file, and that nothing was
    saved."""
    show_error(exc, title=name)
    if rows is not None:
        st.caption("The rows named above, as they are in the file:")
        st.dataframe(rows.astype(str), key=key, width="stretch")
    st.caption("Nothing was saved.")


def show_trial(trial: Trial, *, key: str) -> None:
    """A try's results: the model, what it sent, the table and a pipeline's intermediates."""
    st.caption(
        f"Model {md_escape(trial.model or '(none)')} · {plural(trial.requests, 'request')} sent "
        "(cached replies cost none)"
    )
    st.dataframe(trial.table, hide_index=True, key=key)
    for item_id, details in trial.details:
        with st.expander(f"Details of item {md_escape(item_id)}"):
            st.json(dict(details))


def attempt(action: Callable[[], T], *, title: str) -> T | None:
    """Run ``action``; show an evalcore error as the user should read it and return ``None``.
    A session that ended, or an action no longer allowed, is left to the guards around it."""
    try:
        return action()
    except (SessionEndedError, PermissionDeniedError):
        raise
    except EvalcoreError as exc:
        show_error(exc, title=title)
        return None


# --- the guards --------------------------------------------------------------------------------------


def session_ended(exc: SessionEndedError) -> None:
    """Forget the ended session (the next run shows the sign-in page with the reason)."""
    st.session_state.pop(App.TOKEN, None)
    st.session_state[App.ENDED] = True
    note("warning", str(exc))


def callback(function: Callable[P, None]) -> Callable[P, None]:
    """A widget callback that shows evalcore errors on the next run instead of failing it."""

    @functools.wraps(function)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            function(*args, **kwargs)
        except SessionEndedError as exc:
            session_ended(exc)
        except PermissionDeniedError as exc:
            note("error", f"{NO_LONGER_ALLOWED}: {exc}")
        except EvalcoreError as exc:
            note("error", str(exc))

    return guarded


@callback
def run_command(
    command: Callable[..., str], *args: Any, forget: tuple[str, ...] = (), **widgets: str
) -> None:
    """A callback that runs one workflow command and notes the text it returns; ``widgets`` name
    the session-state keys whose values become its keyword arguments (read at the click);
    ``forget`` are keys cleared after it succeeded."""
    done = command(*args, **{k: st.session_state.get(w) for k, w in widgets.items()})
    for widget in forget:
        st.session_state.pop(widget, None)
    note("success", done)


def fragment(function: Callable[P, None] | None = None, *, run_every: float | None = None) -> Any:
    """``st.fragment`` with the guards: a fragment rerun whose session ended (in its own calls or
    in a callback just before) reruns the whole app, which shows the sign-in page with the reason;
    a refused action shows "no longer allowed"."""

    def decorate(body: Callable[P, None]) -> Callable[P, None]:
        @functools.wraps(body)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> None:
            if st.session_state.get(App.ENDED):  # a callback of this rerun found it over
                st.rerun(scope="app")
            show_note()
            try:
                body(*args, **kwargs)
            except SessionEndedError as exc:
                session_ended(exc)
                st.rerun(scope="app")
            except PermissionDeniedError as exc:
                st.error(f"{NO_LONGER_ALLOWED}: {md_escape(exc)}", icon=":material/block:")
            except EvalcoreError as exc:
                show_error(exc)

        return st.fragment(guarded, run_every=run_every)  # type: ignore[no-any-return]

    return decorate if function is None else decorate(function)


# --- small formats -------------------------------------------------------------------------------------


def money(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def duration(seconds: float | None) -> str:
    if seconds is None or math.isnan(seconds):
        return "–"
    minutes, rest = divmod(max(0, round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"
