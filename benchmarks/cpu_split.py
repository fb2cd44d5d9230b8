"""Where a run's CPU time goes, by role, read from /proc while it runs (Linux only).

A campaign is CPU-bound: its throughput is the machine's cores over the CPU time one program
costs, summed over every process that works for it.  Stage timings (wall time inside a pool
process) cannot show that sum: ptxas children, the GPU worker processes, the forkserver and
the main process all spend CPU outside them.  ``CpuSplit`` samples the descendants of this
process a few times a second and, at the end, credits each one's CPU to a role:

- ``main``: this process (all its threads);
- ``pool``: the campaign's pool processes (children of the multiprocessing forkserver): the
  Python judges, generation, emission; ``ptxas``: the ptxas processes those pool processes (or,
  for bare ptxas, this process) started and reaped (their parent's ``cutime``/``cstime``);
- ``gpu_workers``: the spawned processes that own a CUDA context (``oracles/hw_worker.py``);
- ``other``: the forkserver itself, the resource tracker, anything else.

It also reads the machine's busy share from /proc/stat over the same interval, so a run says
whether it kept every core busy (a run below ~95% has cores to spare).  ptxas processes still
running at the end and processes that exited between two samples lose the CPU they spent since
their last sample (a fraction of a second each), so the figures are slightly low, never high.
"""
from __future__ import annotations

import os
import threading
import time

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def proc_stat(pid: int) -> tuple[str, int, float, float] | None:
    """(comm, ppid, own CPU s, reaped children's CPU s) of ``pid``, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode(errors="replace")
    except OSError:
        return None
    comm = raw[raw.index("(") + 1:raw.rindex(")")]
    f = raw[raw.rindex(")") + 2:].split()
    # fields after comm: state ppid ... utime(12) stime(13) cutime(14) cstime(15)
    return comm, int(f[1]), (int(f[11]) + int(f[12])) / _TICK, (int(f[13]) + int(f[14])) / _TICK


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _machine() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs since boot."""
    with open("/proc/stat") as fh:
        v = [int(x) for x in fh.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    total = sum(v[:8])  # guest time is already in user
    return total - idle, total


class CpuSplit:
    """Context manager: ``with CpuSplit() as c: run()`` then ``c.result(programs)``."""

    def __init__(self, interval: float = 0.2):
        self.interval = interval
        self.procs: dict[int, dict] = {}  # pid -> last sample and role facts
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> "CpuSplit":
        self._t0 = time.perf_counter()
        self._m0 = _machine()
        self._self0 = time.process_time()
        self._children0 = proc_stat(os.getpid())[3]
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._sample()
        self._stop.set()
        self._thread.join()
        self._m1 = _machine()
        self._t1 = time.perf_counter()
        self._self1 = time.process_time()
        self._children1 = proc_stat(os.getpid())[3]
        # direct children reaped during the run (GPU workers, a pool's forkserver) put their
        # whole CPU into this process's children time: that is not ptxas
        gone = [rec for pid, rec in self.procs.items() if rec["ppid"] == os.getpid() and proc_stat(pid) is None]
        self._reaped_not_ptxas = sum(rec["own"] + rec["reaped"] for rec in gone if rec["comm"] != "ptxas")

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()
        self._own = time.thread_time()  # the sampler's own CPU, taken out of ``main``

    def _sample(self) -> None:
        me = os.getpid()
        stats = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                s = proc_stat(int(name))
                if s is not None:
                    stats[int(name)] = s
        tree = {me}
        grew = True
        while grew:  # descendants of this process
            grew = False
            for pid, (_, ppid, _, _) in stats.items():
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    grew = True
        for pid in tree - {me}:
            comm, ppid, own, reaped = stats[pid]
            rec = self.procs.get(pid)
            if rec is None:
                rec = self.procs[pid] = {"comm": comm, "ppid": ppid, "cmd": _cmdline(pid),
                                         "own0": own, "reaped0": reaped}
            rec.update(own=own, reaped=reaped)

    def _role(self, pid: int, rec: dict) -> str:
        me = os.getpid()
        if rec["comm"] == "ptxas":
            return "ptxas_live"
        if "forkserver" in rec["cmd"]:
            parent = self.procs.get(rec["ppid"])
            return "pool" if parent is not None and rec["ppid"] != me else "other"
        if rec["ppid"] == me and "spawn_main" in rec["cmd"]:
            return "gpu_workers"
        return "other"

    def result(self, programs: int) -> dict:
        """CPU seconds by role (``ptxas`` counts reaped ptxas processes), ms per program, and
        the machine's busy share over the run."""
        sec: dict[str, float] = {"main": self._self1 - self._self0 - self._own,
                                 "ptxas": max(0.0, self._children1 - self._children0 - self._reaped_not_ptxas)}
        for pid, rec in self.procs.items():
            role = self._role(pid, rec)
            if role == "ptxas_live":
                continue  # counted by its parent once reaped; a live one's partial time is dropped
            sec[role] = sec.get(role, 0.0) + rec["own"] - rec["own0"]
            if role == "pool":  # a pool process reaps its own ptxas children
                sec["ptxas"] += rec["reaped"] - rec["reaped0"]
        busy = self._m1[0] - self._m0[0]
        total = self._m1[1] - self._m0[1]
        wall = self._t1 - self._t0
        return {"wall_seconds": round(wall, 2), "machine_busy_share": round(busy / total, 3) if total else None,
                "cores_busy": round(busy / _TICK / wall, 2) if wall else None,
                "sampler_cpu_seconds": round(self._own, 2),
                "cpu_seconds": {k: round(v, 2) for k, v in sorted(sec.items())},
                "cpu_ms_per_program": {k: round(v / programs * 1e3, 2) for k, v in sorted(sec.items())},
                "cpu_ms_per_program_total": round(sum(sec.values()) / programs * 1e3, 2)}
