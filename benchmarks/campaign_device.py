"""The device run of issue 8 in one command: campaign with planted faults, kill -9 + --resume,
throughput ratio, report; writes a record JSON and copies the files that come back to --out.

    python3 benchmarks/campaign_device.py --time 300 --out "$OUT"          # on the GPU machine
    python benchmarks/campaign_device.py --time 20 --gpus none --out /tmp/d  # smoke test on a CPU

Every step runs ``python3 -m fuzzptx.cli`` in a fresh process (cwd /tmp, so the package comes
from PYTHONPATH) under its own time limit, so one step that overruns still leaves a record.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def sh(cmd: list[str], timeout: float, log=None) -> tuple[int, str]:
    try:
        r = subprocess.run(cmd, cwd="/tmp", capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return 124, f"timed out after {timeout} s: {exc.stdout or ''}"
    if log is not None:
        log.write(f"$ {' '.join(cmd)}\n{r.stderr}\n")
        log.flush()
    return r.returncode, r.stdout


def campaign_cmd(out: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "fuzzptx.cli", "campaign", "--out", str(out), *args]


def device_info() -> dict:
    info: dict = {"host": platform.node(), "python": platform.python_version(), "cpus": os.cpu_count()}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30).stdout.strip()
        info["nvidia_smi"] = q.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        info["nvidia_smi"] = None
    for mod in ("cupy", "hypothesis", "numpy", "ml_dtypes", "matplotlib"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception as exc:  # a missing one is a fact to record, not a failure
            info[mod] = f"missing ({type(exc).__name__})"
    try:
        from fuzzptx.oracles.ptxas import find_ptxas, ptxas_version

        info["ptxas"] = {"path": str(find_ptxas()), "version": ptxas_version()}
    except Exception as exc:
        info["ptxas"] = f"unavailable: {exc}"
    return info


def kill_resume_check(work: Path, gpus: str, examples: int, kill_after: int, log) -> dict:
    """Start a campaign, SIGKILL it (and its pool) once the record has ``kill_after`` lines,
    resume it, and count every (block, index) in the record: each exactly once."""
    out = work / "killed"
    shutil.rmtree(out, ignore_errors=True)
    args = ["--examples", str(examples), "--gpus", gpus, "--seed", "5", "--quiet"]
    proc = subprocess.Popen(campaign_cmd(out, *args), cwd="/tmp", stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    results = out / "results.jsonl"
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120 and proc.poll() is None:
        if results.exists() and results.read_bytes().count(b"\n") >= kill_after:
            break
        time.sleep(0.02)
    finished_before_kill = proc.poll() is not None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    raw = results.read_bytes() if results.exists() else b""
    lines_at_kill = raw.count(b"\n")
    torn = bool(raw) and not raw.endswith(b"\n")
    t1 = time.monotonic()
    rc, stdout = sh(campaign_cmd(out, *args, "--resume"), 240, log)
    resume_s = time.monotonic() - t1
    keys: Counter = Counter()
    bad = 0
    for line in results.read_text().splitlines():
        try:
            rec = json.loads(line)
            keys[(rec["block"], rec["index"])] += 1
        except (ValueError, KeyError):
            bad += 1
    want = {(i // 32, i % 32) for i in range(examples)}
    try:
        skipped = json.loads(stdout)["resumed_skipping"]
    except (ValueError, KeyError):
        skipped = None
    return {
        "examples": examples, "killed_after_records": lines_at_kill, "torn_line_at_kill": torn,
        "finished_before_kill": finished_before_kill, "resume_rc": rc, "resume_seconds": round(resume_s, 1),
        "resume_skipped": skipped, "records": sum(keys.values()), "distinct": len(keys),
        "missing": len(want - set(keys)), "extra": len(set(keys) - want),
        "repeated": sum(1 for c in keys.values() if c > 1), "bad_lines": bad,
        "ok": rc == 0 and not finished_before_kill and set(keys) == want and max(keys.values(), default=0) == 1,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time", default="300")
    ap.add_argument("--gpus", default="all")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/fuzzptx-device")
    ap.add_argument("--kill-examples", type=int, default=640)
    ap.add_argument("--bench-examples", type=int, default=960)
    ap.add_argument("--tag", default="h100")
    ap.add_argument("--bench-runs", default="full-cpu,ptxas-corpus,full")
    ap.add_argument("--bench-budget", type=float, default=150.0,
                    help="seconds after which campaign_throughput.py starts no further run")
    ap.add_argument("--skip", default="", help="steps to skip: campaign,resume,bench,report")
    args = ap.parse_args()
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    skip = set(args.skip.split(","))
    log = (out / "campaign.log").open("w")
    record: dict = {"issue": 8, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "device": device_info()}
    print(json.dumps(record["device"]), flush=True)

    def save() -> None:  # after every step: a run cut off at its limit still leaves its record
        (out / f"campaign_{args.tag}.json").write_text(json.dumps(record, indent=1, default=dict))

    save()
    if "bench" not in skip:
        bench_json = out / f"campaign_throughput_{args.tag}.json"
        rc, _ = sh([sys.executable, str(HERE / "campaign_throughput.py"), "--examples", str(args.bench_examples),
                    "--gpus", args.gpus, "--out", str(bench_json), "--workdir", str(work / "bench"),
                    "--only", args.bench_runs, "--budget", str(args.bench_budget)], 2 * args.bench_budget + 60, log)
        record["throughput_rc"] = rc
        if bench_json.exists():
            b = json.loads(bench_json.read_text())
            record["throughput"] = {"bare_ptxas_programs_per_second": b["bare_ptxas"]["programs_per_second"],
                                    **{k: {kk: v[kk] for kk in ("programs_per_second", "ratio_to_bare_ptxas",
                                                                "steady_ratio_to_bare_ptxas", "gpu_idle_share")}
                                       for k, v in b["campaigns"].items()}}
        print("throughput:", record.get("throughput"), flush=True)
        save()
    camp = work / "campaign"
    if "campaign" not in skip:
        shutil.rmtree(camp, ignore_errors=True)
        t0 = time.monotonic()
        rc, stdout = sh(campaign_cmd(camp, "--time", args.time, "--gpus", args.gpus, "--seed", "1",
                                     "--plant-faults"), float(args.time) + 120, log)
        record["campaign_rc"] = rc
        record["campaign_seconds"] = round(time.monotonic() - t0, 1)
        stats = json.loads((camp / "stats.json").read_text()) if (camp / "stats.json").exists() else {}
        record["campaign"] = {k: v for k, v in stats.items() if k != "timeline"}
        planted = []
        if (camp / "results.jsonl").exists():
            for line in (camp / "results.jsonl").read_text().splitlines():
                rec = json.loads(line)
                if rec.get("planted"):
                    planted.append({k: rec[k] for k in ("id", "planted", "verdicts", "findings")})
                elif stats.get("planted_block") is not None and rec["block"] == stats["planted_block"]:
                    record.setdefault("planted_block_others", Counter())[rec["verdicts"].get("hardware", "none")] += 1
        record["planted"] = planted
        print(f"campaign rc={rc}: {stats.get('programs')} programs, planted {planted}", flush=True)
        save()
    if "resume" not in skip:
        record["kill_resume"] = kill_resume_check(work, args.gpus, args.kill_examples, args.kill_examples // 3, log)
        print("kill/resume:", record["kill_resume"], flush=True)
        save()
    if record.get("campaign") and record.get("throughput"):
        record["throughput"]["long_campaign_ratio_to_bare_ptxas"] = round(
            record["campaign"]["programs_per_second"] / record["throughput"]["bare_ptxas_programs_per_second"], 3)
        save()
    if "report" not in skip and camp.exists():
        rc, stdout = sh([sys.executable, "-m", "fuzzptx.cli", "report", str(camp)], 120, log)
        record["report_rc"] = rc
        for name in ("stats.json", "summary.json", "junit.xml", "report.html"):
            if (camp / name).exists():
                shutil.copy(camp / name, out / name)
        if (camp / "repros").exists():
            with tarfile.open(out / "repros.tar.gz", "w:gz") as tf:
                tf.add(camp / "repros", arcname="repros")
    record["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save()
    log.close()
    print(json.dumps({k: v for k, v in record.items() if k != "device"}, indent=1, default=dict)[:6000], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
