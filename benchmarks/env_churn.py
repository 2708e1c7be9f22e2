"""1,000 environment sessions opened and closed in a row on one session host: no process, file or memory growth
past a bound.

A session host (webmix.env.host.SessionHost: one MiniWeb server, a pool of warm browsers) in this process opens a
session on a task, takes one step, and closes it, N times in a row (the tasks taken in turn from the test sites'
menu tasks). The baseline is the host after its first `--warmup` sessions, measured in the same run; at the end:
- processes: this process's whole tree (the MiniWeb server, every Chromium and its helpers) at most `--max-procs`
  more than the baseline's (the pool's browsers come and go; sessions must not leave any);
- open files: this process's file descriptors at most `--max-fds` more;
- temporary folders: no more entries in the temporary directory than the baseline's, and nothing of a session left
  in the host's run folder but the saved episodes (no `_staging` entries);
- memory: the tree's PSS (shared pages counted once), sampled every `--every` sessions: the median of the last
  tenth of the run at most `--max-growth` times the median of the tenth after the warm-up. One sample alone says
  little: the pool's browsers are replaced every 50 sessions (KEEP_UNITS), and a browser's PSS depends on how many
  sessions it has served, so a single pair of samples moves by a quarter either way with no growth behind it (the
  single-sample ratio is printed beside it).

Exit 1 when a bound is missed.

    python benchmarks/env_churn.py [--sessions 1000] [--warmup 50] [--out churn.json]
"""
import argparse, asyncio, json, os, sys, tempfile, time
from pathlib import Path

import psutil

from webmix.env.host import SessionHost
from webmix.env.session import find_task, task_ids


def tree() -> list:
    me = psutil.Process()
    return [me] + me.children(recursive=True)


def sample(out: Path) -> dict:
    "The host's footprint now: processes, this process's open files, temporary entries, staged episodes, PSS."
    procs, pss = tree(), 0
    for p in procs:
        try: pss += p.memory_full_info().pss
        except psutil.Error: pass
    staged = out / "_staging"
    return {"procs": len(procs), "fds": psutil.Process().num_fds(), "tmp": sorted(os.listdir(tempfile.gettempdir())),
            "staged": len(list(staged.iterdir())) if staged.is_dir() else 0, "pss_mb": round(pss / 2**20, 1)}


async def churn(n: int, warmup: int, out: Path, every: int = 25) -> dict:
    menu = [i for i in task_ids("test", ("datagen",)) if "-open_menu_item-" in i]
    host = await SessionHost(out=out, max_sessions=4, warm=1, screenshots=False).start()
    samples, t0 = {}, time.monotonic()
    try:
        for i in range(n):
            task = find_task(menu[i % len(menu)])
            sid, _ = await host.open(task.task_id)
            await host.step(sid, {"click": {"control_id": task.control["control_id"], "value": task.option["value"]}})
            await host.close(sid)
            if i + 1 == warmup or (i + 1) % every == 0 or i + 1 == n:
                samples[i + 1] = {**sample(out), "s": round(time.monotonic() - t0, 1)}
                if i + 1 == warmup or (i + 1) % 100 == 0 or i + 1 == n:
                    print(f"{i + 1:5} sessions:", {k: len(v) if k == "tmp" else v for k, v in samples[i + 1].items()}, flush=True)
        metrics = host.metrics()
    finally: await host.stop()
    return {"samples": samples, "metrics": metrics, "after_stop": sample(out)}


def memory_growth(samples: dict, warmup: int, n: int) -> float:
    "The median PSS of the run's last tenth over the median of the tenth after the warm-up (see above)."
    import statistics
    window = max(1, (n - warmup) // 10)
    first = [s["pss_mb"] for k, s in samples.items() if warmup <= k <= warmup + window]
    last = [s["pss_mb"] for k, s in samples.items() if k >= n - window]
    return statistics.median(last) / statistics.median(first)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--max-procs", type=int, default=12, help="processes past the baseline (a pool browser and its helpers)")
    ap.add_argument("--max-fds", type=int, default=32)
    ap.add_argument("--max-growth", type=float, default=1.25, help="the tree's PSS, the last tenth's median over the first tenth's")
    ap.add_argument("--every", type=int, default=25, help="sessions between two memory samples")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="webmix-churn-") as d:
        r = asyncio.run(churn(a.sessions, min(a.warmup, a.sessions), Path(d) / "run", a.every))
        episodes = len([p for p in (Path(d) / "run").iterdir() if p.is_dir() and not p.name.startswith("_")])
    base, end = r["samples"][min(a.warmup, a.sessions)], r["samples"][a.sessions]
    growth, single = memory_growth(r["samples"], min(a.warmup, a.sessions), a.sessions), end["pss_mb"] / base["pss_mb"]
    checks = {"processes": (end["procs"] - base["procs"], a.max_procs, end["procs"] - base["procs"] <= a.max_procs),
              "open files": (end["fds"] - base["fds"], a.max_fds, end["fds"] - base["fds"] <= a.max_fds),
              # counted, not named: the pool's live browsers are replaced, each with its own singleton folder
              "temporary entries": (len(end["tmp"]) - len(base["tmp"]), 0, len(end["tmp"]) <= len(base["tmp"])),
              "staged left": (end["staged"], 0, end["staged"] == 0),
              "memory (PSS, last / first tenth)": (round(growth, 3), a.max_growth, growth <= a.max_growth),
              "episodes saved": (episodes, a.sessions, episodes == a.sessions)}
    print(f"\n{a.sessions} sessions opened, stepped and closed in {end['s']:.0f} s "
          f"({end['s'] / a.sessions * 1000:.0f} ms each); baseline after {min(a.warmup, a.sessions)}")
    print(f"{'':30} {'value':>10} {'bound':>8}  met")
    for k, (v, bound, ok) in checks.items(): print(f"{k:30} {v:>10} {bound:>8}  {'yes' if ok else 'NO'}")
    print(f"memory, one sample each (the baseline's and the end's): {single:.3f}x")
    if set(end["tmp"]) - set(base["tmp"]): print("temporary entries not in the baseline's (live browsers' included):", sorted(set(end["tmp"]) - set(base["tmp"]))[:10])
    print("after the host stopped:", {k: len(v) if k == "tmp" else v for k, v in r["after_stop"].items()})
    if a.out: Path(a.out).write_text(json.dumps({**r, "checks": {k: list(v) for k, v in checks.items()}}, indent=1, default=str))
    return 0 if all(ok for *_, ok in checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
