"""Widgets several pages use, written once: pickers kept for the session, one-shot notices, error
boxes, and the guards that every widget callback and fragment runs under.

A callback or a fragment rerun does not pass through the router, so each goes through
:func:`callback` or :func:`fragment` here: an evalcore error is shown (never a stack trace), a session
that ended sends the browser to the sign-in page, and a refused action says the caller is no longer
allowed. The check itself is the workflow layer's, made at the moment of the call.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

import streamlit as st

from evalcore.errors import EvalcoreError, PermissionDeniedError, SessionEndedError
from ui.render import md_escape, show_error
from ui.state import App

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
