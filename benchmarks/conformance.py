"""Conformance of evaluation's grading, on webmix's scripted stand-in for a model (a simulator, not a model).

Parts (each a `webmix.eval.evaluate` run, base arm, no JavaScript offered, into its own folder under --out):
- datagen: every datagen task of the split's sites (`webmix tasks --split ...`), played as the drivers play them and
  graded by datagen's own gate: every site should pass at least 98%.
- wrong_element: the same tasks with the `wrong_element` fault at 1: every step's element swapped for another listed
  one. A task where the swap acted must fail; tasks where it could not act (no other element, or no element step:
  an answer, a slider) are counted apart.
- human / human_wrong: every human-style task of both splits, played from its script (all should pass) and as its
  wrong variant (a macro left out, another value, a wrong answer: none should pass).

    python benchmarks/conformance.py [--split test] [--parts datagen,wrong_element,human,human_wrong] [--workers 2]
                                     [--out DIR] [--json out.json]
"""
import argparse, json, tempfile, time
from collections import Counter
from pathlib import Path

from webmix.config import setup_env
setup_env()                                  # first: browser-use's offline settings (no telemetry) before it is imported
from webmix.agents import harness  # noqa: F401,E402  (before browser_use: the harness imports it with webmix's settings)
from webmix.eval.episode import load_results  # noqa: E402
from webmix.eval.evaluate import human_tasks, run_evaluate  # noqa: E402
from webmix.world.servers import free_ports  # noqa: E402
from webmix.eval.policy import serve_policy  # noqa: E402
from webmix.data.tasks import split_tasks  # noqa: E402

PARTS = ("datagen", "wrong_element", "human", "human_wrong")


def run_part(part, tasks, out, workers):
    "-> ({task_id: ok}, {task_id: faults that acted}, seconds)."
    t0 = time.time()
    faults = {"wrong_element": 1.0} if part == "wrong_element" else None
    datagen = tasks if part in ("datagen", "wrong_element") else None
    with serve_policy(port=0, faults=faults, datagen=datagen, variant="wrong" if part == "human_wrong" else "correct") as llm:
        run_evaluate(tasks, out / part, vllm=llm.base_url, workers=workers, ports=free_ports(workers), progress=True)
        made, errors = dict(llm.policy.faults_made), list(llm.policy.errors)
    if errors: print(f"{part}: the stand-in failed {len(errors)} time(s), first: {errors[0]}")
    ok = {r["task_id"]: bool(r["ok"]) for r in load_results(out / part).to_dict("records")}
    return ok, made, time.time() - t0


def by_site(tasks, ok) -> dict:
    n, k = Counter(t["site"] for t in tasks), Counter(t["site"] for t in tasks if ok.get(t["task_id"]))
    return {s: f"{k[s]}/{n[s]}" for s in sorted(n)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", default="test", choices=["train", "test", "all"], help="the sites of the datagen tasks")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None, help="the run folders' parent (default: a new temporary folder)")
    ap.add_argument("--json", default=None, help="write the figures here too")
    a = ap.parse_args()
    parts = [p.strip() for p in a.parts.split(",") if p.strip()]
    if bad := set(parts) - set(PARTS): raise SystemExit(f"conformance: unknown part(s) {sorted(bad)}; parts: {', '.join(PARTS)}")
    out = Path(a.out or tempfile.mkdtemp(prefix="webmix-conformance-"))
    report = {"split": a.split, "out": str(out)}
    made_tasks, humans = split_tasks(a.split), human_tasks("all")
    for part in parts:
        tasks = made_tasks if part in ("datagen", "wrong_element") else humans
        ok, made, took = run_part(part, tasks, out, a.workers)
        passed = sum(ok.get(t["task_id"], False) for t in tasks)
        r = {"tasks": len(tasks), "passed": passed, "seconds": round(took), "by_site": by_site(tasks, ok)}
        if part == "wrong_element":
            acted = [t for t in tasks if "wrong_element" in made.get(t["task_id"], ())]
            idle = [t for t in tasks if "wrong_element" not in made.get(t["task_id"], ())]
            r |= {"fault_acted": len(acted), "passed_where_it_acted": sorted(t["task_id"] for t in acted if ok.get(t["task_id"])),
                  "fault_could_not_act": len(idle), "passed_where_it_could_not": sum(ok.get(t["task_id"], False) for t in idle),
                  "macros_it_could_not_act_on": dict(Counter(t["macro"] for t in idle).most_common())}
        if part == "human_wrong": r["passed_tasks"] = sorted(t["key"] for t in tasks if ok.get(t["task_id"]))
        report[part] = r
        print(f"{part}: {passed}/{len(tasks)} passed in {took:.0f} s; by site {r['by_site']}")
        if part == "wrong_element":
            print(f"  the fault acted in {r['fault_acted']} tasks, of which {len(r['passed_where_it_acted'])} passed "
                  f"{r['passed_where_it_acted'][:10]}; it could not act in {r['fault_could_not_act']} "
                  f"({r['passed_where_it_could_not']} passed), by macro {r['macros_it_could_not_act_on']}")
    if a.json: Path(a.json).write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
