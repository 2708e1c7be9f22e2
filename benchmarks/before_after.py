"""Datagen before and after a change: the same tasks on an older commit and on the working tree, in turns.

The older commit (`--before REF`) is checked out as a detached git worktree in a temp folder; the after side is the
working tree this script belongs to (uncommitted changes included). A seeded sample of the tasks of the --sites (as many
macros as there are picks first, then any; drawn from the after tree's `all_tasks`) is written as JSON and both sides
run exactly those task dicts with `run_datagen` (`--workers`, default 1, each with a free port), each run in a fresh folder and its own
subprocess, before / after / before / after ... for `--rounds` rounds.

Each run is `python -c CHILD` with cwd and PYTHONPATH set to its tree, and webmix's editable-install finder taken off
sys.meta_path, so that `import webmix` is that tree's code; the MiniWeb server it starts (`python -c`, same env and
cwd) is checked the same way once per side. A side that imports the other's code stops the script.

Throughput: kept per minute = kept / span, the span from the first attempt's start to the last one's end (server
start-up excluded), as in datagen_throughput.py; also the wall time of the run_datagen call and the median unit time.
Outputs (rows are training data: they must not change): for each task kept on both sides in the last round,
accepted/<task_id>/trajectory.json without the steps' `duration`, `t0` and `t1`, elements.json, and the step_*.png files with their
sizes, as written and canonical: the latter without the server's base URL (each run has its own free port, and
URLs are absolute) and with browser-use's element numbers (DOM node ids, which differ between two runs of the same
code) replaced by the elements they name; and each task's kept / rejected outcome on both sides.

    python benchmarks/before_after.py --before REF [--sites bank] [--workers 1] [--backend B] [--tasks 12] [--rounds 2]
                                      [--seed 0] [--json out.json] [--keep DIR]

`--backend` is given to the after side only (a before side may not have it): `processes` is what the command line
runs by default.
"""
import argparse, json, os, random, shutil, statistics, struct, subprocess, sys, tempfile
from collections import defaultdict
from pathlib import Path

MARK = "@@before_after "      # the child's one line of JSON on stdout

# Every child's start (`python -c PREAMBLE+... mode root spec`): webmix imported from `root` only, its data folder
# `root`/data, browser-use's offline settings, and first_of for module paths that moved between trees.
PREAMBLE = r'''
import importlib, json, os, subprocess, sys, time
from pathlib import Path
mode, root, spec = sys.argv[1], Path(sys.argv[2]).resolve(), json.loads(sys.argv[3])
os.environ.pop("WEBMIX_DATA", None)           # data_dir(): ./data of the cwd, this tree's
sys.meta_path[:] = [f for f in sys.meta_path if not (getattr(f, "__module__", "") or "").startswith("__editable__")]
sys.path.insert(0, str(root))
import webmix
if root not in Path(webmix.__file__).resolve().parents:
    sys.exit(f"webmix imported from {webmix.__file__}, not from {root}")
from webmix import config
config.setup_env()                            # browser-use's offline settings before it is imported, as the CLI
def first_of(*names):                         # a tree before the package's wings has flat modules (webmix.tasks, ...)
    for n in names:
        try: return importlib.import_module(n)
        except ImportError: pass
    raise ImportError(names)
out = {"file": webmix.__file__}
'''

# This script's child: either describes its tree (probe: where webmix and a server's webmix come from, the sites'
# tasks) or does one datagen run (run).
CHILD = PREAMBLE + r'''
if mode == "probe":
    all_tasks = first_of("webmix.data.tasks", "webmix.tasks").all_tasks
    # a MiniWeb server is started as `python -c` with this process's env and cwd: the same import, checked here
    srv = subprocess.run([sys.executable, "-c", "import webmix; print(webmix.__file__)"], capture_output=True, text=True)
    out.update(server_file=srv.stdout.strip() or srv.stderr.strip()[-300:],
               tasks=all_tasks(sites=spec["sites"], macros=None, per_control=1, seed=spec["seed"]))
else:
    run_datagen = first_of("webmix.data.datagen", "webmix.datagen").run_datagen
    free_ports = first_of("webmix.world.servers", "webmix.world.miniweb", "webmix.miniweb").free_ports
    tasks = json.loads(Path(spec["tasks"]).read_text())
    t0 = time.perf_counter()
    engine = {"backend": spec["backend"]} if spec.get("backend") else {}      # the after side's, when asked
    run_datagen(spec["out"], tasks=tasks, workers=spec["workers"], ports=free_ports(spec["workers"]), progress=False, **engine)
    out["wall_s"] = round(time.perf_counter() - t0, 2)
print("@@before_after " + json.dumps(out), flush=True)
'''


def child(mode, root, spec, log, code=None, env=None):
    "Run `code` (default: CHILD) in `root`'s tree, `env` added to its environment; its stdout and stderr go to `log`. -> its JSON line."
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(root)}
    with open(log, "w") as f:
        p = subprocess.run([sys.executable, "-c", code or CHILD, mode, str(root), json.dumps(spec)], cwd=root, env=env,
                           stdout=subprocess.PIPE, stderr=f, text=True)
        f.write(p.stdout)
    lines = [l for l in p.stdout.splitlines() if l.startswith(MARK)]
    if p.returncode or not lines:
        tail = "".join(Path(log).read_text().splitlines(keepends=True)[-25:])
        sys.exit(f"{mode} in {root} failed (exit {p.returncode}); the end of {log}:\n{tail}")
    return json.loads(lines[-1][len(MARK):])


def check_imports(probe, trees, keys=("file", "server_file")):
    "Each side's probed paths (its runner's webmix, its server's, ...: `keys` of `probe`) lie in its own tree only."
    for side, tree in trees.items():
        other = trees["after" if side == "before" else "before"]
        for key in keys:
            f = Path(probe[side][key]).resolve()
            if tree.resolve() not in f.parents or other.resolve() in f.parents:
                sys.exit(f"the {side} side's {key} is {probe[side][key]}, not in {tree}")


def two_sides(ref, keep, prefix) -> tuple:
    """(after tree, before commit, after's changed files, temp folder, run root, before tree): the working tree this
    script belongs to, and `ref` checked out as a detached worktree in a new temp folder (drop_worktree removes it)."""
    after = Path(git("rev-parse", "--show-toplevel", cwd=Path(__file__).resolve().parent))
    commit = git("rev-parse", "--short", f"{ref}^{{commit}}", cwd=after)
    dirty = git("status", "--porcelain", "--untracked-files=no", cwd=after).splitlines()
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    root = Path(keep).resolve() if keep else tmp / "runs"
    root.mkdir(parents=True, exist_ok=True)
    before = tmp / "before"
    git("worktree", "add", "--detach", str(before), commit, cwd=after)
    return after, commit, dirty, tmp, root, before


def sides_header(ref, commit, after, dirty, probe) -> dict:
    "What a summary says of its two sides: the before commit, the after tree, where each imported webmix from."
    return {"before": {"ref": ref, "commit": commit, "webmix": probe["before"]["file"]},
            "after": {"root": str(after), "changed_files": dirty, "webmix": probe["after"]["file"]}}


def saved(summary, args, root) -> dict:
    "`summary`, written to --json when asked; says where --keep kept the runs."
    if args.json: Path(args.json).write_text(json.dumps(summary, indent=1, ensure_ascii=False, default=str))
    if args.keep: print(f"\nrun folders and logs kept in {root}")
    return summary


def drop_worktree(before, tmp, after) -> None:
    "Remove the before side's git worktree and the temp folder holding it."
    subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=after, capture_output=True)
    shutil.rmtree(tmp, ignore_errors=True)


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def pick(pool, n, seed):
    "n tasks, one per macro for as many macros as possible, then any; sorted by task_id."
    rng, by = random.Random(seed), defaultdict(list)
    for t in sorted(pool, key=lambda t: t["task_id"]): by[t["macro"]].append(t)
    chosen = [rng.choice(by[m]) for m in rng.sample(sorted(by), min(n, len(by)))]
    ids = {t["task_id"] for t in chosen}
    rest = [t for t in sorted(pool, key=lambda t: t["task_id"]) if t["task_id"] not in ids]
    chosen += rng.sample(rest, min(n - len(chosen), len(rest)))
    return sorted(chosen, key=lambda t: t["task_id"])


def read_results(out):
    "{task_id: its last result line} of a run folder."
    rows = {}
    for line in (Path(out) / "results.jsonl").read_text().splitlines():
        try: r = json.loads(line)
        except ValueError: continue
        if isinstance(r, dict) and "task_id" in r: rows[r["task_id"]] = r
    return rows


def metrics(res):
    kept = sum(bool(r["ok"]) for r in res.values())
    span = max(r["t"] for r in res.values()) - min(r["t"] - r["duration_s"] for r in res.values())
    return {"kept": kept, "total": len(res), "span_s": round(span, 2), "kept_per_min": round(kept / (span / 60), 3),
            "median_unit_s": round(statistics.median(r["duration_s"] for r in res.values()), 2)}


# -------------------------------------------------------------------------------------------------------- outputs
def png_size(p):
    head = Path(p).read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n": return "not a PNG"
    return "%dx%d" % struct.unpack(">II", head[16:24])


def unit_files(d):
    "What must not change in a kept unit: trajectory (steps without `duration`), elements, screenshots and sizes."
    traj = json.loads((d / "trajectory.json").read_text())
    for s in traj.get("steps", []):
        for k in ("duration", "t0", "t1"): s.pop(k, None)          # times differ from run to run
    return {"trajectory.json": traj, "elements.json": json.loads((d / "elements.json").read_text()),
            "step_*.png": {p.name: png_size(p) for p in sorted(d.glob("step_*.png"))}}


def canonical(files, base):
    """unit_files without what differs between two runs of the same code: the server's base URL (a free port per run)
    and browser-use's element numbers (DOM node ids, in no stable order): a step's elements become a sorted list, and
    an action's `index` the element it names."""
    def sub(v):
        if isinstance(v, str): return v.replace(base, "<base>") if base else v
        if isinstance(v, dict): return {k: sub(x) for k, x in v.items()}
        return [sub(x) for x in v] if isinstance(v, list) else v
    files = sub(files)
    els = files["elements.json"]
    for s in files["trajectory.json"].get("steps", []):
        i = s.get("params", {}).get("index")
        if isinstance(i, int): s["params"]["index"] = els.get(str(s.get("step")), {}).get(str(i), f"not shown ({i})")
    files["elements.json"] = {step: sorted(json.dumps(x, sort_keys=True, ensure_ascii=False) for x in e.values())
                              for step, e in els.items()}
    return files


def first_diff(a, b, path=""):
    "(key path, a's value, b's value) of the first difference, or None."
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return f"{path}.{k}", a.get(k, "<missing>"), b.get(k, "<missing>")
            d = first_diff(a[k], b[k], f"{path}.{k}")
            if d: return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_diff(x, y, f"{path}[{i}]")
            if d: return d
        if len(a) != len(b): return f"{path} (length)", len(a), len(b)
        return None
    return None if a == b and type(a) is type(b) else (path, a, b)


def short(v, n=100):
    s = json.dumps(v, ensure_ascii=False, default=str) if not isinstance(v, str) else repr(v)
    return s if len(s) <= n else s[:n - 3] + "..."


def compare(before, after, rb, ra):
    "The last round's outputs: kept units file by file (as written, and canonical), and every task's outcome."
    both = sorted(t for t in rb if rb[t]["ok"] and ra.get(t, {}).get("ok"))
    diffs, cdiffs = [], []
    for tid in both:
        fb, fa = unit_files(before / "accepted" / tid), unit_files(after / "accepted" / tid)
        cb, ca = canonical(fb, rb[tid].get("base")), canonical(fa, ra[tid].get("base"))
        for got, (x, y) in ((diffs, (fb, fa)), (cdiffs, (cb, ca))):
            d = first_diff(x, y)
            if d: got.append({"task_id": tid, "path": d[0].lstrip("."), "before": d[1], "after": d[2]})
    outcome = [{"task_id": t, "before": bool(rb[t]["ok"]), "after": bool(ra.get(t, {}).get("ok")),
                "before_cause": rb[t].get("cause"), "after_cause": ra.get(t, {}).get("cause")}
               for t in sorted(rb) if bool(rb[t]["ok"]) != bool(ra.get(t, {}).get("ok"))]
    return {"compared": len(both), "identical": len(both) - len(diffs), "diffs": diffs,
            "identical_canonical": len(both) - len(cdiffs), "diffs_canonical": cdiffs, "outcome_diffs": outcome}


# ----------------------------------------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the older commit (any git ref)")
    ap.add_argument("--sites", "--site", default="bank", help="comma-separated site names")
    ap.add_argument("--workers", type=int, default=1, help="units running at once on each side")
    ap.add_argument("--backend", default=None, help="the after side's run_units backend (default: run_datagen's own)")
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", default=None, help="keep the run folders (and child logs) in this folder")
    args = ap.parse_args(argv)

    after, commit, dirty, tmp, root, before = two_sides(args.before, args.keep, "before-after-")
    trees = {"before": before, "after": after}
    try:
        # each side once: where its webmix (and its servers' webmix) comes from, and its tasks of the site
        sites = args.sites.split(",")
        spec = {"sites": sites, "seed": args.seed}
        probe = {side: child("probe", tree, spec, root / f"probe-{side}.log") for side, tree in trees.items()}
        check_imports(probe, trees)
        tasks = pick(probe["after"]["tasks"], args.tasks, args.seed)
        own = {t["task_id"]: t for t in probe["before"]["tasks"]}
        same = sum(own.get(t["task_id"]) == t for t in tasks)
        (root / "tasks.json").write_text(json.dumps(tasks, indent=1, ensure_ascii=False))
        print(f"before: {args.before} = {commit}, webmix from {probe['before']['file']}\n"
              f"after:  working tree{f' ({len(dirty)} changed files)' if dirty else ''}, webmix from "
              f"{probe['after']['file']}\n"
              f"servers import the same trees: {probe['before']['server_file']} / {probe['after']['server_file']}\n"
              f"{len(tasks)} tasks on {args.sites} ({len({t['macro'] for t in tasks})} macros), {args.workers} worker(s), "
              f"{args.rounds} round(s); the before tree draws {same}/{len(tasks)} of these task dicts identically",
              flush=True)

        runs = []
        print(f"\n{'side':<7} {'round':>5} {'kept':>7} {'span s':>8} {'kept/min':>9} {'median unit s':>14} {'wall s':>7}",
              flush=True)
        for rnd in range(1, args.rounds + 1):
            for side, tree in trees.items():
                out = root / f"{side}-r{rnd}"
                if out.exists(): sys.exit(f"{out} exists: --keep needs a folder without earlier runs")
                got = child("run", tree, {"tasks": str(root / "tasks.json"), "out": str(out), "workers": args.workers,
                                          "backend": args.backend if side == "after" else None},
                            root / f"{side}-r{rnd}.log")
                row = {"side": side, "round": rnd, "out": str(out), **metrics(read_results(out)), "wall_s": got["wall_s"]}
                runs.append(row)
                print(f"{side:<7} {rnd:>5} {row['kept']:>3}/{row['total']:<3} {row['span_s']:>8.1f} "
                      f"{row['kept_per_min']:>9.2f} {row['median_unit_s']:>14.2f} {row['wall_s']:>7.1f}", flush=True)

        sides = {s: {"mean_kept_per_min": round(statistics.mean(r["kept_per_min"] for r in runs if r["side"] == s), 3),
                     "mean_wall_s": round(statistics.mean(r["wall_s"] for r in runs if r["side"] == s), 2)}
                 for s in trees}
        ratio = round(sides["after"]["mean_kept_per_min"] / sides["before"]["mean_kept_per_min"], 3) \
            if sides["before"]["mean_kept_per_min"] else None
        print("\n" + "\n".join(f"{s:<7} mean {v['mean_kept_per_min']:.2f} kept/min, mean wall {v['mean_wall_s']:.1f}s"
                               for s, v in sides.items()) + f"\nafter/before kept per minute: {ratio}x")

        last = {s: root / f"{s}-r{args.rounds}" for s in trees}
        cmp = compare(last["before"], last["after"], read_results(last["before"]), read_results(last["after"]))
        print(f"\noutputs of round {args.rounds}, units kept on both sides (trajectory.json without the steps' duration, t0 and t1, "
              f"elements.json, step_*.png and their sizes):\n  as written: {cmp['identical']}/{cmp['compared']} identical")
        for d in cmp["diffs"]:
            print(f"    {d['task_id']}: {d['path']}\n      before {short(d['before'])}\n      after  {short(d['after'])}")
        print(f"  canonical (base URL and browser-use's element numbers left out): "
              f"{cmp['identical_canonical']}/{cmp['compared']} identical")
        for d in cmp["diffs_canonical"]:
            print(f"    {d['task_id']}: {d['path']}\n      before {short(d['before'])}\n      after  {short(d['after'])}")
        print(f"outcomes: {len(tasks) - len(cmp['outcome_diffs'])}/{len(tasks)} tasks kept or rejected alike")
        for d in cmp["outcome_diffs"]:
            print(f"  {d['task_id']}: before {'kept' if d['before'] else 'rejected (' + str(d['before_cause']) + ')'}, "
                  f"after {'kept' if d['after'] else 'rejected (' + str(d['after_cause']) + ')'}")

        summary = {**sides_header(args.before, commit, after, dirty, probe), "sites": sites, "workers": args.workers,
                   "seed": args.seed,
                   "tasks": [t["task_id"] for t in tasks],
                   "same_task_dicts_in_before": same, "runs": runs, "sides": sides, "ratio_after_before": ratio,
                   "outputs": cmp}
        return saved(summary, args, root)
    finally:
        drop_worktree(before, tmp, after)


if __name__ == "__main__":
    main()
    sys.exit(0)
