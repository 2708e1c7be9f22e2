"""Scripted human-style tasks on the test sites and on the training sites: reads the declarations in
data/human_tasks/<site>.yaml and writes data/annotations/<site>/<task>/{task.json, verifier.json, script.json}.
Every task (its request, its macros and verifier, its scripted run) is declared there in the style of a person's
request; none was written by a person.

A task is all on test sites (data/site_split.json "test": the held-out sites evaluation reports on) or all on training
sites ("train"); main() refuses a task that mixes the two sides. Every expected value (ids, names, counts, prices, dates)
is a pick over the seeded data (webmix.world.sites.load_sites()[site].rows, through the engine's own list query), never
a pasted value, so re-running this script after a site-spec change keeps the tasks right; a declared `check` that no
longer holds stops it with the task's name. tests/test_human_tasks.py then replays each script.json in Chromium.

    python scripts/make_human_tasks.py          # rewrite the tasks (only the folders that hold a script.json)
    python scripts/make_human_tasks.py --sites pharmacy,dentist     # only these sites' tasks

To add a task, append it to its first site's YAML file (tasks are written in file order):

    - id: cheapest-nonstop-flight          # the folder name; unique
      start: flights                       # the page it starts on (`home` for the site's home; omit for a cross-site task)
      let:                                 # named values, in order: picks over the seeded data (the vocabulary below)
        v: {view: flights, where: {origin: Boston, stops: Nonstop}, sort_by: price}
      check: [{lt: [$v.0.price, $v.1.price]}]     # what must hold for the task to make sense
      request: Which nonstop flight from Boston is the cheapest?       # a template: {v.0.flight}, {n|plural(flight)}
      macros:                              # catalog macro: its subtask, then one step kind with its arguments
        - filter_by_dropdown: Choose Boston as the origin
          dropdown: [flights, origin, Boston]
        - report_information: Report the cheapest flight's number
      answer: {text: $v.0.flight, said: "Take {v.0.flight}."}      # kind: text, number, money or date
      wrong: {answer: "Take {v.1.flight}."}      # or {skip: <macro>}, or {macro: <macro>, step: <i or control id>, value: ...}
                                           # (or `to:`, or `text:` for another suggestion of an autocomplete box)

Values: `$name.path` is a value as it is (`$v.0.price`, `$v.-1`); a string with `{name.path|filter}` is a template.
A dict whose key is an operation (OPS) is computed: sources (`view`, `rows`, `options`, `control`, `range`, `product`,
`most_common`, `suggestions`: [page, field, typed] -> the {id, title} an autocomplete box lists) give lists and take
`if` (conditions on `$it`, or the name `as` gives), `let` (per candidate), `sort_by` (fields, `-` for descending) and
`limit`; `first`, `max` (with `by`), `keep`, `count`, `any`, `none` reduce a list, and
`first`/`max` also bind their candidate's `let` names (a literal dict must not use an operation's name as a key).
Filters: money, plural(word), plus(k), commas, month (2026-12 -> December 2026), ordinal, dotted (Ana Silva -> ana.silva),
loose (a formatted value as a person says it: +1 (555) 201-4477 -> 1 555 201 4477).
Step kinds (KINDS) take the page first: dropdown, options, slider, dates, sort, tab, to_page, search, detail, copy,
comment, create, edit, delete, confirm (a delete behind a modal dialog), login (the control that leads to it, or
none for the header link), menu, export,
download, upload, drag, sign; and for the real-web mechanics:
  fix: [page, record, field, value]  a formatted field of the edit form (fix_inline_error): the value typed as the person
        says it (loose), saved and refused with the inline error, then typed in the format and saved; verified by the update
  pick: [page, record or new, field, ref id, typed]  an autocomplete field of the edit form (or the create form, for
        `new`) (pick_from_suggestions): `typed` (default: the record's whole title) typed into the box, then the
        suggestion with the record's title clicked; verified by a suggestion request and the saved form holding the id.
        `create` and `edit` set an autocomplete field of theirs the same way (typing its whole title)
  more: [page, record, query]  a list with a Load more link (load_more_rows): pressed until the record's row shows (its
        place in view(page, query) and the page's per_page say how often), then its link clicked; verified by the last
        page's request and the record's page
  submenu: page  the home page's menu bar (open_submenu_item): the page's section button, then its link in the submenu
  live: [page, record]  a busy button on a record's page (read_live_value): pressed, then waited for until it shows the
        value (a `wait` step); verified by its request, and the macro answers
`pick` and `fix` open their form first (New, or the record's Edit link) unless `opened`; `create`/`edit` with `opened`
then finish it. A macro may add `site` (a step on another site), `via` (steps that only get there:
portal, app, {menu: page} (the home page's menu; {menu: [orders-item, page]} is the menu of the page the control
key names, here a record page of orders), {crumbs: page}) and `opened` (the form is already open).
"""
import json, re, shutil
from collections import Counter
from datetime import date, timedelta
from itertools import product
from pathlib import Path

import yaml
from werkzeug.datastructures import MultiDict

from webmix.world.catalog import MACROS
from webmix.world.checks import grade_answer
from webmix.world.forms import list_query
from webmix.world.pages import SUGGESTIONS
from webmix.world.sites import load_sites, page_path
from webmix.world.specs import USER, format_regex, loose_format

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT, DECLARED = DATA / "annotations", DATA / "human_tasks"
SPLIT = json.loads((DATA / "site_split.json").read_text())
S = load_sites()
CONTROLS = {name: {c.control_id: c for c in s.controls} for name, s in S.items()}
ME = ("Alex Morgan", "alex.morgan@pigeonpost.example")          # the user, when a task mails something to itself
CONSTANTS = {"me": ME[0], "me_email": ME[1], "user": USER[0], "password": USER[1]}


# ---------------------------------------------------------------- the seeded data, as the pages show it
def url(site, pid="home", tail=""):
    "A page's path on the server, e.g. url('recipes', 'recipes', '/7') -> /sites/recipes/recipes/7."
    s = S[site]
    return s.url(page_path(s.pages[pid])) + tail

def view(site, pid, **q):
    "Every row a list page shows for query q (all of its pages), in the page's order: the engine's own query."
    s, p = S[site], S[site].pages[pid]
    args = MultiDict([(k, x) for k, v in q.items() for x in (v if isinstance(v, list) else [v])])
    where, params, order, _, notes = list_query(s, p, args)
    assert not notes, notes
    db = s.fresh_db()
    return [dict(r) for r in db.execute(f'SELECT * FROM "{p["collection"]}" WHERE {where} ORDER BY {order}', params)]

def coll_of(site, name):
    "A collection's name, given it or a page that lists it."
    return S[site].pages[name]["collection"] if name in S[site].pages else name

def distinct(site, name, field, value):
    "Is value a phrase of no other row's field (so 'Kale Tacos' is not also 'Kale Tacos II')?"
    v = str(value).lower()
    hits = [r for r in S[site].rows[coll_of(site, name)]
            if re.search(r"(?<!\w)" + re.escape(v) + r"(?!\w)", str(r[field]).lower())]
    return len(hits) == 1

def plain(name): return not re.search(r" (?:II|III|IV|V|VI)$", str(name))      # not a seeded duplicate's suffixed name

def alone(site, pid, text): return len(view(site, pid, q=text)) == 1           # a search for it finds one row

def on_grid(site, cid, v):
    "A slider value the range input can take (min + k * step, inside the range)."
    x = CONTROLS[site][cid].extra
    assert x["min"] <= v <= x["max"] and (v - x["min"]) % x["step"] == 0, (cid, v, x)
    return v

def money(v): return f"${float(v):,.2f}"

def plural(n, word): return f"{n} {word}" + ("" if n == 1 else "s")

def later(day, n=7): return (date.fromisoformat(day) + timedelta(days=n)).isoformat()

def month_end(ym):
    "The last day of month 'YYYY-MM'."
    y, m = map(int, ym.split("-"))
    return (date(y + m // 12, m % 12 + 1, 1) - timedelta(days=1)).isoformat()


# ---------------------------------------------------------------- the vocabulary of values: references, templates, operations
REF = re.compile(r"\$([A-Za-z_]\w*(?:\.-?\w+)*)")
TEMPLATE = re.compile(r"\{([A-Za-z_]\w*(?:\.-?\w+)*)((?:\|\w+(?:\([^)]*\))?)*)\}")
FILTERS = {"money": money, "plural": plural, "commas": lambda v: f"{v:,}", "plus": lambda v, k: v + int(k),
           "month": lambda ym: date.fromisoformat(f"{ym}-01").strftime("%B %Y"),          # 2026-12 -> December 2026
           "ordinal": lambda n: {2: "second", 3: "third", 4: "fourth"}[n],
           "dotted": lambda name: name.lower().replace(" ", "."),                      # Ana Silva -> ana.silva
           "loose": loose_format}                                          # GB80 HRBK 3521 ... -> gb80hrbk3521...

class Stop(Exception): "A declaration that does not fit the seeded data (any more)."

def lookup(path, env):
    "`v.0.price` in env: names, then fields and list indexes."
    name, *keys = path.split(".")
    if name not in env: raise Stop(f"no value named {name}")
    x = env[name]
    for k in keys: x = x[int(k)] if re.fullmatch(r"-?\d+", k) else x[k]
    return x

def fill(text, env):
    "A template's text: each {name.path|filter(arg)} replaced by its value."
    def one(m):
        v = lookup(m[1], env)
        for f, arg in re.findall(r"\|(\w+)(?:\(([^)]*)\))?", m[2]): v = FILTERS[f](v, arg) if arg else FILTERS[f](v)
        return str(v)
    return TEMPLATE.sub(one, text)

def ev(x, env):
    "A declared value computed: a reference, a template, an operation, or a list or dict of them."
    if isinstance(x, str):
        m = REF.fullmatch(x)
        return lookup(m[1], env) if m else fill(x, env)
    if isinstance(x, list): return [ev(v, env) for v in x]
    if not isinstance(x, dict): return x
    ops = [k for k in x if k in OPS]
    if len(ops) > 1: raise Stop(f"two operations in one value: {ops}")
    return OPS[ops[0]](x[ops[0]], x, env) if ops else {k: ev(v, env) for k, v in x.items()}

def holds(conditions, env):
    "Do all conditions (one, or a list) hold? Stops at the first that does not."
    return all(ev(c, env) for c in (conditions if isinstance(conditions, list) else [conditions]))

def where_is(name, env):
    "'realestate:listings' -> ('realestate', 'listings'); a bare page or collection is on the task's own site."
    return tuple(name.split(":")) if ":" in name else (env["site"], name)

def sort_key(row, fields):
    "The key `sort_by` orders by: fields in turn, `-field` for a descending number (an empty one counts as 0)."
    return [-float(row[f[1:]] or 0) if f.startswith("-") else row[f] for f in ([fields] if isinstance(fields, str) else fields)]

def candidates(items, x, env):
    "The (item, env) candidates of a list: cut to `limit`, each with its `let`, kept where `if` holds, ordered by `sort_by`."
    if "limit" in x: items = items[:ev(x["limit"], env)]
    def each():                                   # lazy, so `first` stops at the first candidate that fits
        for it in items:
            e = {**env, x.get("as", "it"): it}
            for k, v in (x.get("let") or {}).items(): e[k] = ev(v, e)
            if holds(x.get("if", []), e): yield it, e
    return sorted(each(), key=lambda p: sort_key(p[0], x["sort_by"])) if "sort_by" in x else each()

def chosen(pair, x, env):
    "A picked candidate; its `let` names stay bound in env (so the view a search tried last is the task's view)."
    if pair is None: raise Stop(f"nothing fits {json.dumps(x)[:300]}")
    it, e = pair
    env.update({k: e[k] for k in x.get("let") or {}})
    return it

def first(arg, x, env): return chosen(next(iter(candidates(ev(arg, env), x, env)), None), x, env)

def best(arg, x, env):
    "The candidate with the largest `by` (a value, or a list compared in turn); the first of equals."
    return chosen(max(candidates(ev(arg, env), x, env), key=lambda p: ev(x["by"], p[1]), default=None), x, env)

def source(make):
    "An operation that gives a list (make(its value, x, env)), with the list modifiers applied."
    return lambda arg, x, env: [it for it, _ in candidates(make(ev(arg, env), x, env), x, env)]

def reduce(fn):
    "An operation on a list's candidates: fn(the (item, env) pairs)."
    return lambda arg, x, env: fn(candidates(ev(arg, env), x, env))

def on_args(fn):
    "An operation on a list of values: fn(*values), e.g. {add: [$n, 1]}."
    return lambda arg, x, env: fn(*ev(arg, env))

def on_site(fn):
    "An operation on [name, *values] (or a name): fn(site, name, *values); the name may be another site's: 'mail:contacts'."
    def call(arg, x, env):
        name, *rest = a if isinstance(a := ev(arg, env), list) else [a]
        return fn(*where_is(name, env), *rest)
    return call

def chain(test): return on_args(lambda *v: all(test(a, b) for a, b in zip(v, v[1:])))      # {le: [2, $n, 10]}

def at(base, *keys):
    "An item or field whose index or name is computed: {at: [$v, $i, name]} is v[i]['name']."
    for k in keys: base = base[k]
    return base

def most_common(rows, x, env):
    "The distinct values of the `of` fields, most frequent first (equals in order of first appearance), as dicts."
    return [dict(zip(x["of"], k)) for k, _ in Counter(tuple(r[f] for f in x["of"]) for r in rows).most_common()]

def busiest_month(rows, field):
    "The month 'YYYY-MM' of the date field that most rows fall in; the earliest of equals."
    months = Counter(r[field][:7] for r in rows)
    return max(sorted(months), key=lambda m: months[m])

def findable(site, pid, field, value):
    "A plain name no other row shares, that a search finds alone (so the search is a clear step)."
    return plain(value) and distinct(site, pid, field, value) and alone(site, pid, value)

def field_options(site, name, field): return S[site].collections[coll_of(site, name)]["fields"][field]["options"]

def suggestions(site, pid, field, typed):
    "The suggestions an autocomplete field lists for typed text, as the server gives them: [{id, title}] in id order."
    to, q = S[site].collections[coll_of(site, pid)]["fields"][field]["to"], str(typed).strip().casefold()
    hits = [{"id": r["id"], "title": S[site].title_of(to, r)} for r in sorted(S[site].rows[to], key=lambda r: r["id"])]
    return [h for h in hits if q and q in h["title"].casefold()][:SUGGESTIONS]

OPS = {   # lists: seeded rows, a page's list, a field's options, a control's options, numbers, combinations
    "view": source(lambda page, x, env: view(*where_is(page, env), **ev(x.get("where") or {}, env))),
    "rows": source(lambda coll, x, env: (lambda site, c: S[site].rows[c])(*where_is(coll, env))),
    "options": source(lambda a, x, env: field_options(*where_is(a[0], env), a[1])),
    "control": source(lambda cid, x, env: [o["value"] for o in CONTROLS[env["site"]][cid].options]),
    "range": source(lambda a, x, env: list(range(*a))),
    "product": source(lambda lists, x, env: [dict(zip(lists, t)) for t in product(*lists.values())]),
    "most_common": source(most_common),
    # picks from a list
    "first": first, "max": best, "keep": reduce(lambda c: [it for it, _ in c]), "count": reduce(lambda c: sum(1 for _ in c)),
    "any": reduce(lambda c: any(True for _ in c)), "none": reduce(lambda c: not any(True for _ in c)),
    "busiest_month": lambda arg, x, env: busiest_month(ev(arg, env), x["of"]),
    "at": on_args(at), "per_page": lambda arg, x, env: S[env["site"]].pages[ev(arg, env)].get("per_page", 10),
    "page_spec": on_site(lambda site, pid, key: S[site].pages[pid][key]),           # [listings, copy]: a page's setting
    "page_url": on_site(url),                                                        # offers -> /sites/realestate/offers
    # numbers, dates, text
    "add": on_args(lambda *v: sum(v)), "sub": on_args(lambda a, b: a - b), "mul": on_args(lambda a, b: a * b),
    "div": on_args(lambda a, b: a // b), "min": on_args(min), "later": on_args(later),
    "month_end": lambda arg, x, env: month_end(ev(arg, env)),
    "split": on_args(lambda text, sep, i: text.split(sep)[i]),                   # [invoice-2026-11.pdf, "-", 0] -> invoice
    # conditions
    "eq": chain(lambda a, b: a == b), "ne": chain(lambda a, b: a != b), "lt": chain(lambda a, b: a < b),
    "le": chain(lambda a, b: a <= b), "gt": chain(lambda a, b: a > b), "ge": chain(lambda a, b: a >= b),
    "in": on_args(lambda v, items: v in items), "contains": on_args(lambda text, part: part in text),
    "not": lambda arg, x, env: not ev(arg, env), "plain": lambda arg, x, env: plain(ev(arg, env)),
    "once": on_args(lambda rows, field, v: sum(r[field] == v for r in rows) == 1),     # v is in one row of the list only
    "distinct": on_site(distinct), "alone": on_site(alone), "findable": on_site(findable),
    "suggestions": source(lambda a, x, env: suggestions(*where_is(a[0], env), *a[1:])),   # [leave, employee, Rosa]
}


# ---------------------------------------------------------------- step kinds: a macro's steps and the verifier's conditions
def step(do, control_id=None, value=None, **kw):
    s = {"do": do}
    if control_id: s["control_id"] = control_id
    if value is not None: s["value"] = value
    return {**s, **kw}

def req(path, method="GET", query=None, form=None):
    c = {"kind": "request", "method": method, "path": path}
    if query: c["query"] = query
    if form: c["form"] = form
    return c

def did(action, target, value=None):
    c = {"kind": "action_included", "action": action, "target": target}
    if value is not None: c["value"] = value
    return c

def visited(path): return {"kind": "url_visited", "url": path}

def dropdown(site, pid, field, value):
    c = f"{pid}-filter-{field}"
    return [step("select", c, value)], [req(url(site, pid), query={field: value}), did("select", c, value)]

def options(site, pid, field, *values):
    "Tick checkbox options (or pick a radio option) of a filter."
    c = f"{pid}-filter-{field}"
    want = values[0] if len(values) == 1 else list(values)
    return [step("check", c, v) for v in values], [req(url(site, pid), query={field: want}), did("input", c, values[-1])]

def slider(site, pid, field, value):
    c = f"{pid}-filter-{field}"
    on_grid(site, c, value)
    return [step("fill", c, str(value))], [req(url(site, pid), query={f"{field}_max": value}), did("input", c, value)]

def dates(site, pid, field, start, end):
    c = f"{pid}-filter-{field}"
    return ([step("fill", c, start, part="from"), step("fill", c, end, part="to"), step("click", c, part="submit")],
            [req(url(site, pid), query={f"{field}_from": start, f"{field}_to": end})])

def sort(site, pid, value):
    c = f"{pid}-sort"
    return [step("select", c, value), step("click", c, part="submit")], [req(url(site, pid), query={"sort": value}), did("select", c, value)]

def tab(site, pid, value):
    c = f"{pid}-tabs"
    return [step("click", c, value)], [req(url(site, pid), query={"tab": value}), did("click", {"control_id": c, "value_attr": value})]

def to_page(site, pid, n):
    return [step("click", f"{pid}-pages", str(n))], [req(url(site, pid), query={"page": str(n)})]

def search(site, pid, text):
    c = f"{pid}-search"
    return [step("fill", c, text), step("click", c, part="submit")], [req(url(site, pid), query={"q": text}), did("input", c, text)]

def detail(site, pid, rid): return [step("click", f"{pid}-detail", str(rid))], [visited(url(site, pid, f"/{rid}"))]

def copy(site, pid, rid, text): return [step("click", f"{pid}-copy", str(rid))], [did("copy", f"{pid}-copy", text)]

def comment(site, pid, rid, text):
    c = f"{pid}-comment"
    return [step("fill", c, text), step("click", c, part="submit")], [req(url(site, pid, f"/{rid}/comments"), "POST", form={"body": text})]

def suggest_steps(site, pid, c, field, ref, typed=None):
    "An autocomplete box: `typed` (default: the record's whole title) typed in, then the suggestion of record `ref` clicked."
    to = S[site].collections[coll_of(site, pid)]["fields"][field]["to"]
    title = S[site].title_of(to, next(r for r in S[site].rows[to] if r["id"] == ref))
    typed = title if typed is None else str(typed)
    shown = [h["title"] for h in suggestions(site, pid, field, typed)]
    assert shown.count(title) == 1, (c, typed, title, shown)     # listed, and the only suggestion of that text
    return [step("fill", c, typed, part="query"), step("click", c, str(ref), part="option", text=title)]

def field_steps(site, pid, form, values):
    "Steps that set a form's fields: selects for choices and references, ticks for booleans, typing for the rest."
    fields = S[site].collections[coll_of(site, pid)]["fields"]
    def one(fn, v, c):
        t = fields[fn]["type"]
        if CONTROLS[site][c].kind == "autocomplete": return suggest_steps(site, pid, c, fn, v)
        return [step("select", c, str(v)) if t in ("choice", "ref") else step("check", c, on=bool(v)) if t == "bool" else step("fill", c, str(v))]
    return [s for fn, v in values.items() for s in one(fn, v, f"{pid}-{form}-{fn}")]

def posted(values): return {k: ("on" if v is True else str(v)) for k, v in values.items() if v is not False}

def create(site, pid, values, opened=False):
    "Open the create form (unless already there), fill it, submit."
    return ([step("click", f"{pid}-new")] * (not opened) + field_steps(site, pid, "create", values) + [step("click", f"{pid}-create")],
            [req(url(site, pid, "/new"), "POST", form=posted(values))])

def edit(site, pid, rid, values, opened=False):
    return ([step("click", f"{pid}-edit-link")] * (not opened) + field_steps(site, pid, "edit", values) + [step("click", f"{pid}-edit")],
            [req(url(site, pid, f"/{rid}/edit"), "POST", form=posted(values))])

def delete(site, pid, rid): return [step("click", f"{pid}-delete")], [req(url(site, pid, f"/{rid}/delete"), "POST")]

def confirm(site, pid, rid):
    "Delete behind the modal dialog that asks first (a spec's delete: confirm): open it, then confirm in it."
    c = f"{pid}-delete"
    return [step("click", c), step("click", c, part="confirm")], [req(url(site, pid, f"/{rid}/delete"), "POST")]

def login(site, opener=None):
    "Sign in as the site's user; `opener` is the control clicked to reach the login page (the header's Sign in link by default)."
    first_click = step("click", opener) if opener else step("click", selector=".account a[href$='/login']")   # the link has no id
    return ([first_click, step("fill", "login-form", USER[0], part="username"),
             step("fill", "login-form", USER[1], part="password"), step("click", "login-form", part="submit")],
            [req(url(site, "login"), "POST", form={"username": USER[0]})])

def menu(site, pid): return [step("click", "home-menu", url(site, pid))], [visited(url(site, pid))]

def fix(site, pid, rid, field, value, opened=False):
    "A formatted field of the edit form: typed as the person says it (loose), saved and refused, then typed in the format and saved."
    c, form = f"{pid}-edit-{field}", f"{pid}-edit"
    assert CONTROLS[site][c].kind == "formatted_field", c
    pattern = S[site].collections[coll_of(site, pid)]["fields"][field]["gen"]["pattern"]
    said = loose_format(value)
    assert format_regex(pattern).fullmatch(value) and not format_regex(pattern).fullmatch(said), (c, value, said)
    return ([step("click", f"{pid}-edit-link")] * (not opened)
            + [step("fill", c, said), step("click", form), step("fill", c, value), step("click", form)],
            [req(url(site, pid, f"/{rid}/edit"), "POST", form={field: value})])

def pick(site, pid, rid, field, ref, typed=None, opened=False):
    "An autocomplete field of the create form (rid `new`) or the edit form: typed into, then the record's suggestion clicked."
    new = rid == "new"
    c = f"{pid}-{'create' if new else 'edit'}-{field}"
    assert CONTROLS[site][c].kind == "autocomplete", c
    return ([step("click", f"{pid}-new" if new else f"{pid}-edit-link")] * (not opened) + suggest_steps(site, pid, c, field, ref, typed),
            [req(url(site, pid, f"/suggest/{field}")), req(url(site, pid, "/new" if new else f"/{rid}/edit"), "POST", form={field: str(ref)})])

def more(site, pid, rid, query=None):
    "Load more rows until record rid's row shows (one page of per_page rows a press), then open the record."
    c, q = f"{pid}-pages", query or {}
    assert CONTROLS[site][c].kind == "load_more", c
    ids = [r["id"] for r in view(site, pid, **q)]
    presses = ids.index(rid) // S[site].pages[pid].get("per_page", 10)
    assert presses >= 1, f"{pid}: record {rid} shows without Load more"
    return ([step("click", c, str(n)) for n in range(2, presses + 2)] + [step("click", f"{pid}-detail", str(rid))],
            [req(url(site, pid), query={**q, "page": str(presses + 1)}), visited(url(site, pid, f"/{rid}"))])

def submenu(site, pid):
    "A page through the home page's menu bar: its section's button opens the submenu, then the page's link in it."
    target = url(site, pid)
    o = next(o for o in CONTROLS[site]["home-menubar"].options if o["value"] == target)
    return ([step("click", "home-menubar", o["section"], part="section"), step("click", "home-menubar", target)],
            [did("click", {"control_id": "home-menubar", "value_attr": target}), visited(target)])

def live(site, pid, rid):
    "A busy button on a record's page: press it, then wait while it fetches the value it shows (the macro reports it)."
    c = f"{pid}-live"
    assert CONTROLS[site][c].kind == "busy_button", c
    return [step("click", c), step("wait", c, part="result")], [req(url(site, pid, f"/{rid}/live"))]

def export(site, pid, query): return [step("click", f"{pid}-download")], [req(url(site, pid, "/export.csv"), query=query)]

def download(site, pid, rid): return [step("click", f"{pid}-files", str(rid))], [req(url(site, pid, f"/{rid}/download"))]

def upload(site, pid, filename):
    c = f"{pid}-upload"
    return [step("upload", c, filename), step("click", c, part="submit")], [req(url(site, pid), "POST", form={"file": filename}), did("input", c, filename)]

def drag(site, pid, rid, column):
    c = f"{pid}-board"
    return [step("drag", c, str(rid), to=column)], [req(url(site, pid, "/move"), "POST", form={"id": str(rid), "group": column}), did("drag", c)]

def sign(site, pid, name):
    pad = f"{pid}-pad"
    return ([step("fill", f"{pid}-signer", name), step("draw", pad), step("click", pad, part="submit")],
            [req(url(site, pid), "POST", form={"signer": name}), did("draw", pad)])

KINDS = {f.__name__: f for f in (dropdown, options, slider, dates, sort, tab, to_page, search, detail, copy, comment,
                                 create, edit, delete, confirm, login, menu, export, download, upload, drag, sign,
                                 fix, pick, more, submenu, live)}
VIA = {"portal": lambda site, _: step("goto", url="/"),                                   # back to the portal's app directory
       "app": lambda site, _: step("click", selector=f"a[data-app='{site}']"),            # into the site from the portal
       "menu": lambda site, a: (step("click", f"{a[0]}-menu", url(site, a[1])) if isinstance(a, list)      # [orders-item, events]:
                                else step("click", "home-menu", url(site, a))),                        # another page's menu
       "crumbs": lambda site, pid: step("click", f"{pid}-item-crumbs", url(site, pid))}


# ---------------------------------------------------------------- answers: the tiers a reply is graded by
def answer_type(value, kind, sites) -> dict:
    """What the typed grader expects (webmix.world.answers): a number a count, money an amount in dollars, a date a date;
    text that is an option of a choice field of the task's sites a choice (with its options), other text a name."""
    if kind == "number": return {"type": "count"}
    if kind == "money": return {"type": "amount", "currency": "$"}
    if kind == "date": return {"type": "date"}
    for site in sites:
        for c in S[site].spec["collections"].values():
            for f in c["fields"].values():
                if f.get("type") == "choice" and str(value) in map(str, f.get("options") or []):
                    return {"type": "choice", "choices": [str(o) for o in f["options"]]}
    return {"type": "name"}

def number_re(n): return rf"(?<![\w.,]){n}(?!\w|[.,]\d)"

def money_re(v):
    whole, cents = f"{float(v):.2f}".split(".")
    ints = f"{int(whole):,}".replace(",", ",?")
    tail = r"(?:\.00)?" if cents == "00" else rf"\.{cents[0]}(?:{cents[1]})?" if cents[1] == "0" else rf"\.{cents}"
    return rf"(?<![\d.,]){ints}{tail}(?![\d,]*\d)"

def text_re(v):
    body = r"\s*".join(re.escape(w) for w in re.split(r"[\s-]+", str(v)))
    return rf"(?<!\w){body}(?!\w)(?!\s+(?:II|III|IV|V|VI)\b)"

def matchers(value, kind):
    "The answer tiers for one expected value: regex, exact (as the page writes it), precise (normalized)."
    tiers = {"number": lambda: (number_re(value), str(value), str(value)),
             "money": lambda: (money_re(value), money(value), f"{float(value):.2f}"),
             "date": lambda: (rf"\b{value}\b", value, value)}
    regex, exact, precise = tiers.get(kind, lambda: (text_re(value), str(value), str(value)))()
    return [{"tier": "regex", "pattern": regex}, {"tier": "exact", "value": exact}, {"tier": "precise", "value": precise}]


# ---------------------------------------------------------------- one task, from its declaration
ANSWER_KINDS = ("text", "number", "money", "date")

def via_step(v, site):
    "A step that only gets to a macro's page: 'portal', 'app', {menu: page} or {crumbs: page}."
    kind, arg = (v, None) if isinstance(v, str) else next(iter(v.items()))
    return VIA[kind](site, arg)

def kind_steps(item, site, env):
    "A macro's steps and verifier conditions from its step kind and arguments (none for a macro that only answers)."
    kind = next((k for k in item if k in KINDS), None)
    if not kind: return [], []
    args = ev(item[kind], {**env, "site": site})
    args = [] if args is None else args if isinstance(args, list) else [args]
    return KINDS[kind](site, *args, **({"opened": True} if item.get("opened") else {}))

def part(item, site, env):
    "One macro of a task: (catalog name, subtask, steps, conditions), its `via` steps first."
    macro = next((k for k in item if k in MACROS), None)
    if not macro: raise Stop(f"no catalog macro in {item}")
    site = item.get("site", site)
    steps, conds = kind_steps(item, site, env)
    return macro, fill(item[macro], env), [via_step(v, site) for v in item.get("via", [])] + steps, conds

class Task:
    def __init__(self, site, decl, env):
        self.site, self.slug, self.sites = site, decl["id"], decl.get("sites", [site])
        self.start = "/" if len(self.sites) > 1 else url(site, decl["start"])
        self.instruction = fill(decl["request"], env)
        self.parts = []
        for item in decl["macros"]:
            macro, sub, steps, conds = part(item, site, env)
            keys, key, n = [k for k, *_ in self.parts], macro, 2
            while key in keys: key, n = f"{macro}#{n}", n + 1          # a repeat gets a suffix: open_menu_item#2
            self.parts.append((key, sub, steps, conds))
        self.login = any(k == "authenticate_by_form" for k, *_ in self.parts)
        a = decl.get("answer")
        kind = a and next(k for k in a if k in ANSWER_KINDS)
        self.answer, self.said = ({"value": ev(a[kind], env), "kind": kind}, fill(a["said"], env)) if a else (None, None)
        self.wrong = self.wrong_run(decl["wrong"], env)

    def wrong_run(self, w, env):
        "The run that must fail: a macro skipped, a wrong answer, or one step of a macro done with another value."
        if "skip" in w: return {"kind": "skip", "macro": w["skip"]}
        if "answer" in w: return {"kind": "answer", "answer": fill(w["answer"], env)}
        field = next(k for k in w if k not in ("macro", "step"))
        i = w["step"]
        if isinstance(i, str):                                 # a control id: that control's step in the macro
            i = next(n for n, s in enumerate(dict((k, st) for k, _, st, _ in self.parts)[w["macro"]]) if s.get("control_id") == i)
        return {"kind": "value", "macro": w["macro"], "i": i, "field": field, "value": str(ev(w[field], env))}

    def steps(self):
        return [{**s, "macro": key} for key, _, steps, _ in self.parts for s in steps]

    def files(self):
        macros = [k for k, *_ in self.parts]
        assert 2 <= len(macros) <= 4, (self.slug, macros)
        task = {"task_id": self.slug, "site": self.site, "sites": self.sites, "instruction": " ".join(self.instruction.split()),
                "macros": macros, "macro_subtasks": {k: sub for k, sub, *_ in self.parts},
                "starting_url": self.start, "needs_login": self.login}
        verifier = {"macros": {k: {"subtask": sub, "conditions": conds} for k, sub, _, conds in self.parts}}
        if self.answer:
            reason = next((sub for k, sub, *_ in reversed(self.parts) if MACROS[k.split("#")[0]].answers), "")
            shown = money(self.answer["value"]) if self.answer["kind"] == "money" else str(self.answer["value"])
            verifier["answer"] = {**answer_type(self.answer["value"], self.answer["kind"], self.sites),
                                  "matchers": matchers(self.answer["value"], self.answer["kind"]),
                                  "llm": {"expected": shown, "rubric": reason}}
        steps = self.steps()
        wrong = dict(self.wrong)
        if wrong["kind"] == "value":                        # the step's index in the whole script
            idx = [i for i, s in enumerate(steps) if s["macro"] == wrong["macro"]]
            wrong["step"] = idx[wrong.pop("i")]
        return task, verifier, {"steps": steps, "answer": self.said, "wrong": wrong}

    def check(self):
        "Catch mistakes before a browser does: known controls, one side of the split, an answer the matchers take, a wrong one they refuse."
        assert any(set(self.sites) <= set(SPLIT[k]) for k in ("test", "train")), f"{self.slug}: mixes test and training sites {self.sites}"
        assert bool(self.answer) == any(MACROS[k.split("#")[0]].answers for k, *_ in self.parts), self.slug
        for s in self.steps():
            if s.get("control_id"):
                assert any(s["control_id"] in CONTROLS[x] for x in self.sites), f"{self.slug}: no control {s['control_id']} on {self.sites}"
        task, verifier, script = self.files()
        if self.answer:
            # the scripted answer's own words stand in for the screens' (tests/test_human_tasks.py grades it on the real ones)
            said = grade_answer(verifier["answer"], self.said, task["instruction"], [self.said])
            assert said["passed"] is True, (self.slug, self.said, said["detail"])
            if script["wrong"]["kind"] == "answer":
                wrong = script["wrong"]["answer"]
                assert grade_answer(verifier["answer"], wrong, task["instruction"], [wrong])["passed"] is False, (self.slug, wrong)
        assert script["wrong"]["kind"] != "skip" or script["wrong"]["macro"] in verifier["macros"]
        w = script["wrong"]
        if w["kind"] == "value" and w["field"] == "text":           # another suggestion picked: one the typed text lists
            typed, chosen = script["steps"][w["step"] - 1], script["steps"][w["step"]]
            site = next(x for x in self.sites if chosen["control_id"] in CONTROLS[x])
            c = CONTROLS[site][chosen["control_id"]]
            listed = [h["title"] for h in suggestions(site, c.extra["form"].rsplit("-", 1)[0], c.field, typed["value"])]
            assert chosen.get("part") == "option" and w["value"] in listed and w["value"] != chosen["text"], (self.slug, w, listed)


# ---------------------------------------------------------------- the declarations
class Loader(yaml.SafeLoader):
    "YAML where only true/false, null and plain numbers are not text: dates, times (10:30) and yes/no stay strings."
Loader.yaml_implicit_resolvers = {}
for tag, rx, starts in (("bool", "true|false", "tf"), ("null", "null|~|", ["n", "~", ""]),
                        ("int", r"-?\d+", "-0123456789"), ("float", r"-?\d+\.\d+", "-0123456789")):
    Loader.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", re.compile(rf"^(?:{rx})$"), list(starts))

def stop(where, why): raise SystemExit(f"make_human_tasks: {where}: {why}: the site spec changed; adapt this task")

def bind(names, env, where):
    "Compute the `let` values in order into env; a value the data no longer gives stops with where it happened."
    for name, expr in (names or {}).items():
        try: env[name] = ev(expr, env)
        except (Stop, LookupError, TypeError, ValueError) as e: stop(f"{where}: {name}", e if isinstance(e, Stop) else repr(e))

def task(site, t, env):
    "One declared task: its values, its checks, then the task."
    e = dict(env)
    bind(t.get("let"), e, t["id"])
    for c in t.get("check") or []:
        if not ev(c, e): stop(t["id"], f"check {json.dumps(c)} fails")
    try: return Task(site, t, e)
    except (Stop, LookupError, TypeError, ValueError) as e: stop(t["id"], e if isinstance(e, Stop) else repr(e))

def site_tasks(site):
    "The tasks declared in data/human_tasks/<site>.yaml, their values picked from the seeded data and their checks passed."
    decl = yaml.load((DECLARED / f"{site}.yaml").read_text(), Loader=Loader)
    env = {**CONSTANTS, "site": site}
    bind(decl.get("let"), env, site)                       # values several of the site's tasks share
    return [task(site, t, env) for t in decl["tasks"]]


# ---------------------------------------------------------------- write
def write(t):
    d = ROOT / t.site / t.slug
    d.mkdir(parents=True, exist_ok=True)
    task, verifier, script = t.files()
    for name, obj in (("task", task), ("verifier", verifier)):
        (d / f"{name}.json").write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n")
    steps = ",\n  ".join(json.dumps(x, ensure_ascii=False) for x in script["steps"])
    (d / "script.json").write_text(f'{{"steps": [\n  {steps}\n ],\n "answer": {json.dumps(script["answer"], ensure_ascii=False)},\n'
                                   f' "wrong": {json.dumps(script["wrong"], ensure_ascii=False)}}}\n')

def main(only=None):
    "Write the tasks of every site with declarations, or of the sites in `only` (their folders alone are rewritten)."
    sites = [x for x in SPLIT["test"] + SPLIT["train"] if (DECLARED / f"{x}.yaml").exists() and (not only or x in only)]
    unknown = set(only or ()) - set(SPLIT["test"] + SPLIT["train"])
    if unknown: raise SystemExit(f"make_human_tasks: not in data/site_split.json: {sorted(unknown)}")
    tasks = [t for site in sites for t in site_tasks(site)]
    slugs = Counter(t.slug for t in tasks)
    assert max(slugs.values()) == 1, [s for s, n in slugs.items() if n > 1]
    for t in tasks: t.check()
    for site in {t.site for t in tasks}:                      # only what this script wrote before
        for old in (ROOT / site).glob("*/script.json"): shutil.rmtree(old.parent)
    for t in tasks: write(t)
    by_site = Counter(t.site for t in tasks)
    n_train = sum(t.site in SPLIT["train"] for t in tasks)
    print(f"{len(tasks)} scripted human-style tasks ({len(tasks) - n_train} on test sites, {n_train} on training sites): "
          + ", ".join(f"{k} {v}" for k, v in sorted(by_site.items()))
          + f"; cross-site {sum(len(t.sites) > 1 for t in tasks)}, login {sum(t.login for t in tasks)},"
          f" question {sum(bool(t.answer) for t in tasks)}")

if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="write data/annotations/ from data/human_tasks/")
    ap.add_argument("--sites", help="comma-separated: only these sites' declarations (default: every site's)")
    a = ap.parse_args()
    main(a.sites.split(",") if a.sites else None)
