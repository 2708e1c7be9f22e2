"""The run engine's two backends on the same datagen tasks: kept trajectories per minute, local against Ray.

The same tasks (a seeded sample of the embedded sites' tasks) run with the same number of workers, first on the
local backend (asyncio workers in this process) and then on Ray (one actor per worker, on a local Ray started here
with num_cpus = workers), each into a fresh run folder. Kept per minute is over each run's wall time, from the call
to its return: the local run's includes starting its MiniWeb servers, Ray's includes starting its actors and their
servers. Starting Ray itself (once per cluster, not per run) is timed apart and left out.

    python benchmarks/backends.py [--tasks 16] [--workers 2] [--seed 0] [--json out.json]

Target: Ray keeps at least 0.85 of the local backend's trajectories a minute; exit 1 when it does not.
"""
import argparse, json, random, sys, tempfile, time
from pathlib import Path

from webmix import config
from webmix.data.datagen import run_datagen
from webmix.data.pool import read_results
from webmix.runs import ray_init
from webmix.data.tasks import all_tasks


def measure(tasks, out, **engine) -> dict:
    "Run `tasks` into `out` on one backend -> kept, seconds, kept per minute."
    t0 = time.perf_counter()
    run_datagen(out, tasks=tasks, progress=False, **engine)
    seconds = time.perf_counter() - t0
    lines = read_results(out)
    kept = sum(r["ok"] for r in lines)
    return {"backend": engine.get("backend", "local"), "tasks": len(lines), "kept": kept, "seconds": round(seconds, 1),
            "kept_per_min": round(kept / seconds * 60, 2)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=16, help="tasks, a seeded sample of every site's")
    ap.add_argument("--workers", type=int, default=config.DEFAULT_WORKERS, help="workers on each backend")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample")
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    config.setup_env()
    pool = all_tasks()
    tasks = random.Random(args.seed).sample(pool, min(args.tasks, len(pool)))
    root = Path(tempfile.mkdtemp(prefix="backends-bench-"))
    local = measure(tasks, root / "local", workers=args.workers)
    print(f"local: {local['kept']}/{local['tasks']} kept in {local['seconds']}s -> {local['kept_per_min']} kept/min", flush=True)
    t0 = time.perf_counter()
    ray_init(workers=args.workers)
    ray_start = round(time.perf_counter() - t0, 1)
    ray = measure(tasks, root / "ray", workers=args.workers, backend="ray")
    print(f"ray:   {ray['kept']}/{ray['tasks']} kept in {ray['seconds']}s -> {ray['kept_per_min']} kept/min "
          f"(starting Ray itself: {ray_start}s, not counted)", flush=True)
    ratio = round(ray["kept_per_min"] / local["kept_per_min"], 3) if local["kept_per_min"] else None
    print(f"ray / local kept per minute: {ratio} (target: at least 0.85)")
    summary = {"tasks": len(tasks), "workers": args.workers, "local": local, "ray": ray, "ray_start_s": ray_start,
               "ratio": ratio}
    if args.json: Path(args.json).write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    from targets import verdict
    r = main()["ratio"]
    sys.exit(verdict({"ray / local kept per minute": (r, ">= 0.85", r is not None and r >= 0.85)}))
