"""Open report pages in a real headless Chromium and check that they load and that every image renders.

Chromium (Debian's `chromium` package; `.ci/run` installs it) is driven over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: JSON messages separated by NUL bytes on file descriptors 3 and 4), so nothing but the
standard library is needed. For each page: open it, wait until `document.readyState` is complete, then read every
`<img>`'s `complete` flag and `naturalWidth` (0 means a broken image).

    python tests/browser_check.py docs/results/P1.html [more pages] [--screenshot docs/results/report_screenshot.png]

prints one line per page and writes a screenshot of the first page; `tests/test_browser.py` runs the same check.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe", "--window-size=1280,1600"]  # fmt: skip
IMAGES = (
    "JSON.stringify({url: location.href, ready: document.readyState, title: document.title, "
    "tables: document.querySelectorAll('table').length, "
    "images: Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])})"
)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return None


class Browser:
    """One headless Chromium process and its DevTools pipe."""

    def __init__(self, executable: str):
        self.profile = tempfile.mkdtemp(prefix="hf_icl-chromium-")
        to_child, self._write = os.pipe()  # os.pipe() descriptors are not inherited: only the copies below are
        self._read, from_child = os.pipe()
        wiring = [(os.POSIX_SPAWN_DUP2, to_child, 100), (os.POSIX_SPAWN_DUP2, from_child, 101),
                  (os.POSIX_SPAWN_DUP2, 100, 3), (os.POSIX_SPAWN_DUP2, 101, 4),  # the child reads fd 3, writes fd 4
                  (os.POSIX_SPAWN_CLOSE, 100), (os.POSIX_SPAWN_CLOSE, 101),
                  (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                  (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]  # fmt: skip
        argv = [executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"]
        self.pid = os.posix_spawn(executable, argv, dict(os.environ), file_actions=wiring)
        os.close(to_child)
        os.close(from_child)
        self._buffer, self._next = b"", 0

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30.0):
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply["result"]
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raise TimeoutError(f"{method}: no reply in {timeout} s")

    def open(self, url: str) -> str:
        target = self.send("Target.createTarget", {"url": url})["targetId"]
        return self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def evaluate(self, session: str, expression: str):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
        return result["result"].get("value")

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        deadline = time.monotonic() + 10
        while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                break
            time.sleep(0.1)
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


def check_page(browser: Browser, page: Path, screenshot: Path | None = None, timeout: float = 30.0) -> dict:
    """`{"ready", "title", "tables", "images": [[src, complete, naturalWidth]]}` once the page has loaded (and every
    image has finished loading or failed)."""
    url = page.resolve().as_uri()
    session = browser.open(url)
    deadline = time.monotonic() + timeout
    while True:
        state = json.loads(browser.evaluate(session, IMAGES))
        loaded = state["url"] == url and state["ready"] == "complete"
        if loaded and all(done for _, done, _ in state["images"]):
            break
        if time.monotonic() > deadline:
            state["ready"] = state["ready"] if loaded else "not loaded"
            break
        time.sleep(0.1)
    if screenshot is not None:
        data = browser.send("Page.captureScreenshot", {"format": "png"}, session)["data"]
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        tmp = screenshot.with_name(f".tmp-{screenshot.name}")
        tmp.write_bytes(base64.b64decode(data))
        tmp.replace(screenshot)
    return state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument("--screenshot", type=Path, help="write a PNG of the first page here")
    args = parser.parse_args(argv)
    executable = find_chromium()
    if executable is None:
        print("chromium is not installed (apt-get install -y chromium)", file=sys.stderr)
        return 2
    browser = Browser(executable)
    failed = 0
    try:
        for i, page in enumerate(args.pages):
            state = check_page(browser, page, args.screenshot if i == 0 else None)
            broken = [src for src, _, width in state["images"] if not width]
            failed += bool(broken) or state["ready"] != "complete"
            print(f"{page}: {state['ready']}, {state['tables']} tables, {len(state['images'])} images, "
                  f"{len(broken)} broken {broken or ''}")  # fmt: skip
    finally:
        browser.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
