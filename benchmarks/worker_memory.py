"""Peak memory of one datagen worker (its Python process, its MiniWeb server and its Chromium), and how many workers
fit in a given memory.

A datagen run on the `processes` backend (what the command line runs by default) with `--workers` workers over a
seeded sample of `--tasks` tasks; every half second each worker process is sampled with the processes it started
(Chromium's, the server's): their proportional set size (PSS: a page shared by N processes counts 1/N to each, so
the sum is what the machine really holds). Printed: each worker's peak and its parts at that moment, the command's
own process, and how many workers fit in `--memory-gb` (the machine's memory by default) beside the command.

    python benchmarks/worker_memory.py [--tasks 24] [--workers 2] [--sites shop,kanban] [--memory-gb G] [--json out.json]
"""
import argparse, json, random, sys, tempfile, threading, time
from pathlib import Path

import psutil


def pss_mb(p) -> float:
    try: return p.memory_full_info().pss / 2**20
    except (psutil.NoSuchProcess, psutil.AccessDenied): return 0.0


def kind(p) -> str:
    try: cmd = " ".join(p.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied): return "gone"
    if "chrom" in p.name(): return "chromium"
    if "miniweb" in cmd: return "miniweb"
    return "python"


def sample(me, peaks, stop):
    "Every 0.5 s: per worker process (a direct child running the worker), the PSS of it and everything under it."
    while not stop.is_set():
        for w in me.children():
            if "spawn_main" not in " ".join(w.cmdline() if w.is_running() else []): continue   # not the resource tracker
            parts = {"python": pss_mb(w), "chromium": 0.0, "miniweb": 0.0}
            for c in w.children(recursive=True): parts[kind(c)] = parts.get(kind(c), 0.0) + pss_mb(c)
            total = sum(v for k, v in parts.items() if k != "gone")
            if total > peaks.get(w.pid, {}).get("total", 0): peaks[w.pid] = {"total": total, **parts}
        peaks["_command"] = max(peaks.get("_command", 0.0), pss_mb(me))
        stop.wait(0.5)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=24)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--sites", default="shop,kanban")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--memory-gb", type=float, default=psutil.virtual_memory().total / 2**30)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from webmix.data.datagen import run_datagen
    from webmix.data.tasks import all_tasks
    from webmix.world.servers import free_ports
    tasks = all_tasks(sites=args.sites.split(","))
    random.Random(args.seed).shuffle(tasks)
    tasks = tasks[:args.tasks]
    peaks, stop = {}, threading.Event()
    t = threading.Thread(target=sample, args=(psutil.Process(), peaks, stop), daemon=True)
    t.start()
    t0 = time.perf_counter()
    df = run_datagen(Path(tempfile.mkdtemp(prefix="worker-memory-")) / "run", tasks=tasks, workers=args.workers,
                     ports=free_ports(args.workers), progress=False, backend="processes")
    stop.set(); t.join()
    workers = [v for k, v in peaks.items() if k != "_command"]
    print(f"{int(df['ok'].sum())}/{len(df)} kept in {time.perf_counter() - t0:.0f}s with {args.workers} worker processes")
    for k, w in enumerate(workers):
        print(f"worker {k + 1}: peak {w['total']:.0f} MB (python {w['python']:.0f}, chromium {w['chromium']:.0f}, "
              f"miniweb {w['miniweb']:.0f})")
    worst, command = max(w["total"] for w in workers), peaks["_command"]
    fit = int((args.memory_gb * 1024 - command) // worst)
    print(f"the command's own process: {command:.0f} MB; in {args.memory_gb:.1f} GB, {fit} workers of {worst:.0f} MB fit "
          f"(memory only: each worker also wants about a core)")
    summary = {"workers": workers, "command_mb": command, "memory_gb": args.memory_gb, "workers_that_fit": fit}
    if args.json: Path(args.json).write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
    sys.exit(0)
