"""How every fuzzptx command talks to a person: the ``--help`` layout (each option's meaning and
its default), and a progress line while long work runs silently."""
from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Callable, TextIO

PROGRESS_SECONDS = 2.0


class Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's defaults formatter, less the noise: no "(default: None)" or "(default: False)"
    (an unset option or a flag says nothing by its default), and no second default where the
    help text already states its own."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        unset = action.default is None or action.default is False or action.default == argparse.SUPPRESS
        if "default" in text or unset or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


class Progress:
    """A line on stderr (``fuzzptx CMD: [12 s] compiling at -O3 ...``) every ``PROGRESS_SECONDS``
    while one step of the work has printed nothing: a 40 MB module's bundle, check or bisect once
    ran for minutes in silence.  ``step(text)`` names what runs now; a short command never prints."""

    def __init__(self, command: str, out: TextIO | Callable[[str], None] | None = None, every: float | None = None):
        self.command, self.every = command, PROGRESS_SECONDS if every is None else every
        self._out = out
        self.t0 = self.last = time.monotonic()
        self.what = "starting"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def step(self, what: str) -> None:
        self.what, self.last = what, time.monotonic()

    def say(self, text: str) -> None:
        line = f"fuzzptx {self.command}: [{time.monotonic() - self.t0:4.0f} s] {text}"
        if callable(self._out) and not hasattr(self._out, "write"):
            self._out(line)
        else:
            out = self._out or sys.stderr  # looked up now: a caller may have replaced it
            print(line, file=out, flush=True)
        self.last = time.monotonic()

    def _tick(self) -> None:
        while not self._stop.wait(min(0.5, self.every / 2)):
            if time.monotonic() - self.last >= self.every:
                self.say(f"{self.what} ...")

    def __enter__(self) -> "Progress":
        self._thread = threading.Thread(target=self._tick, name=f"progress-{self.command}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
