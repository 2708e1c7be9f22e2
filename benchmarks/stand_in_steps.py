"""Steps per episode of the main job's short evaluation on the scripted stand-in, before and after a commit.

The main job (`webmix main`, job.main_evaluation) ends with the first --eval-tasks human-style test tasks
(`human_tasks("test")[:N]`) on the arms of cli.MAIN_ARMS (`base`, and `oracle` with its adapters and gate_done)
against the stand-in policy (`serve_policy(port=0, faults={"premature": --eval-premature}, seed=--seed)`). Until
14763e5 the stand-in looked the page up with a JavaScript probe (browser-use's `evaluate` action) before acting; since
then it reads the prompt browser-use sends. This script runs that evaluation on both sides and compares steps.

The older commit (`--before REF`, required: the baseline, e.g. 14763e5^) is checked out as a detached git worktree
in a temp folder; the after side is the working tree this script belongs to (uncommitted changes included). Each
side runs in its own subprocess (before_after.child: cwd and PYTHONPATH its tree, webmix's editable-install finder off sys.meta_path,
$WEBMIX_DATA unset so its data/ is its own tree's), first once to describe itself (where webmix and a MiniWeb
server's webmix come from, its human test task ids, its main job's defaults and arms), then once to run: that tree's
serve_policy on a free port, and that tree's run_evaluate for each of that tree's MAIN_ARMS into a fresh folder, with
the main job's options (workers as its default, headless) but free MiniWeb ports. Both sides run the same task ids
(checked) with the same premature share and seed (the after tree's main defaults unless given).

Per arm and side: episodes, ok, median steps (results.jsonl's `steps`), and the `evaluate` actions (probes) in the
episodes' history.json. One round (the runs take minutes).

    python benchmarks/stand_in_steps.py --before REF [--tasks N] [--premature P] [--seed S] [--json out.json]
                                        [--keep DIR]
"""
import argparse, json, statistics, sys, time
from itertools import zip_longest
from pathlib import Path

from before_after import (PREAMBLE, check_imports, child, drop_worktree, read_results, saved, sides_header,
                          two_sides)

# The child: `python -c CHILD mode root spec` (run by before_after.child, whose MARK line it prints). probe: describe
# the tree; run: the main job's evaluation on this tree's stand-in.
CHILD = PREAMBLE + r'''
first_of("webmix.agents.harness", "webmix.harness")    # before browser_use, as the CLI's modules import it
MAIN_ARMS = getattr(first_of("webmix.job", "webmix.cli"), "MAIN_ARMS")
parser = first_of("webmix.cli").parser
human_tasks = first_of("webmix.eval.evaluate", "webmix.evaluate").human_tasks
tid = lambda t: t["task_id"] if isinstance(t, dict) else t.task_id      # dicts before 14763e5, records after
out = {"file": webmix.__file__, "annotations": str(config.annotations_dir().resolve())}
if mode == "probe":
    srv = subprocess.run([sys.executable, "-c", "import webmix; print(webmix.__file__)"], capture_output=True, text=True)
    main = {k: v for k, v in vars(parser().parse_args(["main"])).items() if not k.startswith("_") and k != "func"}
    out.update(server_file=srv.stdout.strip() or srv.stderr.strip()[-300:], test_tasks=[tid(t) for t in human_tasks("test")],
               arms=MAIN_ARMS, main={k: main[k] for k in ("eval_tasks", "eval_premature", "seed", "workers", "headful")})
else:
    run_evaluate = first_of("webmix.eval.evaluate", "webmix.evaluate").run_evaluate
    free_ports = first_of("webmix.world.servers", "webmix.world.miniweb", "webmix.miniweb").free_ports
    serve_policy = first_of("webmix.eval.policy", "webmix.policy").serve_policy
    tasks = human_tasks("test")[:spec["n"]]
    if [tid(t) for t in tasks] != spec["task_ids"]: sys.exit(f"tasks {[tid(t) for t in tasks]} are not {spec['task_ids']}")
    out["wall_s"] = {}
    with serve_policy(port=0, faults={"premature": spec["premature"]}, seed=spec["seed"]) as srv:
        out["policy_url"] = srv.base_url
        for arm, kw in MAIN_ARMS.items():
            t0 = time.perf_counter()
            run_evaluate(tasks, Path(spec["out"]) / arm, arm=arm, vllm=srv.base_url, workers=spec["workers"],
                         ports=free_ports(spec["workers"]), headless=True, progress=False, **kw)
            out["wall_s"][arm] = round(time.perf_counter() - t0, 1)
print("@@before_after " + json.dumps(out), flush=True)
'''


def episode_actions(ep) -> list:
    "The action names of a saved episode's browser-use history (as tests/test_policy.episode_steps reads it)."
    f = Path(ep) / "history.json"
    if not f.exists(): return None
    hist = json.loads(f.read_text())
    return [next(iter(a)) for h in hist.get("history", [])
            for a, _ in zip_longest((h.get("model_output") or {}).get("action") or [], h.get("result") or []) if a]


def arm_stats(out) -> dict:
    rows = read_results(out)
    steps = {t: r.get("steps") for t, r in sorted(rows.items())}
    acts = {t: episode_actions(Path(out) / t) for t in sorted(rows)}
    known = [s for s in steps.values() if isinstance(s, int)]
    return {"episodes": len(rows), "ok": sum(r.get("ok") is True for r in rows.values()),
            "raised": {t: (r.get("cause") or "")[:200] for t, r in sorted(rows.items()) if r.get("trace")},
            "median_steps": statistics.median(known) if known else None, "steps": steps,
            "probes": sum(a.count("evaluate") for a in acts.values() if a),
            "missing_history": sorted(t for t, a in acts.items() if a is None),
            "ok_by_task": {t: r.get("ok") for t, r in sorted(rows.items())}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the older commit (any git ref), the baseline")
    ap.add_argument("--tasks", type=int, default=None, help="human-style test tasks (default: the main job's --eval-tasks)")
    ap.add_argument("--premature", type=float, default=None, help="default: the main job's --eval-premature")
    ap.add_argument("--seed", type=int, default=None, help="the stand-in's seed (default: the main job's --seed)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", default=None, help="keep the run folders (and child logs) in this folder")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()

    after, commit, dirty, tmp, root, before = two_sides(args.before, args.keep, "stand-in-steps-")
    trees = {"before": before, "after": after}
    try:
        probe = {side: child("probe", tree, {}, root / f"probe-{side}.log", CHILD) for side, tree in trees.items()}
        check_imports(probe, trees, ("file", "server_file", "annotations"))
        main_opts = probe["after"]["main"]
        n = main_opts["eval_tasks"] if args.tasks is None else args.tasks
        premature = main_opts["eval_premature"] if args.premature is None else args.premature
        seed = main_opts["seed"] if args.seed is None else args.seed
        workers = main_opts["workers"]
        ids = {side: probe[side]["test_tasks"][:n] for side in trees}
        assert set(ids["before"]) == set(ids["after"]), f"the sides' first {n} test tasks differ: {ids}"
        assert ids["before"] == ids["after"], f"the sides order their test tasks differently: {ids}"
        if probe["before"]["arms"] != probe["after"]["arms"]:
            print(f"note: MAIN_ARMS differ: before {probe['before']['arms']}, after {probe['after']['arms']}")
        if probe["before"]["main"] != main_opts:
            print(f"note: the main job's defaults differ: before {probe['before']['main']}, after {main_opts}")
        print(f"before: {args.before} = {commit}, webmix from {probe['before']['file']}\n"
              f"after:  working tree{f' ({len(dirty)} changed files)' if dirty else ''}, webmix from {probe['after']['file']}\n"
              f"MiniWeb servers import {probe['before']['server_file']} / {probe['after']['server_file']}\n"
              f"tasks from {probe['before']['annotations']} / {probe['after']['annotations']}: the same {n} ids "
              f"({', '.join(ids['after'])})\n"
              f"arms {', '.join(f'{a} {kw}' for a, kw in probe['after']['arms'].items())}; premature {premature:g}, "
              f"seed {seed}, {workers} workers, headless, free ports", flush=True)

        spec = {"n": n, "task_ids": ids["after"], "premature": premature, "seed": seed, "workers": workers}
        got, stats = {}, {}
        print(f"\n{'side':<7} {'arm':<7} {'episodes':>8} {'ok':>4} {'median steps':>13} {'probes':>7} {'wall s':>7}", flush=True)
        for side, tree in trees.items():
            out = root / side
            if out.exists(): sys.exit(f"{out} exists: --keep needs a folder without earlier runs")
            got[side] = child("run", tree, {**spec, "out": str(out)}, root / f"run-{side}.log", CHILD)
            stats[side] = {arm: arm_stats(out / arm) for arm in probe[side]["arms"]}
            for arm, s in stats[side].items():
                print(f"{side:<7} {arm:<7} {s['episodes']:>8} {s['ok']:>4} {s['median_steps']!s:>13} {s['probes']:>7} "
                      f"{got[side]['wall_s'][arm]:>7.1f}" + (f"  (no history.json: {s['missing_history']})"
                                                            if s["missing_history"] else "")
                      + (f"  (the unit raised: {s['raised']})" if s["raised"] else ""), flush=True)

        rows = []
        for arm in probe["after"]["arms"]:
            b, a = stats["before"].get(arm), stats["after"].get(arm)
            rows.append({"arm": arm, "before": b and b["median_steps"], "after": a and a["median_steps"],
                         "probes_before": b and b["probes"], "probes_after": a and a["probes"]})
        allsteps = {s: [v for arm in stats[s].values() for v in arm["steps"].values() if isinstance(v, int)] for s in trees}
        rows.append({"arm": "all", **{s: statistics.median(allsteps[s]) if allsteps[s] else None for s in trees},
                     "probes_before": sum(x["probes"] for x in stats["before"].values()),
                     "probes_after": sum(x["probes"] for x in stats["after"].values())})
        for r in rows: r["ratio"] = round(r["after"] / r["before"], 3) if r["before"] and r["after"] is not None else None
        print(f"\nmedian steps per episode, {n} human-style test tasks, stand-in premature {premature:g}, seed {seed}\n"
              f"{'arm':<7} {'before':>7} {'after':>7} {'after/before':>13} {'probes before/after':>20}")
        for r in rows:
            probes = f"{r['probes_before']}/{r['probes_after']}"
            print(f"{r['arm']:<7} {r['before']!s:>7} {r['after']!s:>7} {r['ratio']!s:>13} {probes:>20}")
        wall = round(time.perf_counter() - t_start, 1)
        print(f"\nwall time {wall:.0f}s (runs: before {sum(got['before']['wall_s'].values()):.0f}s, "
              f"after {sum(got['after']['wall_s'].values()):.0f}s)")

        summary = {**sides_header(args.before, commit, after, dirty, probe), "tasks": ids["after"],
                   "arms": probe["after"]["arms"], "premature": premature, "seed": seed, "workers": workers, "table": rows, "sides": stats,
                   "run_wall_s": {s: got[s]["wall_s"] for s in trees}, "wall_s": wall}
        return saved(summary, args, root)
    finally:
        drop_worktree(before, tmp, after)


if __name__ == "__main__":
    main()
    sys.exit(0)
