"""plan-data, evaluation, online runs and a datagen unit's parts before and after a change: chains a minute and episodes
a minute on the same work, an older commit against the working tree, in turns (datagen's side of the same comparison is before_after.py).

The older commit (`--before REF`, required: the baseline, e.g. 643f242) is checked out as a detached git worktree
in a temp folder; the after side is the working tree this script belongs to (uncommitted changes included). Every
run is a subprocess in its own tree (before_after.child: cwd and PYTHONPATH its tree, webmix's editable-install
finder off sys.meta_path), and each side is first probed once (where its webmix and its MiniWeb servers' webmix come from, its human-style tasks).

Parts (`--parts`, all four by default):
- plan_data: each side makes its own pool with its own datagen on the main job's pool sites (`--pool-sites`, every
  task of them, `--workers` workers; not timed), then runs `run_plan_data` on that pool: `--chains` chains (seed
  `--seed`, sizes 2 to 4) with `--workers` workers. Chains a minute = chains / the span from the first chain's start
  to the last one's end (result lines' `t` and `duration_s`); also kept and the run's wall time.
- phases: one datagen unit's wall time in three parts, `--unit-tasks` datagen tasks of `--pool-sites` both sides have
  (a seeded draw), one worker in the run's own process on both sides (the marks need one timeline): set-up, from the
  unit's start to browser-use's `Agent.run` (its folder, the browser made ready, the start page); steps, `Agent.run`;
  gate, from there to the unit's end (the backend's evidence, the gate, the files written and moved into place).
  Medians in ms; the part's figure is units a minute at the median unit time.
- evaluate: the first `--tasks` human-style test tasks both sides have (by task_id, sorted), on each arm of the main
  job (`base`, and `oracle` with its adapters and gate_done) against that side's scripted stand-in policy
  (`serve_policy(port=0, faults={"premature": 0}, seed)`), `--workers` workers, headless. Episodes a minute = episodes
  / wall time of the `run_evaluate` calls; also successes per arm (a scripted success must stay one).
- online: held-out-style task files, `--online-tasks` human-style test tasks both sides have (seeded, in turn over
  `--online-sites` test sites drawn first), every other one written in Online-Mind2Web's JSON list and the rest in
  WebVoyager's JSON lines (task, start URL; each site a MiniWeb server on a port of its own, so each is a website of its
  own to the run's per-website pacing), then `webmix online --arm base` on each file as its command line runs it (the
  after side on `--backend`), against that side's scripted stand-in. Episodes a minute = episodes / wall time of the two
  commands; also each episode's status (alike on both sides) and the actions the episodes took, a minute (the two
  sides' stand-ins need not take the same actions: 643f242's ran code in the page, the after side's plays from the
  prompt).

The sides run before, after, before, after ... for `--rounds` rounds; the ratio is after / before of the means.

    python benchmarks/speed.py --before REF [--parts plan_data,evaluate,phases,online] [--chains 40] [--tasks 12]
                               [--unit-tasks 12] [--online-tasks 12] [--online-sites 6]
                               [--workers 2] [--rounds 1] [--seed 0] [--pool-sites shop,kanban] [--backend processes]
                               [--json out.json] [--keep DIR]

Each side runs its units as its command line does by default: the before side in its own process (the only backend
643f242 has), the after side on `--backend` (default `processes`, the command line's default now).
"""
import argparse, json, random, statistics, sys, time
from pathlib import Path

from before_after import PREAMBLE, check_imports, child, drop_worktree, read_results, saved, sides_header, two_sides

CHILD = PREAMBLE + r'''
first_of("webmix.agents.harness", "webmix.harness")
free_ports = first_of("webmix.world.servers", "webmix.world.miniweb", "webmix.miniweb").free_ports
human_tasks = first_of("webmix.eval.evaluate", "webmix.evaluate").human_tasks
tid = lambda t: t["task_id"] if isinstance(t, dict) else t.task_id
field = lambda t, k: t[k] if isinstance(t, dict) else getattr(t, k)   # a task dict (older trees) or record
if mode == "probe":
    srv = subprocess.run([sys.executable, "-c", "import webmix; print(webmix.__file__)"], capture_output=True, text=True)
    all_tasks = first_of("webmix.data.tasks", "webmix.tasks").all_tasks
    test_sites = {tid(t): field(t, "sites")[0] for t in human_tasks("test")}
    out.update(server_file=srv.stdout.strip() or srv.stderr.strip()[-300:], test_tasks=list(test_sites), test_sites=test_sites,
               datagen_tasks=[t["task_id"] for t in all_tasks(sites=spec["sites"])],
               arms=getattr(first_of("webmix.job", "webmix.cli"), "MAIN_ARMS"))
elif mode == "phases":
    # one datagen unit's wall time in three parts: set-up (from the unit's start to the agent's run: its folder, the
    # browser made ready, the start page), steps (browser-use's Agent.run) and gate (the backend's evidence, the gate,
    # the files written and moved into place); one worker in this process, so the marks follow one another
    D = first_of("webmix.data.datagen", "webmix.datagen")
    from browser_use.agent.service import Agent
    all_tasks = first_of("webmix.data.tasks", "webmix.tasks").all_tasks
    tasks = {t["task_id"]: t for t in all_tasks(sites=spec["sites"])}
    missing = [t for t in spec["task_ids"] if t not in tasks]
    if missing: sys.exit(f"tasks {missing} are not in this tree")
    marks, run_task, agent_run = [], D.run_task, Agent.run
    async def timed_task(task, worker):
        marks.append(["unit", task["task_id"], time.perf_counter(), None, None])
        try: return await run_task(task, worker)
        finally: marks[-1][4] = time.perf_counter()
    async def timed_run(self, *a, **k):
        if marks[-1][3] is None: marks[-1][3] = [time.perf_counter(), None]
        try: return await agent_run(self, *a, **k)
        finally: marks[-1][3][1] = time.perf_counter()
    D.run_task, Agent.run = timed_task, timed_run
    engine = {"backend": spec["backend"]} if spec.get("backend") else {}
    D.run_datagen(spec["out"], tasks=[tasks[t] for t in spec["task_ids"]], workers=1, ports=free_ports(1), progress=False,
                  **engine)
    out["phases"] = {tid: {"setup_s": run[0] - t0, "steps_s": run[1] - run[0], "gate_s": t1 - run[1]}
                     for _, tid, t0, run, t1 in marks if run and run[1]}
elif mode == "pool":
    run_datagen = first_of("webmix.data.datagen", "webmix.datagen").run_datagen
    t0 = time.perf_counter()
    run_datagen(spec["out"], sites=spec["sites"], workers=spec["workers"], ports=free_ports(spec["workers"]), progress=False)
    out["wall_s"] = round(time.perf_counter() - t0, 1)
elif mode == "plan_data":
    run_plan_data = first_of("webmix.data.plan_data", "webmix.plan_data").run_plan_data
    t0 = time.perf_counter()
    engine = {"backend": spec["backend"]} if spec.get("backend") else {}
    run_plan_data(spec["out"], runs=[spec["pool"]], chains=spec["chains"], seed=spec["seed"], workers=spec["workers"],
                  ports=free_ports(spec["workers"]), progress=False, **engine)
    out["wall_s"] = round(time.perf_counter() - t0, 1)
elif mode == "online":
    # held-out-style task files: human-style test tasks written in Online-Mind2Web's and WebVoyager's published formats,
    # each website a MiniWeb server of its own (its own origin, as the benchmarks' websites are), then `webmix online`
    # on each file as a user runs it (the command line, its default backend), against the scripted stand-in
    Servers = first_of("webmix.world.servers", "webmix.world.miniweb", "webmix.miniweb").Servers
    serve_policy = first_of("webmix.eval.policy", "webmix.policy").serve_policy
    cli = first_of("webmix.cli").main
    by_id = {tid(t): t for t in human_tasks("test")}
    missing = [t for t in spec["task_ids"] if t not in by_id]
    if missing: sys.exit(f"tasks {missing} are not in this tree")
    start = lambda t: t.get("starting_url", t.get("start_url")) if isinstance(t, dict) else t.starting_url   # renamed since
    tasks = [by_id[t] for t in spec["task_ids"]]
    sites = sorted({field(t, "sites")[0] for t in tasks})
    run_dir = Path(spec["out"]); run_dir.mkdir(parents=True, exist_ok=True)
    out["wall_s"] = {}
    with Servers(ports=free_ports(len(sites))) as servers:
        base = dict(zip(sites, servers.bases))
        def website(t): return base[field(t, "sites")[0]] + start(t)
        om2w = [{"task_id": tid(t), "confirmed_task": field(t, "instruction"), "website": website(t),
                 "reference_length": len(field(t, "subtasks")), "level": "medium"} for t in tasks[0::2]]
        voyager = [{"web_name": field(t, "sites")[0].capitalize(), "id": tid(t), "ques": field(t, "instruction"),
                    "web": website(t)} for t in tasks[1::2]]
        (run_dir / "om2w.json").write_text(json.dumps(om2w, indent=1))
        (run_dir / "webvoyager.jsonl").write_text("".join(json.dumps(v) + "\n" for v in voyager))
        with serve_policy(port=0, faults={"premature": 0.0}, seed=spec["seed"]) as srv:
            for bench, f in (("om2w", "om2w.json"), ("webvoyager", "webvoyager.jsonl")):
                t0 = time.perf_counter()
                code = cli(["online", "--bench", bench, "--tasks", str(run_dir / f), "--arm", "base", "--model", "base",
                            "--vllm", srv.base_url, "--workers", str(spec["workers"]), "--pace-dir", str(run_dir / "pace"),
                            "--out", str(run_dir / bench)])
                if code: sys.exit(f"webmix online --bench {bench} exited {code}")
                out["wall_s"][bench] = round(time.perf_counter() - t0, 1)
else:
    run_evaluate = first_of("webmix.eval.evaluate", "webmix.evaluate").run_evaluate
    serve_policy = first_of("webmix.eval.policy", "webmix.policy").serve_policy
    arms = getattr(first_of("webmix.job", "webmix.cli"), "MAIN_ARMS")
    tasks = [t for t in human_tasks("test") if tid(t) in set(spec["task_ids"])]
    if sorted(tid(t) for t in tasks) != sorted(spec["task_ids"]): sys.exit(f"tasks {[tid(t) for t in tasks]} are not {spec['task_ids']}")
    out["wall_s"] = {}
    engine = {"backend": spec["backend"]} if spec.get("backend") else {}
    with serve_policy(port=0, faults={"premature": 0.0}, seed=spec["seed"]) as srv:
        for arm, kw in arms.items():
            t0 = time.perf_counter()
            run_evaluate(tasks, Path(spec["out"]) / arm, arm=arm, vllm=srv.base_url, workers=spec["workers"],
                         ports=free_ports(spec["workers"]), headless=True, progress=False, **kw, **engine)
            out["wall_s"][arm] = round(time.perf_counter() - t0, 1)
print("@@before_after " + json.dumps(out), flush=True)
'''


def online_draw(task_ids, site_of_task, n, sites, seed) -> list:
    "`n` of `task_ids` (seeded), as evenly as they go over `sites` websites drawn first: the online part's tasks."
    rng, by = random.Random(seed), {}
    for t in sorted(task_ids): by.setdefault(site_of_task[t], []).append(t)
    chosen = rng.sample(sorted(by), min(sites, len(by)))
    for s in chosen: rng.shuffle(by[s])
    picks = [t for row in zip(*(by[s] for s in chosen)) for t in row]       # one of each website in turn
    return picks[:n]


def span_per_min(res: dict) -> float:
    "Units a minute over the span from the first unit's start to the last one's end."
    span = max(r["t"] for r in res.values()) - min(r["t"] - r["duration_s"] for r in res.values())
    return round(len(res) / (span / 60), 2)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the older commit (any git ref), the baseline")
    ap.add_argument("--parts", default="plan_data,evaluate,phases,online")
    ap.add_argument("--chains", type=int, default=40)
    ap.add_argument("--tasks", type=int, default=12, help="human-style test tasks of the evaluate part")
    ap.add_argument("--online-tasks", type=int, default=12, help="human-style test tasks of the online part")
    ap.add_argument("--online-sites", type=int, default=6, help="the websites they are drawn from (a MiniWeb server each)")
    ap.add_argument("--unit-tasks", type=int, default=12, help="datagen tasks of the phases part (of --pool-sites)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--backend", default="processes", help="the after side's run_units backend (the command line's default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pool-sites", default="shop,kanban", help="the sites of each side's pool for plan-data")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", default=None, help="keep the run folders (and child logs) in this folder")
    args = ap.parse_args(argv)
    parts = args.parts.split(",")
    t_start = time.perf_counter()
    after, commit, dirty, tmp, root, before = two_sides(args.before, args.keep, "speed-")
    trees = {"before": before, "after": after}
    try:
        probe = {s: child("probe", tree, {"sites": args.pool_sites.split(",")}, root / f"probe-{s}.log", CHILD)
                 for s, tree in trees.items()}
        check_imports(probe, trees)
        print(f"before: {args.before} = {commit}, webmix from {probe['before']['file']}\n"
              f"after:  working tree{f' ({len(dirty)} changed files)' if dirty else ''}, webmix from {probe['after']['file']}\n"
              f"{args.workers} workers, {args.rounds} round(s), seed {args.seed}", flush=True)
        summary = {**sides_header(args.before, commit, after, dirty, probe), "workers": args.workers, "seed": args.seed,
                   "rounds": args.rounds}
        runs = []
        if "plan_data" in parts:
            pools = {}
            for s, tree in trees.items():
                pools[s] = root / f"pool-{s}"
                got = child("pool", tree, {"out": str(pools[s]), "sites": args.pool_sites.split(","), "workers": args.workers},
                            root / f"pool-{s}.log", CHILD)
                res = read_results(pools[s])
                print(f"{s} pool: datagen on {args.pool_sites}, {sum(bool(r['ok']) for r in res.values())}/{len(res)} kept "
                      f"in {got['wall_s']:.0f}s", flush=True)
            print(f"\nplan-data, {args.chains} chains\n{'side':<7} {'round':>5} {'kept':>7} {'chains/min':>11} {'wall s':>7}")
            for rnd in range(1, args.rounds + 1):
                for s, tree in trees.items():
                    out = root / f"plan-{s}-r{rnd}"
                    got = child("plan_data", tree, {"out": str(out), "pool": str(pools[s]), "chains": args.chains,
                                                    "seed": args.seed, "workers": args.workers,
                                                    "backend": args.backend if s == "after" else None},
                                    root / f"plan-{s}-r{rnd}.log", CHILD)
                    res = read_results(out)
                    row = {"part": "plan_data", "side": s, "round": rnd, "kept": sum(bool(r["ok"]) for r in res.values()),
                           "total": len(res), "per_min": span_per_min(res), "wall_s": got["wall_s"]}
                    runs.append(row)
                    print(f"{s:<7} {rnd:>5} {row['kept']:>3}/{row['total']:<3} {row['per_min']:>11.2f} {row['wall_s']:>7.1f}", flush=True)
        if "evaluate" in parts:
            both = sorted(set(probe["before"]["test_tasks"]) & set(probe["after"]["test_tasks"]))[:args.tasks]
            arms = probe["after"]["arms"]
            print(f"\nevaluate on the stand-in, {len(both)} human-style test tasks both sides have, arms {', '.join(arms)}\n"
                  f"{'side':<7} {'round':>5} {'ok by arm':>16} {'episodes/min':>13} {'wall s':>7}")
            summary["eval_tasks"] = both
            for rnd in range(1, args.rounds + 1):
                for s, tree in trees.items():
                    out = root / f"eval-{s}-r{rnd}"
                    got = child("evaluate", tree, {"out": str(out), "task_ids": both, "seed": args.seed,
                                                   "workers": args.workers, "backend": args.backend if s == "after" else None},
                                    root / f"eval-{s}-r{rnd}.log", CHILD)
                    ok = {arm: sum(r.get("ok") is True for r in read_results(out / arm).values()) for arm in got["wall_s"]}
                    n = sum(len(read_results(out / arm)) for arm in got["wall_s"])
                    wall = sum(got["wall_s"].values())
                    row = {"part": "evaluate", "side": s, "round": rnd, "ok": ok, "episodes": n,
                           "per_min": round(n / (wall / 60), 2), "wall_s": round(wall, 1),
                           "ok_by_task": {arm: {t: r.get("ok") for t, r in sorted(read_results(out / arm).items())} for arm in ok}}
                    runs.append(row)
                    okt = " ".join(f"{a}:{k}/{len(both)}" for a, k in ok.items())
                    print(f"{s:<7} {rnd:>5} {okt:>16} {row['per_min']:>13.2f} {row['wall_s']:>7.1f}", flush=True)
        if "online" in parts:
            both = sorted(set(probe["before"]["test_tasks"]) & set(probe["after"]["test_tasks"]))
            ids = online_draw(both, probe["after"]["test_sites"], args.online_tasks, args.online_sites, args.seed)
            summary["online_tasks"] = ids
            print(f"\nonline on held-out-style task files (Online-Mind2Web's and WebVoyager's formats), {len(ids)} "
                  f"human-style test tasks on {args.online_sites} websites, the stand-in\n"
                  f"{'side':<7} {'round':>5} {'done':>7} {'episodes/min':>13} {'actions':>8} {'actions/min':>12} {'wall s':>7}")
            for rnd in range(1, args.rounds + 1):
                for s, tree in trees.items():
                    out = root / f"online-{s}-r{rnd}"
                    env = {"WEBMIX_BACKEND": args.backend} if s == "after" else {}
                    got = child("online", tree, {"out": str(out), "task_ids": ids, "seed": args.seed, "workers": args.workers},
                                root / f"online-{s}-r{rnd}.log", CHILD, env=env)
                    res = {t: r for b in got["wall_s"] for t, r in read_results(out / b).items()}
                    acts = sum(len(json.loads((out / r["folder"] / "result.json").read_text())["action_history"])
                               for r in res.values() if r.get("folder"))
                    wall = sum(got["wall_s"].values())
                    row = {"part": "online", "side": s, "round": rnd, "done": sum(r.get("status") == "done" for r in res.values()),
                           "episodes": len(res), "per_min": round(len(res) / (wall / 60), 2), "wall_s": round(wall, 1),
                           "actions": acts, "actions_per_min": round(acts / (wall / 60), 1),
                           "by_task": {t: r.get("status") for t, r in sorted(res.items())}}
                    runs.append(row)
                    print(f"{s:<7} {rnd:>5} {row['done']:>3}/{row['episodes']:<3} {row['per_min']:>13.2f} {acts:>8} "
                          f"{row['actions_per_min']:>12.1f} {row['wall_s']:>7.1f}", flush=True)
        if "phases" in parts:
            both = sorted(set(probe["before"]["datagen_tasks"]) & set(probe["after"]["datagen_tasks"]))
            ids = random.Random(args.seed).sample(both, min(args.unit_tasks, len(both)))
            summary["phase_tasks"] = ids
            print(f"\none datagen unit's parts, {len(ids)} tasks of {args.pool_sites}, 1 worker in the run's process, "
                  f"medians in ms\n{'side':<7} {'round':>5} {'kept':>7} {'set-up':>8} {'steps':>8} {'gate':>8} {'unit':>8}")
            for rnd in range(1, args.rounds + 1):
                for s, tree in trees.items():
                    out = root / f"phases-{s}-r{rnd}"
                    got = child("phases", tree, {"out": str(out), "sites": args.pool_sites.split(","), "task_ids": ids,
                                                 "backend": "local" if s == "after" else None},
                                root / f"phases-{s}-r{rnd}.log", CHILD)
                    ph = got["phases"]
                    med = {k: round(1000 * statistics.median(p[k] for p in ph.values()), 1)
                           for k in ("setup_s", "steps_s", "gate_s")}
                    unit = round(1000 * statistics.median(sum(p.values()) for p in ph.values()), 1)
                    res = read_results(out)
                    row = {"part": "phases", "side": s, "round": rnd, "kept": sum(bool(r["ok"]) for r in res.values()),
                           "total": len(res), "median_ms": {**med, "unit": unit}, "per_min": round(60000 / unit, 2)}
                    runs.append(row)
                    print(f"{s:<7} {rnd:>5} {row['kept']:>3}/{row['total']:<3} {med['setup_s']:>8.1f} {med['steps_s']:>8.1f} "
                          f"{med['gate_s']:>8.1f} {unit:>8.1f}", flush=True)
        ratios = {}
        for part in parts:
            mean = {s: statistics.mean(r["per_min"] for r in runs if r["part"] == part and r["side"] == s) for s in trees}
            ratios[part] = {**{s: round(v, 2) for s, v in mean.items()}, "ratio": round(mean["after"] / mean["before"], 3)}
        print("\n" + "\n".join(f"{p}: before {v['before']:.2f}/min, after {v['after']:.2f}/min, after/before {v['ratio']}x"
                               for p, v in ratios.items()))
        if "phases" in parts:
            for k in ("setup_s", "steps_s", "gate_s", "unit"):
                mean = {s: statistics.mean(r["median_ms"][k] for r in runs if r["part"] == "phases" and r["side"] == s)
                        for s in trees}
                ratios["phases"][k] = {"before_ms": round(mean["before"], 1), "after_ms": round(mean["after"], 1),
                                       "before/after": round(mean["before"] / mean["after"], 3)}
            print("phases (median ms, before -> after): " + ", ".join(
                f"{k.removesuffix('_s')} {v['before_ms']:.0f} -> {v['after_ms']:.0f}" for k, v in ratios["phases"].items()
                if isinstance(v, dict) and "before_ms" in v))
        if "evaluate" in parts:
            last = {s: next(r for r in reversed(runs) if r["part"] == "evaluate" and r["side"] == s) for s in trees}
            same = last["before"]["ok_by_task"] == last["after"]["ok_by_task"]
            print(f"evaluate: every episode's outcome alike on both sides: {same}")
            ratios["evaluate"]["outcomes_alike"] = same
        if "online" in parts:
            last = {s: next(r for r in reversed(runs) if r["part"] == "online" and r["side"] == s) for s in trees}
            same = last["before"]["by_task"] == last["after"]["by_task"]
            print(f"online: every episode's status alike on both sides: {same}")
            ratios["online"]["outcomes_alike"] = same
        wall = round(time.perf_counter() - t_start, 1)
        print(f"wall time {wall:.0f}s")
        return saved({**summary, "runs": runs, "ratios": ratios, "wall_s": wall}, args, root)
    finally:
        drop_worktree(before, tmp, after)


if __name__ == "__main__":
    main()
    sys.exit(0)
