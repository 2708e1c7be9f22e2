"""The run engine's own cost as a run grows: no-op units (no browser, no server; each returns at once) at 10k, 100k
and 1M units.

For each size, in a fresh subprocess (so that peak memory is the size's own):
- run: `runs.run_units` over N new units (each returning a result line the size of a datagen unit's) with 2 workers and the progress bar on (drawn to a null stream): wall time
  and microseconds per unit (the queue, the guard, the result line appended, the bar, the manifest);
- resume: the same call again on the finished folder (every unit done, none to run): the start-up a resumed run pays
  (the folder lock, the manifest, the torn-line check, reading results.jsonl for the keys done, the plan);
- resume + 1: the same with one new unit (start-up and one unit);
- read: `folders.read_results` and `folders.done_keys` of the N-line results.jsonl alone;
- peak memory (ru_maxrss) of the subprocess.
Then `webmix pool`'s scan (`pool.write_pool`, split train) over a run folder of `--pool` kept trajectories made on
disk (a results line and a minimal trajectory.json and elements.json each).

Per-unit costs that stay flat from 10k to 1M mean the engine is linear; the target for resume is under 5 s at 1M
(exit 1 when it is missed).

    python benchmarks/engine_curve.py [--sizes 10000,100000,1000000] [--pool 100000] [--json out.json]
"""
import argparse, json, subprocess, sys, tempfile, time
from pathlib import Path

CHILD = r'''
import io, json, resource, sys, time, contextlib
from pathlib import Path
from webmix import runs, folders
n, out = int(sys.argv[1]), Path(sys.argv[2])
DETAIL = ("found create of comments with body='The colour is a bit darker than in the photo.', record=29: " * 4)[:300]
async def noop(unit, worker):        # a line the size of a datagen unit's (about 550 bytes)
    return {"ok": True, "cause": None, "detail": DETAIL, "steps": 4, "base": "http://127.0.0.1:8318", "answer": None}
units = [{"task_id": f"u{i:08d}", "site": "bank", "macro": "noop"} for i in range(n)]
def run(us):
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):               # the bar is drawn, not shown
        r = runs.run_units(us, noop, out, runner="engine-curve", workers=2, miniweb=False, keep_browsers=False,
                           progress=True, timeout=None)
    return time.perf_counter() - t0, r
got = {}
got["run_s"], r = run(units)
assert len(r.results) == n and r.ok == n, (len(r.results), r.ok)
got["resume_s"], r = run(units)
assert r.skipped == n and not r.results
got["resume_plus_one_s"], r = run(units + [{"task_id": "extra", "site": "bank", "macro": "noop"}])
assert len(r.results) == 1
t0 = time.perf_counter(); lines = folders.read_results(out); got["read_results_s"] = time.perf_counter() - t0
t0 = time.perf_counter(); keys = folders.done_keys(out); got["done_keys_s"] = time.perf_counter() - t0
assert len(lines) == n + 1 and len(keys) == n + 1
got["results_mb"] = (out / "results.jsonl").stat().st_size / 1e6
got["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("@@engine " + json.dumps(got), flush=True)
'''

POOL_CHILD = r'''
import json, sys, time
from pathlib import Path
from webmix.data import pool
from webmix import config
n, run = int(sys.argv[1]), Path(sys.argv[2])
train = config.site_split()["train"]
t0 = time.perf_counter()
with open(run / "results.jsonl", "w") as f:
    for i in range(n):
        tid, site = f"t{i:07d}", train[i % len(train)]
        d = run / "accepted" / tid
        d.mkdir(parents=True)
        (d / "trajectory.json").write_text(json.dumps({"task_id": tid, "site": site, "macro": "open_detail", "steps": []}))
        (d / "elements.json").write_text("{}")
        f.write(json.dumps({"task_id": tid, "site": site, "macro": "open_detail", "ok": True}) + "\n")
made = time.perf_counter() - t0
t0 = time.perf_counter(); ids = pool.write_pool([run], run.parent / "pool.txt", split="train"); scan = time.perf_counter() - t0
assert len(ids) == n, len(ids)
print("@@engine " + json.dumps({"made_s": made, "write_pool_s": scan}), flush=True)
'''


def child(code, *argv):
    p = subprocess.run([sys.executable, "-c", code, *map(str, argv)], capture_output=True, text=True)
    lines = [l for l in p.stdout.splitlines() if l.startswith("@@engine ")]
    if p.returncode or not lines: sys.exit(f"the child failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
    return json.loads(lines[-1][len("@@engine "):])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--pool", type=int, default=100000, help="kept trajectories of the pool scan (0: none)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rows = []
    print(f"{'units':>9} {'run s':>8} {'us/unit':>8} {'resume s':>9} {'resume+1 s':>11} {'read s':>7} {'keys s':>7} "
          f"{'MB':>6} {'peak MB':>8}", flush=True)
    with tempfile.TemporaryDirectory(prefix="engine-curve-") as tmp:
        for n in map(int, args.sizes.split(",")):
            g = {"units": n, **child(CHILD, n, Path(tmp) / f"run-{n}")}
            g["us_per_unit"] = g["run_s"] / n * 1e6
            rows.append(g)
            print(f"{n:>9} {g['run_s']:>8.1f} {g['us_per_unit']:>8.0f} {g['resume_s']:>9.2f} {g['resume_plus_one_s']:>11.2f} "
                  f"{g['read_results_s']:>7.2f} {g['done_keys_s']:>7.2f} {g['results_mb']:>6.0f} {g['peak_rss_mb']:>8.0f}",
                  flush=True)
        first, last = rows[0], rows[-1]
        flat = {"us_per_unit": round(last["us_per_unit"] / first["us_per_unit"], 2),
                "resume_s_per_line": round(last["resume_s"] / last["units"] / (first["resume_s"] / first["units"]), 2)}
        print(f"\nper-unit cost at {last['units']:,} against {first['units']:,}: run {flat['us_per_unit']}x, "
              f"resume {flat['resume_s_per_line']}x (1.0: linear); resume at {last['units']:,}: {last['resume_s']:.2f}s "
              f"(target < 5 s)")
        pool = None
        if args.pool:
            run = Path(tmp) / "pool-run"; run.mkdir()
            pool = child(POOL_CHILD, args.pool, run)
            print(f"webmix pool over {args.pool:,} kept trajectories (split train): {pool['write_pool_s']:.2f}s "
                  f"({pool['write_pool_s'] / args.pool * 1e6:.0f} us each; made in {pool['made_s']:.0f}s)")
    summary = {"sizes": rows, "flatness": flat, "pool": pool}
    if args.json: Path(args.json).write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    from targets import verdict
    last = main()["sizes"][-1]
    sys.exit(verdict({f"resume at {last['units']:,} units (s)": (round(last["resume_s"], 2), "< 5", last["resume_s"] < 5)}))
