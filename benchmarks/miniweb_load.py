"""MiniWeb under load: N concurrent sessions against ONE server, with a static file as the baseline.

Each session: a fresh /_admin/session-flags, 20 page loads drawn from the sitemap pages (the last two are the pages of
its forms), and 2 form posts with the CSRF token and fields parsed from those pages (a comment or an edit).
Before that, the same number of concurrent clients fetch /static/webmix.css from the same server: that p50 is the
baseline (what the server costs without the engine), and the pages' p50 is reported as a ratio of it.

    python benchmarks/miniweb_load.py [--sessions 50] [--pages 20] [--posts 2] [--threads 8] [--seed 0]
    python benchmarks/miniweb_load.py --profile      # also: where the engine's time goes (cProfile, in-process)

Target: 50 sessions, no error, p99 < 250 ms on a 2-core machine. Exit 1 when it is missed.
"""
import argparse, asyncio, cProfile, io, json, os, pstats, random, socket, sys, threading, time
from html.parser import HTMLParser

import aiohttp

from yarl import URL

from webmix.config import admin_headers
from webmix.world.sessions import COOKIE
from webmix.world.servers import Servers, free_ports

TARGET_P99_MS = 250.0
DEADLINE = 300                                  # seconds a phase may take before the run reports what hangs


def cpu_seconds(pid):
    "User + system CPU time a process has used so far (Linux /proc), in seconds."
    with open(f"/proc/{pid}/stat") as f: fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs, p):
    "Nearest-rank percentile of a list of numbers (p in 0..100)."
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs) + 0.5) - 1))] if xs else float("nan")


# ---------------------------------------------------------------- forms as a browser submits them
class FormGrab(HTMLParser):
    "The fields of the form holding `marker` (data-form-id or a data-control-id inside it), as a browser submits them."
    def __init__(self, marker):
        super().__init__(convert_charrefs=True)
        self.marker, self.forms, self.cur, self.select, self.textarea = marker, [], None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.cur = {"action": a.get("action"), "fields": [], "hit": a.get("data-form-id") == self.marker}
            self.forms.append(self.cur)
            return
        if self.cur is None: return
        if a.get("data-control-id") == self.marker: self.cur["hit"] = True
        name = a.get("name")
        if tag == "input" and name:
            t = (a.get("type") or "text").lower()
            if t in ("submit", "button", "file", "image", "reset") or (t in ("checkbox", "radio") and "checked" not in a): return
            self.cur["fields"].append([name, a.get("value") or ("on" if t in ("checkbox", "radio") else "")])
        elif tag == "select" and name:
            self.select = [name, None, None]                  # name, first option, selected option
        elif tag == "option" and self.select:
            v = a.get("value", "")
            if self.select[1] is None: self.select[1] = v
            if "selected" in a: self.select[2] = v
        elif tag == "textarea" and name:
            self.textarea = [name, ""]

    def handle_data(self, data):
        if self.textarea: self.textarea[1] += data

    def handle_endtag(self, tag):
        if tag == "select" and self.select:
            self.cur["fields"].append([self.select[0], self.select[2] if self.select[2] is not None else (self.select[1] or "")])
            self.select = None
        elif tag == "textarea" and self.textarea:
            self.cur["fields"].append(self.textarea)
            self.textarea = None
        elif tag == "form": self.cur = None

    def form(self):
        return next(f for f in self.forms if f["hit"])


# ---------------------------------------------------------------- the workload, from the sitemaps
async def sitemaps(base):
    async with aiohttp.ClientSession(headers=admin_headers()) as http:
        async with http.get(f"{base}/_admin/sites") as r: names = [s["name"] for s in await r.json()]
        out = {}
        for n in names:
            async with http.get(f"{base}/_admin/sitemap/{n}") as r: out[n] = await r.json()
        return out

def site_url(site, path): return f"/sites/{site}" + ("" if path in ("", "/") else path)

def workload(maps):
    "(pages, posts): every sitemap page's URL, and every form post a session can make: (page url, marker, edit field)."
    pages = [site_url(n, p["path"]) for n, sm in sorted(maps.items()) for p in sm["pages"]]
    posts = []
    for n, sm in sorted(maps.items()):
        for c in sm["controls"]:
            if c["kind"] == "comment": posts.append((site_url(n, c["page"]), c["control_id"], "body"))
            if c["kind"] == "edit_form":
                text = [f["name"] for f in sm["controls"] if f.get("extra", {}).get("form") == c["control_id"]
                        and f.get("extra", {}).get("type") in ("text", "longtext")]
                posts.append((site_url(n, c["page"]), c["control_id"], text[0] if text else None))
    return pages, posts


class Recorder:
    def __init__(self): self.samples, self.errors = [], []     # (kind, ms), (kind, what)

    async def timed(self, kind, coro_fn, ok):
        t0 = time.perf_counter()
        try:
            async with coro_fn() as r:
                body = await r.read()
                ms = (time.perf_counter() - t0) * 1000
                if r.status not in ok: self.errors.append((kind, f"{r.method} {r.url.path_qs} -> {r.status}"))
                self.samples.append((kind, ms))
                return r.status, body
        except (aiohttp.ClientError, asyncio.TimeoutError) as e:
            self.errors.append((kind, f"{type(e).__name__}: {e}"))
            return None, b""


class new_session:
    "A session-flags request with the admin key whose session the client then holds as its cookie (as the harness does)."
    def __init__(self, http, base): self.http, self.base = http, base
    async def __aenter__(self):
        self.r = await self.http.get(f"{self.base}/_admin/session-flags", headers=admin_headers()).__aenter__()
        if self.r.status == 200:
            self.http.cookie_jar.update_cookies({COOKIE: (await self.r.json())["session"]}, URL(self.base))
        return self.r
    async def __aexit__(self, *exc): return await self.r.__aexit__(*exc)


async def one_session(base, rec, rng, pages, posts, n_pages, n_posts, sids):
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True), timeout=timeout,
                                     connector=aiohttp.TCPConnector(limit=1)) as http:
        status, body = await rec.timed("session", lambda: new_session(http, base), (200,))
        if status != 200: return
        sids.append(json.loads(body)["session"])
        chosen = [rng.choice(posts) for _ in range(n_posts)]
        for url in [rng.choice(pages) for _ in range(n_pages - n_posts)]:
            await rec.timed("page", lambda: http.get(base + url, allow_redirects=False), (200,))
        for i, (url, marker, field) in enumerate(chosen):
            status, body = await rec.timed("page", lambda: http.get(base + url, allow_redirects=False), (200,))
            if status != 200: continue
            g = FormGrab(marker)
            g.feed(body.decode())
            form = g.form()
            data = dict(form["fields"])
            if field == "body": data["body"] = f"Load test comment {i} from a session."
            elif field: data[field] = f"{data.get(field, '')} (edited)".strip()
            assert data.get("csrf_token"), f"{url}: no CSRF token in the form"
            await rec.timed("post", lambda: http.post(base + (form["action"] or url), data=data, allow_redirects=False), (302, 303))


async def static_phase(base, rec, n_clients, n_each):
    async def client():
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1), timeout=aiohttp.ClientTimeout(total=60)) as http:
            for _ in range(n_each):
                await rec.timed("static", lambda: http.get(f"{base}/static/webmix.css"), (200,))
    await bounded("static phase", [client() for _ in range(n_clients)], DEADLINE)


async def sequential(base, url, n):
    "One client alone: the idle cost of a request."
    rec = Recorder()
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        for _ in range(n): await rec.timed("idle", lambda: http.get(base + url, allow_redirects=False), (200,))
    return pct([ms for _, ms in rec.samples], 50)


async def server_ms(base, sids):
    "The engine's own time per request (the `ms` of each session's /_admin/log entries)."
    out = []
    async with aiohttp.ClientSession(headers=admin_headers()) as http:
        for sid in sids:
            async with http.get(f"{base}/_admin/log", params={"session": sid}) as r:
                out += [e["ms"] for e in (await r.json())["entries"]]
    return out


async def bounded(what, aws, deadline):
    "gather(aws) within `deadline` seconds; on expiry print where each pending task waits, then fail."
    tasks = [asyncio.ensure_future(a) for a in aws]
    done, pending = await asyncio.wait(tasks, timeout=deadline)
    if pending:
        print(f"{what}: {len(pending)} of {len(tasks)} tasks still pending after {deadline} s", file=sys.stderr)
        for t in list(pending)[:3]: t.print_stack(file=sys.stderr)
        for t in pending: t.cancel()
        raise TimeoutError(f"{what} did not finish within {deadline} s")
    for t in done: t.result()                                   # re-raise a task's exception


class External:
    "A server someone else started (--base): same interface as Servers for this script."
    def __init__(self, base, pid): self.bases, self.procs = [base], [type("P", (), {"pid": pid})()]
    def __enter__(self): return self
    def __exit__(self, *exc): pass


async def run(args):
    port = args.port or free_ports()[0]
    server = External(args.base, args.pid) if args.base else Servers(ports=[port], threads=args.threads)
    with server as srv:
        base = srv.bases[0]
        maps = await sitemaps(base)
        pages, posts = workload(maps)
        rng = random.Random(args.seed)
        # warm up: every page once (first renders compile templates, first session dbs)
        warm = Recorder()
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            await warm.timed("session", lambda: new_session(http, base), (200,))
            for url in pages: await warm.timed("page", lambda: http.get(base + url, allow_redirects=False), (200,))
        idle_static = await sequential(base, "/static/webmix.css", 100)
        idle_page = await sequential(base, pages[len(pages) // 2], 100)

        pid = srv.procs[0].pid
        st = Recorder()
        t0, c0 = time.perf_counter(), cpu_seconds(pid)
        await static_phase(base, st, args.sessions, args.pages)
        static_wall, static_cpu = time.perf_counter() - t0, cpu_seconds(pid) - c0

        rec, sids = Recorder(), []
        load0 = os.getloadavg()[0]
        t0, c0, p0 = time.perf_counter(), cpu_seconds(pid), time.process_time()
        await bounded("sessions", [one_session(base, rec, random.Random(rng.random()), pages, posts, args.pages, args.posts, sids)
                                   for _ in range(args.sessions)], DEADLINE)
        wall, server_cpu, client_cpu = time.perf_counter() - t0, cpu_seconds(pid) - c0, time.process_time() - p0
        engine_ms = await server_ms(base, sids)

    lat = [ms for _, ms in rec.samples]
    by = lambda k: [ms for kind, ms in rec.samples if kind == k]
    stat = [ms for _, ms in st.samples]
    res = {"sessions": args.sessions, "requests": len(lat), "seconds": round(wall, 2), "rps": round(len(lat) / wall, 1),
           "p50_ms": round(pct(lat, 50), 1), "p99_ms": round(pct(lat, 99), 1), "errors": len(rec.errors) + len(st.errors),
           "page_p50_ms": round(pct(by("page"), 50), 1), "page_p99_ms": round(pct(by("page"), 99), 1),
           "post_p50_ms": round(pct(by("post"), 50), 1), "post_p99_ms": round(pct(by("post"), 99), 1),
           "session_p50_ms": round(pct(by("session"), 50), 1),
           "static_p50_ms": round(pct(stat, 50), 1), "static_p99_ms": round(pct(stat, 99), 1),
           "static_rps": round(len(stat) / static_wall, 1),
           "ratio_p50_vs_static": round(pct(lat, 50) / pct(stat, 50), 2),
           "idle_static_p50_ms": round(idle_static, 2), "idle_page_p50_ms": round(idle_page, 2),
           "engine_ms_p50": round(pct(engine_ms, 50), 2), "engine_ms_p99": round(pct(engine_ms, 99), 2),
           "server_cpu_ms_per_request": round(server_cpu / len(lat) * 1000, 2), "server_cpu_share": round(server_cpu / wall, 2),
           "client_cpu_share": round(client_cpu / wall, 2), "static_server_cpu_ms_per_request": round(static_cpu / max(1, len(stat)) * 1000, 2),
           "server_threads": args.threads, "sites": len(maps), "pages": len(pages), "cpus": os.cpu_count(),
           "loadavg_1m_at_start": round(load0, 2)}
    res["target_met"] = res["errors"] == 0 and res["p99_ms"] < TARGET_P99_MS
    return res, rec.errors + st.errors, pages, posts


def report(res, errors):
    print(f"MiniWeb load: {res['sessions']} concurrent sessions x (session-flags + {args.pages} pages + {args.posts} posts), "
          f"one server ({res['server_threads']} waitress threads), {res['sites']} sites / {res['pages']} sitemap pages, "
          f"{res['cpus']} CPUs, load average {res['loadavg_1m_at_start']} at start")
    print(f"  static baseline  /static/webmix.css, {res['sessions']} concurrent clients: p50 {res['static_p50_ms']} ms, "
          f"p99 {res['static_p99_ms']} ms, {res['static_rps']} req/s")
    print(f"  sessions         {res['requests']} requests in {res['seconds']} s = {res['rps']} req/s; "
          f"p50 {res['p50_ms']} ms, p99 {res['p99_ms']} ms; errors {res['errors']}")
    print(f"    pages p50 {res['page_p50_ms']} / p99 {res['page_p99_ms']} ms; posts p50 {res['post_p50_ms']} / p99 {res['post_p99_ms']} ms; "
          f"session-flags p50 {res['session_p50_ms']} ms")
    print(f"  ratio            p50 of sessions / p50 of static = {res['ratio_p50_vs_static']}")
    print(f"  idle (1 client)  static p50 {res['idle_static_p50_ms']} ms, a page p50 {res['idle_page_p50_ms']} ms; "
          f"engine time per request (its own log) p50 {res['engine_ms_p50']} ms, p99 {res['engine_ms_p99']} ms")
    print(f"  CPU              server {res['server_cpu_ms_per_request']} ms per request (static: {res['static_server_cpu_ms_per_request']} ms), "
          f"server busy {res['server_cpu_share']} cores, this client {res['client_cpu_share']} cores over the run")
    print(f"  target           no error and p99 < {TARGET_P99_MS:.0f} ms: {'MET' if res['target_met'] else 'MISSED'}")
    for kind, what in errors[:10]: print(f"  error ({kind}): {what}")
    print(json.dumps(res))


def profile(pages, posts, n=400, seed=0):
    "The same request mix through the WSGI app in-process (no network, one thread) under cProfile: the engine's own cost."
    from webmix.world.miniweb import create_app
    app = create_app()
    rng = random.Random(seed)
    c = app.test_client()
    def new_session(): c.set_cookie(COOKIE, c.get("/_admin/session-flags", headers=admin_headers()).get_json()["session"])
    new_session()
    for url in pages: c.get(url)                              # warm
    pr = cProfile.Profile()
    t0 = time.perf_counter()
    pr.enable()
    for i in range(n):
        if i % 20 == 0: new_session()
        c.get(rng.choice(pages))
    pr.disable()
    dt = time.perf_counter() - t0
    print(f"\nin-process profile: {n} page loads in {dt:.2f} s = {dt / n * 1000:.2f} ms per page (profiler on)")
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(30)
    print(s.getvalue())
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(20)
    print(s.getvalue())


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--pages", type=int, default=20, help="page loads per session (its form pages included)")
    ap.add_argument("--posts", type=int, default=2, help="form posts per session")
    ap.add_argument("--threads", type=int, default=8, help="waitress threads of the server")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--base", help="measure a server that is already running at this URL (with --pid for its CPU time)")
    ap.add_argument("--pid", type=int, help="the process id of the --base server")
    ap.add_argument("--profile", action="store_true", help="then profile the engine in-process with cProfile")
    args = ap.parse_args()
    res, errors, pages, posts = asyncio.run(run(args))
    report(res, errors)
    if args.profile: profile(pages, posts)
    sys.exit(0 if res["target_met"] else 1)
