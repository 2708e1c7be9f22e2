"""Every page a visitor can reach on MiniWeb's sites by following links (GET only), each as a SHA-256 of its HTML with
the session's own tokens blanked: what makes a snapshot of the pages to compare with (`python tests/page_snapshot.py`
writes tests/data/pages_variant0.json)."""
import hashlib, json, re, sys
from collections import deque
from pathlib import Path
from urllib.parse import urljoin, urlsplit

HERE = Path(__file__).parent
SNAPSHOT = HERE / "data" / "pages_variant0.json"
PER_SITE = 60                       # pages a site is crawled to at the most (lists, their filters, details, forms)
TOKENS = re.compile(r'((?:data-csrf|value)=")[A-Za-z0-9_\-]{24,}(")|("csrf_token":\s*")[A-Za-z0-9_\-]{24,}(")')


def _blank(html: str) -> str:
    "The page without its session's csrf token (a random string per session)."
    return TOKENS.sub(lambda m: (m[1] or m[3]) + "TOKEN" + (m[2] or m[4]), html)


def crawl(client, site: str, open_session) -> dict:
    "{path: html} of the pages of `site` a visitor reaches by links from its home, breadth first, in a fresh session."
    open_session(client)
    start = f"/sites/{site}/"
    seen, queue, out = {start}, deque([start]), {}
    while queue and len(out) < PER_SITE:
        path = queue.popleft()
        r = client.get(path)
        if r.status_code != 200 or "text/html" not in r.content_type: continue
        html = r.get_data(as_text=True)
        out[path] = html
        for href in re.findall(r'href="([^"#]+)"', html):
            u = urlsplit(urljoin(path, href.replace("&amp;", "&")))
            nxt = u.path + (f"?{u.query}" if u.query else "")
            if u.netloc or not u.path.startswith(f"/sites/{site}/") or "/export" in u.path or "download" in u.path: continue
            if nxt not in seen: seen.add(nxt); queue.append(nxt)
    return out


def pages(flags: dict | None = None, paths: dict | None = None) -> dict:
    """{site: {path: html}} of every site, each crawled in a new session with `flags` (e.g. {'variant': 0}); or, given
    `paths` ({site: paths}), those pages of each site, fetched in that order in a new session."""
    from webmix.config import admin_headers
    from webmix.world.miniweb import create_app
    from webmix.world.sessions import COOKIE
    app = create_app()
    def open_session(client):
        r = client.get("/_admin/session-flags", query_string=flags or {}, headers=admin_headers())
        assert r.status_code == 200, r.get_data(as_text=True)
        client.set_cookie(COOKIE, r.get_json()["session"])
    if paths is None: return {s: crawl(app.test_client(), s, open_session) for s in sorted(app.extensions["webmix"]["sites"])}
    out = {}
    for site, ps in paths.items():
        client = app.test_client()
        open_session(client)
        out[site] = {p: client.get(p).get_data(as_text=True) for p in ps}
    return out


def snapshot(flags: dict | None = None) -> dict:
    "{site: {path: sha256 of the page without its session's token}} (see pages)."
    return {s: {p: hashlib.sha256(_blank(h).encode()).hexdigest() for p, h in got.items()} for s, got in pages(flags).items()}


def controls(html: str) -> set:
    "The (control id, value) pairs of a page's elements."
    return set(re.findall(r'data-control-id="([^"]*)"(?:[^>]*?data-value="([^"]*)")?', html))


if __name__ == "__main__":
    got = snapshot()
    SNAPSHOT.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    print(f"{sum(map(len, got.values()))} pages of {len(got)} sites -> {SNAPSHOT}", file=sys.stderr)
