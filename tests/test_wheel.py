"""The dashboard installs: a wheel built from this checkout, installed into a new virtual environment
in a temporary folder, starts the dashboard with ``evalcore serve`` from any directory.

The new environment gets the wheel alone (``--no-deps``); the packages it depends on are the ones
this suite runs with, made visible through a ``.pth`` line, so the test needs no download. The
checkout is not on its path: what runs is what the wheel carries.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with the wheel of this checkout installed; its bin folder."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check",
         "--build-constraint", str(ROOT / "constraints.txt"), "--wheel-dir", str(dist), str(ROOT)],
        check=True, timeout=900,
    )  # fmt: skip
    (wheel,) = dist.glob("evalcore-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    target = Path(
        subprocess.run(
            [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    # the dependencies this suite runs with, after the environment's own packages
    (target / "zz_suite_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--disable-pip-version-check",
         "--target", str(target), str(wheel)],
        check=True, timeout=600,
    )  # fmt: skip
    return venv / "bin"


def test_the_wheel_carries_the_dashboard_and_the_command(installed: Path, tmp_path: Path) -> None:
    python = installed / "python"
    found = subprocess.run(
        [python, "-c", "import evalcore, evalcore_dashboard, os; "
         "print(evalcore.__file__); print(os.path.dirname(evalcore_dashboard.__path__[0]))"],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    ).stdout.split()  # fmt: skip
    assert not found[0].startswith(str(ROOT))  # the installed copy, not the checkout
    dashboard = Path(found[1]) / "evalcore_dashboard"
    assert (dashboard / "app.py").is_file()
    assert (dashboard / "pages" / "annotate.py").is_file()
    assert (dashboard / "ui" / "launch.py").is_file()


def test_evalcore_serve_starts_the_dashboard_from_any_folder(
    installed: Path, tmp_path: Path
) -> None:
    port = _free_port()
    env = {
        **os.environ,
        "EVALCORE_DATABASE_URL": f"sqlite:///{tmp_path / 'fresh.sqlite'}",
        "PYTHONPATH": "",
        "HOME": str(tmp_path),
    }
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [installed / "python", "-m", "evalcore", "serve", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the server did not answer"
                time.sleep(0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            assert page.status == 200
            assert b'<div id="root">' in page.read()
        if Path("/usr/bin/chromium").exists():
            _the_demo_opens(port)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _the_demo_opens(port: int) -> None:
    """In a real browser: single-user mode on loopback, on the demo project seeded at first open."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--disable-background-networking"],
        )  # fmt: skip
        try:
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/", timeout=120_000)
            page.get_by_text("single-user mode: no sign-in").wait_for(timeout=120_000)
            page.get_by_role("heading", name="Northwind support demo").wait_for(timeout=60_000)
        finally:
            browser.close()
