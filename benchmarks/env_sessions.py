"""webmix env's sessions on this machine: how many isolated sessions stay open at once, reset and step latency, memory
per session, against a plain Playwright step measured in the same run.

One MiniWeb server; the sessions are held by a session host (webmix.env.host.SessionHost: its warm browser pool, a
browser and a MiniWeb session per session), called directly in this process. The tasks are `open_menu_item` datagen
tasks, one site each, so every session is on another task and site. A step is one click: on the site's main menu
(the link whose control id ends in `-menu`, the next of the page's menu links in turn) and its observation (the
page's elements and a screenshot, what the client of `step` receives).

Measured, in this order:
- the Playwright baseline: the same click on the same MiniWeb pages with Playwright's Python API (a browser of its
  own per session, as webmix's sessions have, a MiniWeb session with its recorder, the same Chromium, arguments and
  viewport), then the page's content (`page.content()`) and a viewport screenshot; at 1, 8 and 32 pages stepping at
  once (each one step after another);
- reset latency (p50, p95) with a warm pool: sessions opened and closed one after another while the pool holds warm
  browsers (target: p95 below 1 s);
- step latency (p50, p95) at 1, 8 and 32 active sessions (all of them stepping at once), against Playwright's at the
  same concurrency (target: at 8, webmix's p50 within 1.5x of Playwright's);
- capacity: sessions opened one after another until 32 are open (64 with --stretch); then each must still answer
  a step correctly (the click lands on its link's page, no error);
- memory: the RSS (and PSS: shared pages counted once) of this process's whole tree (this process, the server, every
  Chromium) before the host, and with every session open; per session = the difference / sessions.

Exit 1 when a target is missed.

    python benchmarks/env_sessions.py [--sessions 32] [--stretch] [--steps 5] [--resets 16] [--pool 4] [--out env.json]
                                      [--profile prof.txt]
"""
import argparse, asyncio, json, statistics, sys, time
from pathlib import Path

import psutil

from webmix import config
from webmix.agents import offline as HO
from webmix.agents.playwright import playwright_session
from webmix.env.records import EnvError
from webmix.env.session import find_task, task_ids
from webmix.world.servers import Servers, free_ports

LEVELS = (1, 8, 32)
RESET_TARGET_S, STEP_RATIO_TARGET = 1.0, 1.5


def pct(xs, q) -> float | None:
    "The q-th percentile (nearest rank) of xs, seconds rounded to ms."
    if not xs: return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, max(0, int(round(q / 100 * len(xs) + 0.5)) - 1))], 3)


def summary(xs) -> dict:
    return {"n": len(xs), "p50": pct(xs, 50), "p95": pct(xs, 95), "mean": round(statistics.mean(xs), 3) if xs else None}


def tree_memory() -> dict:
    "RSS and PSS (MB) of this process and all its descendants, and how many processes that is."
    me = psutil.Process()
    rss = pss = 0
    procs = [me] + me.children(recursive=True)
    for p in procs:
        try:
            m = p.memory_full_info()
            rss, pss = rss + m.rss, pss + m.pss
        except (psutil.NoSuchProcess, psutil.AccessDenied): pass
    return {"rss_mb": round(rss / 2**20), "pss_mb": round(pss / 2**20), "processes": len(procs)}


def menu_tasks(n: int) -> list:
    "n open_menu_item tasks, each of another site (ids sorted: the same ones every run)."
    by_site = {}
    for i in sorted(task_ids("all", ("datagen",))):
        if "-open_menu_item-" in i: by_site.setdefault(i.split("-open_menu_item-")[0], i)
    ids = list(by_site.values())
    if len(ids) < n: sys.exit(f"only {len(ids)} sites have an open_menu_item task; {n} asked")
    return ids[:n]


def next_menu(values: list, k: int) -> str:
    "The menu link a session clicks at its k-th step: the page's menu links in turn."
    vs = sorted(set(values))
    return vs[k % len(vs)]


# ---------------------------------------------------------------------------------------------- Playwright baseline
async def pw_open(p, base: str, task_id: str) -> dict:
    t = find_task(task_id)
    browser = await p.chromium.launch(executable_path=config.CHROMIUM, headless=True, args=HO.chromium_args())
    ctx = await browser.new_context(viewport=HO.VIEWPORT)
    page = await ctx.new_page()
    await playwright_session(ctx, page, base)
    await page.goto(base + t.start["url"])
    return {"browser": browser, "page": page, "k": 0}


async def pw_menu(page) -> list:
    return await page.eval_on_selector_all('a[data-control-id$="-menu"]:visible', "els => els.map(e => e.dataset.value)")


async def pw_step(s: dict) -> float:
    "One Playwright step (click, wait for the page, its content, a screenshot) -> seconds (the menu lookup untimed)."
    page = s["page"]
    value = next_menu(await pw_menu(page), s["k"])
    s["k"] += 1
    t0 = time.perf_counter()
    async with page.expect_navigation():
        await page.click(f'a[data-control-id$="-menu"][data-value="{value}"] >> visible=true')
    html = await page.content()
    png = await page.screenshot(type="png")
    dt = time.perf_counter() - t0
    if not page.url.endswith(value) or not html or not png: raise RuntimeError(f"playwright step to {value} ended at {page.url}")
    return dt


async def playwright_levels(base: str, tasks: list, levels, steps: int) -> dict:
    from playwright.async_api import async_playwright
    out = {}
    async with async_playwright() as p:
        sessions = []
        for n in levels:
            while len(sessions) < n: sessions.append(await pw_open(p, base, tasks[len(sessions)]))
            out[n] = await concurrently(sessions[:n], steps, pw_step)
            print(f"  playwright at {n:2d}: p50 {out[n]['p50']}s p95 {out[n]['p95']}s", flush=True)
        for s in sessions: await s["browser"].close()
    return out


def cpu_seconds() -> tuple:
    "(CPU seconds of this process, of all its descendants: the server, the browsers) so far."
    me = psutil.Process()
    own = sum(me.cpu_times()[:2])
    kids = 0.0
    for p in me.children(recursive=True):
        try: kids += sum(p.cpu_times()[:2])
        except (psutil.NoSuchProcess, psutil.AccessDenied): pass
    return own, kids


async def concurrently(sessions: list, steps: int, step_one) -> dict:
    """Every session takes `steps` steps, one after another, all sessions at once -> the steps' latency summary and
    the CPU seconds per step of this process (Python: the driver, browser-use) and of its descendants (Chromium, server)."""
    times = []
    async def run(s):
        for _ in range(steps): times.append(await step_one(s))
    (own0, kids0), t0 = cpu_seconds(), time.perf_counter()
    await asyncio.gather(*(run(s) for s in sessions))
    wall, (own1, kids1) = time.perf_counter() - t0, cpu_seconds()
    n = max(1, len(times))
    return {**summary(times), "steps_per_s": round(len(times) / wall, 2), "python_cpu_per_step_s": round((own1 - own0) / n, 3),
            "children_cpu_per_step_s": round((kids1 - kids0) / n, 3)}


# ---------------------------------------------------------------------------------------------- webmix's host
class Host:
    "The benchmark's view of a session host: open(task) -> (id, observation), step(id, action) -> StepResult, close(id)."
    def __init__(self, pool: int, max_sessions: int, max_steps: int):
        self.pool, self.max_sessions, self.max_steps = pool, max_sessions, max_steps
        self.kind, self.host, self.base = None, None, None

    async def start(self):
        try: from webmix.env.host import SessionHost
        except ImportError: SessionHost = None
        if SessionHost is not None:
            self.kind = "SessionHost"
            self.host = SessionHost(max_sessions=self.max_sessions, max_steps=self.max_steps, session_ttl=3600.0,
                                    warm=self.pool, idle_browsers=self.pool)
        else:
            self.kind = "EnvSession+KeptBrowser"
            self.host = _LocalHost(self.pool, self.max_steps)
        await self.host.start()
        self.base = self.host.base

    async def open(self, task_id: str): return await self.host.open(task_id)
    async def step(self, sid, action): return await self.host.step(sid, action)
    async def close(self, sid): return await self.host.close(sid)
    async def shutdown(self): await self.host.stop()


class _LocalHost:
    "EnvSessions on a pool of warm KeptBrowsers and a MiniWeb server: the benchmark's host without webmix.env.host."
    def __init__(self, pool, max_steps):
        self.pool, self.max_steps, self.idle, self.sessions, self.n = pool, max_steps, [], {}, 0

    async def start(self):
        from webmix.agents.harness import KeptBrowser
        self.servers = Servers(ports=free_ports(1)).__enter__()
        self.base = self.servers.bases[0]
        self.idle = [KeptBrowser() for _ in range(self.pool)]
        for k in self.idle: await k.warm()

    async def open(self, task_id):
        from webmix.agents.harness import KeptBrowser
        from webmix.env.session import EnvSession
        keep = self.idle.pop() if self.idle else KeptBrowser()
        s = EnvSession(self.base, keep=keep, max_steps=self.max_steps)
        obs = await s.reset(task_id)
        self.n += 1
        self.sessions[str(self.n)] = s
        return str(self.n), obs

    async def step(self, sid, action): return await self.sessions[sid].step(action)

    async def close(self, sid):
        s = self.sessions.pop(sid)
        await s.close()
        if len(self.idle) < self.pool: self.idle.append(s.keep)
        else: await s.keep.close()

    async def stop(self):
        for sid in list(self.sessions): await self.close(sid)
        for k in self.idle: await k.close()
        self.servers.stop()


def menu_values(obs) -> list:
    return [e.value for e in obs.elements if (e.control_id or "").endswith("-menu") and e.tag == "a" and e.value]


async def webmix_step(host: Host, s: dict) -> float:
    "One webmix step (a click on the next menu link, by its index in the last observation) -> seconds."
    value = next_menu(menu_values(s["obs"]), s["k"])
    index = next(e.index for e in s["obs"].elements if (e.control_id or "").endswith("-menu") and e.value == value)
    s["k"] += 1
    t0 = time.perf_counter()
    r = await host.step(s["id"], {"click": {"index": index}})
    dt = time.perf_counter() - t0
    s["obs"] = r.observation
    if r.observation.error or not r.observation.url.endswith(value) or not r.observation.screenshot or r.done:
        raise RuntimeError(f"session {s['id']} ({s['task']}): a click on {value} ended at {r.observation.url} "
                           f"(error {r.observation.error}, done {r.done})")
    return dt


async def webmix_part(args, host, tasks, out) -> None:
    prof = None
    if args.profile:                                        # the resets and the steps up to 8 active sessions
        from pyinstrument import Profiler
        prof = Profiler(async_mode="disabled", interval=0.005)
        prof.start()
    resets = []                                     # warm-pool resets: open, close, let the pool refill
    for k in range(args.resets):
        t1 = time.perf_counter()
        sid, _ = await host.open(tasks[k % len(tasks)])
        resets.append(time.perf_counter() - t1)
        await host.close(sid)
    out["reset"] = summary(resets[1:])              # the first reset also loads the task index and sites
    print(f"reset (warm pool, {len(resets) - 1} after the first): p50 {out['reset']['p50']}s p95 {out['reset']['p95']}s",
          flush=True)
    sessions, opens, out["steps"] = [], [], {}
    for n in sorted({lv for lv in LEVELS if lv <= args.sessions} | {len(tasks)}):
        while len(sessions) < n:
            t1 = time.perf_counter()
            try: sid, obs = await host.open(tasks[len(sessions)])
            except EnvError as e:
                out["open_failed"] = {"at": len(sessions) + 1, **e.to_dict()}
                print(f"open #{len(sessions) + 1} failed: {e.to_dict()}", flush=True)
                break
            opens.append(time.perf_counter() - t1)
            sessions.append({"id": sid, "obs": obs, "k": 0, "task": tasks[len(sessions)]})
        if len(sessions) < n: break
        if n in LEVELS:
            out["steps"][n] = await concurrently(sessions, args.steps, lambda s: webmix_step(host, s))
            print(f"  webmix at {n:2d}: p50 {out['steps'][n]['p50']}s p95 {out['steps'][n]['p95']}s", flush=True)
        if prof is not None and n >= 8:
            prof.stop(); Path(args.profile).write_text(prof.output_text(unicode=True, show_all=False)); prof = None
    out["open"] = summary(opens)
    answered = 0
    for s in sessions:                              # every session open at once answers a step correctly
        try: await webmix_step(host, s); answered += 1
        except Exception as e: print(f"  {str(e)[:300]}", flush=True)
    out["memory_open"] = tree_memory()
    out["capacity"] = {"asked": len(tasks), "open": len(sessions), "answered": answered}
    print(f"capacity: {len(sessions)}/{len(tasks)} open at once, {answered} answered a step correctly", flush=True)
    for s in sessions: await host.close(s["id"])


async def main_async(args) -> dict:
    n = 64 if args.stretch else args.sessions
    tasks = menu_tasks(n)
    out = {"machine": {"cores": psutil.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1)},
           "sessions_asked": n, "steps_per_session": args.steps}
    host = Host(pool=args.pool, max_sessions=n + 1, max_steps=10**4)
    out["memory_before"] = tree_memory()                    # before the host: no server, no browser
    t0 = time.perf_counter()
    await host.start()
    out["host"] = {"kind": host.kind, "pool": args.pool, "start_s": round(time.perf_counter() - t0, 1)}
    print(f"host: {host.kind}, its MiniWeb server and {args.pool} warm browsers started in {out['host']['start_s']}s",
          flush=True)
    try:
        print(f"Playwright baseline on the host's MiniWeb server ({args.steps} steps per page):", flush=True)
        out["playwright"] = await playwright_levels(host.base, tasks, [lv for lv in LEVELS if lv <= args.sessions], args.steps)
        print(f"webmix ({args.steps} steps per session):", flush=True)
        await webmix_part(args, host, tasks, out)
        out["host_metrics"] = host.host.metrics() if hasattr(host.host, "metrics") else None
    finally:
        await host.shutdown()
    return out


def report(out: dict) -> list:
    "Print the table -> the targets missed."
    print(f"\n{'':24}{'p50 s':>8}{'p95 s':>8}{'steps/s':>9}   Playwright p50 / p95   ratio p50")
    print(f"{'reset (warm pool)':24}{out['reset']['p50']:>8}{out['reset']['p95']:>8}")
    print(f"{'open (pool drained)':24}{out['open']['p50']:>8}{out['open']['p95']:>8}")
    ratios = {}
    for n, w in out["steps"].items():
        p = out["playwright"].get(n)
        ratios[n] = round(w["p50"] / p["p50"], 2) if p and p["p50"] else None
        print(f"{f'step at {n} active':24}{w['p50']:>8}{w['p95']:>8}{w['steps_per_s']:>9}   "
              f"{p['p50'] if p else '':>10} / {p['p95'] if p else '':<8}  {ratios[n]}x")
    print("CPU seconds per step (this process: Python / its children: Chromium and the server):")
    for n, w in out["steps"].items():
        p = out["playwright"].get(n) or {}
        print(f"  at {n:2d}: webmix {w.get('python_cpu_per_step_s')} / {w.get('children_cpu_per_step_s')}, "
              f"Playwright {p.get('python_cpu_per_step_s')} / {p.get('children_cpu_per_step_s')}")
    cap, mem0, mem1 = out["capacity"], out["memory_before"], out["memory_open"]
    per = {k: round((mem1[k] - mem0[k]) / max(1, cap["open"])) for k in ("rss_mb", "pss_mb")}
    out["memory_per_session"], out["step_ratio_p50"] = per, ratios
    print(f"capacity: {cap['open']} of {cap['asked']} sessions open at once, {cap['answered']} answered a step correctly")
    print(f"memory: before {mem0['rss_mb']} MB RSS ({mem0['pss_mb']} PSS), with {cap['open']} open {mem1['rss_mb']} MB RSS "
          f"({mem1['pss_mb']} PSS, {mem1['processes']} processes): {per['rss_mb']} MB RSS, {per['pss_mb']} MB PSS per session")
    missed = []
    if cap["answered"] < cap["asked"]: missed.append(f"capacity: {cap['answered']} of {cap['asked']} sessions answered")
    if out["reset"]["p95"] >= RESET_TARGET_S: missed.append(f"reset p95 {out['reset']['p95']}s (target below {RESET_TARGET_S}s)")
    if ratios.get(8) is not None and ratios[8] > STEP_RATIO_TARGET:
        missed.append(f"step at 8: {ratios[8]}x Playwright's p50 (target at most {STEP_RATIO_TARGET}x)")
    out["missed"] = missed
    print("targets: " + ("all met" if not missed else "MISSED: " + "; ".join(missed)))
    return missed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=32, help="sessions to hold open at once")
    ap.add_argument("--stretch", action="store_true", help="hold 64 sessions open")
    ap.add_argument("--steps", type=int, default=5, help="steps per session at each concurrency")
    ap.add_argument("--resets", type=int, default=16, help="warm-pool resets timed")
    ap.add_argument("--pool", type=int, default=4, help="warm browsers the host keeps")
    ap.add_argument("--out", default=None, help="write the figures here (JSON)")
    ap.add_argument("--profile", default=None, help="profile the resets and steps up to 8 sessions (pyinstrument, text here)")
    args = ap.parse_args(argv)
    config.setup_env()
    out = asyncio.run(main_async(args))
    missed = report(out)
    if args.out: Path(args.out).write_text(json.dumps(out, indent=1, default=str))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
