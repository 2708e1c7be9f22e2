"""The cost of one agent step: plain Playwright, a Playwright observed step, and the harness (browser-use) step.

On the same MiniWeb pages and actions, in one run:

(a) plain Playwright: the action alone (waiting for the navigation when the step's URL changes);
(b) Playwright observed step: the same action, then a viewport screenshot (PNG) and a DOM snapshot with CDP
    `DOMSnapshot.captureSnapshot` (computed styles display/visibility/opacity, paint order, DOM rects): the least any
    agent step needs to show a model the page. (a) and (b) come from one pass: b = the action's time + the
    observation's time, taken right after that action;
(c) the harness step: browser-use's Agent step as webmix's datagen runs it (`duration` of each step in the kept
    trajectories' trajectory.json, browser-use's `metadata.duration_seconds`: state capture, model call (the scripted
    driver), actions and waits), from a datagen run made by this script with 1 worker;
(c act) the harness step's action alone: browser-use's `Tools.act` in that run (the action and the waits after it,
    no state capture, no model call), the part of (c) that (a) is measured against.

The tasks are a seeded sample of simple macros; macro_done/done/wait steps (no browser action) are left out.
With `--busy N`, N processes spin a CPU core each for the whole measurement (a loaded machine: both the harness and
Playwright run beside them); the click and input rows' c/a, c/b, (c act)/a and b/a are printed apart (targets: click
c/b <= 1.1 under two busy loops; an input step <= 2x Playwright's fill, read as the input action against `fill`,
(c act)/a: a step that shows the model the page cannot be within 2x of a bare `fill` when Playwright's own observed
fill, b/a, is itself more than 2x). Exit 1 when a target is missed (the click one is checked with --busy 2 or more;
every action step's c/b, the line the run prints, at most 1.5).
With `--profile`, one datagen unit (the kept task with the most browser actions) is also run under pyinstrument, its
phases timed by wrapping (see profile_unit).

    python benchmarks/step_cost.py [--tasks 16] [--sites bank,hr] [--macros m1,m2] [--busy 0] [--json out.json]
                                   [--profile prof.txt]
"""
import argparse, asyncio, functools, inspect, json, multiprocessing, random, statistics, sys, tempfile, time
from contextlib import contextmanager
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

from webmix import config
from webmix.agents import harness as H
from webmix.agents import offline as HO
from webmix.agents import session as HS
from webmix.agents.playwright import playwright_session
from webmix.data.datagen import run_datagen
from webmix.world.servers import Servers, free_ports
from webmix.data.pool import kept, read_results
from webmix.data.tasks import all_tasks

from datagen_throughput import NO_PLAYWRIGHT, harness_steps, redo 

MACROS = ["filter_by_dropdown", "sort_by_form", "open_detail", "paginate", "search_by_text", "enter_text", "open_menu_item"]
STYLES = ["display", "visibility", "opacity"]


async def observe(page, cdp):
    "A viewport PNG and a CDP DOM snapshot of the page: what an observed step needs at least."
    png = await page.screenshot(type="png")
    snap = await cdp.send("DOMSnapshot.captureSnapshot", {"computedStyles": STYLES, "includePaintOrder": True,
                                                          "includeDOMRects": True})
    return len(png), len(snap["strings"])


def path_query(url: str) -> str:
    u = urlsplit(url)
    return f"{u.path}?{u.query}"


async def left_by_itself(page, following: list) -> None:
    """Untimed: wait for the page an action sets off without waiting for it (a select that submits its form), which
    the harness's next step (a wait, no browser action) waited for; Chromium takes no screenshot mid-navigation."""
    nxt = following[0] if following else None
    if nxt and nxt["action"] in NO_PLAYWRIGHT and path_query(nxt["url_after"]) != path_query(nxt["url_before"]):
        await page.wait_for_url(lambda url: path_query(url) == path_query(nxt["url_after"]))
        await page.wait_for_load_state()


async def playwright_steps(run, base):
    "[(action, a seconds, b seconds)] for every action step of the kept trajectories, redone in plain Playwright."
    from playwright.async_api import async_playwright
    rows = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=config.CHROMIUM, headless=True, args=HO.chromium_args())
        for tid in sorted(kept(run)):
            d = Path(run) / "accepted" / tid
            task, traj = json.loads((d / "task.json").read_text()), json.loads((d / "trajectory.json").read_text())
            ctx = await browser.new_context(viewport=HO.VIEWPORT)
            page = await ctx.new_page()
            cdp = await ctx.new_cdp_session(page)
            await playwright_session(ctx, page, base)
            await page.goto(base + task["start"]["url"])
            await observe(page, cdp)                     # the first observation, before the first action
            steps = traj["steps"]
            for i, s in enumerate(steps):
                if s["action"] in NO_PLAYWRIGHT: continue
                a = await redo(page, s)
                await left_by_itself(page, steps[i + 1:i + 2])
                t0 = time.perf_counter()
                await observe(page, cdp)
                rows.append((s["action"], a, a + time.perf_counter() - t0))
            await ctx.close()
        await browser.close()
    return rows


def spin():
    while True: pass


def busy_loops(n) -> list:
    "n processes that each keep a core busy (terminate them when done)."
    procs = [multiprocessing.Process(target=spin, daemon=True) for _ in range(n)]
    for p in procs: p.start()
    return procs


def stats(ts):
    return {"median": round(statistics.median(ts), 3), "mean": round(statistics.mean(ts), 3), "n": len(ts)} if ts else None


@contextmanager
def timed_actions():
    "[(action name, seconds)] of every browser-use `Tools.act` in this process inside the block."
    from browser_use.tools.service import Tools
    acts, real = [], Tools.act
    async def act(self, action, *a, **k):
        t0 = time.perf_counter()
        try: return await real(self, action, *a, **k)
        finally: acts.append((next(iter(action.model_dump(exclude_unset=True)), "?"), time.perf_counter() - t0))
    Tools.act = act
    try: yield acts
    finally: Tools.act = real


# ---------------------------------------------------------------------------------------------------------- profile
class Phases:
    "Wall seconds and calls per named phase, by wrapping functions and methods (restored by `undo`)."
    def __init__(self): self.t, self.n, self._undo, self.order = defaultdict(float), defaultdict(int), [], []

    def wrap(self, owner, attr, name):
        f = getattr(owner, attr)
        ph = self
        if inspect.iscoroutinefunction(f):
            @functools.wraps(f)
            async def w(*a, **k):
                t0 = time.perf_counter()
                try: return await f(*a, **k)
                finally: ph.t[name] += time.perf_counter() - t0; ph.n[name] += 1
        else:
            async def timed(aw, t0):                  # a decorated coroutine function: time until its awaitable is done
                try: return await aw
                finally: ph.t[name] += time.perf_counter() - t0; ph.n[name] += 1
            @functools.wraps(f)
            def w(*a, **k):
                t0 = time.perf_counter()
                r = f(*a, **k)
                if inspect.isawaitable(r): return timed(r, t0)
                ph.t[name] += time.perf_counter() - t0; ph.n[name] += 1
                return r
        setattr(owner, attr, w)
        self._undo.append((owner, attr, f)); self.order.append(name)

    def wrap_sleep(self):
        "asyncio.sleep, by the browser_use/webmix line that asked for it (the fixed waits)."
        real, ph = asyncio.sleep, self
        async def sleep(delay, *a, **k):
            fr = sys._getframe(1)
            where = fr.f_code.co_filename
            if "browser_use" in where or "webmix" in where:
                key = f"sleep {where.split('site-packages/')[-1].split('/main/')[-1]}:{fr.f_lineno} ({delay:g}s)"
                t0 = time.perf_counter()
                try: return await real(delay, *a, **k)
                finally: ph.t[key] += time.perf_counter() - t0; ph.n[key] += 1
            return await real(delay, *a, **k)
        asyncio.sleep = sleep
        self._undo.append((asyncio, "sleep", real))

    def undo(self):
        for owner, attr, f in reversed(self._undo): setattr(owner, attr, f)


def profile_unit(task, out, prof_txt):
    "One datagen unit (1 worker) under pyinstrument, with its phases timed by wrapping. -> (phases, unit seconds)"
    from browser_use import Agent, BrowserSession
    from browser_use.browser.watchdogs.dom_watchdog import DOMWatchdog
    from browser_use.browser.watchdogs.screenshot_watchdog import ScreenshotWatchdog
    from browser_use.dom.service import DomService
    from browser_use.browser.watchdogs.default_action_watchdog import DefaultActionWatchdog
    from browser_use.tools.service import Tools
    import webmix.data.datagen as D
    from webmix.data.scripted_model import Driver
    from webmix.records import DatagenTask
    ph = Phases()
    for owner, attr, name in [
            (HS, "make_session", "browser: make_session (profile folder, BrowserSession object)"),
            (BrowserSession, "start", "browser: BrowserSession.start (Chromium launch, CDP, watchdogs)"),
            (HS, "enable_clipboard", "browser: enable_clipboard"),
            (HS, "prepare", "prepare (MiniWeb session + start page)"),
            (Agent, "run", "agent.run (all steps, incl. Agent start-up and finish)"),
            (Agent, "step", "agent step (total)"),
            (Agent, "_prepare_context", "  step: state capture (_prepare_context)"),
            (BrowserSession, "get_browser_state_summary", "    get_browser_state_summary (BrowserStateRequestEvent)"),
            (DOMWatchdog, "_build_dom_tree_without_highlights", "      DOM serialisation + indexing"),
            (DomService, "get_serialized_dom_tree", "        DomService.get_serialized_dom_tree"),
            (DOMWatchdog, "_capture_clean_screenshot", "      screenshot (ScreenshotEvent, in parallel with DOM)"),
            (ScreenshotWatchdog, "on_ScreenshotEvent", "        ScreenshotWatchdog.on_ScreenshotEvent (CDP capture)"),
            (Agent, "_get_next_action", "  step: model call (_get_next_action)"),
            (H.ScriptedChat, "ainvoke", "    ScriptedChat.ainvoke"),
            (H, "with_screenshot", "      with_screenshot (fill-in check)"),
            (Driver, "respond", "      scripted driver (Driver.respond)"),
            (Agent, "_execute_actions", "  step: actions + wait_between_actions (_execute_actions)"),
            (Tools, "act", "    Tools.act (one action, incl. new-tab check)"),
            (DefaultActionWatchdog, "on_ClickElementEvent", "      click handler (ClickElementEvent)"),
            (DefaultActionWatchdog, "on_SelectDropdownOptionEvent", "      select handler (SelectDropdownOptionEvent)"),
            (BrowserSession, "get_or_create_cdp_session", "BrowserSession.get_or_create_cdp_session (any caller)"),
            (Agent, "_post_process", "  step: _post_process"),
            (HS, "evaluate", "evaluate (JS reads; driver's and datagen's)"),
            (HS, "seen", "datagen: seen"),
            (HS, "session_evidence", "datagen: session_evidence (the backend's log, changes, recorder)"),
            (HS, "admin_get", "datagen: admin_get (/_admin/record etc.)"),
            (DatagenTask, "grade", "datagen: grade (the gate)"),
            (D, "trajectory_of", "datagen: trajectory_of"),
            (D, "_write_json", "datagen: file writes (json)"),
            (HS, "close_session", "close_session (browser kill, folder removal)"),
            (D, "run_task", "unit: run_task (total)")]:
        ph.wrap(owner, attr, name)
        if owner is HS and hasattr(H, attr): ph.wrap(H, attr, name)    # harness calls the session's functions by their own names
    ph.wrap_sleep()
    from pyinstrument import Profiler
    prof = Profiler(async_mode="enabled", interval=0.002)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        with prof:
            run_datagen(out, tasks=[task], workers=1, ports=free_ports(1), progress=False)
    finally:
        ph.undo()
    wall = time.perf_counter() - t0
    ph.t["process CPU time (this Python process, whole run_datagen)"] = time.process_time() - c0
    ph.n["process CPU time (this Python process, whole run_datagen)"] = 1
    Path(prof_txt).write_text(prof.output_text(unicode=False, color=False, show_all=False))
    return ph, wall


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sites", type=lambda s: s.split(","), default=["bank", "hr"])
    ap.add_argument("--macros", type=lambda s: s.split(","), default=MACROS)
    ap.add_argument("--json", default=None)
    ap.add_argument("--profile", default=None, help="also profile one unit; pyinstrument's text goes to this file")
    ap.add_argument("--busy", type=int, default=0, help="processes spinning a core each beside the measurement")
    args = ap.parse_args(argv)
    spinning = busy_loops(args.busy)
    try: return measure(args)
    finally:
        for p in spinning: p.terminate()


def measure(args):
    pool = all_tasks(sites=args.sites, macros=args.macros)
    tasks = random.Random(args.seed).sample(pool, min(args.tasks, len(pool)))
    root = Path(tempfile.mkdtemp(prefix="step-cost-"))
    t0 = time.perf_counter()
    run = root / "datagen"
    with timed_actions() as acts:
        run_datagen(run, tasks=tasks, workers=1, ports=free_ports(1), progress=False)
    res = read_results(run)
    print(f"datagen: {sum(r['ok'] for r in res)}/{len(res)} kept in {time.perf_counter() - t0:.0f}s "
          f"({', '.join(sorted({t['site'] for t in tasks}))})", flush=True)
    hs = [(a, t) for a, t in harness_steps(run) if a not in NO_PLAYWRIGHT]
    with Servers(ports=free_ports(1)) as srv:
        pw = asyncio.run(playwright_steps(run, srv.bases[0]))
    stepped = {x for x, _ in hs}                       # the steps' actions: not the agent's opening navigate
    cols = {"a": [(x, t) for x, t, _ in pw], "b": [(x, t) for x, _, t in pw], "c": hs,
            "c act": [(x, t) for x, t in acts if x in stepped]}
    overall = {k: stats([t for _, t in v]) for k, v in cols.items()}
    per = defaultdict(dict)
    for k, v in cols.items():
        by = defaultdict(list)
        for x, t in v: by[x].append(t)
        for x, ts in by.items(): per[x][k] = stats(ts)
    print("\nseconds per action step: median / mean (n)\n"
          f"  {'action':<16} {'(a) Playwright':>22} {'(b) PW observed':>22} {'(c) harness':>22} {'(c act) its action':>22}")
    def cell(s): return f"{s['median']:.3f} / {s['mean']:.3f} ({s['n']})" if s else "-"
    for x in sorted(per): print(f"  {x:<16} " + " ".join(f"{cell(per[x].get(k)):>22}" for k in cols))
    print(f"  {'all':<16} " + " ".join(f"{cell(overall[k]):>22}" for k in cols))
    ratios = {f"c/{k}_{m}": round(overall["c"][m] / overall[k][m], 2) for k in "ab" for m in ("median", "mean")}
    print(f"\nc/a: {ratios['c/a_median']}x (medians), {ratios['c/a_mean']}x (means)\n"
          f"c/b: {ratios['c/b_median']}x (medians), {ratios['c/b_mean']}x (means)   target c/b <= 1.5", flush=True)
    for x in ("click", "input"):
        got = per.get(x, {})
        if all(got.get(k) for k in "abc"):
            for k in "ab": ratios[f"{x}_c/{k}_median"] = round(got["c"]["median"] / got[k]["median"], 2)
            if got.get("c act"): ratios[f"{x}_c act/a_median"] = round(got["c act"]["median"] / got["a"]["median"], 2)
            ratios[f"{x}_b/a_median"] = round(got["b"]["median"] / got["a"]["median"], 2)    # what observing costs Playwright
            print(f"{x}: c/a {ratios[f'{x}_c/a_median']}x, c/b {ratios[f'{x}_c/b_median']}x, "
                  f"(c act)/a {ratios.get(f'{x}_c act/a_median', '-')}x, b/a {ratios[f'{x}_b/a_median']}x (medians)", flush=True)
    print(f"busy loops beside the run: {args.busy}")
    summary = {"tasks": len(tasks), "kept": sum(r["ok"] for r in res), "sites": sorted({t["site"] for t in tasks}), "busy": args.busy,
               "macros": args.macros, "seed": args.seed, "dom_snapshot": "CDP DOMSnapshot.captureSnapshot",
               "overall": overall, "by_action": per, "ratios": ratios}
    if args.profile:
        def n_actions(t):          # the kept task with the most browser actions
            f = run / "accepted" / t["task_id"] / "trajectory.json"
            return sum(s["action"] not in NO_PLAYWRIGHT for s in json.loads(f.read_text())["steps"]) if f.exists() else -1
        task = max(tasks, key=n_actions)
        ph, wall = profile_unit(task, root / "profile", args.profile)
        pr = read_results(root / "profile")
        traj = next((root / "profile" / "accepted").glob("*/trajectory.json"), None)
        steps = json.loads(traj.read_text())["steps"] if traj else []
        print(f"\nprofile of one unit: {task['task_id']} ({task['macro']} on {task['site']}), kept={pr[-1]['ok']}, "
              f"{len(steps)} steps ({', '.join(s['action'] for s in steps)}), run_datagen wall {wall:.2f}s")
        unit = ph.t["unit: run_task (total)"]
        print(f"  {'phase':<72} {'s':>7} {'share':>6} {'calls':>5}")
        for name in [k for k in ph.order if k in ph.t] + sorted(k for k in ph.t if k not in ph.order):
            print(f"  {name[:72]:<72} {ph.t[name]:7.3f} {ph.t[name] / unit:6.1%} {ph.n[name]:>5}")
        print("  (sleeps are those asked for by browser_use/webmix lines, with their requested delay; the 60s one of "
              "storage_state_watchdog is a background loop cancelled at close, not on the step's path)")
        print(f"  (shares of run_task's {unit:.3f}s; pyinstrument's text in {args.profile})")
        summary["profile"] = {"task": task["task_id"], "wall_s": round(wall, 3), "unit_s": round(unit, 3),
                              "step_durations": [s["duration"] for s in steps],
                              "phases": {k: {"s": round(v, 3), "calls": ph.n[k]} for k, v in ph.t.items()}}
    if args.json: Path(args.json).write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    from targets import verdict
    s = main()
    r, checks = s["ratios"], {}
    if "c/b_median" in r: checks["every action step, c/b (medians)"] = (r["c/b_median"], "<= 1.5", r["c/b_median"] <= 1.5)
    if s["busy"] >= 2 and "click_c/b_median" in r:
        checks["click, c/b under two busy loops"] = (r["click_c/b_median"], "<= 1.1", r["click_c/b_median"] <= 1.1)
    if "input_c act/a_median" in r:
        checks["input action against fill"] = (r["input_c act/a_median"], "<= 2", r["input_c act/a_median"] <= 2)
    sys.exit(verdict(checks))
