"""End-to-end tests of MiniWeb against a live server.

Everything is driven by the sitemaps, so a new site spec is covered without touching this file.
The seeded rows loaded in-process (same spec files, same fixed seed) are the oracle for what list pages,
filters and exports must show; the server under test runs in its own process (webmix.world.servers.Servers).
"""
import csv, io, json, re, socket, subprocess, sys, tempfile, time
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urljoin, urlsplit

from pathlib import Path

import pytest
import requests

from webmix.config import CHROMIUM, PKG_DIR, admin_headers, site_split
from webmix.agents.playwright import playwright_session_sync
import random
from webmix.world.specs import SpecError, fill_format, format_example, loose_format
from webmix.world.sites import load_site, load_sites, page_path
from webmix.world.sessions import COOKIE
from site_sample import sample_sites

ADMIN = admin_headers()                   # this process's admin key: the module's server was started by it

SITES = load_sites()                      # the oracle: seeded rows and specs of the same files the server serves
SITEMAPS = {name: s.sitemap() for name, s in SITES.items()}
SAMPLE = sample_sites()                   # the sites the request-heavy tests go through (every control kind among them)
STREAMS = ("log", "changes", "clipboard", "record")
CONTROL_KINDS = ["dropdown", "checkbox", "radio", "tabs", "date_picker", "pagination", "search", "text_field", "comment",
                  "create_form", "edit_form", "delete_form", "modal_dialog", "login_form", "logout", "menu", "breadcrumb", "detail_link",
                  "home_link", "drag_reorder", "slider", "signature_pad", "copy_button", "file_upload", "file_download",
                  "sort", "date_range", "formatted_field", "autocomplete", "load_more", "menu_bar", "busy_button",
                  "consent_banner", "toast", "calendar_picker", "wizard_form", "embedded_frame", "web_component"]
CREATE_KINDS = ("create_form", "wizard_form")             # a wizard is a create form its page script shows in steps
BROWSER_KINDS = ["drag_reorder", "signature_pad", "copy_button", "file_upload"]
HTTP_KINDS = [k for k in CONTROL_KINDS if k not in BROWSER_KINDS]
TEMPLATE_ERRORS = ("Traceback", "jinja2", "UndefinedError", "TemplateSyntaxError", "Internal Server Error", "{{", "{%")
STROKES = json.dumps([[[10, 10], [40, 30], [80, 35]]])


# ---------------------------------------------------------------- HTML: what a browser would see and submit
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

class Page(HTMLParser):
    "A parsed page: every element with its attributes, text, enclosing form and select."
    def __init__(self, html, path="", status=200):
        super().__init__(convert_charrefs=True)
        self.html, self.path, self.status = html, path, status
        self.els, self.forms, self._open, self._form, self._select = [], [], [], None, None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs, void=False):
        el = {"tag": tag, "attrs": dict(attrs), "text": "", "form": self._form, "select": self._select}
        self.els.append(el)
        if tag == "form": self._form = el["form"] = len(self.forms); self.forms.append(el)
        if tag == "select": self._select = el
        if tag not in VOID and not void: self._open.append(el)

    def handle_startendtag(self, tag, attrs): self.handle_starttag(tag, attrs, void=True)

    def handle_endtag(self, tag):
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i]["tag"] == tag: del self._open[i:]; break
        if tag == "form": self._form = None
        if tag == "select": self._select = None

    def handle_data(self, data):
        for el in self._open: el["text"] += data

    # queries
    def ctl(self, cid, **attrs):
        "Elements carrying data-control-id=cid (and the given attributes, data_part='x' for data-part)."
        want = {k.replace("_", "-"): v for k, v in attrs.items()}
        return [e for e in self.els if e["attrs"].get("data-control-id") == cid and all(e["attrs"].get(k) == v for k, v in want.items())]

    def control_ids(self): return {e["attrs"]["data-control-id"] for e in self.els if e["attrs"].get("data-control-id")}
    def hrefs(self, cid): return [e["attrs"]["href"] for e in self.ctl(cid) if e["attrs"].get("href")]
    def rows(self): return [int(e["attrs"]["data-row"]) for e in self.els if e["attrs"].get("data-row")]
    def count(self): return int(next(e for e in self.els if e["attrs"].get("data-fact") == "count")["text"].strip())
    def field_errors(self): return {e["attrs"]["data-error-for"]: e["text"].strip() for e in self.els if e["attrs"].get("data-error-for")}
    def alerts(self): return [e["text"].strip() for e in self.els if e["attrs"].get("role") == "alert"]
    def text(self): return " ".join(" ".join(e["text"] for e in self.els if e["tag"] == "body").split())
    def options(self, select): return [e for e in self.els if e["select"] is select and e["tag"] == "option"]
    def form_by_id(self, form_id): return next(i for i, f in enumerate(self.forms) if f["attrs"].get("data-form-id") == form_id)

    def form_data(self, idx):
        "[(name, value)] exactly as a browser submits form `idx` (no submitter, no file inputs)."
        out = []
        for e in self.els:
            a = e["attrs"]
            if e["form"] != idx or e is self.forms[idx] or not a.get("name") or "disabled" in a: continue
            if e["tag"] == "input":
                t = (a.get("type") or "text").lower()
                if t in ("submit", "button", "image", "reset", "file"): continue
                if t in ("checkbox", "radio") and "checked" not in a: continue
                out.append((a["name"], a.get("value") if a.get("value") is not None else ("on" if t in ("checkbox", "radio") else "")))
            elif e["tag"] == "select":
                opts = self.options(e)
                chosen = [o for o in opts if "selected" in o["attrs"]] or opts[:1]
                out += [(a["name"], o["attrs"].get("value", o["text"])) for o in chosen[:1]]
            elif e["tag"] == "textarea":
                out.append((a["name"], e["text"][1:] if e["text"].startswith("\n") else e["text"]))
        return out

    def form_action(self, idx):
        return self.forms[idx]["attrs"].get("action") or self.path

    def assert_clean(self):
        for bad in TEMPLATE_ERRORS: assert bad not in self.html, f"{self.path}: the page contains {bad!r}"


# ---------------------------------------------------------------- one browser session over HTTP
class Client:
    "A MiniWeb session over HTTP: its own cookie jar (the session /_admin/session-flags opened) and its admin streams."
    def __init__(self, base, sid=None, pump=None, **flags):
        self.base, self.http, self.pump = base, requests.Session(), pump
        if sid:                                     # attach to a session opened elsewhere (a browser's)
            self.sid, self.flags = sid, None
            return
        r = self.http.get(f"{base}/_admin/session-flags", params=flags, headers=ADMIN, timeout=30)
        assert r.status_code == 200, r.text
        assert COOKIE not in self.http.cookies                 # the admin API sets no cookie: the client takes the id
        self.sid, self.flags = r.json()["session"], r.json()["flags"]
        self.http.cookies.set(COOKIE, self.sid, domain=urlsplit(base).hostname, path="/")

    def get(self, path, params=None, **kw):
        return self.http.get(self.base + path, params=params, allow_redirects=False, timeout=30, **kw)

    def post(self, path, data=(), files=None, **kw):
        return self.http.post(self.base + path, data=data, files=files, allow_redirects=False, timeout=30, **kw)

    def page(self, path, params=None, status=200):
        r = self.get(path, params)
        assert r.status_code == status, f"GET {path} {params or ''}: {r.status_code} (wanted {status}): {r.text[:500]}"
        assert r.headers["Content-Type"].startswith("text/html"), r.headers["Content-Type"]
        p = Page(r.text, path, r.status_code)
        p.assert_clean()
        return p

    def stream(self, name, since=0):
        if self.pump: self.pump()                    # a browser's recorder reports first
        r = requests.get(f"{self.base}/_admin/{name}", params={"session": self.sid, "since": since}, headers=ADMIN, timeout=30)
        assert r.status_code == 200, r.text
        return r.json()["entries"]

    def csrf(self, path):
        "The session's CSRF token as a page carries it (the page script reads it from <body data-csrf>)."
        return next(e for e in self.page(path).els if e["tag"] == "body")["attrs"]["data-csrf"]

    def mark(self, names=("log", "changes")): return {n: len(self.stream(n)) for n in names}
    def new(self, mark, name): return self.stream(name, mark[name])

    def assert_nothing_recorded(self):
        for n in STREAMS: assert self.stream(n) == [], f"session {self.sid} saw {n} entries it never made"


def wait_until(fn, timeout=10.0, what="a condition"):
    "Poll fn() until it returns something truthy (the page script reports asynchronously)."
    end = time.monotonic() + timeout
    while True:
        v = fn()
        if v: return v
        if time.monotonic() > end: raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


# ---------------------------------------------------------------- the oracle: specs and seeded rows
def site_url(site, path=""): return f"/sites/{site}" + ("" if path in ("", "/") else path)

def page_spec(site, path):
    "The spec of the page a sitemap path belongs to ('/orders/1/edit' -> the orders list page)."
    for p in SITES[site].spec["pages"]:
        pp = page_path(p)
        if path == pp or (pp != "/" and path.startswith(pp + "/")): return p
    raise KeyError(f"{site}: no page spec for {path}")

def fields_of(site, cname): return SITES[site].collections[cname]["fields"]
def seeded(site, cname): return SITES[site].rows[cname]
def title_of(site, cname, row): return SITES[site].title_of(cname, row)

def control(site, cid): return next(c for c in SITEMAPS[site]["controls"] if c["control_id"] == cid)

def controls_of(kind):
    return [(site, c) for site in SAMPLE for c in SITEMAPS[site]["controls"] if c["kind"] == kind]

def _ordered(rows, order):
    key, desc = order.lstrip("-"), order.startswith("-")
    return sorted(sorted(rows, key=lambda r: r["id"]), key=lambda r: (r[key] is not None, r[key]), reverse=desc)

def expected_ids(site, p, query):
    "The ids a list page must show for a query, in order: the filter semantics of the contract on the seeded rows."
    rows = list(seeded(site, p["collection"]))
    one = lambda k: query.get(k) if not isinstance(query.get(k), list) else query[k][-1]
    for flt in p.get("filters") or []:
        fn, w = flt["field"], flt["widget"]
        if w in ("dropdown", "radio") and one(fn): rows = [r for r in rows if str(r[fn]) == one(fn)]
        elif w == "checkbox" and query.get(fn):
            vals = query[fn] if isinstance(query[fn], list) else [query[fn]]
            rows = [r for r in rows if str(r[fn]) in vals]
        elif w == "slider" and one(f"{fn}_max"): rows = [r for r in rows if r[fn] <= float(one(f"{fn}_max"))]
        elif w == "date_range":
            if one(f"{fn}_from"): rows = [r for r in rows if r[fn] >= one(f"{fn}_from")]
            if one(f"{fn}_to"): rows = [r for r in rows if r[fn] <= one(f"{fn}_to")]
    if p.get("tabs") and one("tab"): rows = [r for r in rows if str(r[p["tabs"]]) == one("tab")]
    q = (one("q") or "").strip().lower()
    if p.get("search") and q: rows = [r for r in rows if any(q in str(r[f] if r[f] is not None else "").lower() for f in p["search"])]
    order = p.get("order") or SITES[site].collections[p["collection"]].get("order") or "id"
    m = re.fullmatch(r"(\w+)_(asc|desc)", one("sort") or "")
    if m and m.group(1) in (p.get("sort") or []): order = ("-" if m.group(2) == "desc" else "") + m.group(1)
    return [r["id"] for r in _ordered(rows, order)]

def assert_list(page, site, p, query, pageno=1):
    ids, per = expected_ids(site, p, query), p.get("per_page", 10)
    assert page.count() == len(ids), f"{page.path} {query}: shows {page.count()} results, the seeded data has {len(ids)}"
    assert page.rows() == ids[(pageno - 1) * per: pageno * per], f"{page.path} {query}: wrong rows or order"
    return ids


# ---------------------------------------------------------------- valid and invalid form values per field type
def valid_raw(site, f, current=None, salt="1"):
    "A raw form value that is valid for the field and differs from `current` (None means: leave a checkbox off)."
    t = f["type"]
    if f.get("format"): return fill_format(f["gen"]["pattern"], random.Random(salt), {str(current)})
    if t == "bool": return None if current else "on"
    if t == "choice": opts = [str(o) for o in f["options"]]; return next((o for o in reversed(opts) if o != str(current)), opts[0])
    if t == "ref": return str(next(r["id"] for r in seeded(site, f["to"]) if r["id"] != current))
    if t == "int":
        lo = f.get("min", 0); hi = f.get("max", lo + 100)
        return str(next(v for v in ((lo + hi) // 2, lo, hi) if v != current))
    if t == "money":
        lo = f.get("min", 0); hi = f.get("max", lo + 100)
        return next(s for s in (f"{lo + (hi - lo) * 0.37:.2f}", f"{lo + (hi - lo) * 0.61:.2f}") if float(s) != current)
    if t == "date": return next(d for d in ("2026-02-14", "2026-02-15") if d != current)
    if t == "email": return f"webmix.test{salt}@example.com"
    if t == "longtext": return f"Written by the webmix tests ({salt})."
    return f"Webmix test {salt}"

def stored(f, raw):
    "The value the database must hold after a valid raw value was posted."
    t = f["type"]
    if t == "bool": return raw is not None
    if raw is None or raw.strip() == "": return None
    if t in ("int", "ref"): return int(raw)
    if t == "money": return round(float(raw), 2)
    return raw.strip()

def same(a, b): return a == b or (isinstance(a, bool) and int(a) == b) or (isinstance(b, bool) and int(b) == a)

def invalid_raws(f):
    "[(raw, why)] values the field must refuse."
    t, out = f["type"], []
    if t == "bool": return out
    if f.get("required"): out.append(("", "empty required"))
    if t in ("int", "money", "ref"): out.append(("twelve", "not a number"))
    if t == "int": out.append(("2.5", "not a whole number"))
    if t in ("int", "money") and "min" in f: out.append((str(f["min"] - 1), "below min"))
    if t in ("int", "money") and "max" in f: out.append((str(f["max"] + 1), "above max"))
    if t == "ref": out.append(("999999", "unknown reference"))
    if t == "date": out += [("2026-02-30", "no such day"), ("next tuesday", "not a date")]
    if t == "email": out.append(("not-an-email", "bad e-mail"))
    if t == "choice": out.append(("Not an option", "not an option"))
    return out


# ---------------------------------------------------------------- form submissions
def edit_or_create_form(a, site, form_ctl):
    "(page, form index) of a create or edit form control."
    page = a.page(site_url(site, form_ctl["page"]))
    return page, page.form_by_id(form_ctl["control_id"])

def submit(a, site, form_ctl, overrides=None):
    """Submit a create/edit form as a browser would: its prefilled fields and token, with overrides (None leaves a
    checkbox off). -> (response, posted dict, prefilled dict)."""
    page, idx = edit_or_create_form(a, site, form_ctl)
    prefilled = dict(page.form_data(idx))
    data = dict(prefilled)
    for k, v in (overrides or {}).items():
        if v is None: data.pop(k, None)
        else: data[k] = v
    return a.post(page.form_action(idx), data), data, prefilled

def fill_create(site, form_ctl, salt):
    "Valid values for every field of a create form: {field: raw or None}."
    cname, out = form_ctl["collection"], {}
    for fn in form_ctl["extra"]["fields"]: out[fn] = valid_raw(site, fields_of(site, cname)[fn], None, salt)
    return out

def button_form(a, site, path, cid):
    "(page, form index) of the form holding the element with data-control-id=cid on a page."
    page = a.page(site_url(site, path))
    els = [e for e in page.ctl(cid) if e["form"] is not None]
    assert els, f"{site}{path}: no form holds {cid}"
    return page, els[0]["form"]

def posted_form(data):
    "What the log must show of a posted form: everything but the CSRF token and passwords."
    return {k: v for k, v in data.items() if k not in ("csrf_token", "password")}


# ---------------------------------------------------------------- performing each control kind over HTTP
# handler(a, site, control) performs the control in session `a`, asserts what a's streams recorded, and returns
# probes: callables run later against the second session, which must not see any of it.

def check_get(a, m, path, query=None, status=200):
    "The session's log since mark m is exactly one GET of path with this query."
    log = a.new(m, "log")
    assert [(e["method"], e["path"], e["query"], e["status"]) for e in log] == [("GET", path, query or {}, status)], log
    assert a.new(m, "changes") == []

def open_href(a, href, on):
    "GET an href found on page path `on` (resolved as a browser does) and check the log recorded it exactly."
    href = urljoin(on, href)
    u = urlsplit(href)
    query = {}
    for k, v in parse_qsl(u.query, keep_blank_values=True):
        query[k] = v if k not in query else (query[k] if isinstance(query[k], list) else [query[k]]) + [v]
    m = a.mark()
    r = a.get(href)
    assert r.status_code == 200, f"GET {href}: {r.status_code}"
    check_get(a, m, u.path, query)
    return Page(r.text, u.path)

def do_nav(a, site, ctl):
    page = a.page(site_url(site, ctl["page"]))
    hrefs = page.hrefs(ctl["control_id"])
    assert hrefs, f"{site}: {ctl['control_id']} has no link on {ctl['page']}"
    kind = ctl["kind"]
    if kind == "home_link": assert hrefs == [ctl["extra"]["href"]] == [site_url(site)]
    if kind == "menu_bar":                       # every page of a submenu, under its section's button, hidden until opened
        sections = [e["attrs"]["data-value"] for e in page.ctl(ctl["control_id"]) if e["attrs"].get("data-part") == "section"]
        assert sections == ctl["extra"]["sections"] and sorted({o["section"] for o in ctl["options"]}) == sorted(sections)
    if kind in ("menu", "detail_link", "menu_bar"): assert hrefs == [o["value"] for o in ctl["options"]], f"{ctl['control_id']}: links differ from the sitemap's options"
    if kind == "breadcrumb": assert hrefs[0] == site_url(site)
    for href in dict.fromkeys([hrefs[0], hrefs[-1]]):
        target = open_href(a, href, page.path)
        target.assert_clean()
        if kind == "detail_link":
            want = next(o["text"] for o in ctl["options"] if o["value"] == href)
            assert any(e["tag"] == "h1" and e["text"].strip() == want for e in target.els), f"{href}: no heading {want!r}"
    return []

def do_filter(a, site, ctl):
    "dropdown, checkbox and radio filters: each option as a GET parameter; the page shows exactly the matching rows."
    p, path, name, cid = page_spec(site, ctl["page"]), site_url(site, ctl["page"]), ctl["name"], ctl["control_id"]
    page = a.page(path)
    if ctl["kind"] == "dropdown":
        sel = page.ctl(cid)[0]
        offered = [o["attrs"]["value"] for o in page.options(sel)]
    else:
        offered = [e["attrs"]["value"] for e in page.ctl(cid) if e["tag"] == "input"]
    want = [o["value"] for o in ctl["options"]] + ([""] if ctl["kind"] == "radio" else [])
    assert offered == want, f"{cid}: the page offers {offered}, the sitemap {want}"
    values = [v for v in want if v]
    queries = [{name: v} for v in values] + ([{name: values[:2]}] if ctl["kind"] == "checkbox" and len(values) > 1 else [])
    for q in queries:
        m = a.mark()
        res = a.page(path, q)
        check_get(a, m, path, q)
        ids = assert_list(res, site, p, q)
        assert ids, f"{cid}={q[name]}: no seeded row has this option"
        chosen = q[name] if isinstance(q[name], list) else [q[name]]
        if ctl["kind"] == "dropdown":
            on = [o["attrs"]["value"] for o in res.options(res.ctl(cid)[0]) if "selected" in o["attrs"]]
        else:
            on = [e["attrs"]["value"] for e in res.ctl(cid) if e["tag"] == "input" and "checked" in e["attrs"]]
        assert on == chosen, f"{cid}: after choosing {chosen} the page shows {on} as chosen"
    return []

def do_slider(a, site, ctl):
    p, path, name, ex = page_spec(site, ctl["page"]), site_url(site, ctl["page"]), ctl["name"], ctl["extra"]
    rng = a.page(path).ctl(ctl["control_id"], type="range")
    assert len(rng) == 1 and [rng[0]["attrs"][k] for k in ("min", "max", "step", "name")] == [str(ex["min"]), str(ex["max"]), str(ex["step"]), name]
    vals = [r[ctl["field"]] for r in seeded(site, ctl["collection"])]
    assert ex["min"] <= min(vals) and max(vals) <= ex["max"], f"{ctl['control_id']}: range {ex} does not hold the data"
    mid = ex["min"] + (ex["max"] - ex["min"]) // 2 // ex["step"] * ex["step"]
    for v in (mid, ex["min"], ex["max"]):
        m = a.mark()
        res = a.page(path, {name: str(v)})
        check_get(a, m, path, {name: str(v)})
        ids = assert_list(res, site, p, {name: str(v)})
        if v == ex["max"]: assert len(ids) == len(vals)
        assert res.ctl(ctl["control_id"], type="range")[0]["attrs"]["value"] == str(v)
    return []

def do_date_range(a, site, ctl):
    p, path, ex = page_spec(site, ctl["page"]), site_url(site, ctl["page"]), ctl["extra"]
    page = a.page(path)
    assert sorted(e["attrs"]["name"] for e in page.ctl(ctl["control_id"]) if e["tag"] == "input") == sorted([ex["from"], ex["to"]])
    dates = sorted(r[ctl["field"]] for r in seeded(site, ctl["collection"]))
    lo, hi = dates[len(dates) // 4], dates[3 * len(dates) // 4]
    for q in ({ex["from"]: lo, ex["to"]: hi}, {ex["from"]: hi}, {ex["to"]: lo}):
        m = a.mark()
        res = a.page(path, q)
        check_get(a, m, path, q)
        assert assert_list(res, site, p, q)
        shown = {e["attrs"]["name"]: e["attrs"].get("value") for e in res.ctl(ctl["control_id"]) if e["tag"] == "input"}
        assert {k: shown[k] for k in q} == q
    return []

def do_search(a, site, ctl):
    p, path = page_spec(site, ctl["page"]), site_url(site, ctl["page"])
    assert a.page(path).ctl(ctl["control_id"], type="search")[0]["attrs"]["name"] == ctl["name"] == "q"
    first = seeded(site, ctl["collection"])[0]
    texts = [str(first[f]) for f in p["search"] if first[f] is not None]
    words = [w for t in texts for w in re.findall(r"[A-Za-z]{4,}", t)] or texts      # a word, else a whole value
    assert words, f"{ctl['control_id']}: the first row has nothing to search for"
    for q in ({"q": words[0]}, {"q": words[-1].upper()}, {"q": "zzqxnotthere"}):
        m = a.mark()
        res = a.page(path, q)
        check_get(a, m, path, q)
        ids = assert_list(res, site, p, q)
        assert (first["id"] in ids) == (q["q"] != "zzqxnotthere")
    return []

def do_sort(a, site, ctl):
    p, path, cid = page_spec(site, ctl["page"]), site_url(site, ctl["page"]), ctl["control_id"]
    page = a.page(path)
    offered = [o["attrs"]["value"] for o in page.options(page.ctl(cid)[0]) if o["attrs"]["value"]]
    assert offered == [o["value"] for o in ctl["options"]]
    for v in offered:
        m = a.mark()
        res = a.page(path, {"sort": v})
        check_get(a, m, path, {"sort": v})
        assert_list(res, site, p, {"sort": v})
        assert [o["attrs"]["value"] for o in res.options(res.ctl(cid)[0]) if "selected" in o["attrs"]] == [v]
    return []

def do_tabs(a, site, ctl):
    p, path, cid = page_spec(site, ctl["page"]), site_url(site, ctl["page"]), ctl["control_id"]
    page = a.page(path)
    tabs = page.ctl(cid)
    assert [t["attrs"]["data-value"] for t in tabs] == [o["value"] for o in ctl["options"]]
    for t in tabs:
        v = t["attrs"]["data-value"]
        res = open_href(a, t["attrs"]["href"], path)
        q = {"tab": v} if v else {}
        assert_list(res, site, p, q)
        active = [e["attrs"]["data-value"] for e in res.ctl(cid) if "active" in (e["attrs"].get("class") or "").split()]
        assert active == [v]
    return []

def do_pagination(a, site, ctl):
    p, path, cid = page_spec(site, ctl["page"]), site_url(site, ctl["page"]), ctl["control_id"]
    page = a.page(path)
    per, n = p.get("per_page", 10), len(seeded(site, ctl["collection"]))
    assert [o["value"] for o in ctl["options"]] == [str(i) for i in range(1, -(-n // per) + 1)]
    links = {e["attrs"]["data-value"]: e["attrs"]["href"] for e in page.ctl(cid)}
    for no in dict.fromkeys(["2", ctl["options"][-1]["value"]]):
        res = open_href(a, links[no], path)
        assert_list(res, site, p, {"page": no}, int(no))
        assert any(e["tag"] == "span" and e["attrs"].get("aria-current") == "page" and e["text"].strip() == no for e in res.els)
    return []

def do_load_more(a, site, ctl):
    "A Load more list: its button asks for the next page, and that page shows every row up to it."
    p, path, cid = page_spec(site, ctl["page"]), site_url(site, ctl["page"]), ctl["control_id"]
    per, n = p.get("per_page", 10), len(seeded(site, ctl["collection"]))
    assert [o["value"] for o in ctl["options"]] == [str(i) for i in range(2, -(-n // per) + 1)]
    page = a.page(path)
    (button,) = page.ctl(cid)
    assert button["attrs"]["data-value"] == "2" and "data-more" in button["attrs"]
    res = open_href(a, button["attrs"]["href"], path)
    ids = expected_ids(site, p, {})
    assert page.rows() == ids[:per] and res.rows() == ids[:2 * per], f"{path}: a Load more page shows every row up to it"
    last = a.page(f"{path}?page={ctl['options'][-1]['value']}")
    assert last.rows() == ids and not last.ctl(cid), "the last page shows every row and no button"
    return []

def do_formatted(a, site, ctl):
    "A formatted field: a value written loosely is refused with an inline error showing the format; then as do_field."
    form = control(site, ctl["extra"]["form"])
    f = fields_of(site, form["collection"])[ctl["field"]]
    good = fill_format(f["gen"]["pattern"], random.Random(site), ())
    m = a.mark()
    r, _, _ = submit(a, site, form, fill_create(site, form, "loose") | {ctl["field"]: loose_format(good)} if form["kind"] in CREATE_KINDS
                     else {ctl["field"]: loose_format(good)})
    assert r.status_code == 422 and a.new(m, "changes") == []
    assert Page(r.text).field_errors()[ctl["field"]].endswith(f"must be written like {format_example(f['gen']['pattern'])}.")
    return do_field(a, site, ctl)

def do_autocomplete(a, site, ctl):
    "An autocomplete box: no options in the page; the suggest route answers the typed text; then as do_field."
    form = control(site, ctl["extra"]["form"])
    to = fields_of(site, form["collection"])[ctl["field"]]["to"]
    page = a.page(site_url(site, ctl["page"]))
    box = next(e for e in page.ctl(ctl["control_id"]) if e["attrs"].get("role") == "combobox")
    assert box["tag"] == "input" and not any(e["attrs"].get("role") == "option" for e in page.els)
    target = seeded(site, to)[-1]
    title = SITES[site].title_of(to, target)
    url = site_url(site, page_spec(site, ctl["page"])["path"] + f"/suggest/{ctl['field']}")
    m = a.mark()
    hits = a.get(url, params={"q": title.lower()}).json()
    assert {"value": target["id"], "text": title} in hits, hits
    some = a.get(url, params={"q": title[:3]}).json()
    assert 0 < len(some) <= 8 and all(title[:3].lower() in h["text"].lower() for h in some), some
    assert a.get(url, params={"q": ""}).json() == [] and [e["path"] for e in a.new(m, "log")] == [url] * 3
    return do_field(a, site, ctl)

def do_live(a, site, ctl):
    "A busy button: the record page leaves its field out; the live route answers it (after the delay) as the page would show it."
    p = page_spec(site, ctl["page"])
    row = seeded(site, ctl["collection"])[0]
    page = a.page(site_url(site, f"{p['path']}/{row['id']}"))
    assert not [e for e in page.els if e["attrs"].get("data-field") == ctl["field"]], "the live field is on the page"
    (button,) = [e for e in page.ctl(ctl["control_id"]) if e["tag"] == "button"]
    m = a.mark()
    t0 = time.time()
    answer = a.get(button["attrs"]["data-live"]).json()
    assert time.time() - t0 >= 1.0 and answer == {"field": ctl["field"], "text": str(row[ctl["field"]])}, answer
    assert [e["path"] for e in a.new(m, "log")] == [button["attrs"]["data-live"]] and a.new(m, "changes") == []
    return []

def do_consent(a, site, ctl):
    "A cookie banner (a session started with the consent flag): on every page until answered; the choice is posted and kept."
    home = site_url(site)
    page, idx = button_form(a, site, "/", ctl["control_id"])
    assert sorted(e["attrs"]["data-value"] for e in page.ctl(ctl["control_id"])) == ["all", "necessary"]
    assert a.page(site_url(site, page_path(next(p for p in SITES[site].spec["pages"] if p["kind"] == "list")))).ctl(ctl["control_id"])
    m = a.mark()
    r = a.post(page.form_action(idx), dict(page.form_data(idx)) | {"choice": "necessary"})
    assert r.status_code in (302, 303) and urlsplit(r.headers["Location"]).path == home
    assert [(e["method"], e["path"], e["form"]) for e in a.new(m, "log")] == [("POST", site_url(site, "/consent"), {"choice": "necessary", "next": home})]
    assert not a.page(home).ctl(ctl["control_id"]) and a.new(m, "changes") == []
    assert a.post(page.form_action(idx), dict(page.form_data(idx)) | {"choice": "maybe"}).status_code == 400
    def probe(b): assert b.page(home).ctl(ctl["control_id"]), "the other session's banner was answered too"
    return [probe]

def do_toast(a, site, ctl):
    "A toast: a created record's page confirms it once, with the code of its id; the next visit shows no toast."
    from webmix.world.pages import confirmation_code
    form = control(site, ctl["extra"]["form"])
    n = len(seeded(site, form["collection"]))
    r, _, _ = submit(a, site, form, fill_create(site, form, f"{site}-toast"))
    assert r.status_code in (302, 303), r.status_code
    path = urlsplit(r.headers["Location"]).path
    toast = [e for e in a.page(path).ctl(ctl["control_id"]) if e["attrs"].get("data-part") == "message"]
    code = confirmation_code(SITES[site], form["collection"], n + 1)
    assert len(toast) == 1 and toast[0]["text"].strip().endswith(f"Confirmation {code}."), toast
    again = a.page(path).ctl(ctl["control_id"])
    assert [e["attrs"].get("data-part") for e in again] == [None], "the toast shows once"
    def probe(b): assert b.get(path).status_code == 404
    return [probe]

def do_calendar(a, site, ctl):
    "A calendar widget: no native date input, a read-only box, a hidden field and its opener; then as do_field."
    els = a.page(site_url(site, ctl["page"])).ctl(ctl["control_id"])
    assert sorted((e["tag"], e["attrs"].get("data-part")) for e in els) == [("button", "open"), ("input", "shown")], els
    assert all(e["attrs"].get("type") != "date" for e in els) and "readonly" in next(e for e in els if e["tag"] == "input")["attrs"]
    return do_field(a, site, ctl)

def do_wizard(a, site, ctl):
    "A wizard form: the same form, marked for its page script to show in steps of WIZARD_STEP fields; then as do_create."
    from webmix.world.pages import WIZARD_STEP
    page = a.page(site_url(site, ctl["page"]))
    (form,) = [e for e in page.els if e["tag"] == "form" and e["attrs"].get("data-form-id") == ctl["control_id"]]
    assert form["attrs"].get("data-wizard") == str(WIZARD_STEP) and len(ctl["extra"]["fields"]) > WIZARD_STEP
    return do_create(a, site, ctl)

def do_pay(a, site, ctl):
    "A payment frame: on the pages of records due to pay, a card form in an iframe; a bad card is refused inline, a good one pays."
    pay, p = ctl["extra"], page_spec(site, ctl["page"])
    row = next(r for r in seeded(site, ctl["collection"]) if r[pay["field"]] == pay["from"])
    other = next(r for r in seeded(site, ctl["collection"]) if r[pay["field"]] != pay["from"])
    record = site_url(site, f"{p['path']}/{row['id']}")
    (frame,) = a.page(record).ctl(ctl["control_id"])
    assert frame["tag"] == "iframe" and frame["attrs"]["src"] == record + "/pay"
    assert [e["tag"] for e in a.page(site_url(site, f"{p['path']}/{other['id']}")).ctl(ctl["control_id"])] == ["p"], "a frame with nothing to pay"
    form = a.page(frame["attrs"]["src"])
    assert sorted(e["attrs"].get("data-part") for e in form.ctl(ctl["control_id"])) == ["cvc", "expiry", "number", "submit"]
    token = dict(form.form_data(0))["csrf_token"]
    m = a.mark()
    bad = a.post(frame["attrs"]["src"], {"csrf_token": token, "number": "4242", "expiry": "2028-12", "cvc": ""})
    assert bad.status_code == 422 and sorted(Page(bad.text).field_errors()) == ["cvc", "expiry", "number"] and a.new(m, "changes") == []
    good = a.post(frame["attrs"]["src"], {"csrf_token": token, "number": "4242 4242 4242 4242", "expiry": "12/28", "cvc": "123"})
    assert good.status_code == 200 and Page(good.text).ctl(ctl["control_id"])[0]["attrs"]["data-part"] == "done"
    ch = a.new(m, "changes")
    assert [(c["op"], c["id"], c["after"][pay["field"]]) for c in ch] == [("update", row["id"], pay["to"])], ch
    assert [e["tag"] for e in a.page(record).ctl(ctl["control_id"])] == ["p"], "the frame stays after paying"
    def probe(b): assert [e["tag"] for e in b.page(record).ctl(ctl["control_id"])] == ["iframe"], "the other session's record was paid too"
    return [probe]

def do_rate(a, site, ctl):
    "A rating widget: a web component on every record page; its stars post 1 to 5, anything else is refused; no data changes."
    p = page_spec(site, ctl["page"])
    record = site_url(site, f"{p['path']}/{seeded(site, ctl['collection'])[0]['id']}")
    page = a.page(record)
    (widget,) = page.ctl(ctl["control_id"])
    assert widget["tag"] == "wm-rating" and widget["attrs"]["data-post"] == record + "/rate"
    token = next(e["attrs"]["data-csrf"] for e in page.els if e["tag"] == "body")
    m = a.mark()
    r = a.post(record + "/rate", {"stars": "4", "csrf_token": token})
    assert r.status_code == 200 and r.json()["stars"] == 4
    assert a.post(record + "/rate", {"stars": "9", "csrf_token": token}).status_code == 400
    assert [(e["method"], e["path"], e["form"]) for e in a.new(m, "log")][0] == ("POST", record + "/rate", {"stars": "4"}) and a.new(m, "changes") == []
    return []

def do_download(a, site, ctl):
    page = a.page(site_url(site, ctl["page"]))
    links = page.ctl(ctl["control_id"])
    assert links and all("download" in e["attrs"] for e in links), f"{ctl['control_id']}: no download link"
    pk = page_spec(site, ctl["page"])
    if pk["kind"] == "list":                                  # a CSV export of the list (carries the page's filters)
        href = urljoin(page.path, links[0]["attrs"]["href"])
        m = a.mark()
        r = a.get(href)
        check_get(a, m, urlsplit(href).path)
        assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/csv")
        assert r.headers["Content-Disposition"] == f'attachment; filename="{site}-{ctl["collection"]}.csv"'
        rows = list(csv.reader(io.StringIO(r.text)))
        assert rows[0] == ["id", *fields_of(site, ctl["collection"])]
        assert [int(x[0]) for x in rows[1:]] == expected_ids(site, pk, {})
        cell = lambda v: "" if v is None else str(int(v)) if isinstance(v, bool) else str(v)
        want = {r["id"]: [cell(r[f]) for f in rows[0][1:]] for r in seeded(site, ctl["collection"])}
        for row in rows[1:]: assert row[1:] == want[int(row[0])], f"{href}: row {row[0]} differs from the data"
    else:                                                       # an uploaded file's download link
        first = links[0]
        m = a.mark()
        r = a.get(first["attrs"]["href"])
        check_get(a, m, first["attrs"]["href"])
        assert r.status_code == 200 and r.content
        assert r.headers["Content-Disposition"] == f'attachment; filename="{first["text"].strip()}"'
    return []

def do_create(a, site, ctl):
    cname, salt = ctl["collection"], f"{site}-{ctl['control_id']}"
    values = fill_create(site, ctl, salt)
    n = len(seeded(site, cname))
    list_path = site_url(site, page_path(page_spec(site, ctl["page"])))
    m = a.mark()
    r, data, _ = submit(a, site, ctl, values)
    assert r.status_code in (302, 303), f"{ctl['control_id']}: {r.status_code} {Page(r.text).field_errors() if r.text else ''}"
    form_path = site_url(site, ctl["page"])
    assert [(e["method"], e["path"], e["form"], e["status"]) for e in a.new(m, "log")] == \
           [("GET", form_path, {}, 200), ("POST", form_path, posted_form(data), r.status_code)]
    ch = a.new(m, "changes")
    assert len(ch) == 1 and ch[0]["op"] == "create" and ch[0]["collection"] == cname and ch[0]["before"] is None, ch
    after, f = ch[0]["after"], fields_of(site, cname)
    for fn, raw in values.items(): assert same(after[fn], stored(f[fn], raw)), f"{ctl['control_id']}.{fn}: stored {after[fn]!r}, posted {raw!r}"
    assert ch[0]["id"] == after["id"] == n + 1 and sorted(ch[0]["changed"]) == sorted(k for k, v in after.items() if v is not None)
    assert a.page(list_path).count() == n + 1
    def probe(b):
        assert b.page(list_path).count() == n
        if page_spec(site, ctl["page"]).get("detail"): assert b.get(f"{list_path}/{n + 1}").status_code == 404
    return [probe]

def pick_edit_field(site, ctl):
    f = fields_of(site, ctl["collection"])
    return next((fn for fn in ctl["extra"]["fields"] if f[fn]["type"] in ("text", "longtext")), ctl["extra"]["fields"][0])

def do_edit(a, site, ctl):
    cname = ctl["collection"]
    # an untouched edit form saves without a change: its prefilled values are exactly the stored ones
    m = a.mark()
    r, data, before_form = submit(a, site, ctl)
    assert r.status_code in (302, 303), f"{ctl['control_id']} unchanged: {r.status_code} {Page(r.text).field_errors()}"
    assert a.new(m, "changes") == [], f"{ctl['control_id']}: saving an untouched form changed data"
    fn = pick_edit_field(site, ctl)
    f = fields_of(site, cname)[fn]
    row = next(x for x in seeded(site, cname) if x["id"] == 1)
    raw = valid_raw(site, f, row[fn], f"{site}-edited")
    m = a.mark()
    r, data, _ = submit(a, site, ctl, {fn: raw})
    assert r.status_code in (302, 303), f"{ctl['control_id']}: {r.status_code} {Page(r.text).field_errors()}"
    log = a.new(m, "log")
    assert [(e["method"], e["path"], e["form"]) for e in log][-1:] == [("POST", site_url(site, ctl["page"]), posted_form(data))]
    ch = a.new(m, "changes")
    assert [(c["op"], c["collection"], c["id"], c["changed"]) for c in ch] == [("update", cname, 1, [fn])], ch
    assert same(ch[0]["before"][fn], row[fn]) and same(ch[0]["after"][fn], stored(f, raw))
    def probe(b):
        page, idx = edit_or_create_form(b, site, ctl)
        assert dict(page.form_data(idx)) | {"csrf_token": ""} == before_form | {"csrf_token": ""}
    return [probe]

def do_delete(a, site, ctl):
    cname, detail = ctl["collection"], site_url(site, ctl["page"])
    rid = int(ctl["page"].rsplit("/", 1)[1])
    page, idx = button_form(a, site, ctl["page"], ctl["control_id"])
    data = dict(page.form_data(idx))
    m = a.mark()
    r = a.post(page.form_action(idx), data)
    assert r.status_code in (302, 303), r.status_code
    assert [(e["method"], e["path"], e["form"]) for e in a.new(m, "log")] == [("POST", page.form_action(idx), {})]
    ch = a.new(m, "changes")
    row = next(x for x in seeded(site, cname) if x["id"] == rid)
    assert [(c["op"], c["collection"], c["id"], c["after"]) for c in ch] == [("delete", cname, rid, None)]
    assert all(same(ch[0]["before"][k], v) for k, v in row.items())
    assert a.get(detail).status_code == 404
    def probe(b): assert title_of(site, cname, row) in b.page(detail).text()
    return [probe]

def do_comment(a, site, ctl):
    detail, cid = site_url(site, ctl["page"]), ctl["control_id"]
    page, idx = button_form(a, site, ctl["page"], cid)
    body = f"Webmix comment on {site} <b>escaped</b> & kept."
    data = dict(page.form_data(idx)) | {ctl["name"]: body}
    m = a.mark()
    r = a.post(page.form_action(idx), data)
    assert r.status_code in (302, 303), r.status_code
    assert [(e["method"], e["path"], e["form"]) for e in a.new(m, "log")] == [("POST", page.form_action(idx), {"body": body})]
    ch = a.new(m, "changes")
    rid = int(ctl["page"].rsplit("/", 1)[1])
    assert [(c["op"], c["collection"]) for c in ch] == [("create", "comments")]
    target = page_spec(site, ctl["page"])["collection"]
    assert {k: ch[0]["after"][k] for k in ("body", "target", "record", "author")} == {"body": body, "target": target, "record": rid, "author": "alex"}
    shown = a.page(detail)
    assert body in shown.text() and "<b>escaped</b>" not in shown.html    # output is escaped
    def probe(b): assert body not in b.page(detail).text()
    return [probe]

def do_field(a, site, ctl):
    "A form field control (text_field, dropdown, checkbox, date_picker with role field): submit its form with it set."
    form = control(site, ctl["extra"]["form"])
    cname, fn = form["collection"], ctl["field"]
    f = fields_of(site, cname)[fn]
    if ctl["kind"] == "date_picker":
        el = next(e for e in a.page(site_url(site, ctl["page"])).ctl(ctl["control_id"]) if e["tag"] == "input")
        assert el["attrs"]["type"] == "date" and f["type"] == "date"
    if ctl["kind"] == "dropdown" and ctl["options"]: assert [o["value"] for o in ctl["options"]] == [str(o) for o in f["options"]]
    if form["kind"] == "signature_pad":
        value = f"Webmix Signer {site}"
        page, idx = button_form(a, site, form["page"], form["control_id"])
        data = dict(page.form_data(idx)) | {fn: value, "strokes": STROKES}
        m = a.mark()
        r = a.post(page.form_action(idx), data)
        assert r.status_code in (302, 303), r.status_code
        ch = a.new(m, "changes")
        assert [(c["op"], c["collection"], c["after"][fn]) for c in ch] == [("create", cname, value)]
        def probe(b): assert value not in b.page(site_url(site, form["page"])).text()
        return [probe]
    row = next(x for x in seeded(site, cname) if x["id"] == 1) if form["kind"] == "edit_form" else {}
    raw = valid_raw(site, f, row.get(fn), f"{site}-{ctl['control_id']}")
    values = (fill_create(site, form, f"{site}-{ctl['control_id']}") if form["kind"] in CREATE_KINDS else {}) | {fn: raw}
    m = a.mark()
    r, data, _ = submit(a, site, form, values)
    assert r.status_code in (302, 303), f"{ctl['control_id']}={raw!r}: {r.status_code} {Page(r.text).field_errors()}"
    ch = a.new(m, "changes")
    assert len(ch) == 1 and ch[0]["op"] == ("create" if form["kind"] in CREATE_KINDS else "update"), ch
    assert same(ch[0]["after"][fn], stored(f, raw)), f"{ctl['control_id']}: stored {ch[0]['after'][fn]!r} for {raw!r}"
    if form["kind"] == "edit_form": assert ch[0]["changed"] == [fn]
    if f["type"] == "bool": assert (fn in a.new(m, "log")[-1]["form"]) == (raw is not None)
    return []

def do_logout(a, site, ctl):
    home = site_url(site)
    page, idx = button_form(a, site, ctl["page"], ctl["control_id"])
    m = a.mark()
    r = a.post(page.form_action(idx), dict(page.form_data(idx)))
    assert r.status_code in (302, 303) and urlsplit(r.headers["Location"]).path == home
    assert [(e["method"], e["path"], e["form"], e["status"]) for e in a.new(m, "log")] == [("POST", site_url(site, "/logout"), {}, r.status_code)]
    assert not a.page(home).ctl("logout"), "still signed in after logging out"
    def probe(b): assert b.page(home).ctl("logout"), "the other session was logged out too"
    return [probe]

def do_login(a, site, ctl):
    "a is logged out (logout=1): a wrong password is refused, the right one signs in and goes to `next`."
    assert a.flags == {"logout": True}
    path, home = site_url(site, ctl["page"]), site_url(site)
    assert not a.page(home).ctl("logout")
    page, idx = button_form(a, site, ctl["page"], ctl["control_id"])
    data = dict(page.form_data(idx)) | {"username": "alex", "password": "wrong-horse"}
    m = a.mark()
    r = a.post(page.form_action(idx), data)
    assert r.status_code == 401, r.status_code
    bad = Page(r.text)
    assert bad.alerts() == ["Wrong username or password."]
    assert not a.page(home).ctl("logout")
    r = a.post(page.form_action(idx), data | {"password": "correct-horse"})
    assert r.status_code in (302, 303) and urlsplit(r.headers["Location"]).path == data["next"] == home
    log = [e for e in a.new(m, "log") if e["method"] == "POST"]
    assert [(e["path"], e["form"], e["status"]) for e in log] == [(path, posted_form(data), 401), (path, posted_form(data), r.status_code)]
    assert a.page(home).ctl("logout"), "not signed in after the right password"
    def probe(b): assert not b.page(home).ctl("logout"), "the other session was logged in too"
    return [probe]

def do_dropdown(a, site, ctl): return do_field(a, site, ctl) if ctl["role"] == "field" else do_filter(a, site, ctl)
def do_checkbox(a, site, ctl): return do_field(a, site, ctl) if ctl["role"] == "field" else do_filter(a, site, ctl)

HANDLERS = {"dropdown": do_dropdown, "checkbox": do_checkbox, "radio": do_filter, "tabs": do_tabs, "date_picker": do_field,
            "pagination": do_pagination, "search": do_search, "text_field": do_field, "comment": do_comment,
            "create_form": do_create, "edit_form": do_edit, "delete_form": do_delete, "modal_dialog": do_delete,
            "login_form": do_login,
            "logout": do_logout, "menu": do_nav, "breadcrumb": do_nav, "detail_link": do_nav, "home_link": do_nav,
            "slider": do_slider, "file_download": do_download, "sort": do_sort, "date_range": do_date_range,
            "formatted_field": do_formatted, "autocomplete": do_autocomplete, "load_more": do_load_more, "menu_bar": do_nav,
            "busy_button": do_live, "consent_banner": do_consent, "toast": do_toast, "calendar_picker": do_calendar,
            "wizard_form": do_wizard, "embedded_frame": do_pay, "web_component": do_rate}
SESSION_FLAGS = {"login_form": {"logout": "1"},           # both sessions of a login test start logged out
                 "consent_banner": {"consent": "ask"}}      # and both of a cookie banner's test are asked


# ================================================================ tests
@pytest.fixture(scope="module")
def sitemaps(base):
    "The live server's sitemaps; they must equal the in-process ones the oracle reads."
    names = [s["name"] for s in requests.get(f"{base}/_admin/sites", headers=ADMIN, timeout=30).json()]
    assert sorted(names) == sorted(SITEMAPS)
    live = {n: requests.get(f"{base}/_admin/sitemap/{n}", headers=ADMIN, timeout=30).json() for n in names}
    assert live == json.loads(json.dumps(SITEMAPS))
    return live


@pytest.fixture(scope="module")
def sampled(sitemaps):
    "The live sitemaps of the sampled sites."
    return {n: sitemaps[n] for n in SAMPLE}


def test_every_sitemap_page_renders_with_its_controls(base, sitemaps):
    a = Client(base, consent="ask")                       # so the sites that ask about cookies show their banner
    portal = a.page("/")
    assert sorted(e["attrs"]["data-app"] for e in portal.els if e["attrs"].get("data-app")) == sorted(sitemaps)
    for site, sm in sitemaps.items():
        for pg in sm["pages"]:
            path = site_url(site, pg["path"])
            page = a.page(path)
            assert page.els[0]["tag"] == "html" and any(e["tag"] == "body" and e["attrs"].get("data-site") == site for e in page.els)
            want = {c["control_id"] for c in sm["controls"] if c["page"] == pg["path"]}
            missing = want - page.control_ids()
            assert not missing, f"{path}: controls in the sitemap but not in the page: {sorted(missing)}"
            assert not [e for e in page.els if "/_admin" in (e["attrs"].get("href") or "") + (e["attrs"].get("action") or "")], f"{path} links to the admin API"
    n = sum(len(sm["pages"]) for sm in sitemaps.values()) + 1
    log = a.stream("log")
    assert len(log) == n and all(e["status"] == 200 and e["method"] == "GET" for e in log)


def test_sitemaps_use_only_contract_kinds():
    kinds = {c["kind"] for sm in SITEMAPS.values() for c in sm["controls"]}
    assert kinds <= set(CONTROL_KINDS), f"kinds no test performs: {sorted(kinds - set(CONTROL_KINDS))}"


@pytest.mark.parametrize("kind", HTTP_KINDS)
def test_control_over_http_seen_only_by_its_session(kind, base, sitemaps):
    ctls = controls_of(kind)
    assert ctls, f"no site has a {kind} control"
    b = Client(base, **SESSION_FLAGS.get(kind, {}))
    probes = []
    for site, ctl in ctls:
        a = Client(base, **SESSION_FLAGS.get(kind, {}))
        probes += HANDLERS[kind](a, site, ctl)
    b.assert_nothing_recorded()
    for probe in probes: probe(b)


# ---------------------------------------------------------------- Chromium: drag, draw, copy, upload
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()

class BrowserSession:
    "A Chromium context with its own MiniWeb session and recorder (opened as the harness opens them)."
    def __init__(self, browser, base, **ctx):
        self.ctx = browser.new_context(viewport={"width": 1400, "height": 1100}, **ctx)
        self.page = self.ctx.new_page()
        self.base = base
        self.sid = playwright_session_sync(self.ctx, self.page, base)
        # sync Playwright hands the recorder its reports only while it runs a call: a short wait is one
        self.admin = Client(base, sid=self.sid, pump=lambda: self.page.wait_for_timeout(20))

    def goto(self, path):
        r = self.page.goto(self.base + path)
        assert r.status == 200
        self.page.wait_for_load_state("load")

    def events(self, type_, **match):
        return [e for e in self.admin.stream("record") if e["type"] == type_ and all(e.get(k) == v for k, v in match.items())]

    def close(self): self.ctx.close()

def browser_controls(kind):
    ctls = controls_of(kind)
    assert ctls, f"no site has a {kind} control"
    return ctls

def each_in_chromium(chromium, base, kind, perform):
    """perform(s, site, ctl, path) on every `kind` control, each in its own Chromium session on the control's page,
    returns a probe; a session opened before them all then has seen none of it, and every probe runs in it."""
    b, probes = Client(base), []
    for site, ctl in browser_controls(kind):
        s = BrowserSession(chromium, base)
        try:
            path = site_url(site, ctl["page"])
            s.goto(path)
            probes.append(perform(s, site, ctl, path))
        finally:
            s.close()
    b.assert_nothing_recorded()
    for p in probes: p(b)

def box_center(loc):
    b = loc.bounding_box()
    return b["x"] + b["width"] / 2, b["y"] + b["height"] / 2


def test_drag_board_card_in_chromium(chromium, base, sitemaps):
    def drag_card(s, site, ctl, path):
        cid = ctl["control_id"]
        cols = s.page.locator(f'section.column[data-control-id="{cid}"]')
        before = {cols.nth(i).get_attribute("data-value"): cols.nth(i).locator(".card.draggable").evaluate_all("els => els.map(e => +e.dataset.value)")
                  for i in range(cols.count())}
        assert list(before) == [o["value"] for o in ctl["options"]], f"{cid}: columns differ from the sitemap options"
        src = next(c for c, ids in before.items() if ids)
        dst = next(c for c in reversed(list(before)) if c != src)
        card_id = before[src][0]
        card = s.page.locator(f'.card.draggable[data-control-id="{cid}"][data-value="{card_id}"]')
        card.scroll_into_view_if_needed()
        x, y = box_center(card)
        tx, ty = box_center(s.page.locator(f'section.column[data-value="{dst}"] h2'))
        m = s.admin.mark()
        with s.page.expect_navigation():                  # the script posts the move, then reloads the board
            s.page.mouse.move(x, y)
            s.page.mouse.down()
            s.page.mouse.move(tx, ty, steps=8)
            s.page.mouse.up()
        drag = wait_until(lambda: s.events("drag"), what="a drag record event")
        assert len(drag) == 1 and drag[0]["target"]["control_id"] == cid and drag[0]["target"]["value_attr"] == str(card_id)
        assert drag[0]["to"]["column"] == dst and drag[0]["to"]["position"] == 0
        ch = s.admin.new(m, "changes")
        grp, order = ctl["field"], ctl["extra"]["order"]
        mine = [c for c in ch if c["id"] == card_id]
        assert [(c["op"], c["collection"], str(c["before"][grp]), str(c["after"][grp]), c["after"][order]) for c in mine] == \
               [("update", ctl["collection"], src, dst, 1)], ch
        assert {c["id"] for c in ch} <= {card_id, *before[dst]} and all(c["op"] == "update" for c in ch)
        assert [(e["method"], e["path"], e["form"]) for e in s.admin.new(m, "log") if e["method"] == "POST"] == \
               [("POST", f"{path}/move", {"id": str(card_id), "group": dst, "position": "0"})]
        after = {c: s.page.locator(f'section.column[data-value="{c}"] .card.draggable').evaluate_all("els => els.map(e => +e.dataset.value)") for c in before}
        assert after[dst] == [card_id] + before[dst] and after[src] == before[src][1:]
        def probe(bb):
            page = bb.page(path)
            cards = [(e["attrs"]["data-value"]) for e in page.ctl(cid, data_part="card")]
            assert cards == [str(i) for ids in before.values() for i in ids]
        return probe
    each_in_chromium(chromium, base, "drag_reorder", drag_card)


def test_draw_signature_in_chromium(chromium, base, sitemaps):
    def sign_pad(s, site, ctl, path):
        cid = ctl["control_id"]
        signer = next(c for c in sitemaps[site]["controls"] if c["kind"] == "text_field" and c["extra"].get("form") == cid)
        name = f"Webmix Signer {site}"
        s.page.fill(f'[data-control-id="{signer["control_id"]}"]', name)
        pad = s.page.locator(f'canvas[data-control-id="{cid}"]')
        pad.scroll_into_view_if_needed()
        bx = pad.bounding_box()
        m = s.admin.mark()
        s.page.mouse.move(bx["x"] + 30, bx["y"] + 40)
        s.page.mouse.down()
        s.page.mouse.move(bx["x"] + 200, bx["y"] + 120, steps=10)
        s.page.mouse.move(bx["x"] + 320, bx["y"] + 60, steps=10)
        s.page.mouse.up()
        draw = wait_until(lambda: s.events("draw"), what="a draw record event")
        assert len(draw) == 1 and draw[0]["target"]["control_id"] == cid and draw[0]["points"] >= 3
        strokes = json.loads(s.page.locator('input[name="strokes"]').input_value())
        assert len(strokes) == 1 and len(strokes[0]) == draw[0]["points"]
        with s.page.expect_navigation():
            s.page.click(f'[data-control-id="{cid}"][data-part="submit"]')
        ch = s.admin.new(m, "changes")
        assert [(c["op"], c["collection"], c["after"]["signer"], c["after"]["strokes"], c["after"]["points"]) for c in ch] == \
               [("create", ctl["collection"], name, 1, draw[0]["points"])]
        wait_until(lambda: s.events("submit"), what="a submit record event")
        assert name in s.page.inner_text("body")
        def probe(bb): assert name not in bb.page(path).text()
        return probe
    each_in_chromium(chromium, base, "signature_pad", sign_pad)


def test_copy_button_in_chromium(chromium, base, sitemaps):
    b = Client(base)
    s = BrowserSession(chromium, base, permissions=["clipboard-read", "clipboard-write"])    # copying changes no data:
    try:                                                                                    # one session for every button
        for site, ctl in browser_controls("copy_button"):
            cid = ctl["control_id"]
            s.goto(site_url(site, ctl["page"]))
            button = s.page.locator(f'button[data-control-id="{cid}"]').first
            value = button.get_attribute("data-copy")
            if ctl["options"]: assert value == ctl["options"][0]["value"], f"{cid}: the first button copies {value!r}, the sitemap says {ctl['options'][0]}"
            else:
                rid = int(ctl["page"].rsplit("/", 1)[1])
                assert value == str(next(r for r in seeded(site, ctl["collection"]) if r["id"] == rid)[ctl["field"]])
            m = s.admin.mark(("clipboard", "record"))
            button.click()
            clip = wait_until(lambda: s.admin.new(m, "clipboard"), what=f"a clipboard report from {cid}")
            assert [(c["site"], c["text"], c["control_id"]) for c in clip] == [(site, value, cid)]
            copy = wait_until(lambda: [e for e in s.admin.new(m, "record") if e["type"] == "copy"], what=f"a copy event from {cid}")
            assert [(e["value"], e["target"]["control_id"]) for e in copy] == [(value, cid)]
            assert s.page.evaluate("navigator.clipboard.readText()") == value
        assert s.admin.stream("changes") == []
    finally:
        s.close()
    b.assert_nothing_recorded()


def test_upload_and_download_file_in_chromium(chromium, base, sitemaps):
    def upload_and_download(s, site, ctl, path):
        cid = ctl["control_id"]
        name, content = f"webmix-{site}-notes.txt", f"webmix upload test for {site}\n".encode() * 7
        m = s.admin.mark()
        # a file on disk, as a person picks one: Chromium sets it (CDP DOM.setFileInputFiles) and fires a trusted change,
        # which the recorder counts; bytes handed to Playwright are set by a script, which it does not
        local = Path(tempfile.mkdtemp()) / name
        local.write_bytes(content)
        s.page.set_input_files(f'input[type=file][data-control-id="{cid}"]', files=[str(local)])
        with s.page.expect_navigation():
            s.page.click(f'[data-control-id="{cid}"][data-part="submit"]')
        ch = s.admin.new(m, "changes")
        assert [(c["op"], c["collection"]) for c in ch] == [("create", ctl["collection"])]
        after = ch[0]["after"]
        assert (after["filename"], after["size"], after["content_type"]) == (name, len(content), "text/plain")
        assert [(e["method"], e["path"], e["form"]) for e in s.admin.new(m, "log") if e["method"] == "POST"] == [("POST", path, {"file": name})]
        assert wait_until(lambda: s.events("input"), what="an input record event")[-1]["value"] == name
        dl = next(c for c in sitemaps[site]["controls"] if c["kind"] == "file_download" and c["page"] == ctl["page"])
        link = s.page.locator(f'a[data-control-id="{dl["control_id"]}"][data-value="{ch[0]["id"]}"]')
        with s.page.expect_download() as d:
            link.click()
        with open(d.value.path(), "rb") as fh: assert fh.read() == content
        assert d.value.suggested_filename == name
        href = link.get_attribute("href")
        def probe(bb): assert bb.get(href).status_code == 404, f"the other session can download {href}"
        return probe
    each_in_chromium(chromium, base, "file_upload", upload_and_download)


# ---------------------------------------------------------------- bad input
def form_posts(a, site):
    "(control id, path, data, files) of a valid post for every write form of a site, for this session."
    out = []
    for c in SITEMAPS[site]["controls"]:
        k = c["kind"]
        if k in (*CREATE_KINDS, "edit_form"):
            page, idx = edit_or_create_form(a, site, c)
            data = dict(page.form_data(idx)) | ({x: y for x, y in fill_create(site, c, "csrf").items() if y is not None} if k in CREATE_KINDS else {})
            out.append((c["control_id"], page.form_action(idx), data, None))
        elif k in ("delete_form", "modal_dialog", "comment", "logout", "signature_pad", "file_upload", "login_form"):
            page, idx = button_form(a, site, c["page"], c["control_id"])
            data = dict(page.form_data(idx))
            files = None
            if k == "comment": data["body"] = "A comment without a token"
            if k == "signature_pad": data |= {"signer": "No Token", "strokes": STROKES}
            if k == "file_upload": files = {"file": ("no-token.txt", b"x" * 10, "text/plain")}
            if k == "login_form": data |= {"username": "alex", "password": "correct-horse"}
            out.append((c["control_id"], page.form_action(idx), data, files))
        elif k == "drag_reorder":
            page = a.page(site_url(site, c["page"]))
            card = page.ctl(c["control_id"], data_part="card")[0]["attrs"]["data-value"]
            tok = next(e for e in page.els if e["tag"] == "body")["attrs"]["data-csrf"]
            out.append((c["control_id"], site_url(site, c["page"]) + "/move",
                        {"id": card, "group": c["options"][-1]["value"], "position": "0", "csrf_token": tok}, None))
    return out

def test_form_without_or_with_foreign_csrf_token_is_rejected(base, sitemaps, sampled):
    foreign = Client(base).csrf(site_url(sorted(sitemaps)[0]))       # another session's valid token
    for site in sampled:
        a = Client(base)
        posts = form_posts(a, site)
        assert posts, f"{site} has no form"
        for cid, path, data, files in posts:
            assert data.get("csrf_token") and data["csrf_token"] != foreign
            for bad in ({k: v for k, v in data.items() if k != "csrf_token"}, data | {"csrf_token": foreign}):
                m = a.mark()
                r = a.post(path, bad, files=files)
                assert r.status_code == 403, f"{cid}: POST {path} without its token -> {r.status_code}"
                assert r.headers["Content-Type"].startswith("text/html") and "Traceback" not in r.text
                assert a.new(m, "changes") == [], f"{cid}: a post without a token changed data"
                assert [e["status"] for e in a.new(m, "log")] == [403]
        for c in sitemaps[site]["controls"]:
            if c["kind"] in ("delete_form", "modal_dialog"): a.page(site_url(site, c["page"]))          # still there
            if c["kind"] == "logout": assert a.page(site_url(site)).ctl("logout")      # still signed in
        assert a.stream("changes") == []


def test_invalid_values_show_errors_and_change_nothing(base, sitemaps, sampled):
    checked = 0
    for site in sampled:
        a = Client(base)
        for c in sitemaps[site]["controls"]:
            if c["kind"] not in (*CREATE_KINDS, "edit_form"): continue
            fields = fields_of(site, c["collection"])
            good = fill_create(site, c, "invalid") if c["kind"] in CREATE_KINDS else {}
            for fn in c["extra"]["fields"]:
                for raw, why in invalid_raws(fields[fn]):
                    r, _, _ = submit(a, site, c, good | {fn: raw})
                    assert r.status_code == 422, f"{c['control_id']}.{fn}={raw!r} ({why}): {r.status_code}"
                    page = Page(r.text, c["page"])
                    page.assert_clean()
                    errs = page.field_errors()
                    assert list(errs) == [fn] and errs[fn], f"{c['control_id']}.{fn}={raw!r} ({why}): errors {errs}"
                    assert page.alerts() == ["Please fix the 1 problem below."]
                    shown = dict(page.form_data(page.form_by_id(c["control_id"])))
                    if fields[fn]["type"] not in ("choice", "ref"): assert shown[fn] == raw, f"{fn}: the form lost the typed value"
                    assert a.stream("changes") == [], f"{c['control_id']}.{fn}={raw!r} changed data"
                    checked += 1
            if c["kind"] in CREATE_KINDS:          # a form with every field empty: one error per required field
                r, _, _ = submit(a, site, c, {fn: ("" if fields[fn]["type"] != "bool" else None) for fn in c["extra"]["fields"]})
                required = [fn for fn in c["extra"]["fields"] if fields[fn].get("required")]
                if required:
                    assert r.status_code == 422 and sorted(Page(r.text).field_errors()) == sorted(required)
        for c in sitemaps[site]["controls"]:
            if c["kind"] == "comment":
                page, idx = button_form(a, site, c["page"], c["control_id"])
                r = a.post(page.form_action(idx), dict(page.form_data(idx)) | {"body": "   "})
                assert r.status_code == 422 and Page(r.text).alerts(), f"{c['control_id']}: an empty comment -> {r.status_code}"
            if c["kind"] == "signature_pad":
                page, idx = button_form(a, site, c["page"], c["control_id"])
                for data in ({"signer": "Nobody", "strokes": "[]"}, {"signer": "Nobody", "strokes": "not json"}, {"signer": "", "strokes": STROKES}):
                    r = a.post(page.form_action(idx), dict(page.form_data(idx)) | data)
                    assert r.status_code == 422 and Page(r.text).alerts(), f"{c['control_id']} {data}: {r.status_code}"
            if c["kind"] == "file_upload":
                page, idx = button_form(a, site, c["page"], c["control_id"])
                for files in (None, {"file": ("empty.txt", b"", "text/plain")}):
                    r = a.post(page.form_action(idx), dict(page.form_data(idx)), files=files)
                    assert r.status_code == 422 and Page(r.text).alerts(), f"{c['control_id']} {files}: {r.status_code}"
            if c["kind"] == "drag_reorder":
                tok = a.csrf(site_url(site, c["page"]))
                for data in ({"id": "1", "group": "No such column", "position": "0"}, {"id": "x", "group": c["options"][0]["value"], "position": "0"},
                             {"id": "999999", "group": c["options"][0]["value"], "position": "0"}):
                    r = a.post(site_url(site, c["page"]) + "/move", data | {"csrf_token": tok})
                    assert r.status_code in (400, 404), f"{c['control_id']} {data}: {r.status_code}"
        assert a.stream("changes") == [], f"{site}: invalid input changed data"
    assert checked, "no form field was checked"


def test_unknown_site_or_page_is_a_404_page(base, sampled):
    a = Client(base)
    paths = ["/sites/no-such-site", "/sites/no-such-site/products", "/no-such-path"]
    for site, sm in sampled.items():
        paths += [site_url(site, "/no-such-page"), site_url(site, "/no/such/page")]
        for pg in sm["pages"]:
            if pg["kind"] == "detail": paths += [site_url(site, pg["path"][:-2] + "/999999"), site_url(site, pg["path"][:-2] + "/1/nope")]
    for path in paths:
        r = a.get(path)
        assert r.status_code == 404, f"GET {path}: {r.status_code}"
        assert r.headers["Content-Type"].startswith("text/html")
        page = Page(r.text, path)
        page.assert_clean()
        assert "Page not found" in page.text()


def test_malformed_admin_requests_get_400_json(base):
    a = Client(base)
    cases = [("GET", "/_admin/log", {"session": "0" * 24}, None, "unknown session"),
             ("GET", "/_admin/changes", {"session": "not-a-session"}, None, "malformed session id"),
             ("GET", "/_admin/record", {"session": "ABCDEF" * 4}, None, "malformed session id (upper case)"),
             ("GET", "/_admin/session-flags", {"bogus": "1"}, None, "unknown flag"),
             ("GET", "/_admin/session-flags", {"cart": "abc"}, None, "malformed flag value"),
             ("GET", "/_admin/log", {"session": a.sid, "since": "abc"}, None, "since=abc"),
             ("GET", "/_admin/clipboard", {"session": a.sid, "since": "-1"}, None, "since=-1"),
             ("POST", "/_admin/record", {"session": a.sid}, "this is not json", "non-JSON record"),
             ("POST", "/_admin/record", {"session": a.sid}, "[1, 2]", "record not an object"),
             ("POST", "/_admin/record", {"session": a.sid}, json.dumps({"type": "teleport"}), "unknown record type"),
             ("POST", "/_admin/clipboard", {"session": a.sid}, json.dumps({"text": 5}), "clipboard without text"),
             ("POST", "/_admin/clipboard", {"session": a.sid}, "{", "non-JSON clipboard")]
    for method, path, params, body, why in cases:
        r = requests.request(method, base + path, params=params, data=body, headers=ADMIN, timeout=30)
        assert r.status_code == 400, f"{why}: {r.status_code} {r.text[:200]}"
        assert r.headers["Content-Type"].startswith("application/json"), why
        assert isinstance(r.json()["error"], str) and r.json()["error"], why
    r = requests.get(base + "/_admin/log", headers=ADMIN, timeout=30)              # no cookie, no ?session=
    assert r.status_code == 400 and r.json()["error"]
    r = requests.get(base + "/_admin/sitemap/no-such-site", headers=ADMIN, timeout=30)
    assert r.status_code == 404 and r.json()["error"]
    a.assert_nothing_recorded()
    # a well-formed record and clipboard post land in exactly that session
    ok = requests.post(base + "/_admin/record", params={"session": a.sid}, data=json.dumps({"type": "click", "url": "u", "target": {"tag": "a"}}), headers=ADMIN, timeout=30)
    assert ok.status_code == 200
    assert [(e["type"], e["url"], e["target"]) for e in a.stream("record")] == [("click", "u", {"tag": "a"})]
    flags = requests.get(base + "/_admin/session-flags", params={"logout": "1", "cart": "3"}, headers=ADMIN, timeout=30).json()
    assert flags["flags"] == {"logout": True, "cart": 3} and re.fullmatch(r"[0-9a-f]{24}", flags["session"])


def test_logged_out_session_is_sent_to_login_for_writes(base, sitemaps, sampled):
    for site, sm in sampled.items():
        a = Client(base, logout="1")
        assert a.flags == {"logout": True}
        assert not a.page(site_url(site)).ctl("logout")
        tok = a.csrf(site_url(site))
        writes = []
        for c in sm["controls"]:
            k, path = c["kind"], site_url(site, c["page"])
            if k in (*CREATE_KINDS, "edit_form"): writes.append(("GET", path, {}))
            if k in (*CREATE_KINDS, "edit_form"): writes.append(("POST", path, fill_create(site, c, "lo") if k in CREATE_KINDS else {}))
            if k in ("delete_form", "modal_dialog"): writes.append(("POST", path + "/delete", {}))
            if k == "comment": writes.append(("POST", path + "/comments", {"body": "hello"}))
            if k == "signature_pad": writes.append(("POST", path, {"signer": "Someone", "strokes": STROKES}))
            if k == "file_upload": writes.append(("UPLOAD", path, {}))
        if not writes: continue
        logins = set()
        for method, path, data in writes:
            if method == "GET": r = a.get(path)
            else: r = a.post(path, {k: v for k, v in (data | {"csrf_token": tok}).items() if v is not None},
                              files={"file": ("f.txt", b"abc", "text/plain")} if method == "UPLOAD" else None)
            assert r.status_code in (302, 303), f"{site}: logged out {method} {path} -> {r.status_code} (expected a redirect to the login page)"
            loc = urlsplit(r.headers["Location"])
            # a GET comes back to itself; a POST-only URL cannot be revisited, so it comes back to the form's page (no Referer: home)
            back = path if method == "GET" else site_url(site)
            assert dict(parse_qsl(loc.query))["next"] == back, f"{method} {path}: login next={loc.query}"
            logins.add(loc.path)
        assert a.stream("changes") == [], f"{site}: a logged-out session changed data"
        assert len(logins) == 1
        login_path = logins.pop()
        login = a.page(login_path)                        # the redirect target is a real page with a login form
        assert login.ctl("login-form", data_part="password"), f"{login_path} has no login form"
        idx = login.ctl("login-form", data_part="submit")[0]["form"]
        data = dict(login.form_data(idx)) | {"username": "alex", "password": "nope"}
        r = a.post(login.form_action(idx), data)
        assert r.status_code == 401 and Page(r.text).alerts() == ["Wrong username or password."]
        r = a.post(login.form_action(idx), data | {"username": "nobody", "password": "correct-horse"})
        assert r.status_code == 401
        r = a.post(login.form_action(idx), data | {"password": "correct-horse"})
        assert r.status_code in (302, 303)
        assert a.page(site_url(site)).ctl("logout")
        if writes[0][0] == "GET": a.page(writes[0][1])                 # the write page opens now
        assert all("password" not in e["form"] and "csrf_token" not in e["form"] for e in a.stream("log"))
        others = [s for s in sitemaps if s != site and any(c["kind"] in (*CREATE_KINDS, "edit_form") for c in sitemaps[s]["controls"])]
        for o in others[:1]:                                            # signing in to one site leaves the others signed out
            c = next(c for c in sitemaps[o]["controls"] if c["kind"] in (*CREATE_KINDS, "edit_form"))
            assert a.get(site_url(o, c["page"])).status_code in (302, 303)


# ---------------------------------------------------------------- broken site specs fail at load
GOOD_SPEC = """
name: {name}
title: Test Site
doc: A small site for testing the spec checks.
collections:
  owners:
    title_field: name
    rows: 5
    fields:
      name: {{type: text, gen: {{pattern: "Owner {{n}}"}}}}
  items:
    title_field: name
    rows: 12
    fields:
      name: {{type: text, required: true, gen: {{pattern: "Item {{n}}"}}}}
      price: {{type: money, min: 1, max: 100}}
      owner: {{type: ref, to: owners}}
pages:
  - {{id: home, kind: home}}
  - id: items
    kind: list
    path: /items
    title: Items
    collection: items
    columns: [name, price]
    filters:
      - {{field: price, widget: slider}}
  - {{id: login, kind: login, path: /login}}
"""

SPEC_ERRORS = [
    ("unknown field kind", "price: {type: money,", "price: {type: currency,", ["collections.items.fields.price.type", "currency"]),
    ("page without id", "  - id: items\n    kind: list\n", "  - kind: list\n", ["pages[1].id"]),
    ("broken reference to a collection", "to: owners", "to: nowhere", ["collections.items.fields.owner.to", "nowhere"]),
    ("page on a missing collection", "collection: items", "collection: nowhere", ["pages[1] (items).collection", "nowhere"]),
    ("broken reference to a field", "columns: [name, price]", "columns: [name, cost]", ["pages[1] (items).columns", "cost"]),
    ("unknown filter widget", "widget: slider", "widget: knob", ["pages[1] (items).filters[0].widget", "knob"]),
    ("unknown page kind", "{id: login, kind: login", "{id: login, kind: portal", ["pages[2] (login).kind", "portal"]),
    ("YAML syntax error", "columns: [name, price]", "columns: [name, price", ["YAML"]),
    ("an option YAML reads as a bool", "price: {type: money,", "state: {type: choice, options: [On, Off]}\n      price: {type: money,",
     ["collections.items.fields.state.options", "quote"]),
    ("a filter on a bool field", "price: {type: money, min: 1, max: 100}", "price: {type: bool}", ["pages[1] (items).filters[0].field", "bool"]),
]

def test_each_embedded_site_is_a_domain_of_its_own_in_the_split():
    "No collection has another's fields and options (a schema copied and renamed), no site is another's numbered copy, every site is in the split once."
    embedded = {n: s for n, s in SITES.items() if Path(s.src).parent == PKG_DIR / "sites"}
    seen = {}
    for name, site in sorted(embedded.items()):
        engine_made = {p["collection"] for p in site.spec["pages"] if p["kind"] in ("signature", "upload")}   # their fields are fixed
        for cname, c in site.spec["collections"].items():
            if cname in engine_made: continue
            shape = tuple(sorted((f, spec["type"], tuple(spec.get("options") or ())) for f, spec in c["fields"].items()))
            assert shape not in seen, f"{name}.{cname} has the fields of {seen[shape]}"
            seen[shape] = f"{name}.{cname}"
    stem = {n: re.sub(r"[-_]?\d+$", "", n) for n in embedded}
    copies = sorted(n for n in embedded if list(stem.values()).count(stem[n]) > 1)
    assert not copies, f"numbered copies of a site: {copies}"
    split = site_split()
    assert sorted(split["train"] + split["test"]) == sorted(embedded)


def test_good_spec_loads(tmp_path):
    f = tmp_path / "specsite.yaml"
    f.write_text(GOOD_SPEC.format(name="specsite"))
    site = load_site(f)
    assert {c["kind"] for c in site.sitemap()["controls"]} >= {"slider", "pagination", "login_form", "home_link"}

@pytest.mark.parametrize("why, old, new, where", SPEC_ERRORS, ids=[e[0] for e in SPEC_ERRORS])
def test_broken_spec_fails_at_load_naming_file_and_field(tmp_path, why, old, new, where):
    text = GOOD_SPEC.format(name="specsite")
    assert text.count(old) == 1, old
    f = tmp_path / "specsite.yaml"
    f.write_text(text.replace(old, new))
    with pytest.raises(SpecError) as e:
        load_site(f)
    msg = str(e.value)
    assert msg.startswith(f"{f}: "), msg
    for w in where: assert w in msg, f"{why}: {w!r} not in {msg!r}"


# ---------------------------------------------------------------- the admin API answers on loopback only
def outside_address():
    "This machine's first non-loopback IPv4 address, or None."
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.123", 9))                 # no packet is sent: this only picks the outgoing interface
            ip = s.getsockname()[0]
    except OSError: return None
    return None if ip.startswith("127.") or ip == "0.0.0.0" else ip

def test_admin_api_is_not_a_site_page(base, sampled):
    a = Client(base)
    for site in sampled:
        for path in ("/_admin/log", "/_admin/session-flags", "/_admin/sites"):
            r = a.get(site_url(site, path))
            assert r.status_code == 404 and r.headers["Content-Type"].startswith("text/html")

ADMIN_PATHS = ("/_admin/sites", "/_admin/session-flags", "/_admin/log", "/_admin/changes", "/_admin/clipboard",
               "/_admin/record", "/_admin/sitemap/shop", "/_admin/session-close", "/_admin/sessions")

def test_admin_api_refuses_requests_without_its_key(base):
    "On loopback too: a request without the key (a page's fetch, a navigation, a wrong key) reads and writes nothing."
    a = Client(base)
    for path in ADMIN_PATHS:
        for headers in ({}, {"X-MiniWeb-Admin-Key": "0" * 32}):
            r = requests.get(base + path, params={"session": a.sid}, headers=headers, timeout=30)
            assert r.status_code == 403 and "key" in r.json()["error"], f"GET {path} {headers}: {r.status_code}"
    for stream, body in (("record", {"type": "click", "url": "u", "target": {"tag": "a"}}), ("clipboard", {"text": "forged"})):
        r = requests.post(f"{base}/_admin/{stream}", params={"session": a.sid}, data=json.dumps(body), timeout=30)
        assert r.status_code == 403
    a.assert_nothing_recorded()


def test_pages_cannot_reach_the_grading_evidence(chromium, base):
    """In Chromium on the site's own origin: navigating to the admin API, a page's fetch (GET and a forged POST) and a
    call of the recorder's binding from the page all fail; a script's synthetic click is not recorded, a real one is."""
    s = BrowserSession(chromium, base)
    try:
        s.goto("/sites/shop/products")
        for path in ADMIN_PATHS:
            assert s.page.goto(base + path + f"?session={s.sid}").status == 403, path
        s.goto("/sites/shop/products")
        got = s.page.evaluate("""async (sid) => {
            const out = {};
            for (const p of ['/_admin/log', '/_admin/record', '/_admin/clipboard', '/_admin/session-flags'])
                out[p] = (await fetch(p + '?session=' + sid)).status;
            out.post = (await fetch('/_admin/clipboard?session=' + sid, {method: 'POST', body: JSON.stringify({text: 'LM-1998'})})).status;
            out.binding = typeof window.__webmixReport;
            // on the heading the real click below uses: a synthetic click on a link would also navigate, racing the return
            document.querySelector('h1, h2').dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}));
            return out; }""", s.sid)
        assert got == {"/_admin/log": 403, "/_admin/record": 403, "/_admin/clipboard": 403, "/_admin/session-flags": 403,
                       "post": 403, "binding": "undefined"}, got
        assert s.events("click") == [] and s.admin.stream("clipboard") == []
        s.page.locator("h1, h2").first.click()                      # a click the browser makes: recorded
        assert "/sites/shop" in wait_until(lambda: s.events("click"), what="the real click's record")[0]["url"]
    finally:
        s.close()


def test_admin_api_answers_on_loopback_only(free_port):
    ip = outside_address()
    if ip is None: pytest.skip("this machine has no non-loopback IPv4 address to reach the server from")
    port = free_port
    proc = subprocess.Popen([sys.executable, "-c", f"from webmix.world.miniweb import serve; serve({port}, host={ip!r}, threads=2)"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        outside = f"http://{ip}:{port}"
        def up():
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            try: return requests.get(outside + "/", timeout=2).status_code == 200
            except requests.ConnectionError: return False
        wait_until(up, timeout=60, what="the outside-facing server")
        assert requests.get(outside + f"/sites/{sorted(SITEMAPS)[0]}", timeout=10).status_code == 200     # sites answer everyone
        for path in ("/_admin/sites", "/_admin/session-flags", "/_admin/log", f"/_admin/sitemap/{sorted(SITEMAPS)[0]}"):
            for headers in ({}, ADMIN, {"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1", **ADMIN}):
                r = requests.get(outside + path, headers=headers, timeout=10)
                assert r.status_code == 403, f"{path} from {ip} with {headers}: {r.status_code}"
                assert r.headers["Content-Type"].startswith("application/json") and r.json()["error"]
        r = requests.post(outside + "/_admin/record", data=json.dumps({"type": "click"}), headers=ADMIN, timeout=10)
        assert r.status_code == 403
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stderr.close()


# ---------------------------------------------------------------- sessions nobody opened; closing one; the page policy
def kept_sessions(base):
    "What the server keeps: {leases, visitors, max_leases, lease_ttl_s, max_visitors}."
    r = requests.get(base + "/_admin/sessions", headers=ADMIN, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()

def test_requests_without_a_session_store_none_and_drop_none(base):
    """2,100 requests that carry no session (more than the server kept before it dropped the oldest; a page's script
    sends as many in a second): none is given a cookie or stored, so a session opened before them is still there."""
    from concurrent.futures import ThreadPoolExecutor
    a = Client(base)
    a.page(site_url("shop", "/products"))
    before = kept_sessions(base)
    assert before["max_visitors"] == 0                    # the servers runs use keep no visitors
    paths = ["/sites/no-such-site", "/sites/shop/no-such-page", "/no-such-path", "/", "/sites/shop"]
    def burst(k):
        http, statuses = requests.Session(), []
        for i in range(k, 2100, 8):
            r = (http.post(base + site_url("shop", "/orders/new"), data={"csrf_token": "forged"}, timeout=30) if i % 50 == 0
                 else http.get(base + paths[i % len(paths)], timeout=30))
            assert "Set-Cookie" not in r.headers, r.headers
            statuses.append(r.status_code)
        assert not http.cookies
        return statuses
    with ThreadPoolExecutor(8) as pool: statuses = [s for got in pool.map(burst, range(8)) for s in got]
    assert len(statuses) == 2100 and set(statuses) == {200, 403, 404}
    after = kept_sessions(base)
    assert (after["leases"], after["visitors"]) == (before["leases"], 0), (before, after)
    assert [e["path"] for e in a.stream("log")] == [site_url("shop", "/products")]     # readable, and none of theirs
    assert a.page(site_url("shop", "/orders")).status == 200 and len(a.stream("log")) == 2


def test_a_closed_session_is_forgotten(base):
    "/_admin/session-close (admin_client.close_session) frees a session: it is unknown afterwards, its cookie opens nothing."
    from webmix.world.admin_client import close_session
    a = Client(base)
    a.page(site_url("shop"))
    before = kept_sessions(base)["leases"]
    got = close_session(base, a.sid)
    assert (got["session"], got["closed"], got["leases"]) == (a.sid, True, before - 1)
    r = requests.get(base + "/_admin/log", params={"session": a.sid}, headers=ADMIN, timeout=30)
    assert r.status_code == 400 and r.json()["error"] == f"unknown session {a.sid!r}"
    r = a.get(site_url("shop"))                           # its cookie now names no session: served, nothing kept
    assert r.status_code == 200 and "Set-Cookie" not in r.headers and kept_sessions(base)["leases"] == before - 1
    assert close_session(base, a.sid)["closed"] is False                      # twice: no error
    for bad in ("nope", ""):
        r = requests.get(base + "/_admin/session-close", params={"session": bad}, headers=ADMIN, timeout=30)
        assert r.status_code == 400 and r.json()["error"]


def test_sites_serve_keeps_a_pool_of_visitors(tmp_path):
    """`webmix sites serve` (two ports: one Servers process each) keeps sessions for browsers that come without one
    and hands each its cookie, at most --visitors of them, the least recently used dropped; the leases are apart."""
    import os
    from webmix.world.servers import free_ports
    ports = free_ports(2)
    exe = Path(sys.executable).with_name("webmix")
    proc = subprocess.Popen([str(exe), "sites", "serve", "--ports", ",".join(map(str, ports)), "--visitors", "3"],
                            env={**os.environ, "WEBMIX_ADMIN_KEY": ADMIN["X-MiniWeb-Admin-Key"]},
                            stdout=subprocess.DEVNULL, stderr=(tmp_path / "err").open("wb"))
    try:
        bases = [f"http://127.0.0.1:{p}" for p in ports]
        def up():
            assert proc.poll() is None, (tmp_path / "err").read_text()[-2000:]
            try: return all(requests.get(b + "/_admin/sessions", headers=ADMIN, timeout=2).status_code == 200 for b in bases)
            except requests.ConnectionError: return False
        wait_until(up, timeout=90, what="webmix sites serve")
        for b in bases:
            lease = Client(b)
            person = requests.Session()
            first = person.get(b + "/sites/shop", timeout=30)
            sid = person.cookies.get(COOKIE)
            assert first.status_code == 200 and re.fullmatch(r"[0-9a-f]{24}", sid or "") and "HttpOnly" in first.headers["Set-Cookie"]
            again = person.get(b + "/sites/shop/products", timeout=30)
            assert "Set-Cookie" not in again.headers and person.cookies.get(COOKIE) == sid        # the same session, kept
            tok = Page(first.text).els
            assert next(e for e in tok if e["tag"] == "body")["attrs"]["data-csrf"] == \
                   next(e for e in Page(again.text).els if e["tag"] == "body")["attrs"]["data-csrf"]
            for _ in range(4): requests.get(b + "/sites/shop", timeout=30)                      # four more visitors
            kept = kept_sessions(b)
            assert (kept["leases"], kept["visitors"], kept["max_visitors"]) == (1, 3, 3), kept
            assert "Set-Cookie" in person.get(b + "/sites/shop", timeout=30).headers            # the first was dropped
            assert lease.page(site_url("shop")).status == 200 and len(lease.stream("log")) == 1  # the lease was not
    finally:
        proc.terminate()
        proc.wait(30)


CSP_NEEDS = {"script-src": {"'self'"}, "object-src": {"'none'"}, "base-uri": {"'self'"}, "form-action": {"'self'"},
             "frame-ancestors": {"'self'"}}

def due_record(site, ctl):
    "The page of a record of `site` its payment frame `ctl` (an embedded_frame) asks to pay."
    pay, p = ctl["extra"], page_spec(site, ctl["page"])
    return site_url(site, f"{p['path']}/{next(r for r in seeded(site, ctl['collection']) if r[pay['field']] == pay['from'])['id']}")

def test_every_page_carries_a_content_security_policy(base):
    "Site pages, the portal, a payment frame, error pages (404, 403, 413) and static files: scripts from the server only."
    a = Client(base)
    frame = due_record(*browser_controls("embedded_frame")[0]) + "/pay"
    answers = {p: a.get(p) for p in ("/", site_url("shop"), site_url("shop", "/products"), "/sites/no-such-site", frame,
                                     "/static/webmix.js", "/static/blank.html")}
    answers["forged"] = a.post(site_url("shop", "/orders/new"), data={"csrf_token": "forged"})
    answers["too large"] = a.post(site_url("shop", "/receipts"), files={"file": ("big.bin", b"x" * (6 * 2**20))})
    assert [r.status_code for r in answers.values()] == [200, 200, 200, 404, 200, 200, 200, 403, 413]
    for k, r in answers.items():
        policy = {d.split()[0]: set(d.split()[1:]) for d in r.headers["Content-Security-Policy"].split(";") if d.strip()}
        for directive, want in CSP_NEEDS.items(): assert policy.get(directive) == want, (k, directive, policy)
        assert not any("unsafe" in v for vs in policy.values() for v in vs), (k, policy)


PWN = "void(document.title='pwned')"
LINK = """() => document.body.prepend(Object.assign(document.createElement('a'), {id: 'evil', href: "javascript:%s", textContent: 'evil'}))""" % PWN
INLINE = """() => {
    document.body.insertAdjacentHTML('beforeend', '<img src="/static/none.png" onerror="document.title=\\'pwned\\'">');
    document.body.append(Object.assign(document.createElement('script'), {textContent: "document.title='pwned'"}));
}"""

def test_the_policy_stops_javascript_urls_and_inline_script_in_chromium(chromium, base):
    """In Chromium, on a MiniWeb page: a javascript: link clicked, a javascript: URL the page's script navigates to, an
    inline event handler and an inline script all fail to run (each a policy violation on the console), while the page's
    own script and the payment frame work; in a page without the policy the same link does run (so the check can fail).
    A javascript: URL the browser itself is told to open (CDP Page.navigate, as a driver's "navigate" sends it) is not
    the page's doing and the policy does not stop it: refusing such URLs is the harness's part."""
    s = BrowserSession(chromium, base, permissions=["clipboard-read", "clipboard-write"])
    try:
        refused = []
        s.page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
        site, ctl = next((site, c) for site, c in browser_controls("copy_button") if not c["options"])
        s.goto(site_url(site, ctl["page"]))
        title = s.page.title()
        s.page.evaluate(INLINE)
        s.page.evaluate(LINK)
        s.page.click("#evil")
        s.page.evaluate("() => { location.href = 'javascript:' + %r }" % PWN)
        s.page.wait_for_timeout(300)
        assert s.page.title() == title, "a javascript: URL or inline script ran"
        assert len(refused) == 4, refused                     # the handler, the script, the link, the assignment
        button = s.page.locator(f'button[data-control-id="{ctl["control_id"]}"]').first
        button.click()                                       # webmix.js still runs: the copy button copies
        wait_until(lambda: button.inner_text() == "Copied", what="the copy button's answer")
        assert s.page.evaluate("navigator.clipboard.readText()") == button.get_attribute("data-copy")
        s.goto(due_record(*browser_controls("embedded_frame")[0]))
        frame = s.page.frame_locator("iframe.payframe")      # same origin: framed, and its form posts
        for part, v in (("number", "4242 4242 4242 4242"), ("expiry", "12/28"), ("cvc", "123")): frame.locator(f'[data-part="{part}"]').fill(v)
        frame.locator('[data-part="submit"]').click()
        frame.locator('[data-part="done"]').wait_for()
        assert s.page.title() != "pwned"
        s.page.goto("about:blank")                           # no policy: the same link runs
        s.page.set_content("<title>no policy</title><body></body>")
        s.page.evaluate(LINK)
        s.page.click("#evil")
        wait_until(lambda: s.page.title() == "pwned", what="a javascript: link in a page without the policy")
    finally:
        s.close()


# ---------------------------------------------------------------- Servers under concurrent load
def test_servers_keep_answering_under_concurrent_load(free_port):
    """50 concurrent clients against one Servers(...) server (its own, so a freeze cannot take the module's server
    down): every request answers. Waitress logs a warning for each request that waits for a thread; that output must
    not be able to stall the server."""
    from concurrent.futures import ThreadPoolExecutor
    from webmix.world.servers import Servers
    n_clients, n_each = 50, 100
    with Servers(ports=[free_port]) as srv:
        url, failures = srv.bases[0] + "/static/webmix.css", []
        def client(i):
            http = requests.Session()
            for k in range(n_each):
                if failures: return k
                try: status = http.get(url, timeout=15).status_code
                except requests.RequestException as e: status = type(e).__name__
                if status != 200: failures.append(f"client {i} request {k}: {status}"); return k
            return n_each
        with ThreadPoolExecutor(n_clients) as pool: done = sum(pool.map(client, range(n_clients)))
        assert not failures, f"the server stopped answering after {done} of {n_clients * n_each} requests: {failures[:3]}"
        assert requests.get(srv.bases[0] + "/_admin/sites", headers=ADMIN, timeout=20).status_code == 200


def test_each_server_process_runs_on_one_cpu_of_its_own():
    "A GIL-bound server spread over cores pays a cross-core hand-off per GIL switch: Servers pins each to one CPU, in turn."
    import os, psutil
    from webmix.world.servers import Servers, free_ports
    allowed = sorted(os.sched_getaffinity(0))
    with Servers(ports=free_ports(2)) as srv:
        pinned = [psutil.Process(p.pid).cpu_affinity() for p in srv.procs]
        assert all(requests.get(b + "/sites/shop", timeout=20).status_code == 200 for b in srv.bases)
    assert pinned == [[allowed[0]], [allowed[1 % len(allowed)]]], pinned
    assert sorted(os.sched_getaffinity(0)) == allowed                   # the caller itself is not pinned


def test_a_data_folder_without_its_site_split_stops_the_server_at_once(tmp_path, monkeypatch, free_port):
    "WEBMIX_DATA set to an empty folder: the server exits naming what is missing, instead of answering 500s."
    from webmix.world.servers import Servers
    monkeypatch.setenv("WEBMIX_DATA", str(tmp_path))
    with pytest.raises(RuntimeError, match="no site split here"):
        with Servers(ports=[free_port], timeout=30): pass


# ---------------------------------------------------------------- site variants (webmix.world.variants)

def test_variant_0_is_todays_pages_and_other_variants_keep_every_control():
    """Every page a visitor reaches by links, in a session without flags and in one with variant=0, is byte for byte
    the page of the snapshot (tests/data/pages_variant0.json: taken before variants existed, and again when a spec or
    template change was meant to change pages, with `python tests/page_snapshot.py`); variants 1 to 3 change every
    page and keep every control id and value of it; a malformed variant is refused in one line."""
    from page_snapshot import SNAPSHOT, controls, pages, snapshot
    want = json.loads(SNAPSHOT.read_text())
    assert snapshot() == want and snapshot({"variant": 0}) == want
    base = pages()
    for n in (1, 2, 3):
        other = pages({"variant": n}, {site: list(got) for site, got in base.items()})
        for site, got in other.items():
            for path in got:
                assert got[path] != base[site][path], (n, site, path)
                assert controls(got[path]) == controls(base[site][path]), (n, site, path)
    from webmix.world.miniweb import create_app
    client = create_app().test_client()
    for bad in ("-1", "x", "10000", "1.5"):
        r = client.get("/_admin/session-flags", query_string={"variant": bad}, headers=ADMIN)
        assert r.status_code == 400 and r.get_json()["error"] == f"flag variant={bad!r} is malformed", r.get_json()


def test_autocomplete_keyboard_and_wizard_steps_in_chromium(chromium, base, sitemaps):
    """An autocomplete box picked with the keyboard alone (type, ArrowDown, Enter) saves the suggestion's record; a
    wizard shows one step of its fields and does not move on while a required field of the step is empty."""
    for site, ctl in browser_controls("autocomplete"):
        if not ctl["extra"]["form"].endswith("-edit"): continue
        s = BrowserSession(chromium, base)
        s.goto(site_url(site, ctl["page"]))
        to = fields_of(site, ctl["collection"])[ctl["field"]]["to"]
        rid = int(re.search(r"/(\d+)/edit$", ctl["page"])[1])
        now = next(r for r in seeded(site, ctl["collection"]) if r["id"] == rid)[ctl["field"]]     # what the record names now
        titles = [SITES[site].title_of(to, r) for r in seeded(site, to)]
        target = next(t for r, t in zip(reversed(seeded(site, to)), reversed(titles))
                      if r["id"] != now and titles.count(t) == 1 and not any(t != o and t in o for o in titles))
        box = s.page.locator(f'[data-control-id="{ctl["control_id"]}"][data-part="query"]')
        box.fill(target)
        s.page.locator(f'[role=option][data-control-id="{ctl["control_id"]}"]').first.wait_for()
        box.press("ArrowDown")
        box.press("Enter")
        hidden = s.page.locator(f'input[type=hidden][name="{ctl["field"]}"]')
        want = next(r["id"] for r in seeded(site, to) if SITES[site].title_of(to, r) == target)
        assert hidden.input_value() == str(want) and box.input_value() == target, (site, target)
        m = s.admin.mark()
        with s.page.expect_navigation(): s.page.locator(f'button[data-control-id="{ctl["extra"]["form"]}"]').click()
        assert [c["after"][ctl["field"]] for c in s.admin.new(m, "changes")] == [want], site
        s.close()
    for site, ctl in browser_controls("wizard_form"):
        s = BrowserSession(chromium, base)
        s.goto(site_url(site, ctl["page"]))
        steps = s.page.locator(f'form[data-form-id="{ctl["control_id"]}"] fieldset.step')
        assert steps.count() == -(-len(ctl["extra"]["fields"]) // 3) + 1 and steps.nth(0).is_visible() and not steps.nth(1).is_visible()
        s.page.locator(f'[data-control-id="{ctl["control_id"]}"][data-part="next"]').first.click()
        assert s.page.locator(".wizard-error").count() > 0 and steps.nth(0).is_visible(), f"{site}: moved on with a required field empty"
        s.close()
