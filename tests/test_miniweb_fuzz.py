"""MiniWeb under malformed input: every route of every site answers 2xx, 3xx or 4xx with a page or a JSON error, never 500.

Routes and fields are not listed here: they come from each site's sitemap (the query controls of its pages) and
from what its pages render (forms as a browser submits them, same-site links, the board's move endpoint), and the
admin routes from the app's URL map, so a new site spec or admin route is covered without editing this file.
Breadth runs in-process through Flask's test client (about a millisecond a request); a seeded sample of the same
requests, with every oversized search and page number and every upload (whose name comes back in a download
header), then goes over HTTP to a real server (waitress, its own process) the way a browser reaches it.

The limits go over HTTP too (the module's server): a body past MAX_BODY, a session's uploads past its caps, sign-in's
`next` pointing anywhere but the same site, and admin reports too large, too deep, not JSON or past a session's caps.
Each answers a 4xx with a page or a JSON error (site requests logged like any other), and the server stays up.
"""
import http.client, json, random, re
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import quote, urljoin, urlsplit

import pytest
from flask import got_request_exception

from webmix.config import admin_headers
from webmix.world.sites import load_sites
from webmix.world.sessions import COOKIE
from webmix.world.pages import MAX_UPLOAD_BYTES, MAX_UPLOADS
from webmix.world.admin import FLAG_PARSERS, MAX_REPORT_BYTES, MAX_REPORT_DEPTH, MAX_REPORTS, MAX_REPORTS_BYTES
from webmix.world.miniweb import MAX_BODY, MAX_FORM_PARTS, MAX_FORM_TEXT, create_app
from site_sample import sample_sites

SITES = load_sites()
SAMPLE = sample_sites()                   # the sites each test sends its malformed requests to
SEED = 2026
LONG = "x" * 100_000

def enc(s: str) -> str: return quote(s, safe="")

# name -> the value as it goes on the wire: already percent-encoded, so invalid UTF-8 and broken escapes stay as they are
BAD = {
    "long": enc(LONG), "nul": enc("a\x00b"), "bad_utf8": "%ff%fe%c3%28", "broken_escape": "%zz%4",
    "empty": "", "blank": "+++", "negative": "-1", "zero": "0", "huge": "9" * 30, "huge_negative": "-" + "9" * 30,
    "many_digits": "9" * 5000, "fraction": "1.5", "overflow_float": "1e999", "nan": "nan", "inf": "inf", "word": "abc",
    "superscript_digit": enc("²"), "arabic_digits": enc("١٢"), "bad_date": "2026-13-45", "feb_30": "2026-02-30",
    "year_zero": "0000-00-00", "like_wildcards": enc("%_\\%"), "sql": enc("' OR 1=1 --"),
    "markup": enc("<script>alert(1)</script>{{ 7*7 }}"), "crlf": enc("/x\r\nSet-Cookie: a=b"), "deep_json": enc("[" * 5000),
    "json": enc('{"a": [1, 2]}'), "emoji": enc("日本語 🎉"), "unknown_option": "no-such-option",
}
# what replaces a record id inside a path: unknown, out of SQLite's range, not a number, not ASCII digits
BAD_IDS = ["0", "999999", "9" * 19, "9" * 30, "9" * 5000, "-1", "abc", "1.5", "1e3", enc("١"), enc("²"), "%00", "%ff", "x" * 5000]
QUERY_ROLES = {"filter", "sort", "search", "paginate", "tab"}
GENERIC_NAMES = ["next", "zzz"]          # every page is also sent a redirect target and a parameter nobody reads
MANY = 1000                              # more values for one name than some SQLite builds bind in one statement (999)
HTTP_SAMPLE = 25                         # requests per site replayed against the real server, besides the oversized ones
WAITRESS_HEADER_LIMIT = 262_144          # waitress answers a longer request head itself (431, plain text), before the app


# ---------------------------------------------------------------- answers and what is wrong with them
@dataclass
class Req:
    method: str
    path: str
    query: str = ""
    body: bytes | None = None
    ctype: str | None = None
    what: str = ""                        # the field and the kind of bad value, for the report

@dataclass
class Answer:
    status: int
    ctype: str
    location: str | None
    body: bytes
    unsendable: str = ""                  # a header a WSGI server cannot put on the wire (not latin-1)
    attachment: bool = False              # a download (Content-Disposition: attachment): a file as it went up, of any type

def problem(a: Answer) -> str | None:
    "What is wrong with an answer to malformed input, or None: 2xx/3xx/4xx with a page, a JSON error or a download."
    kind = a.ctype.split(";")[0].strip()
    if not 200 <= a.status < 500: return f"status {a.status}"
    if a.unsendable: return f"{a.status} with a header no server can send: {a.unsendable}"
    if 300 <= a.status < 400: return None if a.location else f"{a.status} without a Location"
    if a.attachment and a.status < 300: return None
    if kind == "text/html": return None if b"</html>" in a.body else f"{a.status}: a page cut short"
    if kind == "application/json":
        try: body = json.loads(a.body)
        except ValueError: return f"{a.status}: JSON that does not parse"
        return None if a.status < 400 or (isinstance(body, dict) and body.get("error")) else f"{a.status}: JSON without an error"
    return None if a.status < 400 else f"{a.status} answered as {kind or 'no content type'}"


# ---------------------------------------------------------------- two ways to reach MiniWeb
def admin_of(r) -> dict:
    "The admin key on admin requests (the harness's part), nothing on a site's."
    return admin_headers() if r.path.startswith("/_admin") else {}

def session_opened(r, status, body) -> str | None:
    "The session a session-flags request opened (the client then holds it as its cookie, as the harness does)."
    if r.path != "/_admin/session-flags" or status != 200: return None
    return json.loads(body)["session"]

def latin1(text):
    try: text.encode("latin-1"); return True
    except UnicodeEncodeError: return False

class InProcess:
    "Flask's test client: the app in this process, a cookie jar; exceptions behind a 500 are kept for the report."
    def __init__(self, app): self.app, self.client, self.errors = app, app.test_client(), []

    def send(self, r: Req) -> Answer:
        self.errors = []
        with got_request_exception.connected_to(lambda sender, exception, **kw: self.errors.append(exception), self.app):
            resp = self.client.open(r.path, method=r.method, query_string=r.query, data=r.body, content_type=r.ctype,
                                    headers=admin_of(r))
        if opened := session_opened(r, resp.status_code, resp.get_data()): self.client.set_cookie(COOKIE, opened)
        return Answer(resp.status_code, resp.headers.get("Content-Type", ""), resp.headers.get("Location"), resp.get_data(),
                      next((f"{k}: {v[:80]}" for k, v in resp.headers.items() if not latin1(v)), ""),
                      resp.headers.get("Content-Disposition", "").startswith("attachment"))

    def why(self): return f"{type(self.errors[-1]).__name__}: {str(self.errors[-1])[:200]}" if self.errors else ""

class OverHttp:
    "Plain HTTP/1.1 to a real server, the bytes exactly as given, the session cookie sent by hand."
    def __init__(self, base):
        u = urlsplit(base)
        self.host, self.port, self.cookie, self.conn = u.hostname, u.port, None, None

    def send(self, r: Req) -> Answer:
        try: return self._send(r)
        except (http.client.RemoteDisconnected, ConnectionError):   # the server closed a kept-alive connection: once more
            self.conn = None
            return self._send(r)

    def _send(self, r):
        self.conn = self.conn or http.client.HTTPConnection(self.host, self.port, timeout=60)
        headers = {**({"Cookie": f"{COOKIE}={self.cookie}"} if self.cookie else {}), **admin_of(r)}
        if r.ctype: headers["Content-Type"] = r.ctype
        self.conn.request(r.method, r.path + (f"?{r.query}" if r.query else ""), body=r.body, headers=headers)
        resp = self.conn.getresponse()
        data = resp.read()
        if self.cookie is None and (m := re.search(COOKIE + r"=([0-9a-f]+)", resp.getheader("Set-Cookie") or "")):
            self.cookie = m.group(1)
        if opened := session_opened(r, resp.status, data): self.cookie = opened
        return Answer(resp.status, resp.getheader("Content-Type") or "", resp.getheader("Location"), data,
                      attachment=(resp.getheader("Content-Disposition") or "").startswith("attachment"))

    def why(self): return ""

def open_session(client):
    a = client.send(Req("GET", "/_admin/session-flags"))
    assert a.status == 200, a.body[:300]
    return client


# ---------------------------------------------------------------- what a browser finds on a page
class Page(HTMLParser):
    "A page's forms (fields as a browser submits them), same-site links, CSRF token and the board's move endpoint."
    def __init__(self, html):
        super().__init__(convert_charrefs=True)
        self.forms, self.links, self.move_urls, self.cards, self.columns, self.csrf = [], [], [], [], [], ""
        self._form, self._select, self._textarea = None, None, None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "body": self.csrf = a.get("data-csrf", "")
        if tag == "a" and a.get("href"): self.links.append(a["href"])
        if a.get("data-move-url"): self.move_urls.append(a["data-move-url"])
        if a.get("data-part") == "card": self.cards.append(a.get("data-value", ""))
        if a.get("data-part") == "column": self.columns.append(a.get("data-value", ""))
        if tag == "form":
            self._form = {"action": a.get("action", ""), "method": a.get("method", "get").lower(),
                          "multipart": "multipart" in a.get("enctype", ""), "fields": [], "files": []}
            self.forms.append(self._form)
        if self._form is not None: self._field(tag, a)

    def _field(self, tag, a):
        name, fields = a.get("name"), self._form["fields"]
        if tag == "option" and self._select is not None:
            if self._select[1] is None or "selected" in a: self._select[1] = a.get("value", "")
        if not name: return
        if tag == "input":
            t = a.get("type", "text").lower()
            if t == "file": self._form["files"].append(name)
            elif t in ("checkbox", "radio"):
                if "checked" in a: fields.append((name, a.get("value") or "on"))
            elif t not in ("submit", "button", "image", "reset"): fields.append((name, a.get("value", "")))
        elif tag == "select": self._select = [name, None]
        elif tag == "textarea": self._textarea = [name, ""]

    def handle_data(self, data):
        if self._textarea is not None: self._textarea[1] += data

    def handle_endtag(self, tag):
        if self._form is None: return
        if tag == "select" and self._select is not None:
            self._form["fields"].append((self._select[0], self._select[1] or "")); self._select = None
        if tag == "textarea" and self._textarea is not None:
            self._form["fields"].append(tuple(self._textarea)); self._textarea = None
        if tag == "form": self._form = None


# ---------------------------------------------------------------- the requests: sitemap pages, their fields, malformed values
def site_url(name, path=""): return f"/sites/{name}" + ("" if path in ("", "/") else path)

def urlencoded(pairs) -> str:
    "pairs of (name, value already on the wire) -> a query string or form body"
    return "&".join(f"{enc(k)}={v}" for k, v in pairs)

def wire(pairs): return [(k, enc(v)) for k, v in pairs]

def visit(client, path) -> Page:
    a = client.send(Req("GET", path))
    return Page(a.body.decode(errors="replace")) if a.ctype.startswith("text/html") else Page("")

def query_names(site, page) -> list:
    "The parameters a sitemap page's query controls set (a slider its _max, a date range its two ends)."
    out = []
    for c in site.sitemap()["controls"]:
        if c["page"] != page["path"] or c["role"] not in QUERY_ROLES: continue
        out += [c["extra"]["from"], c["extra"]["to"]] if c["kind"] == "date_range" else [c["name"]]
    return [n for n in dict.fromkeys(out) if n]

def query_fuzz(name, site, page, html, rng):
    "Every query parameter of a page, alone, set to every bad value; all of them at once; repeated; repeated a thousand times."
    path = site_url(name, page["path"])
    gets = [k for f in html.forms if f["method"] == "get" for k, _ in f["fields"]]       # what its GET forms submit too
    listed = list(dict.fromkeys(query_names(site, page) + gets))
    values = list(BAD.items()) if listed else rng.sample(sorted(BAD.items()), 6)    # a page without query controls: a sample
    for k in listed + GENERIC_NAMES:
        for label, v in values: yield Req("GET", path, urlencoded([(k, v)]), what=f"{k}={label}")
    for label, v in BAD.items() if listed else []:
        yield Req("GET", path, urlencoded([(k, v) for k in listed]), what=f"every parameter={label}")
    for k in listed:
        yield Req("GET", path, urlencoded([(k, "1"), (k, BAD["long"]), (k, "")]), what=f"{k} repeated")
        yield Req("GET", path, urlencoded((k, f"v{i}") for i in range(MANY)), what=f"{k} repeated {MANY} times")

def id_fuzz(path, method="GET", body=None, ctype=None):
    "The last record id in a path replaced by ids that are unknown, too large for SQLite, or not numbers."
    m = list(re.finditer(r"/(\d+)(?=/|$)", path))
    if not m: return
    a, b = m[-1].span(1)
    for bad in BAD_IDS: yield Req(method, path[:a] + bad + path[b:], body=body, ctype=ctype, what=f"id={bad[:12]}")

def same_site(name, href, at):
    "The path and query of a link, when it stays on this site (the logout form is the only way out, and is a POST)."
    u = urlsplit(urljoin(at, href))
    return (u.path, u.query) if u.path.startswith(site_url(name)) and not u.netloc else None

def multipart(fields, files):
    "A multipart/form-data body: fields [(name, value)], files [(name, filename, bytes[, content type])]; names and types go in raw."
    b, out = "fuzzboundary7MA4YWxkTrZu0gW", []
    for k, v in fields: out.append(f'--{b}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
    for k, fn, data, *ct in files:
        out.append(f'--{b}\r\nContent-Disposition: form-data; name="{k}"; filename="{fn}"\r\n'
                   f'Content-Type: {ct[0] if ct else "application/octet-stream"}\r\n\r\n'.encode() + data + b"\r\n")
    return b"".join(out) + f"--{b}--\r\n".encode(), f"multipart/form-data; boundary={b}"

FILENAMES = ["a.txt", "", "x" * 5000 + ".txt", "a\x00b.txt", "../../etc/passwd", "日本語.txt", "a\rb.txt", 'q"uote.txt', "a;b=c.txt"]
# the type a file goes up with comes back on its download: one a header cannot carry must not make that download fail;
# with FILENAMES a site's plan keeps fewer files than a session holds (MAX_UPLOADS), so every one is downloaded again
CONTENT_TYPES = ["text/html", "", "x", "日本/語", "text/plain; charset=日本", "text/html\x00x", "a/" + "b" * 5000, "../..",
                 "image/png\x7f", "text/plain\r\nX-Injected: 1"]

def upload_fuzz(action, form, csrf):
    fields = [(k, v) for k, v in form["fields"] if k != "csrf_token"]
    for name in form["files"]:
        for fn in FILENAMES:
            for data in (b"hello", b""):
                body, ctype = multipart([("csrf_token", csrf), *fields], [(name, fn, data)])
                yield Req("POST", action, body=body, ctype=ctype, what=f"{name} named {fn[:12]!r}, {len(data)} bytes")
        for ct in CONTENT_TYPES:
            body, ctype = multipart([("csrf_token", csrf), *fields], [(name, "typed.bin", b"hello", ct)])
            yield Req("POST", action, body=body, ctype=ctype, what=f"{name} named 'typed.bin' as {ct[:20]!r}")
        body, ctype = multipart([*fields], [(name, "a.txt", b"hello")])
        yield Req("POST", action, body=body, ctype=ctype, what="upload without CSRF")
    yield Req("POST", action, body=b"--nope\r\ngarbage", ctype="multipart/form-data; boundary=nope", what="broken multipart")

def form_fuzz(action, pairs, csrf):
    "A form's fields one at a time set to every bad value, left out, repeated; the form without or with a wrong CSRF token."
    ctype = "application/x-www-form-urlencoded"
    base = [(k, v) for k, v in pairs if k != "csrf_token"]
    post = lambda ps, what: Req("POST", action, body=urlencoded(ps).encode(), ctype=ctype, what=what)
    yield post(wire([("csrf_token", csrf), *base]), "the form as rendered")
    for i, (k, _) in enumerate(base):
        for label, v in BAD.items():
            yield post(wire([("csrf_token", csrf), *base[:i]]) + [(k, v)] + wire(base[i + 1:]), f"{k}={label}")
        yield post(wire([("csrf_token", csrf), *base[:i], *base[i + 1:]]), f"{k} left out")
        yield post(wire([("csrf_token", csrf), *base]) + [(k, BAD["long"]), (k, BAD["nul"])], f"{k} repeated")
    yield post(wire([("csrf_token", csrf), *base]) + [("zzz", BAD["long"])], "an unknown field")
    yield post(wire(base), "no CSRF token")
    yield post(wire([("csrf_token", "x" * 32), *base]), "a wrong CSRF token")
    yield Req("POST", action, body=b"\xff\xfe" * 100 + b"=%ff", ctype=ctype, what="a body that is not UTF-8")
    yield Req("POST", action, body=json.dumps(dict(base)).encode(), ctype="application/json", what="JSON instead of a form")

def site_plan(client, name):
    "Every malformed request for one site, in an order that keeps the session able to reach the next ones."
    site, rng = SITES[name], random.Random(f"{SEED}/{name}")
    pages = {p["path"]: visit(client, site_url(name, p["path"])) for p in site.page_list}
    reads, writes, last = [], [], []
    for p in site.page_list:
        html, at = pages[p["path"]], site_url(name, p["path"])
        reads += query_fuzz(name, site, p, html, rng)
        reads += id_fuzz(at)
        for f in html.forms:
            if f["method"] != "post": continue
            action = urlsplit(urljoin(at, f["action"] or at)).path
            if f["files"]: writes += upload_fuzz(action, f, html.csrf)
            elif any(k != "csrf_token" for k, _ in f["fields"]): writes += form_fuzz(action, f["fields"], html.csrf)
            else: last += fieldless_fuzz(action, html.csrf)      # logout, delete: never sent a valid token for a real record
        for url in html.move_urls:                               # the board's script posts card, column and position
            pairs = [("id", (html.cards or ["1"])[0]), ("group", (html.columns or [""])[0]), ("position", "0")]
            writes += form_fuzz(urlsplit(urljoin(at, url)).path, pairs, html.csrf)
    return dedupe(reads + writes + last)

def fieldless_fuzz(action, csrf):
    ctype = "application/x-www-form-urlencoded"
    yield Req("POST", action, body=b"", ctype=ctype, what="no CSRF token")
    yield Req("POST", action, body=b"csrf_token=" + b"x" * 32, ctype=ctype, what="a wrong CSRF token")
    yield from id_fuzz(action, "POST", urlencoded(wire([("csrf_token", csrf)])).encode(), ctype)

def dedupe(reqs):
    seen, out = set(), []
    for r in reqs:
        key = (r.method, r.path, r.query, r.body)
        if key not in seen: seen.add(key); out.append(r)
    return out

def revisit_plan(client, name):
    "After the fuzz: every same-site link the pages now show (records made from odd values, uploaded files), and the pages."
    site, out = SITES[name], []
    for p in site.page_list:
        at = site_url(name, p["path"])
        out.append(Req("GET", at, what="the page after the fuzz"))
        for href in visit(client, at).links:
            if (hit := same_site(name, href, at)): out.append(Req("GET", hit[0], hit[1], what=f"a link on {p['path']}"))
    return dedupe(out)


# ---------------------------------------------------------------- the admin API, from the app's URL map
def admin_plan(app):
    "Every admin route with every bad value in each query parameter the admin API reads, and bad JSON bodies for its writes."
    names, out = sorted({*FLAG_PARSERS, "since", "session", "zzz"}), []
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/_admin"): continue
        path = re.sub(r"<[^>]+>", sorted(SITES)[0], rule.rule)          # a route with a site name: a real one...
        for bad in BAD_IDS if rule.arguments else []:                     # ...and names no site has
            out.append(Req("GET", re.sub(r"<[^>]+>", bad, rule.rule), what=f"name={bad[:12]}"))
        out.append(Req("GET", path, what="no parameters"))
        for k in names:
            for label, v in BAD.items(): out.append(Req("GET", path, urlencoded([(k, v)]), what=f"{k}={label}"))
        if "POST" in rule.methods:
            for label, body in JSON_BODIES.items(): out.append(Req("POST", path, body=body, ctype="application/json", what=label))
    return dedupe(out)

JSON_BODIES = {
    "empty body": b"", "not JSON": b"{nope", "not UTF-8": b"\xff\xfe{}", "a list": b"[]", "a string": b'"x"', "null": b"null",
    "nested 100000 deep": b"[" * 100_000, "text a number": b'{"text": 5}', "text 100000 chars": json.dumps({"text": LONG}).encode(),
    "site an object": b'{"text": "a", "site": {"x": 1}, "control_id": [1]}', "unknown type": b'{"type": "nope"}',
    "type a list": b'{"type": ["click"]}', "long url": json.dumps({"type": "click", "url": LONG, "points": [[1e999, "x"]]}).encode(),
    "NUL": json.dumps({"text": "a\x00b", "type": "key\x00"}).encode(),
    "NaN": b'{"type": "click", "text": "a", "value": NaN}', "1e999": b'{"type": "click", "text": "a", "t": 1e999}',
    "valid JSON 950 deep": ('{"type": "click", "text": "a", "target": ' + "[" * 950 + "]" * 950 + "}").encode(),
    "wrong types": b'{"type": "click", "text": "a", "t": "soon", "url": 5, "target": "x", "to": [1], "points": {"a": null}}',
}


# ---------------------------------------------------------------- running a plan
def run(client, reqs):
    "Send each request; -> the failures as report lines."
    bad = []
    for r in reqs:
        a = client.send(r)
        if (p := problem(a)): bad.append(f"{r.method} {r.path[:80]} [{r.what}]: {p} {client.why()}".rstrip())
    return bad

def report(bad, n):
    uniq = list(dict.fromkeys(bad))
    return f"{len(bad)} of {n} malformed requests got a bad answer:\n" + "\n".join(uniq[:40])


@pytest.fixture(scope="module")
def app():
    "The app in this process; its logger quiet, since every 500 it would log is in the test's report with its exception."
    app = create_app()
    app.logger.disabled = True
    yield app
    app.logger.disabled = False


@pytest.mark.parametrize("name", SAMPLE)
def test_site_answers_malformed_input_without_500(app, name):
    client = open_session(InProcess(app))
    plan = site_plan(client, name)
    bad = run(client, plan)
    after = revisit_plan(client, name)
    bad += run(client, after)
    assert not bad, report(bad, len(plan) + len(after))


def test_admin_api_answers_malformed_input_without_500(app):
    client, plan = InProcess(app), admin_plan(app)
    bad = run(client, plan)
    # a session opened with odd flags must still serve every site (the flags are applied on the first page)
    for label, v in BAD.items():
        for flag in sorted(FLAG_PARSERS):
            c = InProcess(app)
            if c.send(Req("GET", "/_admin/session-flags", urlencoded([(flag, v)]))).status == 200:
                bad += run(c, [Req("GET", site_url(n), what=f"after {flag}={label}") for n in SAMPLE])
    assert not bad, report(bad, len(plan))


def test_real_server_answers_malformed_input_without_500(app, base):
    "A sample of each site's plan over HTTP, plus every oversized search and page number, the way a browser sends them."
    bad, n = [], 0
    for name in SAMPLE:
        client = open_session(OverHttp(base))
        plan, rng = site_plan(client, name), random.Random(f"{SEED}/http/{name}")
        plan = [r for r in plan if len(r.path) + len(r.query) < WAITRESS_HEADER_LIMIT - 1000]
        # the oversized values and the uploads always: an upload's name comes back in a download header, which only
        # a real server has to encode (latin-1); the links revisited afterwards download them
        always = [r for r in plan if r.what in ("q=long", "page=many_digits", "q=like_wildcards") or " named " in r.what]
        sample = always + rng.sample(plan, min(HTTP_SAMPLE, len(plan)))
        bad += run(client, sample); n += len(sample)
        after = revisit_plan(client, name)
        bad += run(client, after); n += len(after)
    admin = OverHttp(base)
    sample = random.Random(f"{SEED}/http/admin").sample(admin_plan(app), 40)
    bad += run(admin, sample); n += len(sample)
    assert not bad, report(bad, n)


# ---------------------------------------------------------------- limits, over HTTP to the module's server
UPLOAD_PAGES = [site_url(n, p["path"]) for n in SAMPLE for p in SITES[n].page_list if p["kind"] == "upload"]
LOGIN_SITES = [n for n in SAMPLE if SITES[n].login_url]

def still_up(miniweb, base):
    "The server process lives and answers a page."
    assert all(p.poll() is None for p in miniweb.procs), "the MiniWeb server exited"
    assert OverHttp(base).send(Req("GET", "/")).status == 200

def entries(client, stream):
    a = client.send(Req("GET", f"/_admin/{stream}"))
    assert a.status == 200 and problem(a) is None, (stream, a.status, a.body[:300])
    return json.loads(a.body)["entries"]

def upload(client, path, data, name="a.txt", csrf=None):
    body, ctype = multipart([("csrf_token", csrf or visit(client, path).csrf)], [("file", name, data)])
    return client.send(Req("POST", path, body=body, ctype=ctype, what=f"{len(data)} bytes to {path}"))

def refused_and_logged(client, a, path, status=413):
    "a is a 4xx page (not 500), and the session's log ends with it."
    assert a.status == status and problem(a) is None, (path, a.status, problem(a), a.body[:300])
    last = entries(client, "log")[-1]
    assert (last["method"], last["path"], last["status"]) == ("POST", path, status), last


def test_request_past_the_size_limits_is_a_logged_413(miniweb, base):
    "A file or a form past MAX_BODY, a multipart form with a field past MAX_FORM_TEXT or past MAX_FORM_PARTS fields: a 413 page, logged."
    client = open_session(OverHttp(base))
    for path in UPLOAD_PAGES:
        refused_and_logged(client, upload(client, path, b"x" * MAX_BODY, "big.pdf"), path)
    path = site_url("shop", "/orders/new")
    csrf = visit(client, path).csrf
    a = client.send(Req("POST", path, body=urlencoded(wire([("csrf_token", csrf), ("notes", "x" * MAX_BODY)])).encode(),
                        ctype="application/x-www-form-urlencoded"))
    refused_and_logged(client, a, path)
    for fields in ([("notes", "x" * (MAX_FORM_TEXT + 1))], [(f"f{i}", "1") for i in range(MAX_FORM_PARTS + 1)]):
        body, ctype = multipart([("csrf_token", csrf), *fields], [])
        refused_and_logged(client, client.send(Req("POST", path, body=body, ctype=ctype)), path)
    assert client.send(Req("GET", path)).status == 200           # the session goes on
    still_up(miniweb, base)


def test_a_session_holds_at_most_its_upload_caps(miniweb, base):
    "MAX_UPLOADS files over all sites, then a 413 page saying why, logged, nothing stored; likewise past MAX_UPLOAD_BYTES."
    client = open_session(OverHttp(base))
    for i in range(MAX_UPLOADS):
        path = UPLOAD_PAGES[i % len(UPLOAD_PAGES)]
        a = upload(client, path, b"note %d" % i, f"n{i}.txt")
        assert a.status == 302, (i, path, a.status, a.body[:300])
    changes = len(entries(client, "changes"))
    for path in UPLOAD_PAGES:
        a = upload(client, path, b"one more", "more.txt")
        refused_and_logged(client, a, path)
        assert b"holds 20 files" in a.body and b"more.txt" not in visit_body(client, path)
    assert len(entries(client, "changes")) == changes, "a refused upload changed the session's data"

    client, path = open_session(OverHttp(base)), UPLOAD_PAGES[0]
    chunk = MAX_BODY - 2**16                                     # one request's worth
    fits = MAX_UPLOAD_BYTES // chunk
    for i in range(fits): assert upload(client, path, b"x" * chunk, f"c{i}.bin").status == 302, i
    a = upload(client, path, b"x" * chunk, "over.bin")
    refused_and_logged(client, a, path)
    assert b"would pass its limit" in a.body
    assert upload(client, path, b"x" * (MAX_UPLOAD_BYTES - fits * chunk), "rest.bin").status == 302   # up to the byte
    still_up(miniweb, base)

def visit_body(client, path): return client.send(Req("GET", path)).body


def next_cases(name, other):
    "(next as sent, where signing in must go): the same site's paths, normalised; anything else the site's home."
    home = site_url(name)
    return [(home, home), (home + "/", home + "/"), (f"{home}/x?q=a&page=2", f"{home}/x?q=a&page=2"), (f"{home}//x", f"{home}/x"),
            (f"{home}/日本 語", f"{home}/%E6%97%A5%E6%9C%AC%20%E8%AA%9E"), (f"{home}/x?q=<b>", f"{home}/x?q=%3Cb%3E"),
            (f"{home}/x\r\nSet-Cookie: a=b", home), (f"{home}\n", home), (f"{home}/x\x00", home), (f"{home}\t/x", home),
            (f"{home}ping", home), (f"{home}-{other}/x", home), (site_url(other), home), (site_url(other, "/x"), home),
            (f"{home}/../{other}", home), (f"{home}/%2e%2e/{other}", home), (f"{home}/.%2E/x", home), (f"{home}/./x", home),
            (f"{home}/x/..", home), (f"../{other}", home), (f"{home}\\..\\{other}", home), ("/\\evil.example/", home),
            ("http://evil.example/", home), (f"https://evil.example{home}", home), (f"//evil.example{home}", home),
            ("///evil.example", home), ("//[::1", home), ("javascript:alert(1)", home), ("", home), ("x" * 5000, home)]

def test_sign_in_goes_on_only_within_its_site(miniweb, base):
    "next=: a path of the same site (normalised) is followed; CR/LF, another site, .., a URL or //host go home. Never 500."
    bad = []
    for i, name in enumerate(LOGIN_SITES):
        client, login = open_session(OverHttp(base)), SITES[name].login_url
        csrf, other = visit(client, login).csrf, LOGIN_SITES[i - 1]
        for nxt, want in next_cases(name, other):
            page = client.send(Req("GET", login, urlencoded(wire([("next", nxt)]))))
            shown = next((v for f in Page(page.body.decode(errors="replace")).forms for k, v in f["fields"] if k == "next"), None)
            a = client.send(Req("POST", login, body=urlencoded(wire([("csrf_token", csrf), ("username", "alex"),
                                                                       ("password", "correct-horse"), ("next", nxt)])).encode(),
                                ctype="application/x-www-form-urlencoded"))
            if problem(page) or shown != want or problem(a) or a.status != 302 or a.location != want:
                bad.append(f"{name} next={nxt[:60]!r}: page {page.status} shows {str(shown)[:60]!r}, sign-in {a.status} "
                           f"to {str(a.location)[:60]!r}; wanted {want!r}")
    assert not bad, "\n".join(bad[:40])
    still_up(miniweb, base)


def report_cases(stream):
    "(what, body, status): bodies for /_admin/<stream>, every one answered with JSON and none poisoning the stream."
    ok = {"record": {"type": "click", "url": "u"}, "clipboard": {"text": "copied"}}[stream]
    deep = lambda d: (json.dumps(ok)[:-1] + ', "target": ' + "[" * (d - 1) + "]" * (d - 1) + "}").encode()   # d deep in all
    pad = lambda n: json.dumps(ok | {"url": "", "site": "", "value": ""}).replace('"value": ""', '"value": "' + "x" * n + '"').encode()
    fill = MAX_REPORT_BYTES - len(pad(0))
    return [("valid", json.dumps(ok).encode(), 200), ("not JSON", b"{nope", 400), ("not UTF-8", b"\xff\xfe{}", 400),
            ("empty", b"", 400), ("a list", b"[1, 2]", 400), ("a string", b'"x"', 400), ("NaN", json.dumps(ok)[:-1].encode() + b', "n": NaN}', 400),
            ("1e999", json.dumps(ok)[:-1].encode() + b', "n": 1e999}', 400), ("9" * 20 + " digits", json.dumps(ok | {"n": 10 ** 20}).encode(), 200),
            ("wrong types", json.dumps(ok | {"t": "soon", "url": 5, "target": "x", "to": [1], "points": {"a": None}, "site": [1],
                                              "control_id": {"a": 1}}).encode(), 200),
            ("type a number" if stream == "record" else "text a number", json.dumps(ok | {"type": 5, "text": 5}).encode(), 400),
            ("nested at the limit", deep(MAX_REPORT_DEPTH), 200), ("nested one deeper", deep(MAX_REPORT_DEPTH + 1), 400),
            *((f"valid JSON {d} deep", deep(d), 400) for d in (100, 500, 900, 950, 970, 980, 990)),
            ("[ 100000 deep", b"[" * 100_000, 413), ("at MAX_REPORT_BYTES", pad(fill), 200), ("one byte more", pad(fill + 1), 413),
            ("past MAX_BODY", pad(MAX_BODY), 413)]

def test_admin_reports_are_bounded_and_their_streams_stay_readable(miniweb, base):
    "Each bad report is a 400/413 JSON error and the stream still reads (a 980-deep one used to be kept, then fail every read)."
    client, bad = open_session(OverHttp(base)), []
    for stream in ("record", "clipboard"):
        for what, body, status in report_cases(stream):
            a = client.send(Req("POST", f"/_admin/{stream}", body=body, ctype="application/json", what=what))
            read = client.send(Req("GET", f"/_admin/{stream}"))
            if a.status != status or problem(a) or read.status != 200 or problem(read):
                bad.append(f"{stream} {what}: {a.status} (wanted {status}) {a.body[:120]!r}; then a read: {read.status}")
    assert not bad, "\n".join(bad)
    still_up(miniweb, base)


def test_a_session_keeps_at_most_its_report_caps(miniweb, base):
    "MAX_REPORTS entries in a session's record, then a 413; MAX_REPORTS_BYTES of clipboard reports, then a 413; both still read."
    client = open_session(OverHttp(base))
    click = Req("POST", "/_admin/record", body=b'{"type": "click"}', ctype="application/json")
    for i in range(MAX_REPORTS):
        a = client.send(click)
        assert a.status == 200, (i, a.status, a.body[:200])
    a = client.send(click)
    assert a.status == 413 and problem(a) is None, (a.status, a.body[:200])
    assert len(entries(client, "record")) == MAX_REPORTS
    big = json.dumps({"text": "x" * (MAX_REPORT_BYTES - 100)}).encode()
    fits = MAX_REPORTS_BYTES // len(big)
    for i in range(fits): assert client.send(Req("POST", "/_admin/clipboard", body=big, ctype="application/json")).status == 200, i
    a = client.send(Req("POST", "/_admin/clipboard", body=big, ctype="application/json"))
    assert a.status == 413 and problem(a) is None, (a.status, a.body[:200])
    assert len(entries(client, "clipboard")) == fits
    still_up(miniweb, base)
