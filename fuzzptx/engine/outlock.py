"""One owner per campaign directory: ``--out/campaign.lock``.

Two campaigns (or two ``--resume``s) appending to one ``results.jsonl`` would record every
program twice, and ``report``/``triage`` would count them twice.  The lock is a small JSON
file naming the holder (host, pid, start time, a random token).  It is created whole and
atomically: written to a private temporary file, then hard-linked to ``campaign.lock``
(``link`` fails if the name exists, on local file systems and NFS alike), so a reader never
sees half a lock.  The holder touches it (mtime) every few seconds as a heartbeat.

A lock left by a crash (``kill -9``, a lost node) is *stale*:

* same host, holder pid no longer running: taken over by the next campaign on that ``--out``
  (normally ``--resume``), with no flag;
* another host: the pid cannot be checked from here, so a takeover needs
  ``--force-takeover`` **and** a heartbeat older than ``--stale-after`` seconds (default
  600): a live campaign on another node touches its lock every 10 s.

A takeover is atomic too: the stale lock is renamed to a name of our own (only one of two
racing takers can rename it), checked to be the very lock judged stale (else put back and
refused), and the new lock is then linked in as for a fresh start.
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from fuzzptx.errors import FuzzptxError
from fuzzptx.inputs import make_dir

LOCK_NAME = "campaign.lock"
HEARTBEAT_SECONDS = 10.0
DEFAULT_STALE_AFTER = 600.0


class LockHeld(FuzzptxError):
    """Another campaign owns the directory (one line at the CLI, exit 2)."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as its file says."""

    host: str
    pid: int
    started: float
    token: str

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.started))
        return f"pid {self.pid} on {self.host}, started {when}"


def _read(path: Path) -> tuple[Holder | None, str]:
    """(the holder, the file's raw text); (None, text) for a lock that is not ours to parse."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return None, ""
    try:
        d = json.loads(text)
        return Holder(str(d["host"]), int(d["pid"]), float(d["started"]), str(d["token"])), text
    except (ValueError, KeyError, TypeError):
        return None, text


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # running, as another user
        return True
    return True


@dataclass
class OutLock:
    """The lock this process holds on ``directory`` (``acquire``), released by ``release``."""

    directory: Path
    holder: Holder
    took_over: Holder | None = None
    _last_beat: float = 0.0

    @property
    def path(self) -> Path:
        return self.directory / LOCK_NAME

    def heartbeat(self) -> None:
        """Touch the lock (at most every HEARTBEAT_SECONDS): another host judges staleness by it."""
        now = time.monotonic()
        if now - self._last_beat >= HEARTBEAT_SECONDS:
            self._last_beat = now
            try:
                os.utime(self.path)
            except OSError:
                pass

    def release(self) -> None:
        """Remove the lock if it is still ours (a forced takeover elsewhere leaves it alone)."""
        holder, _ = _read(self.path)
        if holder is not None and holder.token == self.holder.token:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass

    def __enter__(self) -> "OutLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _link_new(directory: Path, holder: Holder) -> bool:
    """Create the lock whole and atomically; False if the name exists."""
    tmp = directory / f".{LOCK_NAME}.{holder.token}"
    tmp.write_text(json.dumps({"host": holder.host, "pid": holder.pid, "started": holder.started,
                               "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(holder.started)),
                               "token": holder.token}) + "\n")
    try:
        os.link(tmp, directory / LOCK_NAME)
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink()


def _stale_reason(holder: Holder | None, text: str, age: float, force: bool, stale_after: float) -> str | None:
    """Why the lock may be taken over, or None if it may not."""
    if holder is None:
        # not a lock we wrote (or emptied by a disk fault): only by force, and only when old
        return f"unreadable lock, {age:.0f} s old" if force and age > stale_after else None
    if holder.host == socket.gethostname():
        return None if _pid_running(holder.pid) else f"its pid {holder.pid} is no longer running"
    if force and age > stale_after:
        return f"--force-takeover and no heartbeat for {age:.0f} s (over --stale-after {stale_after:g})"
    return None


def acquire(directory: Path, *, force_takeover: bool = False, stale_after: float = DEFAULT_STALE_AFTER) -> OutLock:
    """Own ``directory`` or raise ``LockHeld`` naming the holder."""
    make_dir(directory, what="run directory")
    me = Holder(socket.gethostname(), os.getpid(), time.time(), uuid.uuid4().hex)
    path = directory / LOCK_NAME
    for _ in range(5):  # a lock released between our tries: try again
        if _link_new(directory, me):
            return OutLock(directory, me)
        holder, text = _read(path)
        try:
            age = time.time() - path.stat().st_mtime
        except FileNotFoundError:
            continue
        why = _stale_reason(holder, text, age, force_takeover, stale_after)
        if why is None:
            who = holder.describe() if holder is not None else "an unreadable lock"
            hint = ("" if holder is None or holder.host == socket.gethostname()
                    else f"; if that node is gone, --force-takeover takes it once it is --stale-after "
                         f"{stale_after:g} s without a heartbeat (now {age:.0f} s)")
            raise LockHeld(f"another campaign owns this directory ({who}){hint}", str(path))
        aside = directory / f".{LOCK_NAME}.stale.{me.token}"
        try:
            os.rename(path, aside)  # one of several racing takers wins this
        except FileNotFoundError:
            continue
        if aside.read_text(errors="replace") != text:  # a fresh lock slipped in: give it back
            try:
                os.link(aside, path)
            except FileExistsError:
                pass
            aside.unlink()
            continue
        aside.unlink()
        if _link_new(directory, me):
            return OutLock(directory, me, took_over=holder)
    holder, _ = _read(path)
    raise LockHeld(f"another campaign owns this directory ({holder.describe() if holder else 'unreadable lock'})",
                   str(path))
