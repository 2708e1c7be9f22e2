"""Datagen throughput and the harness's cost per step.

1. Kept trajectories per minute: the same tasks generated with 1 worker and then with 2 workers (`--workers`: any
   list, e.g. 2,3,4 to see whether more workers than cores gain anything; one MiniWeb server per worker), each into a
   fresh run folder. The span is from the first attempt's start to the last one's end (server start-up excluded).
2. Cost per step: every action step of the first run's kept trajectories (browser-use Agent + scripted model:
   state extraction, screenshot, prompt, action, waits) against the same actions done with plain Playwright
   (playwright.async_api on Debian's Chromium (config.CHROMIUM) with the same offline flags) on the same pages, in the
   same process: a fresh MiniWeb session, the task's start page, then each step on the element found by its control id.

    python benchmarks/datagen_throughput.py [--tasks 16] [--macros m1,m2] [--workers 1,2] [--backend local]
                                            [--ports 8330,8331] [--json out.json]
"""
import argparse, asyncio, json, random, statistics, sys, tempfile, time
from pathlib import Path

from webmix import config
from webmix.agents import harness as H
from webmix.agents.playwright import playwright_session
from webmix.agents import offline as HO
from webmix.data.datagen import run_datagen
from webmix.data.pool import kept, read_results
from webmix.data.tasks import all_tasks
from webmix.world.servers import Servers, free_ports

MACROS = ["filter_by_dropdown", "filter_by_options", "sort_by_form", "switch_tab", "paginate", "search_by_text",
          "open_detail", "navigate_home", "open_menu_item", "enter_text", "select_field_option", "create_entry"]
NO_PLAYWRIGHT = {"macro_done", "done", "wait"}      # steps with no browser action of their own


def span_minutes(results):
    start = min(r["t"] - r["duration_s"] for r in results)
    return (max(r["t"] for r in results) - start) / 60


def throughput(tasks, workers, ports, root, backend="local", turn=0):
    out = Path(root) / f"w{workers}-{turn}"            # a fresh folder each time (a worker count may come twice)
    run_datagen(out, tasks=tasks, workers=workers, ports=ports[:workers], progress=False, backend=backend)
    res = read_results(out)
    kept = sum(r["ok"] for r in res)
    return out, {"workers": workers, "tasks": len(res), "kept": kept, "minutes": round(span_minutes(res), 3),
                 "kept_per_min": round(kept / span_minutes(res), 2)}


def selector(el):
    s = f'[data-control-id={json.dumps(el["control_id"])}]'
    if el.get("value") is not None: s += f'[data-value={json.dumps(el["value"])}]'
    if el.get("part") is not None: s += f'[data-part={json.dumps(el["part"])}]'
    return (el.get("tag") or "") + s


async def playwright_steps(run, base):
    "Per-step seconds of the kept trajectories' action steps redone in plain Playwright."
    from playwright.async_api import async_playwright
    times, episodes = [], []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=config.CHROMIUM, headless=True, args=HO.chromium_args())
        for tid in sorted(kept(run)):
            d = Path(run) / "accepted" / tid
            task, traj = json.loads((d / "task.json").read_text()), json.loads((d / "trajectory.json").read_text())
            e0 = time.perf_counter()
            ctx = await browser.new_context(viewport=HO.VIEWPORT)
            page = await ctx.new_page()
            await playwright_session(ctx, page, base)
            await page.goto(base + task["start"]["url"])
            for s in traj["steps"]:
                if s["action"] in NO_PLAYWRIGHT: continue
                times.append((s["action"], await redo(page, s)))
            await ctx.close()
            episodes.append(time.perf_counter() - e0)
        await browser.close()
    return times, episodes


async def redo(page, s) -> float:
    "Seconds to redo one trajectory step in Playwright, waiting for the navigation when its URL changes."
    t0 = time.perf_counter()
    if s["url_after"].split("#")[0] != s["url_before"].split("#")[0]:
        async with page.expect_navigation(): await act(page, s)
    else: await act(page, s)
    return time.perf_counter() - t0


async def act(page, s):
    a, prm, el = s["action"], s["params"], s.get("element")
    if a == "select_dropdown": await page.locator(selector(el)).first.select_option(label=prm["text"])
    elif a == "input": await page.locator(selector(el)).first.fill(prm["text"])
    elif a == "click" and "download" in (el.get("attributes") or {}):
        async with page.expect_download(): await page.locator(selector(el)).first.click()
    elif a == "click": await page.locator(selector(el)).first.click()
    elif a == "upload_file": await page.locator(selector(el)).first.set_input_files(prm["path"])
    elif a == "scroll": await page.mouse.wheel(0, (1 if prm.get("down", True) else -1) * prm.get("pages", 1) * HO.VIEWPORT["height"])
    elif a in ("drag", "draw"):
        pts = ([(prm["x1"], prm["y1"]), (prm["x2"], prm["y2"])] if a == "drag" else [(q["x"], q["y"]) for q in prm["points"]])
        px = [(x * HO.VIEWPORT["width"] / 1000, y * HO.VIEWPORT["height"] / 1000) for x, y in pts]
        await page.mouse.move(*px[0]); await page.mouse.down()
        for x, y in px[1:]: await page.mouse.move(x, y, steps=10)
        await page.mouse.up()
    else: raise ValueError(f"no Playwright equivalent for {a}")


def harness_steps(run):
    out = []
    for tid in kept(run):
        traj = json.loads((Path(run) / "accepted" / tid / "trajectory.json").read_text())
        out += [(s["action"], s["duration"]) for s in traj["steps"] if s["duration"] is not None]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--macros", type=lambda s: s.split(","), default=MACROS)
    ap.add_argument("--workers", type=lambda s: [int(w) for w in s.split(",")], default=[1, 2])
    ap.add_argument("--backend", default="local", help="runs.run_units' backend: local (one event loop) or processes")
    ap.add_argument("--ports", type=lambda s: [int(p) for p in s.split(",")], default=None, help="default: free ones")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    pool = all_tasks(macros=args.macros)
    tasks = random.Random(args.seed).sample(pool, min(args.tasks, len(pool)))
    root = Path(tempfile.mkdtemp(prefix="datagen-bench-"))
    rows, ports = [], args.ports or free_ports(max(args.workers))
    for turn, w in enumerate(args.workers):
        out, row = throughput(tasks, w, ports, root, args.backend, turn)
        rows.append(row)
        if turn == 0: run1 = out
        print(f"{w} worker{'s' if w > 1 else ''}: {row['kept']}/{row['tasks']} kept in {row['minutes'] * 60:.0f}s -> "
              f"{row['kept_per_min']} kept trajectories per minute", flush=True)
    hs = harness_steps(run1)
    with Servers(ports=ports[:1]) as srv:
        ps, pw_episodes = asyncio.run(playwright_steps(run1, srv.bases[0]))
    acts = [t for a, t in hs if a not in NO_PLAYWRIGHT]
    h_mean, p_mean = statistics.mean(acts), statistics.mean(t for _, t in ps)
    by = {}
    for a, t in hs: by.setdefault(("harness", a), []).append(t)
    for a, t in ps: by.setdefault(("playwright", a), []).append(t)
    print("\nseconds per step (mean, n)")
    for (who, a), ts in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"  {a:<16} {who:<10} {statistics.mean(ts):6.3f}  n={len(ts)}")
    print(f"\naction steps: harness {h_mean:.3f}s vs Playwright {p_mean:.3f}s per step -> ratio {h_mean / p_mean:.1f}x "
          f"({len(acts)} harness steps, {len(ps)} Playwright steps)")
    res1 = read_results(run1)
    h_all = rows[0]["minutes"] * 60 / sum(r["steps"] for r in res1)
    p_all = sum(pw_episodes) / max(1, len(ps))
    print(f"all-in (launch, session, every step, backend reads, gate, files): harness {h_all:.2f}s per step "
          f"({sum(r['steps'] for r in res1)} steps incl. macro_done/done) vs Playwright {p_all:.2f}s per action step "
          f"-> ratio {h_all / p_all:.1f}x")
    summary = {"throughput": rows, "harness_step_s": round(h_mean, 3), "playwright_step_s": round(p_mean, 3),
               "ratio": round(h_mean / p_mean, 2), "harness_all_in_step_s": round(h_all, 3),
               "playwright_all_in_step_s": round(p_all, 3), "all_in_ratio": round(h_all / p_all, 2),
               "by_action": {f"{who}:{a}": round(statistics.mean(ts), 3) for (who, a), ts in by.items()}}
    if args.json: Path(args.json).write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
    sys.exit(0)
