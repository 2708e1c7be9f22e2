"""Planner rows: chains per minute with 1, 2 and 4 workers, and where the time goes.

    python benchmarks/plan_data_throughput.py [--runs data/runs] [--chains 8] [--workers 1,2,4] [--seed 0]

The same chains (same seed) run once per worker count, each into a fresh folder, on their own MiniWeb servers.
Reported per setting: chains run and kept, wall seconds, chains per minute, chains per CPU-minute (the CPU time of
this process and every process it started, Chromium and the servers, sampled with psutil), and the share of chain time spent in the
browser (launch, session setup, backend reads, kill), the planner's own turns (its browser state, screenshot and
rows) and the specialists' delegations (browser-use steps on the page), with the replays' own work inside those.
The kept trajectories come from --runs (the data folder's runs/ by default); with none there, a small pool is made
first with datagen on the shop.
"""
import argparse, json, os, sys, tempfile, threading, time

import psutil
from pathlib import Path

from webmix import config
from webmix.data import plan_data as P
from webmix.data.chains import chain_specs
from webmix.data.pool import pool_items


class CpuMeter:
    "CPU seconds of this process and every process it starts (Chromium, the servers), sampled every `every` s."
    def __init__(self, every=0.25):
        self.every, self.seen, self.stop = every, {}, threading.Event()

    def _sample(self):
        me = psutil.Process()
        for p in [me] + me.children(recursive=True):
            try:
                t = p.cpu_times()
                self.seen[(p.pid, p.create_time())] = t.user + t.system
            except psutil.Error: pass

    def __enter__(self):
        self._sample()
        self.base = sum(self.seen.values())
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        return self

    def _loop(self):
        while not self.stop.wait(self.every): self._sample()

    def __exit__(self, *exc):
        self.stop.set(); self.thread.join(); self._sample()
        self.seconds = sum(self.seen.values()) - self.base


def ensure_pool(runs: Path, ports) -> list:
    items = pool_items(None, runs=runs)
    if len(items) >= 8: return items
    from webmix.data.datagen import run_datagen
    print(f"no pool under {runs}: making one with datagen on the shop", flush=True)
    run_datagen(out=runs / "bench-pool", sites=["shop", "tracker"], per_control=1, seed=0, workers=2, ports=ports, limit=60)
    return pool_items(None, runs=runs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=str(config.runs_dir()))
    ap.add_argument("--chains", type=int, default=8, help="chains per setting")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--port", type=int, default=8440, help="first port; each setting uses two")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    a = ap.parse_args(argv)
    items = ensure_pool(Path(a.runs), (a.port, a.port + 1))
    n = len(chain_specs(items, a.chains, seed=a.seed))
    print(f"{len(items)} kept trajectories, {n} chains per setting; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores", flush=True)
    rows = []
    for k, w in enumerate(int(x) for x in a.workers.split(",")):
        with tempfile.TemporaryDirectory() as d, CpuMeter() as meter:
            load0, t0 = os.getloadavg()[0], time.perf_counter()
            s = P.run_plan_data(out=Path(d) / "rows", chains=a.chains, seed=a.seed, workers=w,
                                ports=[a.port + 2 + 2 * k, a.port + 3 + 2 * k], items=items, progress=False).attrs["summary"]
            wall = time.perf_counter() - t0
        cpu = meter.seconds
        t = s["timing_s"]
        chain_time = sum(t.get(x, 0) for x in ("browser", "planner", "specialists")) or 1
        rows.append({"workers": w, "chains": s["chains"], "kept": s["ok"], "seconds": round(wall, 1),
                     "chains_per_min": round(s["chains"] / wall * 60, 2), "cpu_s": round(cpu, 1),
                     "chains_per_cpu_min": round(s["chains"] / cpu * 60, 2) if cpu else None, "load_before": round(load0, 1),
                     "browser": round(t.get("browser", 0) / chain_time, 3), "planner": round(t.get("planner", 0) / chain_time, 3),
                     "specialists": round(t.get("specialists", 0) / chain_time, 3),
                     "replay": round(t.get("replay", 0) / chain_time, 3), "failures": s["failures"]})
        print(json.dumps(rows[-1]), flush=True)
    print(f"\n{'workers':>7} {'chains':>6} {'kept':>5} {'wall s':>7} {'chains/min':>10} {'per CPU-min':>11} "
          f"{'browser':>8} {'planner':>8} {'special.':>8} {'(replay)':>8}")
    for r in rows:
        print(f"{r['workers']:>7} {r['chains']:>6} {r['kept']:>5} {r['seconds']:>7} {r['chains_per_min']:>10} "
              f"{r['chains_per_cpu_min']:>11} {r['browser']:>8.0%} {r['planner']:>8.0%} {r['specialists']:>8.0%} {r['replay']:>8.1%}")
    if a.json: Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
