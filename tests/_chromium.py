"""A real headless Chromium for the tests, driven over the DevTools protocol.

Debian's ``chromium`` package (``make deps`` installs it) is started with
``--remote-debugging-pipe``: the browser reads protocol messages (JSON, each ended
by a NUL byte) on its file descriptor 3 and writes answers and events on 4.  No
port, so nothing clashes with another test run, and no library: the protocol over
a pipe is a few dozen lines, where a websocket client or playwright would be a
dependency (and playwright wants to download a browser of its own, which it cannot
here).  ``os.posix_spawn`` places the pipes at 3 and 4 in the child; subprocess's
``preexec_fn`` could clobber its own error pipe there.

Chromium refuses to run as root with its sandbox on, and the tests run as root in
CI: ``--no-sandbox`` is given then (only then).  The pages loaded are the tests'
own files.

Without the browser the tests FAIL with the install command, never skip.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
INSTALL_HINT = f"{CHROMIUM} not found: run 'make deps' (apt-get install chromium)"
TIMEOUT = 30.0  # seconds for any one answer: a cold start on a loaded machine included


class BrowserError(RuntimeError):
    pass


@dataclass
class Page:
    """One tab: what it logged as errors, and how to ask it things."""

    browser: Browser
    target_id: str
    session: str
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads
    dialogs: list[str] = field(default_factory=list)  # alert()/confirm(): a script ran

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.call(method, params, session=self.session)

    def goto(self, url: str) -> None:
        """Load ``url`` and wait for its load event (scripts have run by then)."""
        self.browser.events.clear()
        answer = self.call("Page.navigate", {"url": url})
        if answer.get("errorText"):
            raise BrowserError(f"{url}: {answer['errorText']}")
        self.browser.wait_event("Page.loadEventFired", self.session)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able values)."""
        answer = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in answer:
            raise BrowserError(f"{expression!r}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def screenshot(self, path: Path, width: int = 1280) -> Path:
        """A PNG of the whole page (not only the first screenful)."""
        for height in (800, 0):  # at the width first, then as high as the page is there
            if not height:
                height = int(self.evaluate("document.documentElement.scrollHeight"))
            self.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target_id})


class Browser:
    """A headless Chromium process and the protocol connection to it."""

    def __init__(self) -> None:
        if not os.access(CHROMIUM, os.X_OK):
            raise BrowserError(INSTALL_HINT)
        self.profile = Path(tempfile.mkdtemp(prefix="tkbench-chromium-"))
        self.log = self.profile / "stderr.log"
        self.events: list[dict[str, Any]] = []
        self.pages: dict[str, Page] = {}
        self._buffer = b""
        self._next_id = 0
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()
        log = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        argv = [
            CHROMIUM,
            "--headless",
            "--remote-debugging-pipe",
            f"--user-data-dir={self.profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--hide-scrollbars",
            "--font-render-hinting=none",
            "about:blank",
        ]
        if os.geteuid() == 0:
            argv.insert(1, "--no-sandbox")  # Chromium will not start as root with its sandbox
        try:
            self.pid = os.posix_spawn(
                CHROMIUM,
                argv,
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, to_browser, 3),
                    (os.POSIX_SPAWN_DUP2, from_browser, 4),
                    (os.POSIX_SPAWN_DUP2, log, 1),
                    (os.POSIX_SPAWN_DUP2, log, 2),
                ],
                setsid=True,
            )
        finally:
            for fd in (to_browser, from_browser, log):
                os.close(fd)
        self.version = self.call("Browser.getVersion")["product"]

    # ------------------------------------------------------------------ protocol

    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self._write, data) :]
        except BrokenPipeError:
            raise BrowserError(f"chromium has gone away: {self._log_tail()}") from None

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise BrowserError(f"no answer from chromium in {TIMEOUT:g} s")
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise BrowserError(f"chromium has gone away: {self._log_tail()}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        data: dict[str, Any] = json.loads(message)
        return data

    def _dispatch(self, message: dict[str, Any]) -> None:
        """Keep an event, and note what a page reports as an error or a dialog."""
        page = self.pages.get(message.get("sessionId", ""))
        method, params = message.get("method"), message.get("params", {})
        if page is not None:
            if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                args = [a.get("value", a.get("description", "")) for a in params["args"]]
                page.errors.append(f"console.{params['type']}: {' '.join(map(str, args))}")
            elif method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                text = details.get("exception", {}).get("description") or details.get("text")
                page.errors.append(f"exception: {text}")
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                entry = params["entry"]
                page.errors.append(f"{entry['source']}: {entry['text']} {entry.get('url', '')}")
            elif method == "Page.javascriptDialogOpening":
                page.dialogs.append(params.get("message", ""))
                self._send(
                    {
                        "id": self._new_id(),
                        "method": "Page.handleJavaScriptDialog",
                        "params": {"accept": True},
                        "sessionId": page.session,
                    }
                )
        self.events.append(message)

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        """Send a command and wait for its answer (events meanwhile are dispatched)."""
        ident = self._new_id()
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + TIMEOUT
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == ident:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error'].get('message')}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            if "method" in answer:
                self._dispatch(answer)

    def wait_event(self, method: str, session: str | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while True:
            for event in self.events:
                if event.get("method") == method and event.get("sessionId") == session:
                    self.events.remove(event)
                    return event
            message = self._receive(deadline)
            if "method" in message:
                self._dispatch(message)

    # ------------------------------------------------------------------ pages

    def new_page(self) -> Page:
        """A new tab, its error reporting on (console, exceptions, failed loads)."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        page = Page(self, target, session)
        self.pages[session] = page
        for domain in ("Page", "Runtime", "Log"):
            page.call(f"{domain}.enable")
        return page

    def close(self) -> None:
        with contextlib.suppress(BrowserError):
            self.call("Browser.close")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if os.waitpid(self.pid, os.WNOHANG) != (0, 0):
                break
            time.sleep(0.05)
        else:
            os.killpg(self.pid, 9)  # its own process group (setsid): this browser only
            os.waitpid(self.pid, 0)
        for fd in (self._read, self._write):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _log_tail(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(lines[-3:]) or "(empty log)"


def running_browser() -> Iterator[Browser]:
    browser = Browser()
    try:
        yield browser
    finally:
        browser.close()
