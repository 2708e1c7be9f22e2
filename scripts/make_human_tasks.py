"""Scripted human-style tasks on the test sites and on the training sites: writes
data/annotations/<site>/<task>/{task.json, verifier.json, script.json}. Every task (its request, its macros and verifier,
its scripted run) is written by this script, in the style of a person's request; none was written by a person.

A task is all on test sites (data/site_split.json "test": the held-out sites evaluation reports on) or all on
training sites ("train": 3 tasks per site). `webmix evaluate --human --human-split train` runs the training-site ones:
their passing episodes' rows (rejection sampling), and a verifier-graded run for `webmix taskgen validate` to compare
the judge with. main() refuses a task that mixes the two sides.

Every expected value (ids, names, counts, prices, dates) is computed here from the seeded data
(webmix.world.miniweb.load_sites()[site].rows, through the engine's own list query), so re-running this script after a
site-spec change keeps the tasks right; tests/test_human_tasks.py then replays each script.json in Chromium
(a correct run must pass verify_task, the `wrong` variant must fail it).

    python scripts/make_human_tasks.py          # rewrite the tasks (only the folders that hold a script.json)
"""
import json, re, shutil
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

from werkzeug.datastructures import MultiDict

from webmix.world.catalog import MACROS
from webmix.world.checks import grade_answer
from webmix.world.miniweb import USER, list_query, load_sites, page_path

ROOT = Path(__file__).resolve().parents[1] / "data" / "annotations"
SPLIT = json.loads((ROOT.parent / "site_split.json").read_text())
S = load_sites()
CONTROLS = {name: {c.control_id: c for c in s.controls} for name, s in S.items()}
ME = ("Alex Morgan", "alex.morgan@pigeonpost.example")          # the user, when a task mails something to itself


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

def per_page(site, pid): return S[site].pages[pid].get("per_page", 10)

def rows(site, coll): return S[site].rows[coll]

def distinct(site, coll, field, value):
    "Is value a phrase of no other row's field (so 'Kale Tacos' is not also 'Kale Tacos II')?"
    v = str(value).lower()
    hits = [r for r in rows(site, coll) if re.search(r"(?<!\w)" + re.escape(v) + r"(?!\w)", str(r[field]).lower())]
    return len(hits) == 1

def on_grid(site, cid, v):
    "A slider value the range input can take (min + k * step, inside the range)."
    x = CONTROLS[site][cid].extra
    assert x["min"] <= v <= x["max"] and (v - x["min"]) % x["step"] == 0, (cid, v, x)
    return v

def money(v): return f"${float(v):,.2f}"

def later(day, n=7): return (date.fromisoformat(day) + timedelta(days=n)).isoformat()

def month_end(ym):
    "The last day of month 'YYYY-MM'."
    y, m = map(int, ym.split("-"))
    return (date(y + m // 12, m % 12 + 1, 1) - timedelta(days=1)).isoformat()

def plain(name): return not re.search(r" (?:II|III|IV|V|VI)$", str(name))      # not a seeded duplicate's suffixed name

def plural(n, word): return f"{n} {word}" + ("" if n == 1 else "s")

def first(items, why):
    items = list(items)
    if not items: raise SystemExit(f"make_human_tasks: no data for {why}: the site spec changed; adapt this task")
    return items[0]


# ---------------------------------------------------------------- steps and verifier conditions per macro
def step(do, control_id=None, value=None, **kw):
    s = {"do": do}
    if control_id: s["control_id"] = control_id
    if value is not None: s["value"] = value
    return {**s, **kw}

def after(prefix, macro):
    "A macro's (steps, check) with `prefix` steps first (the way to the macro's page)."
    steps, check = macro
    return [*prefix, *steps], check

def elsewhere(site, pid, piece):
    "A macro done on another site: back to the portal, into `site`, its page `pid` from the home menu, then `piece`."
    return after([step("goto", url="/"), app(site), menu(site, "home", pid)], piece)

def mail_draft(msg):
    "Back to the portal, into Pigeon Post, and a new message saved from its form."
    return elsewhere("mail", "messages", create("mail", "messages", msg))

def sign_in_link(): return step("click", selector=".account a[href$='/login']")       # the header link has no control id
def app(site): return step("click", selector=f"a[data-app='{site}']")                  # the portal's app directory
def menu(site, key, pid): return step("click", f"{key}-menu", url(site, pid))

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

def paginate(site, pid, n):
    c = f"{pid}-pages"
    return [step("click", c, str(n))], [req(url(site, pid), query={"page": str(n)})]

def search(site, pid, text):
    c = f"{pid}-search"
    return ([step("fill", c, text), step("click", c, part="submit")],
            [req(url(site, pid), query={"q": text}), did("input", c, text)])

def detail(site, pid, rid):
    return [step("click", f"{pid}-detail", str(rid))], [visited(url(site, pid, f"/{rid}"))]

def copy_row(site, pid, rid, text):
    c = f"{pid}-copy"
    return [step("click", c, str(rid))], [did("copy", c, text)]

def comment(site, pid, rid, text):
    c = f"{pid}-comment"
    return ([step("fill", c, text), step("click", c, part="submit")],
            [req(url(site, pid, f"/{rid}/comments"), "POST", form={"body": text})])

def field_steps(site, pid, form, values):
    "Steps that set a form's fields: selects for choices and references, ticks for booleans, typing for the rest."
    coll = S[site].collections[S[site].pages[pid]["collection"]]
    out = []
    for fn, v in values.items():
        t = coll["fields"][fn]["type"]
        c = f"{pid}-{form}-{fn}"
        out.append(step("select", c, str(v)) if t in ("choice", "ref") else step("check", c, on=bool(v)) if t == "bool"
                   else step("fill", c, str(v)))
    return out

def posted(values): return {k: ("on" if v is True else str(v)) for k, v in values.items() if v is not False}

def create(site, pid, values, open_form=True):
    "Open the create form (unless already there), fill it, submit."
    return ([step("click", f"{pid}-new")] * open_form + field_steps(site, pid, "create", values) + [step("click", f"{pid}-create")],
            [req(url(site, pid, "/new"), "POST", form=posted(values))])

def edit(site, pid, rid, values, open_form=True):
    return ([step("click", f"{pid}-edit-link")] * open_form + field_steps(site, pid, "edit", values) + [step("click", f"{pid}-edit")],
            [req(url(site, pid, f"/{rid}/edit"), "POST", form=posted(values))])

def delete(site, pid, rid):
    return [step("click", f"{pid}-delete")], [req(url(site, pid, f"/{rid}/delete"), "POST")]

def login(site, opener=None):
    "Sign in as the site's user; `opener` is the click that reaches the login page (the header's Sign in link by default)."
    return ([opener or sign_in_link(), step("fill", "login-form", USER[0], part="username"),
             step("fill", "login-form", USER[1], part="password"), step("click", "login-form", part="submit")],
            [req(url(site, "login"), "POST", form={"username": USER[0]})])

def open_menu(site, key, pid):
    return [menu(site, key, pid)], [visited(url(site, pid))]

def export(site, pid, query):
    return [step("click", f"{pid}-download")], [req(url(site, pid, "/export.csv"), query=query)]

def download(site, pid, rid):
    return [step("click", f"{pid}-files", str(rid))], [req(url(site, pid, f"/{rid}/download"))]

def upload(site, pid, filename):
    c = f"{pid}-upload"
    return ([step("upload", c, filename), step("click", c, part="submit")],
            [req(url(site, pid), "POST", form={"file": filename}), did("input", c, filename)])

def drag(site, pid, rid, column):
    c = f"{pid}-board"
    return ([step("drag", c, str(rid), to=column)],
            [req(url(site, pid, "/move"), "POST", form={"id": str(rid), "group": column}), did("drag", c)])

def sign(site, pid, name):
    pad = f"{pid}-pad"
    return ([step("fill", f"{pid}-signer", name), step("draw", pad), step("click", pad, part="submit")],
            [req(url(site, pid), "POST", form={"signer": name}), did("draw", pad)])

def nav(*steps): return list(steps), []            # steps that only get somewhere, counted in the next macro


# ---------------------------------------------------------------- answers
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
    if kind == "number": return [{"tier": "regex", "pattern": number_re(value)}, {"tier": "exact", "value": str(value)},
                                 {"tier": "precise", "value": str(value)}]
    if kind == "money": return [{"tier": "regex", "pattern": money_re(value)}, {"tier": "exact", "value": money(value)},
                                {"tier": "precise", "value": f"{float(value):.2f}"}]
    if kind == "date": return [{"tier": "regex", "pattern": rf"\b{value}\b"}, {"tier": "exact", "value": value},
                               {"tier": "precise", "value": value}]
    return [{"tier": "regex", "pattern": text_re(value)}, {"tier": "exact", "value": str(value)},
            {"tier": "precise", "value": str(value)}]


# ---------------------------------------------------------------- one task
class Task:
    def __init__(self, site, slug, start, instruction="", sites=None, login=False):
        self.site, self.slug, self.start, self.instruction = site, slug, start, instruction
        self.sites, self.login = sites or [site], login
        self.parts, self.answer, self.said, self.wrong = [], None, None, None

    def add(self, macro, subtask, piece=((), ())):
        assert macro in MACROS, macro
        keys = [k for k, *_ in self.parts]
        key, n = macro, 2
        while key in keys: key, n = f"{macro}#{n}", n + 1
        steps, conds = piece
        self.parts.append((key, subtask, list(steps), list(conds)))
        return self

    def ask(self, value, said, kind="text"):
        "The task ends in a question: the expected value and the scripted run's reply."
        self.answer, self.said = {"value": value, "kind": kind}, said
        return self

    def wrong_skip(self, macro): self.wrong = {"kind": "skip", "macro": macro}; return self
    def wrong_answer(self, said): self.wrong = {"kind": "answer", "answer": said}; return self
    def wrong_value(self, macro, i, value, field="value"):
        "The i-th step of `macro` done with another value (a different option, text, record, column)."
        self.wrong = {"kind": "value", "macro": macro, "i": i, "field": field, "value": value}
        return self

    def steps(self):
        return [{**s, "macro": key} for key, _, steps, _ in self.parts for s in steps]

    def files(self):
        macros = [k for k, *_ in self.parts]
        assert 2 <= len(macros) <= 4, (self.slug, macros)
        task = {"task_id": self.slug, "site": self.site, "sites": self.sites, "instruction": " ".join(self.instruction.split()),
                "macros": macros, "macro_subtasks": {k: sub for k, sub, *_ in self.parts},
                "starting_url": "/" if len(self.sites) > 1 else self.start, "needs_login": self.login}
        verifier = {"macros": {k: {"subtask": sub, "conditions": conds} for k, sub, _, conds in self.parts}}
        if self.answer:
            reason = next((sub for k, sub, *_ in reversed(self.parts) if MACROS[k.split("#")[0]].answers), "")
            shown = money(self.answer["value"]) if self.answer["kind"] == "money" else str(self.answer["value"])
            verifier["answer"] = {"matchers": matchers(self.answer["value"], self.answer["kind"]),
                                  "llm": {"expected": shown, "rubric": reason}}
        steps = self.steps()
        wrong = dict(self.wrong)
        if wrong["kind"] == "value":                        # the step's index in the whole script
            idx = [i for i, s in enumerate(steps) if s["macro"] == wrong["macro"]]
            wrong["step"] = idx[wrong.pop("i")]
        script = {"steps": steps, "answer": self.said, "wrong": wrong}
        return task, verifier, script

    def check(self):
        "Catch mistakes before a browser does: known macros and controls, an answer the matchers take, a wrong one they refuse."
        assert self.wrong, f"{self.slug}: no wrong run"
        assert self.login == any(k == "authenticate_by_form" for k, *_ in self.parts), self.slug
        assert bool(self.answer) == any(MACROS[k.split("#")[0]].answers for k, *_ in self.parts), self.slug
        for s in self.steps():
            if s.get("control_id"):
                site = next((x for x in self.sites if s["control_id"] in CONTROLS[x]), None)
                assert site, f"{self.slug}: no control {s['control_id']} on {self.sites}"
        task, verifier, script = self.files()
        if self.answer:
            assert grade_answer(verifier["answer"], self.said)["passed"], (self.slug, self.said)
            if script["wrong"]["kind"] == "answer":
                assert not grade_answer(verifier["answer"], script["wrong"]["answer"])["passed"], (self.slug, script["wrong"])
        assert script["wrong"]["kind"] != "skip" or script["wrong"]["macro"] in verifier["macros"]


TASKS = []
def task(*a, **kw):
    t = Task(*a, **kw)
    TASKS.append(t)
    return t


# ================================================================ Saffron & Salt (recipes)
def recipes():
    s, P = "recipes", "recipes"

    # the lightest quick Easy recipe
    M = first((m for m in (20, 25, 30, 35, 40) if len(view(s, P, difficulty="Easy", minutes_max=m)) >= 4), "easy quick recipes")
    v = view(s, P, difficulty="Easy", minutes_max=M, sort="calories_asc")
    best, runner = v[0], v[1]
    assert best["calories"] < runner["calories"] and distinct(s, P, "name", best["name"])
    (task(s, "lightest-quick-easy-recipe", url(s, P), f"""I've only got {M} minutes tonight and I'm not much of a cook. On
        Saffron & Salt, show me the Easy recipes that take {M} minutes or less, sort them by calories (lowest first) and
        tell me which recipe is the lightest.""")
     .add("filter_by_options", "Show only Easy recipes", options(s, P, "difficulty", "Easy"))
     .add("filter_by_slider", f"Limit the total time to {M} minutes", slider(s, P, "minutes", M))
     .add("sort_by_form", "Sort by calories, lowest first", sort(s, P, "calories_asc"))
     .add("report_information", "Report the name of the lightest recipe")
     .ask(best["name"], f"The lightest one is {best['name']}, at {best['calories']} calories per serving.")
     .wrong_answer(f"The lightest one is {runner['name']}."))

    # comment on the quickest Indian recipe
    v = view(s, P, cuisine="Indian", sort="minutes_asc")
    quick = v[0]
    assert quick["minutes"] < v[1]["minutes"]
    note = f"Made this on a weeknight and it really was ready in {quick['minutes']} minutes. Lovely!"
    (task(s, "review-quickest-indian-recipe", url(s, P), f"""Which Indian recipe on Saffron & Salt is the quickest to make?
        Filter the recipes to Indian cuisine, sort them by total time (shortest first), open the quickest one and post
        this comment on it: "{note}" """)
     .add("filter_by_dropdown", "Show only Indian recipes", dropdown(s, P, "cuisine", "Indian"))
     .add("sort_by_form", "Sort by total time, shortest first", sort(s, P, "minutes_asc"))
     .add("open_detail", f"Open {quick['name']}", detail(s, P, quick["id"]))
     .add("add_comment", "Post the comment", comment(s, P, quick["id"], note))
     .wrong_value("add_comment", 0, "Made this on a weeknight. Lovely!"))

    # move a meal on the planner after signing in, then count the day
    plan = sorted(rows(s, "mealplan"), key=lambda r: r["position"])
    titles = Counter(r["meal"] for r in plan)
    days = CONTROLS[s]["planner-board"].options
    meal = first((r for r in plan if titles[r["meal"]] == 1), "a meal that is on the plan once")
    to = first((o["value"] for o in days if o["value"] != meal["day"] and any(r["day"] == o["value"] for r in plan)), "a day")
    other = first((o["value"] for o in days if o["value"] not in (meal["day"], to)), "a third day")
    n = sum(r["day"] == to for r in plan) + 1
    (task(s, "move-meal-on-planner", url(s), f"""Sign in to Saffron & Salt (username {USER[0]}, password {USER[1]}). On my
        meal planner, move "{meal['meal']}" from {meal['day']} to {to}, then tell me how many meals are planned for
        {to}.""", login=True)
     .add("authenticate_by_form", "Sign in as alex", login(s))
     .add("open_menu_item", "Open the meal planner", open_menu(s, "home", "planner"))
     .add("reorder_by_drag", f"Drag {meal['meal']} to {to}", drag(s, "planner", meal["id"], to))
     .add("report_information", f"Report how many meals {to} has now")
     .ask(n, f"{to} now has {plural(n, 'meal')} planned.", "number")
     .wrong_value("reorder_by_drag", 0, other, field="to"))

    # export quick Japanese recipes and count them
    M = first((m for m in (45, 50, 60, 75, 90) if len(view(s, P, cuisine="Japanese", minutes_max=m)) >= 2), "Japanese recipes")
    n = len(view(s, P, cuisine="Japanese", minutes_max=M))
    assert n < len(view(s, P, cuisine="Japanese"))
    (task(s, "export-quick-japanese-recipes", url(s, P), f"""I'm planning a ramen week. Export every Japanese recipe that
        takes at most {M} minutes from Saffron & Salt as a CSV file, and tell me how many recipes are in it.""")
     .add("filter_by_dropdown", "Show only Japanese recipes", dropdown(s, P, "cuisine", "Japanese"))
     .add("filter_by_slider", f"Limit the total time to {M} minutes", slider(s, P, "minutes", M))
     .add("download_file", "Export the list as CSV", export(s, P, {"cuisine": "Japanese", "minutes_max": str(M)}))
     .add("count_entries", "Report how many recipes the export holds")
     .ask(n, f"The export holds {plural(n, 'recipe')}.", "number")
     .wrong_skip("filter_by_slider"))

    # cross-site: a recipe's ingredients into a mail draft
    cake = first((r for r in view(s, P, dish="Cake") if plain(r["name"]) and distinct(s, P, "name", r["name"])
                  and len(view(s, P, q=r["name"])) == 1), "a cake with a unique name")
    subject = f"Shopping list: {cake['name']}"
    msg = {"contact": ME[0], "email": ME[1], "subject": subject, "folder": "Drafts", "label": "Personal", "body": cake["ingredients"]}
    (task(s, "cake-shopping-list-to-mail", "/", f"""I want to bake the {cake['name']} this weekend. Find it on Saffron & Salt
        and copy its ingredient list, then in Pigeon Post save a draft to myself ({ME[0]}, {ME[1]}) with the subject
        "{subject}", labelled Personal, with the ingredient list as the message.""", sites=[s, "mail"])
     .add("search_by_text", f"Search the recipes for {cake['name']}",
          after([app(s), menu(s, "home", P)], search(s, P, cake["name"])))
     .add("copy_to_clipboard", "Copy its ingredient list", copy_row(s, P, cake["id"], cake["ingredients"]))
     .add("create_entry", "Save the shopping list as a draft in Pigeon Post",
          mail_draft(msg))
     .wrong_skip("copy_to_clipboard"))

    # share a new recipe (signing in on the way), then search for it
    new = {"name": "Nonna's Plum Cake", "dish": "Cake", "cuisine": "Italian", "course": "Dessert", "difficulty": "Easy",
           "minutes": 45, "servings": 8, "calories": 420, "author": "Luca Bianchi", "published": "2026-11-28",
           "ingredients": "250 g flour, 150 g sugar, 3 eggs, 120 g butter, 6 plums, 1 tsp baking powder"}
    assert new["author"] in S[s].collections[P]["fields"]["author"]["options"]
    n = len(view(s, P, q="plum")) + 1
    (task(s, "share-plum-cake-recipe", url(s, P), f"""I'd like to share my grandmother's cake on Saffron & Salt (my login is
        {USER[0]} / {USER[1]}). Add a new recipe "{new['name']}": Cake, Italian, Dessert, Easy, {new['minutes']} minutes,
        serves {new['servings']}, {new['calories']} calories per serving, author {new['author']}, published
        {new['published']}, ingredients "{new['ingredients']}". Then search the recipes for "plum" and tell me how many
        recipes come up.""", login=True)
     .add("authenticate_by_form", "Sign in when the new-recipe form asks for it", login(s, step("click", f"{P}-new")))
     .add("create_entry", "Create the recipe", create(s, P, new, open_form=False))
     .add("search_by_text", "Search the recipes for plum",
          after([step("click", f"{P}-item-crumbs", url(s, P))], search(s, P, "plum")))
     .add("count_entries", "Report how many recipes the search finds")
     .ask(n, f"{plural(n, 'recipe')} come up for plum.", "number")
     .wrong_value("create_entry", 5, "50"))

    # fix a recipe's servings, signing in when the edit form asks
    rec = first((r for r in view(s, P)[:per_page(s, P)] if r["servings"] <= 8 and plain(r["name"])
                 and distinct(s, P, "name", r["name"])), "a recipe")
    serves = rec["servings"] + 2
    (task(s, "fix-recipe-servings", url(s, P), f"""The {rec['name']} recipe says it serves {rec['servings']}, but it really
        feeds {serves}. Please correct the servings on Saffron & Salt (sign in as {USER[0]} / {USER[1]} if it asks).""",
          login=True)
     .add("open_detail", f"Open {rec['name']}", detail(s, P, rec["id"]))
     .add("authenticate_by_form", "Sign in when the edit form asks for it", login(s, step("click", f"{P}-edit-link")))
     .add("edit_entry", f"Set the servings to {serves}", edit(s, P, rec["id"], {"servings": serves}, open_form=False))
     .wrong_value("edit_entry", 0, str(serves + 1)))

    # upload a photo after signing in, then count the photos
    n = len(rows(s, "photos")) + 1
    (task(s, "upload-dish-photo", url(s), f"""I cooked one of your recipes! Sign in to Saffron & Salt ({USER[0]} /
        {USER[1]}), upload my photo "plum-cake.jpg" to Dish photos, and tell me how many photos are there now.""", login=True)
     .add("authenticate_by_form", "Sign in as alex", login(s))
     .add("open_menu_item", "Open Dish photos", open_menu(s, "home", "photos"))
     .add("upload_file", "Upload plum-cake.jpg", upload(s, "photos", "plum-cake.jpg"))
     .add("report_information", "Report how many photos are listed")
     .ask(n, f"There are now {plural(n, 'photo')}.", "number")
     .wrong_skip("upload_file"))

    # alphabetical order, a later page
    v = view(s, P, sort="name_asc")
    k = per_page(s, P)
    pg = first((g for g in (3, 2, 4) if len(v) > (g - 1) * k and distinct(s, P, "name", v[(g - 1) * k]["name"])), "a page")
    top, prev = v[(pg - 1) * k], v[(pg - 2) * k]
    nth = {2: "second", 3: "third", 4: "fourth"}[pg]
    (task(s, "alphabetical-page-first-recipe", url(s, P), f"""Sort the recipes on Saffron & Salt alphabetically (A to Z), go
        to the {nth} page and tell me which recipe is listed first there.""")
     .add("sort_by_form", "Sort the recipes by name, A to Z", sort(s, P, "name_asc"))
     .add("paginate", f"Go to page {pg}", paginate(s, P, pg))
     .add("report_information", f"Report the first recipe on page {pg}")
     .ask(top["name"], f"The first recipe on page {pg} is {top['name']}.")
     .wrong_answer(f"It's {prev['name']}."))



# ================================================================ Pigeon Post (mail)
def mail():
    s, P, C = "mail", "messages", "contacts"

    # delete the oldest spam newsletter
    v = view(s, P, tab="Spam", label="Newsletters")
    assert 2 <= len(v) <= per_page(s, P), len(v)
    old = v[-1]
    (task(s, "delete-oldest-spam-newsletter", url(s, P), """My spam folder is full of newsletters. In Pigeon Post, open
        the Spam folder, show only the Newsletters label, open the oldest one and delete it.""")
     .add("switch_tab", "Open the Spam folder", tab(s, P, "Spam"))
     .add("filter_by_options", "Show only Newsletters", options(s, P, "label", "Newsletters"))
     .add("open_detail", f"Open the oldest newsletter ({old['subject']})", detail(s, P, old["id"]))
     .add("delete_entry", "Delete it", delete(s, P, old["id"]))
     .wrong_skip("delete_entry"))

    # count a label's mail in its busiest month
    months = Counter(r["received"][:7] for r in rows(s, P) if r["label"] == "Finance")
    ym = max(sorted(months), key=lambda m: months[m])
    end = month_end(ym)
    n = len(view(s, P, label="Finance", received_from=f"{ym}-01", received_to=end))
    month = date.fromisoformat(f"{ym}-01").strftime("%B %Y")
    (task(s, "count-finance-mail-in-month", url(s, P), f"""How many Finance emails did I get in {month}? Filter my mailbox
        to the Finance label and the dates {ym}-01 to {end}, and give me the number.""")
     .add("filter_by_options", "Show only Finance mail", options(s, P, "label", "Finance"))
     .add("filter_by_date_range", f"Limit the dates to {month}", dates(s, P, "received", f"{ym}-01", end))
     .add("count_entries", "Report how many emails are listed")
     .ask(n, f"You got {plural(n, 'Finance email')} in {month}.", "number")
     .wrong_answer(f"You got {n + 2} Finance emails."))

    # a contact's email to the clipboard, and their company
    people = [r for r in view(s, C) if plain(r["name"]) and distinct(s, C, "name", r["name"]) and len(view(s, C, q=r["name"])) == 1]
    who = people[len(people) // 3]
    other_co = first((c for c in S[s].collections[C]["fields"]["company"]["options"] if c != who["company"]), "a company")
    (task(s, "copy-contact-email-and-company", url(s, C), f"""I need to write to {who['name']}. Find them in my Pigeon Post
        contacts, copy their email address, and tell me which company they work for.""")
     .add("search_by_text", f"Search the contacts for {who['name']}", search(s, C, who["name"]))
     .add("copy_to_clipboard", "Copy their email address", copy_row(s, C, who["id"], who["email"]))
     .add("report_information", "Report their company")
     .ask(who["company"], f"{who['name']} works for {who['company']}.")
     .wrong_answer(f"They work for {other_co}."))

    # add a contact after signing in, then count that company's contacts
    new = {"name": "Noor Haddad", "email": "noor.haddad@pigeonpost.example", "company": "Freelance",
           "phone": "+1 (555) 201-4477", "birthday": "1991-04-12"}
    assert not any(r["name"] == new["name"] for r in rows(s, C))
    n = len(view(s, C, company="Freelance")) + 1
    (task(s, "add-freelance-contact", url(s, C), f"""Add Noor Haddad to my Pigeon Post contacts: email {new['email']},
        company Freelance, phone {new['phone']}, birthday {new['birthday']} (log in as {USER[0]} / {USER[1]} if it asks).
        Then show only my Freelance contacts and tell me how many there are now.""", login=True)
     .add("authenticate_by_form", "Sign in when the new-contact form asks for it", login(s, step("click", f"{C}-new")))
     .add("create_entry", "Create the contact", create(s, C, new, open_form=False))
     .add("filter_by_dropdown", "Show only Freelance contacts",
          after([step("click", f"{C}-item-crumbs", url(s, C))], dropdown(s, C, "company", "Freelance")))
     .add("count_entries", "Report how many Freelance contacts are listed")
     .ask(n, f"You now have {plural(n, 'Freelance contact')}.", "number")
     .wrong_value("create_entry", 2, "Oakline"))

    # archive a travel email and flag it
    msg = first((r for r in view(s, P, tab="Inbox", label="Travel") if not r["important"] and plain(r["subject"])
                 and distinct(s, P, "subject", r["subject"]) and len(view(s, P, q=r["subject"])) == 1), "a travel email")
    (task(s, "archive-travel-email", url(s, P), f"""Find the email "{msg['subject']}" in Pigeon Post, mark it as important
        and move it to the Archive folder.""")
     .add("search_by_text", "Search for the email", search(s, P, msg["subject"]))
     .add("open_detail", "Open it", detail(s, P, msg["id"]))
     .add("edit_entry", "Move it to Archive and mark it important", edit(s, P, msg["id"], {"folder": "Archive", "important": True}))
     .wrong_value("edit_entry", 1, "Spam"))

    # who sent the oldest work email in the inbox
    v = view(s, P, tab="Inbox", label="Work", sort="received_asc")
    assert len(v) >= 2 and v[0]["received"] < v[1]["received"] and v[0]["contact"] != v[1]["contact"]
    assert not any(r["contact"] != v[0]["contact"] and v[0]["contact"] in r["contact"] for r in v)
    (task(s, "oldest-work-email-sender", url(s, P), """In my Pigeon Post Inbox, show only Work emails, sorted oldest
        first. Who sent the oldest one?""")
     .add("switch_tab", "Open the Inbox", tab(s, P, "Inbox"))
     .add("filter_by_options", "Show only Work mail", options(s, P, "label", "Work"))
     .add("sort_by_form", "Sort by date, oldest first", sort(s, P, "received_asc"))
     .add("report_information", "Report who sent the oldest one")
     .ask(v[0]["contact"], f"The oldest Work email in your Inbox is from {v[0]['contact']}.")
     .wrong_answer(f"It's from {v[1]['contact']}."))

    # download a file from the locker and say when it was uploaded
    files = rows(s, "attachments")
    f = first((r for r in files if sum(x["filename"].split("-")[0] == r["filename"].split("-")[0] for x in files) == 1
               and sum(x["uploaded"] == r["uploaded"] for x in files) == 1), "a file")
    kind = f["filename"].split("-")[0]
    other = first((r for r in files if r["id"] != f["id"]), "another file")
    (task(s, "download-locker-file", url(s), f"""Download the {kind} PDF from my Pigeon Post file locker and tell me on
        which date it was uploaded.""")
     .add("open_menu_item", "Open the file locker", open_menu(s, "home", "attachments"))
     .add("download_file", f"Download {f['filename']}", download(s, "attachments", f["id"]))
     .add("report_information", "Report its upload date")
     .ask(f["uploaded"], f"{f['filename']} was uploaded on {f['uploaded']}.", "date")
     .wrong_value("download_file", 0, str(other["id"])))

    # delete a contact after signing in
    gone = people[2 * len(people) // 3]
    assert gone["id"] != who["id"]
    (task(s, "delete-contact", url(s, C), f"""{gone['name']} has left and I don't need the contact any more. Sign in to
        Pigeon Post ({USER[0]} / {USER[1]}), find {gone['name']} in my contacts and delete the entry.""", login=True)
     .add("authenticate_by_form", "Sign in as alex", login(s))
     .add("search_by_text", f"Search the contacts for {gone['name']}",
          after([menu(s, "home", C)], search(s, C, gone["name"])))
     .add("open_detail", "Open the contact", detail(s, C, gone["id"]))
     .add("delete_entry", "Delete it", delete(s, C, gone["id"]))
     .wrong_skip("delete_entry"))

    # cross-site: a contact's phone number into a viewing booking
    buyer = people[len(people) // 2]
    home = [r for r in view("realestate", "listings", tab="For sale") if distinct("realestate", "listings", "address", r["address"])][-1]
    booking = {"visitor": buyer["name"], "listing": home["id"], "day": "2027-01-16", "time": "10:30", "phone": buyer["phone"],
               "status": "Requested"}
    wrong_phone = first((r["phone"] for r in people if r["phone"] != buyer["phone"]), "another phone")
    (task(s, "book-viewing-for-contact", "/", f"""My friend {buyer['name']} wants to see the house at {home['address']}.
        Look up their phone number in my Pigeon Post contacts, then on Keystone Homes book a viewing of that house for
        them on Saturday 2027-01-16 at 10:30, status Requested, with their name and phone number.""", sites=[s, "realestate"])
     .add("search_by_text", f"Find {buyer['name']} in the contacts",
          after([app(s), menu(s, "home", C)], search(s, C, buyer["name"])))
     .add("open_menu_item", "Open Keystone Homes' viewings",
          after([step("goto", url="/"), app("realestate")], open_menu("realestate", "home", "viewings")))
     .add("create_entry", "Book the viewing", create("realestate", "viewings", booking))
     .wrong_value("create_entry", 5, wrong_phone))



# ================================================================ Wayfarer (travel)
def travel():
    s, F, H, B = "travel", "flights", "hotels", "bookings"

    # the cheapest nonstop flight on a busy route
    def nonstop(o, d): return view(s, F, origin=o, destination=d, stops="Nonstop")
    routes = Counter((r["origin"], r["destination"]) for r in rows(s, F))
    o, d = first((rt for rt, _ in routes.most_common() if len(nonstop(*rt)) >= 2
                  and sorted(x["price"] for x in nonstop(*rt))[0] < sorted(x["price"] for x in nonstop(*rt))[1]), "a route")
    v = sorted(nonstop(o, d), key=lambda r: r["price"])
    (task(s, "cheapest-nonstop-flight", url(s, F), f"""I need to fly from {o} to {d} and I hate layovers. On Wayfarer, show
        me only nonstop flights on that route and tell me the flight number of the cheapest one.""")
     .add("filter_by_dropdown", f"Choose {o} as the origin", dropdown(s, F, "origin", o))
     .add("filter_by_dropdown", f"Choose {d} as the destination", dropdown(s, F, "destination", d))
     .add("filter_by_options", "Show only nonstop flights", options(s, F, "stops", "Nonstop"))
     .add("report_information", "Report the cheapest flight's number")
     .ask(v[0]["flight"], f"The cheapest nonstop is {v[0]['flight']} at {money(v[0]['price'])}.")
     .wrong_answer(f"Take {v[1]['flight']}."))

    # flights in a month under a price
    P = 150
    n = len(view(s, F, depart_from="2027-01-01", depart_to="2027-01-31", price_max=P))
    assert n >= 2
    (task(s, "count-cheap-january-flights", url(s, F), f"""How many Wayfarer flights leave between 2027-01-01 and 2027-01-31
        and cost at most ${P}? Set the date range and the price slider and tell me the number.""")
     .add("filter_by_date_range", "Limit departures to January 2027", dates(s, F, "depart", "2027-01-01", "2027-01-31"))
     .add("filter_by_slider", f"Limit the price to ${P}", slider(s, F, "price", P))
     .add("count_entries", "Report how many flights are listed")
     .ask(n, f"{plural(n, 'flight')} match.", "number")
     .wrong_answer(f"{plural(n + 1, 'flight')}."))

    # review the cheapest 4-star hotel in a city
    city = first((c for c in S[s].collections[H]["fields"]["city"]["options"]
                  if len(view(s, H, city=c, stars="4")) >= 2), "a city with 4-star hotels")
    v = sorted(view(s, H, city=city, stars="4"), key=lambda r: r["price_night"])
    assert v[0]["price_night"] < v[1]["price_night"]
    note = "Spotless room, friendly staff and a great breakfast. Would stay again."
    (task(s, "review-cheapest-4-star-hotel", url(s, H), f"""We stayed at the cheapest 4-star hotel Wayfarer lists in {city}.
        Find it (filter the hotels to {city} and 4 stars), open it and post this review: "{note}" """)
     .add("filter_by_dropdown", f"Show only hotels in {city}", dropdown(s, H, "city", city))
     .add("filter_by_options", "Show only 4-star hotels", options(s, H, "stars", "4"))
     .add("open_detail", f"Open {v[0]['name']}", detail(s, H, v[0]["id"]))
     .add("add_comment", "Post the review", comment(s, H, v[0]["id"], note))
     .wrong_skip("filter_by_options"))

    # cancel a pending trip after signing in
    pend = view(s, B, tab="Pending payment")
    assert len(pend) >= 2
    trip = pend[0]
    (task(s, "cancel-pending-trip", url(s, B), f"""I won't pay for trip {trip['reference']} to {trip['destination']}, so
        please cancel it: sign in to Wayfarer ({USER[0]} / {USER[1]}), find it under my trips waiting for payment and
        delete it.""", login=True)
     .add("authenticate_by_form", "Sign in as alex", login(s))
     .add("switch_tab", "Show the trips pending payment",
          after([menu(s, "home", B)], tab(s, B, "Pending payment")))
     .add("open_detail", f"Open trip {trip['reference']}", detail(s, B, trip["id"]))
     .add("delete_entry", "Delete it", delete(s, B, trip["id"]))
     .wrong_value("open_detail", 0, str(pend[1]["id"])))

    # move a hotel stay by a week, signing in when the edit form asks
    stay = first((r for r in view(s, B, tab="Confirmed") if r["kind"] == "Hotel" and len(view(s, B, q=r["reference"])) == 1),
                 "a confirmed hotel stay")
    new = {"check_in": later(stay["check_in"]), "check_out": later(stay["check_out"])}
    (task(s, "move-hotel-stay-a-week", url(s, B), f"""My {stay['destination']} hotel stay {stay['reference']} has to move
        one week later: {new['check_in']} to {new['check_out']}. Change the dates on Wayfarer (my login is {USER[0]} /
        {USER[1]}).""", login=True)
     .add("search_by_text", f"Search my trips for {stay['reference']}", search(s, B, stay["reference"]))
     .add("open_detail", "Open the trip", detail(s, B, stay["id"]))
     .add("authenticate_by_form", "Sign in when the edit form asks for it", login(s, step("click", f"{B}-edit-link")))
     .add("edit_entry", "Change the dates", edit(s, B, stay["id"], new, open_form=False))
     .wrong_value("edit_entry", 1, stay["check_out"]))

    # cross-site: a booking reference into a mail draft
    city = first((c for c in S[s].collections[B]["fields"]["destination"]["options"]
                  if len(view(s, B, tab="Confirmed", q=c)) >= 2), "a destination with confirmed trips")
    v = view(s, B, tab="Confirmed", q=city)
    assert all(r["destination"] == city for r in v) and v[0]["check_in"] < v[1]["check_in"]
    body = f"Booking reference: {v[0]['reference']}"
    msg = {"contact": ME[0], "email": ME[1], "subject": f"{city} trip", "folder": "Drafts", "label": "Travel", "body": body}
    (task(s, "mail-next-trip-reference", "/", f"""Find my next confirmed Wayfarer trip to {city} and copy its booking
        reference, then in Pigeon Post save a draft to myself ({ME[0]}, {ME[1]}) with the subject "{city} trip", the
        label Travel and the message "Booking reference: <the reference>".""", sites=[s, "mail"])
     .add("switch_tab", "Show my confirmed trips",
          after([app(s), menu(s, "home", B)], tab(s, B, "Confirmed")))
     .add("search_by_text", f"Search them for {city}", search(s, B, city))
     .add("copy_to_clipboard", "Copy the next trip's reference", copy_row(s, B, v[0]["id"], v[0]["reference"]))
     .add("create_entry", "Save the draft in Pigeon Post",
          mail_draft(msg))
     .wrong_value("create_entry", 6, f"Booking reference: {v[1]['reference']}"))

    # cross-site: two signatures
    (task(s, "sign-waiver-and-honour-code", "/", f"""Before my study trip I have two forms to sign, both as {ME[0]}: the
        travel waiver on Wayfarer and the honour code on Brightpath Academy.""", sites=[s, "learning"])
     .add("open_menu_item", "Open Wayfarer's travel waiver", after([app(s)], open_menu(s, "home", "waiver")))
     .add("draw_signature", "Sign the waiver", sign(s, "waiver", ME[0]))
     .add("open_menu_item", "Open Brightpath's honour code",
          after([step("goto", url="/"), app("learning")], open_menu("learning", "home", "honour")))
     .add("draw_signature", "Sign the honour code", sign("learning", "honour", ME[0]))
     .wrong_skip("draw_signature#2"))

    # latest departures, page 2
    v = view(s, F, sort="depart_desc")
    k = per_page(s, F)
    assert v[k]["depart"] != v[0]["depart"]
    (task(s, "latest-flights-second-page", url(s, F), """Sort the Wayfarer flights by departure date, latest first, go to
        the second page and tell me the departure date of the first flight listed there.""")
     .add("sort_by_form", "Sort by departure date, latest first", sort(s, F, "depart_desc"))
     .add("paginate", "Go to page 2", paginate(s, F, 2))
     .add("report_information", "Report the first flight's departure date")
     .ask(v[k]["depart"], f"It departs on {v[k]['depart']}.", "date")
     .wrong_answer(f"It departs on {v[0]['depart']}."))

    # half-board hotels under a nightly price
    P = 140
    n = len(view(s, H, board="Half board", price_night_max=P))
    assert 1 <= n < len(view(s, H, board="Half board"))
    (task(s, "count-half-board-hotels", url(s, H), f"""How many Wayfarer hotels offer half board for at most ${P} a night?""")
     .add("filter_by_options", "Show only half-board hotels", options(s, H, "board", "Half board"))
     .add("filter_by_slider", f"Limit the nightly price to ${P}", slider(s, H, "price_night", P))
     .add("count_entries", "Report how many hotels are listed")
     .ask(n, f"{plural(n, 'hotel')}.", "number")
     .wrong_skip("filter_by_slider"))



# ================================================================ Brightpath Academy (learning)
def learning():
    s, C, A = "learning", "courses", "assignments"

    # the cheapest beginner programming course's code
    v = sorted(view(s, C, subject="Programming", level="Beginner"), key=lambda r: r["price"])
    assert 2 <= len(v) <= per_page(s, C) and v[0]["price"] < v[1]["price"]
    (task(s, "cheapest-beginner-programming-code", url(s, C), """I want to start programming. On Brightpath Academy,
        show me the Programming courses at Beginner level, open the cheapest one and tell me its course code.""")
     .add("filter_by_dropdown", "Show only Programming courses", dropdown(s, C, "subject", "Programming"))
     .add("filter_by_options", "Show only Beginner courses", options(s, C, "level", "Beginner"))
     .add("open_detail", f"Open the cheapest one ({v[0]['title']})", detail(s, C, v[0]["id"]))
     .add("report_information", "Report its course code")
     .ask(v[0]["code"], f"The cheapest is {v[0]['title']}, course code {v[0]['code']}.")
     .wrong_answer(f"The code is {v[1]['code']}."))

    # review a course found by its title
    music = sorted((r for r in rows(s, C) if r["subject"] == "Music" and plain(r["title"]) and distinct(s, C, "title", r["title"])
                    and len(view(s, C, q=r["title"])) == 1), key=lambda r: (-float(r["rating"] or 0), r["id"]))
    course = first(music, "a music course")
    note = "Clear explanations and useful weekly exercises. I learned a lot!"
    (task(s, "review-music-course", url(s, C), f"""I finished "{course['title']}" on Brightpath Academy. Find the course,
        open it and post this review: "{note}" """)
     .add("search_by_text", f"Search for {course['title']}", search(s, C, course["title"]))
     .add("open_detail", "Open the course", detail(s, C, course["id"]))
     .add("add_comment", "Post the review", comment(s, C, course["id"], note))
     .wrong_value("add_comment", 0, "Great course."))

    # export a filtered catalogue
    P = 150
    q = {"format": "Self-paced", "price_max": str(P), "starts_from": "2027-01-01", "starts_to": "2027-03-31"}
    assert len(view(s, C, **q)) >= 2
    (task(s, "export-self-paced-winter-courses", url(s, C), f"""Download the Brightpath course catalogue as a CSV, but only
        the self-paced courses that cost at most ${P} and start between 2027-01-01 and 2027-03-31.""")
     .add("filter_by_options", "Show only self-paced courses", options(s, C, "format", "Self-paced"))
     .add("filter_by_slider", f"Limit the price to ${P}", slider(s, C, "price", P))
     .add("filter_by_date_range", "Limit the start dates to January to March 2027", dates(s, C, "starts", "2027-01-01", "2027-03-31"))
     .add("download_file", "Export the list as CSV", export(s, C, q))
     .wrong_skip("filter_by_date_range"))

    # mark an assignment submitted, signing in when the edit form asks
    job = first((r for r in view(s, A, tab="In progress") if plain(r["title"]) and distinct(s, A, "title", r["title"])
                 and len(view(s, A, q=r["title"])) == 1), "an assignment in progress")
    (task(s, "mark-assignment-submitted", url(s, A), f"""I just handed in "{job['title']}" for {job['course']}. Mark it as
        Submitted on Brightpath Academy (sign in as {USER[0]} / {USER[1]} when asked).""", login=True)
     .add("search_by_text", "Search for the assignment", search(s, A, job["title"]))
     .add("open_detail", "Open it", detail(s, A, job["id"]))
     .add("authenticate_by_form", "Sign in when the edit form asks for it", login(s, step("click", f"{A}-edit-link")))
     .add("edit_entry", "Set its status to Submitted", edit(s, A, job["id"], {"status": "Submitted"}, open_form=False))
     .wrong_value("edit_entry", 0, "Graded"))

    # add an assignment after signing in, then count that course's assignments
    course = "Startup Finance"
    assert course in S[s].collections[A]["fields"]["course"]["options"]
    new = {"title": "Memo 4: pricing strategy", "course": course, "assigned": "2026-12-01", "due": "2026-12-15",
           "status": "Not started", "points": 20}
    assert not any(r["title"] == new["title"] for r in rows(s, A))
    n = len(view(s, A, course=course)) + 1
    (task(s, "add-finance-assignment", url(s, A), f"""Add a new assignment to my Brightpath list (log in as {USER[0]} /
        {USER[1]}): "{new['title']}" for {course}, assigned {new['assigned']}, due {new['due']}, status Not started,
        {new['points']} points. Then show only the {course} assignments and tell me how many there are.""", login=True)
     .add("authenticate_by_form", "Sign in when the new-assignment form asks for it", login(s, step("click", f"{A}-new")))
     .add("create_entry", "Create the assignment", create(s, A, new, open_form=False))
     .add("filter_by_dropdown", f"Show only {course} assignments",
          after([step("click", f"{A}-item-crumbs", url(s, A))], dropdown(s, A, "course", course)))
     .add("count_entries", "Report how many assignments are listed")
     .ask(n, f"{course} has {plural(n, 'assignment')}.", "number")
     .wrong_skip("filter_by_dropdown"))

    # study planner: move a card to Done, count what is left this week
    plan = sorted(rows(s, "planner"), key=lambda r: r["position"])
    titles = Counter(r["item"] for r in plan)
    card = first((r for r in plan if r["week"] == "This week" and titles[r["item"]] == 1), "a card this week")
    n = sum(r["week"] == "This week" for r in plan) - 1
    (task(s, "planner-card-done", url(s), f"""I'm done with "{card['item']}". On my Brightpath study planner, move it from
        This week to Done, and tell me how many items are still planned for this week.""")
     .add("open_menu_item", "Open the study planner", open_menu(s, "home", "planner"))
     .add("reorder_by_drag", f"Drag {card['item']} to Done", drag(s, "planner", card["id"], "Done"))
     .add("report_information", "Report how many items This week still has")
     .ask(n, f"{plural(n, 'item')} left for this week.", "number")
     .wrong_value("reorder_by_drag", 0, "Later", field="to"))

    # upload a submission after signing in
    (task(s, "upload-essay-submission", url(s), f"""Upload my essay "essay-2-my-city.pdf" to Brightpath's Submissions page.
        You'll have to sign in first: {USER[0]} / {USER[1]}.""", login=True)
     .add("authenticate_by_form", "Sign in as alex", login(s))
     .add("open_menu_item", "Open Submissions", open_menu(s, "home", "submissions"))
     .add("upload_file", "Upload essay-2-my-city.pdf", upload(s, "submissions", "essay-2-my-city.pdf"))
     .wrong_skip("upload_file"))

    # cross-site: a course code into a mail draft to a friend
    ds = first((r for r in view(s, C, subject="Data Science") if plain(r["title"]) and distinct(s, C, "title", r["title"])
                and len(view(s, C, q=r["title"])) == 1), "a data science course")
    buddy = first((r for r in view("mail", "contacts") if r["company"] == "Freelance"), "a contact")
    subject = f"Let's take {ds['title']} together"
    msg = {"contact": buddy["name"], "email": buddy["email"], "subject": subject, "folder": "Drafts", "label": "Personal",
           "body": ds["code"]}
    (task(s, "send-course-code-to-friend", "/", f"""My study buddy {buddy['name']} ({buddy['email']}) wants to join me on
        "{ds['title']}". Copy its course code on Brightpath Academy, then in Pigeon Post save a draft to them with the
        subject "{subject}", labelled Personal, with just the course code as the message.""", sites=[s, "mail"])
     .add("search_by_text", f"Search the courses for {ds['title']}",
          after([app(s), menu(s, "home", C)], search(s, C, ds["title"])))
     .add("copy_to_clipboard", "Copy the course code", copy_row(s, C, ds["id"], ds["code"]))
     .add("create_entry", "Save the draft in Pigeon Post",
          mail_draft(msg))
     .wrong_skip("copy_to_clipboard"))

    # the first not-started assignment due in December
    v = view(s, A, tab="Not started", due_from="2026-12-01", due_to="2026-12-31", sort="due_asc")
    assert len(v) >= 2 and v[0]["due"] < v[1]["due"] and distinct(s, A, "title", v[0]["title"])
    (task(s, "first-december-deadline", url(s, A), """Which of my Brightpath assignments that I haven't started yet is due
        first in December 2026? Open the Not started tab, limit the due dates to 2026-12-01 to 2026-12-31, sort by due
        date and tell me its title.""")
     .add("switch_tab", "Open the Not started tab", tab(s, A, "Not started"))
     .add("filter_by_date_range", "Limit the due dates to December 2026", dates(s, A, "due", "2026-12-01", "2026-12-31"))
     .add("sort_by_form", "Sort by due date, earliest first", sort(s, A, "due_asc"))
     .add("report_information", "Report the title of the first one")
     .ask(v[0]["title"], f"\"{v[0]['title']}\" ({v[0]['course']}) is due first, on {v[0]['due']}.")
     .wrong_answer(f"It's {v[1]['title']}."))



# ================================================================ Keystone Homes (realestate)
def realestate():
    s, L, V = "realestate", "listings", "viewings"

    # the cheapest 3-bedroom home for sale in a city
    def three(c): return sorted(view(s, L, tab="For sale", city=c, bedrooms="3"), key=lambda r: r["price"])
    city = max((c for c in S[s].collections[L]["fields"]["city"]["options"]
                if len(three(c)) >= 2 and three(c)[0]["price"] < three(c)[1]["price"]), key=lambda c: len(three(c)))
    v = three(city)
    assert len(v) <= per_page(s, L) and distinct(s, L, "address", v[0]["address"])
    (task(s, "cheapest-three-bedroom-for-sale", url(s, L), f"""We need three bedrooms in {city}. On Keystone Homes, look at
        the homes for sale in {city} with 3 bedrooms and tell me the address of the cheapest one.""")
     .add("switch_tab", "Open the For sale tab", tab(s, L, "For sale"))
     .add("filter_by_dropdown", f"Show only {city}", dropdown(s, L, "city", city))
     .add("filter_by_options", "Show only 3-bedroom homes", options(s, L, "bedrooms", "3"))
     .add("report_information", "Report the cheapest home's address")
     .ask(v[0]["address"], f"The cheapest is {v[0]['address']} at {money(v[0]['price'])}.")
     .wrong_answer(f"It's {v[1]['address']}."))

    # a note on a listing found by its address
    home = first((r for r in view(s, L, tab="For sale") if plain(r["address"]) and distinct(s, L, "address", r["address"])
                  and len(view(s, L, q=r["address"])) == 1), "a listing")
    note = "Ask the agent how old the roof is and what the HOA fees are before we book a viewing."
    (task(s, "note-on-listing", url(s, L), f"""Leave a note on the Keystone Homes listing at {home['address']}: "{note}" """)
     .add("search_by_text", f"Search the listings for {home['address']}", search(s, L, home["address"]))
     .add("open_detail", "Open the listing", detail(s, L, home["id"]))
     .add("add_comment", "Post the note", comment(s, L, home["id"], note))
     .wrong_value("add_comment", 0, "Ask about the roof."))

    # export a city's condos and count them (one checkbox value: the list's links drop repeated query keys, see the report)
    def condos(c): return view(s, L, city=c, type="Condo")
    city = max(S[s].collections[L]["fields"]["city"]["options"], key=lambda c: (len(condos(c)) >= 3, -len(condos(c))))
    n = len(condos(city))
    assert n >= 3 and any(r["type"] == "Townhouse" for r in view(s, L, city=city))
    (task(s, "export-city-condos", url(s, L), f"""Export every condo Keystone Homes lists in {city} as a CSV file, and tell
        me how many condos are in it.""")
     .add("filter_by_dropdown", f"Show only {city}", dropdown(s, L, "city", city))
     .add("filter_by_options", "Show only condos", options(s, L, "type", "Condo"))
     .add("download_file", "Export the list as CSV", export(s, L, {"city": city, "type": "Condo"}))
     .add("count_entries", "Report how many condos the export holds")
     .ask(n, f"{plural(n, 'condo')}.", "number")
     .wrong_value("filter_by_options", 0, "Townhouse"))

    # move an offer on the board after signing in, then count the column
    offers = sorted(rows(s, "offers"), key=lambda r: r["position"])
    titles = Counter(r["summary"] for r in offers)
    offer = first((r for r in offers if r["stage"] == "Drafting" and titles[r["summary"]] == 1), "a drafted offer")
    n = sum(r["stage"] == "Submitted" for r in offers) + 1
    (task(s, "submit-drafted-offer", url(s), f"""I sent the offer "{offer['summary']}" to the seller. Sign in to Keystone
        Homes ({USER[0]} / {USER[1]}), move it from Drafting to Submitted on My offers, and tell me how many offers are
        now in Submitted.""", login=True)
     .add("authenticate_by_form", "Sign in as alex", login(s))
     .add("open_menu_item", "Open My offers", open_menu(s, "home", "offers"))
     .add("reorder_by_drag", "Drag the offer to Submitted", drag(s, "offers", offer["id"], "Submitted"))
     .add("report_information", "Report how many offers Submitted holds")
     .ask(n, f"Submitted now holds {plural(n, 'offer')}.", "number")
     .wrong_answer(f"Submitted holds {plural(n - 1, 'offer')}."))

    # reschedule a requested viewing, signing in when the edit form asks
    visit = first((r for r in view(s, V, status="Requested") if plain(r["visitor"]) and distinct(s, V, "visitor", r["visitor"])
                   and len(view(s, V, q=r["visitor"])) == 1), "a requested viewing")
    times = CONTROLS[s][f"{V}-edit-time"].options
    new_time = first((o["value"] for o in times if o["value"] != visit["time"]), "another time")
    other_time = first((o["value"] for o in times if o["value"] not in (visit["time"], new_time)), "a third time")
    new_day = (date.fromisoformat(visit["day"]) + timedelta(days=7)).isoformat()
    (task(s, "reschedule-viewing", url(s, V), f"""{visit['visitor']} can't make their viewing on {visit['day']}. Move it
        one week later, to {new_day} at {new_time}, on Keystone Homes (my login is {USER[0]} / {USER[1]}).""", login=True)
     .add("search_by_text", f"Search the viewings for {visit['visitor']}", search(s, V, visit["visitor"]))
     .add("open_detail", "Open the viewing", detail(s, V, visit["id"]))
     .add("authenticate_by_form", "Sign in when the edit form asks for it", login(s, step("click", f"{V}-edit-link")))
     .add("edit_entry", "Change the date and time", edit(s, V, visit["id"], {"day": new_day, "time": new_time}, open_form=False))
     .wrong_value("edit_entry", 1, other_time))

    # sign an offer letter, then count the signatures
    n = min(len(rows(s, "offer_letters")) + 1, 10)
    (task(s, "sign-offer-letter", url(s), f"""Sign the offer letter on Keystone Homes as {ME[0]}, then tell me how many
        signatures the page lists.""")
     .add("open_menu_item", "Open Sign an offer", open_menu(s, "home", "sign"))
     .add("draw_signature", "Sign as Alex Morgan", sign(s, "sign", ME[0]))
     .add("report_information", "Report how many signatures are listed")
     .ask(n, f"The page lists {plural(n, 'signature')}.", "number")
     .wrong_skip("draw_signature"))

    # upload a document after signing in
    (task(s, "upload-proof-of-funds", url(s), f"""Upload my proof of funds, "proof-of-funds.pdf", to my mortgage documents
        on Keystone Homes. Sign in first with {USER[0]} / {USER[1]}.""", login=True)
     .add("authenticate_by_form", "Sign in as alex", login(s))
     .add("open_menu_item", "Open Mortgage documents", open_menu(s, "home", "documents"))
     .add("upload_file", "Upload proof-of-funds.pdf", upload(s, "documents", "proof-of-funds.pdf"))
     .wrong_value("upload_file", 0, "bank-statement.pdf"))

    # cross-site: a listing ID into a message to the agent
    def towns(c): return sorted(view(s, L, city=c, type="Townhouse"), key=lambda r: r["price"])
    city = first((c for c in S[s].collections[L]["fields"]["city"]["options"] if len(towns(c)) >= 2
                  and towns(c)[0]["price"] < towns(c)[1]["price"] and len(towns(c)) <= per_page(s, L)), "townhouses")
    v = towns(city)
    ref = S[s].pages[L]["copy"]                       # the field the copy buttons copy (the listing's reference)
    agent = v[0]["agent"]
    email = agent.lower().replace(" ", ".") + "@keystonehomes.example"
    msg = {"contact": agent, "email": email, "subject": f"Townhouse in {city}", "folder": "Sent", "label": "Personal",
           "body": v[0][ref]}
    (task(s, "send-townhouse-id-to-agent", "/", f"""Find the cheapest townhouse Keystone Homes lists in {city} and copy its
        listing ID. Then write to my agent {agent} ({email}) in Pigeon Post: a new message in the Sent folder, labelled
        Personal, with the subject "Townhouse in {city}" and just the listing ID as the text.""", sites=[s, "mail"])
     .add("filter_by_dropdown", f"Show only {city}",
          after([app(s), menu(s, "home", L)], dropdown(s, L, "city", city)))
     .add("filter_by_options", "Show only townhouses", options(s, L, "type", "Townhouse"))
     .add("copy_to_clipboard", "Copy the cheapest one's listing ID", copy_row(s, L, v[0]["id"], v[0][ref]))
     .add("create_entry", "Write the message in Pigeon Post",
          mail_draft(msg))
     .wrong_value("create_entry", 6, v[1][ref]))

    # homes listed in a period under a price
    P = 400000
    q = {"price_max": P, "listed_from": "2026-10-01", "listed_to": "2026-11-30"}
    n = len(view(s, L, **q))
    assert n >= 2
    (task(s, "count-recent-affordable-homes", url(s, L), f"""How many homes has Keystone Homes listed between 2026-10-01 and
        2026-11-30 at a price of at most ${P:,}?""")
     .add("filter_by_slider", f"Limit the price to ${P:,}", slider(s, L, "price", P))
     .add("filter_by_date_range", "Limit the listing dates to October and November 2026", dates(s, L, "listed", "2026-10-01", "2026-11-30"))
     .add("count_entries", "Report how many homes are listed")
     .ask(n, f"{plural(n, 'home')}.", "number")
     .wrong_answer(f"{plural(n - 1, 'home')}."))


# ---------------------------------------------------------------- the training sites (a task there touches no test site)
def options_of(site, coll, field): return S[site].collections[coll]["fields"][field]["options"]

def findable(site, pid, field, r):
    "A row a search for its `field` finds alone, whose `field` is a plain name no other row shares (so the search is a clear step)."
    coll = S[site].pages[pid]["collection"]
    return plain(r[field]) and distinct(site, coll, field, r[field]) and len(view(site, pid, q=r[field])) == 1


# ================================================================ Lumen Market (shop)
def shop():
    s, P = "shop", "products"

    # the cheapest product of one brand in one category (not 'Fennel & Co': an '&' in a ticked value is one more thing to escape)
    lines = {(c, b): view(s, P, category=c, brand=b, sort="price_asc")
             for c in options_of(s, P, "category") for b in options_of(s, P, "brand") if "&" not in b}
    c, b = max((k for k, v in lines.items() if len(v) >= 3 and v[0]["price"] < v[1]["price"] and plain(v[0]["name"])
                and distinct(s, P, "name", v[0]["name"])), key=lambda k: len(lines[k]))
    v = lines[(c, b)]
    (task(s, "cheapest-brand-product", url(s, P), f"""I only buy {b}. On Lumen Market, show me the {c} products from {b},
        sort them by price (lowest first) and tell me which one is the cheapest.""")
     .add("filter_by_dropdown", f"Show only {c} products", dropdown(s, P, "category", c))
     .add("filter_by_options", f"Show only {b}", options(s, P, "brand", b))
     .add("sort_by_form", "Sort by price, lowest first", sort(s, P, "price_asc"))
     .add("report_information", "Report the cheapest product's name")
     .ask(v[0]["name"], f"The cheapest is {v[0]['name']}, at {money(v[0]['price'])}.")
     .wrong_answer(f"It's {v[1]['name']}."))

    # export the outdoor gear under a price and count it
    def gear(m=None): return view(s, P, category="Outdoor", **({"price_max": m} if m else {}))
    M = first((m for m in (100, 150, 200, 250, 300) if len(gear(m)) >= 3), "outdoor gear under a price")
    n = len(gear(M))
    assert n < len(gear())
    (task(s, "export-budget-outdoor-gear", url(s, P), f"""I'm kitting out a camping trip on a budget. Export every Outdoor
        product on Lumen Market that costs at most ${M} as a CSV file, and tell me how many products are in it.""")
     .add("filter_by_dropdown", "Show only Outdoor products", dropdown(s, P, "category", "Outdoor"))
     .add("filter_by_slider", f"Limit the price to ${M}", slider(s, P, "price", M))
     .add("download_file", "Export the list as CSV", export(s, P, {"category": "Outdoor", "price_max": str(M)}))
     .add("count_entries", "Report how many products the export holds")
     .ask(n, f"The export holds {plural(n, 'product')}.", "number")
     .wrong_skip("filter_by_slider"))

    # cross-site: a product's SKU into an issue on the tracker
    item = first((r for r in view(s, P, category="Electronics") if findable(s, P, "name", r)), "an electronics product")
    title = f"Wrong price on the product page of the {item['name']}"
    issue = {"title": title, "component": "Web app", "priority": "High", "status": "Open", "opened": "2026-11-30",
             "description": item["sku"]}
    assert not any(r["title"] == title for r in rows("tracker", "issues"))
    (task(s, "report-product-price-bug", "/", f"""The {item['name']} page on Lumen Market shows a wrong price. Find the product
        there and copy its SKU, then file an issue on Ridgeline Issues titled "{title}": component Web app, priority High,
        status Open, opened 2026-11-30, with just the SKU as the description.""", sites=[s, "tracker"])
     .add("search_by_text", f"Search the products for {item['name']}",
          after([app(s), menu(s, "home", P)], search(s, P, item["name"])))
     .add("copy_to_clipboard", "Copy its SKU", copy_row(s, P, item["id"], item["sku"]))
     .add("create_entry", "File the issue on Ridgeline Issues", elsewhere("tracker", "issues", create("tracker", "issues", issue)))
     .wrong_skip("copy_to_clipboard"))


# ================================================================ Ridgeline Issues (tracker)
def tracker():
    s, I = "tracker", "issues"

    # move a sprint card to Review, then count the lane
    plan = sorted(rows(s, "sprint"), key=lambda r: r["position"])
    titles = Counter(r["task"] for r in plan)
    card = first((r for r in plan if r["lane"] == "Doing" and titles[r["task"]] == 1), "a card in Doing")
    n = sum(r["lane"] == "Review" for r in plan) + 1
    (task(s, "sprint-card-to-review", url(s), f"""I've opened the pull request for "{card['task']}". On the Ridgeline sprint
        board, move it from Doing to Review, and tell me how many cards are in Review now.""")
     .add("open_menu_item", "Open the sprint board", open_menu(s, "home", "sprint"))
     .add("reorder_by_drag", f"Drag {card['task']} to Review", drag(s, "sprint", card["id"], "Review"))
     .add("report_information", "Report how many cards Review holds")
     .ask(n, f"Review now holds {plural(n, 'card')}.", "number")
     .wrong_value("reorder_by_drag", 0, "Done", field="to"))

    # a comment on an open mobile issue, after signing in
    bug = first((r for r in view(s, I, tab="Open", component="Mobile") if findable(s, I, "title", r)), "an open mobile issue")
    note = "I can reproduce this with the latest build. The steps are in the support ticket."
    (task(s, "comment-on-mobile-issue", url(s, I), f"""Sign in to Ridgeline Issues ({USER[0]} / {USER[1]}), find the issue
        "{bug['title']}" and add this comment to it: "{note}" """, login=True)
     .add("authenticate_by_form", "Sign in as alex", login(s))
     .add("search_by_text", "Search the issues for its title", after([menu(s, "home", I)], search(s, I, bug["title"])))
     .add("open_detail", f"Open {bug['key']}", detail(s, I, bug["id"]))
     .add("add_comment", "Post the comment", comment(s, I, bug["id"], note))
     .wrong_value("add_comment", 0, "Can reproduce."))

    # the open billing issue due first
    v = view(s, I, tab="Open", component="Billing", sort="due_asc")
    assert len(v) >= 2 and v[0]["due"] < v[1]["due"] and distinct(s, I, "title", v[0]["title"])
    (task(s, "first-due-billing-issue", url(s, I), """Which open Billing issue on Ridgeline Issues is due first? Open the
        Open tab, show only the Billing component, sort by due date (earliest first) and tell me the issue's title.""")
     .add("switch_tab", "Open the Open tab", tab(s, I, "Open"))
     .add("filter_by_dropdown", "Show only Billing issues", dropdown(s, I, "component", "Billing"))
     .add("sort_by_form", "Sort by due date, earliest first", sort(s, I, "due_asc"))
     .add("report_information", "Report the first issue's title")
     .ask(v[0]["title"], f"\"{v[0]['title']}\" ({v[0]['key']}) is due first, on {v[0]['due']}.")
     .wrong_answer(f"It's \"{v[1]['title']}\"."))


# ================================================================ Tempo Rooms (calendar)
def calendar():
    s, B = "calendar", "bookings"

    # sign the house rules, then count the signatures
    n = min(len(rows(s, "house_rules")) + 1, 10)
    (task(s, "sign-house-rules", url(s), f"""Before my first booking on Tempo Rooms I have to sign the house rules. Sign them as
        {ME[0]}, then tell me how many signatures the page lists.""")
     .add("open_menu_item", "Open the house rules", open_menu(s, "home", "rules"))
     .add("draw_signature", "Sign as Alex Morgan", sign(s, "rules", ME[0]))
     .add("report_information", "Report how many signatures are listed")
     .ask(n, f"The page lists {plural(n, 'signature')}.", "number")
     .wrong_skip("draw_signature"))

    # one room's small bookings in a month
    dec = {"day_from": "2026-12-01", "day_to": "2026-12-31"}
    def booked(room, a=None): return view(s, B, room=room, **dec, **({"attendees_max": a} if a else {}))
    room, A = first(((r, a) for r in options_of(s, B, "room") for a in (4, 6, 8, 10, 12)
                     if 2 <= len(booked(r, a)) < len(booked(r))), "a room with small and large bookings")
    n = len(booked(room, A))
    (task(s, "count-small-december-bookings", url(s, B), f"""How many bookings of the {room} room on Tempo Rooms in December
        2026 are for at most {A} people? Filter by the room, set the attendees slider to {A} and the dates to 2026-12-01 to
        2026-12-31, and give me the number.""")
     .add("filter_by_dropdown", f"Show only {room}", dropdown(s, B, "room", room))
     .add("filter_by_slider", f"Limit the attendees to {A}", slider(s, B, "attendees", A))
     .add("filter_by_date_range", "Limit the dates to December 2026", dates(s, B, "day", "2026-12-01", "2026-12-31"))
     .add("count_entries", "Report how many bookings are listed")
     .ask(n, f"{plural(n, 'booking')}.", "number")
     .wrong_answer(f"{plural(n + 1, 'booking')}."))

    # cancel a workshop, signing in when the edit form asks
    ws = first((r for r in view(s, B, tab="Confirmed") if r["kind"] == "Workshop" and r["day"] >= "2026-12-01"
                and findable(s, B, "title", r)), "a workshop in December or later")
    (task(s, "cancel-workshop-booking", url(s, B), f"""The "{ws['title']}" on {ws['day']} is off. Find the booking on Tempo
        Rooms and set its status to Cancelled (sign in as {USER[0]} / {USER[1]} when asked).""", login=True)
     .add("search_by_text", "Search the bookings for the workshop", search(s, B, ws["title"]))
     .add("open_detail", "Open the booking", detail(s, B, ws["id"]))
     .add("authenticate_by_form", "Sign in when the edit form asks for it", login(s, step("click", f"{B}-edit-link")))
     .add("edit_entry", "Set its status to Cancelled", edit(s, B, ws["id"], {"status": "Cancelled"}, open_form=False))
     .wrong_value("edit_entry", 0, "Tentative"))


# ================================================================ Stackboard (kanban)
def kanban():
    s, T = "kanban", "tasks"

    # move a card to In progress, then count the column
    cards = sorted(rows(s, T), key=lambda r: r["position"])
    card = first((r for r in cards if r["stage"] == "To do" and distinct(s, T, "title", r["title"])), "a card in To do")
    n = sum(r["stage"] == "In progress" for r in cards) + 1
    (task(s, "start-board-card", url(s), f"""I'm starting on "{card['title']}" today. On the Stackboard board, move it from To do
        to In progress, and tell me how many cards are in progress now.""")
     .add("open_menu_item", "Open the board", open_menu(s, "home", "board"))
     .add("reorder_by_drag", f"Drag {card['title']} to In progress", drag(s, "board", card["id"], "In progress"))
     .add("report_information", "Report how many cards In progress holds")
     .ask(n, f"{plural(n, 'card')} in progress now.", "number")
     .wrong_answer(f"{plural(n - 1, 'card')} in progress."))

    # add a task after signing in, then count its area's tasks
    new = {"title": "Help article: Orbit beta release notes", "area": "Docs", "stage": "To do", "owner": "Ines", "points": 2,
           "due": "2026-12-18", "details": "Summarise what changed for beta testers."}
    assert not any(r["title"] == new["title"] for r in rows(s, T))
    n = len(view(s, T, area="Docs")) + 1
    (task(s, "add-docs-task", url(s, T), f"""Add a task to Stackboard (my login is {USER[0]} / {USER[1]}): "{new['title']}",
        area Docs, stage To do, owner Ines, {new['points']} points, due {new['due']}, details "{new['details']}". Then show
        only the Docs tasks and tell me how many there are.""", login=True)
     .add("authenticate_by_form", "Sign in when the new-task form asks for it", login(s, step("click", f"{T}-new")))
     .add("create_entry", "Create the task", create(s, T, new, open_form=False))
     .add("filter_by_dropdown", "Show only Docs tasks", after([step("click", f"{T}-item-crumbs", url(s, T))], dropdown(s, T, "area", "Docs")))
     .add("count_entries", "Report how many Docs tasks are listed")
     .ask(n, f"There are {plural(n, 'Docs task')}.", "number")
     .wrong_value("create_entry", 1, "Design"))

    # one person's biggest backend task
    def mine(o): return view(s, T, area="Backend", owner=o, sort="points_desc")
    owner = first((o for o in options_of(s, T, "owner") if len(mine(o)) >= 2 and mine(o)[0]["points"] > mine(o)[1]["points"]
                   and distinct(s, T, "title", mine(o)[0]["title"])), "an owner with backend tasks")
    v = mine(owner)
    (task(s, "biggest-backend-task", url(s, T), f"""What is {owner}'s biggest Backend task on Stackboard? Show only Backend
        tasks owned by {owner}, sort them by size (largest first) and tell me the title of the first one.""")
     .add("filter_by_dropdown", "Show only Backend tasks", dropdown(s, T, "area", "Backend"))
     .add("filter_by_options", f"Show only {owner}'s tasks", options(s, T, "owner", owner))
     .add("sort_by_form", "Sort by size, largest first", sort(s, T, "points_desc"))
     .add("report_information", "Report the biggest task's title")
     .ask(v[0]["title"], f"\"{v[0]['title']}\" ({v[0]['points']} points).")
     .wrong_answer(f"\"{v[1]['title']}\"."))


# ================================================================ Northstar People (hr)
def hr():
    s, E = "hr", "employees"

    # upload a document after signing in, then count the documents
    n = len(rows(s, "documents")) + 1
    (task(s, "upload-signed-amendment", url(s), f"""Upload my signed contract amendment, "contract-amendment-signed.pdf", to my
        documents on Northstar People, and tell me how many documents are there now. Sign in first with {USER[0]} /
        {USER[1]}.""", login=True)
     .add("authenticate_by_form", "Sign in as alex", login(s))
     .add("open_menu_item", "Open My documents", open_menu(s, "home", "documents"))
     .add("upload_file", "Upload contract-amendment-signed.pdf", upload(s, "documents", "contract-amendment-signed.pdf"))
     .add("report_information", "Report how many documents are listed")
     .ask(n, f"There are now {plural(n, 'document')}.", "number")
     .wrong_value("upload_file", 0, "contract-amendment.pdf"))

    # export one office's team under a salary: the biggest department of one office
    def team(d, o, m=None): return view(s, E, department=d, office=o, **({"salary_max": m} if m else {}))
    d, o = max(((d, o) for d in options_of(s, E, "department") for o in options_of(s, E, "office")), key=lambda k: len(team(*k)))
    M = first((m for m in range(50000, 180001, 5000) if 2 <= len(team(d, o, m)) < len(team(d, o))), f"{d} in {o} under a salary")
    (task(s, "export-office-team-salaries", url(s, E), f"""For the salary review, download the Northstar People directory as a
        CSV, but only the {d} people in the {o} office who earn at most ${M:,}.""")
     .add("filter_by_dropdown", f"Show only {d}", dropdown(s, E, "department", d))
     .add("filter_by_options", f"Show only the {o} office", options(s, E, "office", o))
     .add("filter_by_slider", f"Limit the salary to ${M:,}", slider(s, E, "salary", M))
     .add("download_file", "Export the list as CSV", export(s, E, {"department": d, "office": o, "salary_max": str(M)}))
     .wrong_skip("filter_by_options"))

    # cross-site: a colleague's email into a room booking
    hire = first((r for r in view(s, E, department="People") if findable(s, E, "name", r)), "someone in People")
    other = first((r for r in view(s, E, department="People") if r["id"] != hire["id"]), "another colleague")
    title = f"Welcome 1:1 with {hire['name']}"
    booking = {"title": title, "kind": "Meeting", "room": "Birch", "day": "2026-12-07", "start": "10:00", "duration": "30 min",
               "attendees": 2, "host": "Ana Silva", "status": "Confirmed", "notes": hire["email"]}
    assert not any(r["title"] == title for r in rows("calendar", "bookings"))
    book = elsewhere("calendar", "bookings", create("calendar", "bookings", booking))
    (task(s, "book-welcome-meeting", "/", f"""I'm meeting {hire['name']} from People next week. Look them up in the Northstar
        People directory and copy their email address, then on Tempo Rooms book Birch for a 30 min Meeting titled
        "{title}" on 2026-12-07 at 10:00: 2 attendees, host Ana Silva, status Confirmed, with their email as the notes.""",
          sites=[s, "calendar"])
     .add("search_by_text", f"Search the directory for {hire['name']}", after([app(s), menu(s, "home", E)], search(s, E, hire["name"])))
     .add("copy_to_clipboard", "Copy their email address", copy_row(s, E, hire["id"], hire["email"]))
     .add("create_entry", "Book the room on Tempo Rooms", book)
     .wrong_value("create_entry", next(i for i, x in enumerate(book[0]) if x.get("control_id") == "bookings-create-notes"), other["email"]))


# ================================================================ Harbor Bank (bank)
def bank():
    s, X = "bank", "transactions"

    # export a month of dining and count it
    months = Counter(r["posted"][:7] for r in rows(s, X) if r["category"] == "Dining")
    ym = max(sorted(months), key=lambda m: months[m])
    end = month_end(ym)
    q = {"category": "Dining", "posted_from": f"{ym}-01", "posted_to": end}
    n = len(view(s, X, **q))
    month = date.fromisoformat(f"{ym}-01").strftime("%B %Y")
    assert n >= 2
    (task(s, "export-dining-month", url(s, X), f"""How much did I eat out in {month}? Export my Harbor Bank transactions in the
        Dining category from {ym}-01 to {end} as a CSV file, and tell me how many transactions it holds.""")
     .add("filter_by_dropdown", "Show only Dining", dropdown(s, X, "category", "Dining"))
     .add("filter_by_date_range", f"Limit the dates to {month}", dates(s, X, "posted", f"{ym}-01", end))
     .add("download_file", "Export the list as CSV", export(s, X, q))
     .add("count_entries", "Report how many transactions the export holds")
     .ask(n, f"{plural(n, 'Dining transaction')} in {month}.", "number")
     .wrong_skip("filter_by_date_range"))

    # pause a monthly subscription transfer, signing in when the edit form asks
    R = "transfers"
    monthly = view(s, R, tab="Monthly")[:per_page(s, R)]
    sub = first((r for r in monthly if r["purpose"] == "Subscription" and r["status"] == "Scheduled"
                 and distinct(s, R, "memo", r["memo"])), "a scheduled subscription on the first page")
    (task(s, "pause-subscription-transfer", url(s, R), f"""I'm taking a break: pause my monthly transfer "{sub['memo']}" on
        Harbor Bank by setting its status to Paused. It's under the Monthly transfers; sign in with {USER[0]} / {USER[1]}
        when asked.""", login=True)
     .add("switch_tab", "Show the monthly transfers", tab(s, R, "Monthly"))
     .add("open_detail", f"Open {sub['memo']}", detail(s, R, sub["id"]))
     .add("authenticate_by_form", "Sign in when the edit form asks for it", login(s, step("click", f"{R}-edit-link")))
     .add("edit_entry", "Set its status to Paused", edit(s, R, sub["id"], {"status": "Paused"}, open_form=False))
     .wrong_value("edit_entry", 0, "Scheduled"))

    # copy the reference of the largest travel debit
    v = view(s, X, category="Travel", kind="Debit", sort="amount_desc")
    assert len(v) >= 2 and v[0]["amount"] > v[1]["amount"]
    (task(s, "copy-largest-travel-debit", url(s, X), """I want to dispute my biggest travel expense. On Harbor Bank, show only
        Travel transactions of type Debit, sort them by amount (highest first) and copy the reference of the top one.""")
     .add("filter_by_dropdown", "Show only Travel", dropdown(s, X, "category", "Travel"))
     .add("filter_by_options", "Show only debits", options(s, X, "kind", "Debit"))
     .add("sort_by_form", "Sort by amount, highest first", sort(s, X, "amount_desc"))
     .add("copy_to_clipboard", "Copy the top transaction's reference", copy_row(s, X, v[0]["id"], v[0]["reference"]))
     .wrong_value("copy_to_clipboard", 0, str(v[1]["id"])))


# ================================================================ Campfire Forum (forum)
def forum():
    s, T, M = "forum", "threads", "members"

    # reply to the most viewed gear thread
    v = view(s, T, tab="Gear", sort="views_desc")
    assert v[0]["views"] > v[1]["views"] and v[0]["status"] != "Locked"
    note = "Thanks for the write-up! Mine has lasted two seasons and still holds up."
    (task(s, "reply-most-viewed-gear-thread", url(s, T), f"""On Campfire Forum, open the Gear board, sort the threads by views
        (most first), open the most viewed one and reply: "{note}" """)
     .add("switch_tab", "Open the Gear board", tab(s, T, "Gear"))
     .add("sort_by_form", "Sort by views, most first", sort(s, T, "views_desc"))
     .add("open_detail", f"Open {v[0]['title']}", detail(s, T, v[0]["id"]))
     .add("add_comment", "Post the reply", comment(s, T, v[0]["id"], note))
     .wrong_value("open_detail", 0, str(v[1]["id"])))

    # the most active members, second page
    v = view(s, M, sort="posts_desc")
    k = per_page(s, M)
    assert len(v) > k and v[k]["posts"] > v[k + 1]["posts"] and v[k - 1]["posts"] > v[k]["posts"]
    (task(s, "second-page-top-poster", url(s, M), """Sort the Campfire Forum members by number of posts (most first), go to
        the second page and tell me the username of the first member listed there.""")
     .add("sort_by_form", "Sort by posts, most first", sort(s, M, "posts_desc"))
     .add("paginate", "Go to page 2", paginate(s, M, 2))
     .add("report_information", "Report the first member on page 2")
     .ask(v[k]["username"], f"It's {v[k]['username']}, with {v[k]['posts']} posts.")
     .wrong_answer(f"It's {v[0]['username']}."))

    # start a thread after signing in, then count the board
    new = {"title": "Gear swap meetup in the Lake District this spring?", "board": "General",
           "body": "Thinking of a gear swap at a campsite near Keswick in April. Who would come along?"}
    assert not any(r["title"] == new["title"] for r in rows(s, T))
    n = len(view(s, T, tab="General")) + 1
    (task(s, "start-gear-swap-thread", url(s, T), f"""Start a thread on Campfire Forum's General board (sign in as {USER[0]} /
        {USER[1]} when it asks) titled "{new['title']}" with the text "{new['body']}". Then open the General board and
        tell me how many threads it has.""", login=True)
     .add("authenticate_by_form", "Sign in when the new-thread form asks for it", login(s, step("click", f"{T}-new")))
     .add("create_entry", "Start the thread", create(s, T, new, open_form=False))
     .add("switch_tab", "Open the General board", after([step("click", f"{T}-item-crumbs", url(s, T))], tab(s, T, "General")))
     .add("count_entries", "Report how many threads General has")
     .ask(n, f"General has {plural(n, 'thread')}.", "number")
     .wrong_value("create_entry", 1, "Trips"))


# ================================================================ Inkwell Library (library)
def library():
    s, BK, LN = "library", "books", "loans"

    # cross-site: a book's ISBN into a new forum thread
    book = first((r for r in view(s, BK, genre="History") if findable(s, BK, "title", r)), "a history book")
    thread = {"title": f"Reading for rainy tent days: {book['title']}", "board": "General", "body": book["isbn"]}
    assert not any(r["title"] == thread["title"] for r in rows("forum", "threads"))
    (task(s, "recommend-book-on-forum", "/", f"""I want to recommend "{book['title']}" on Campfire Forum. Find it in the Inkwell
        Library catalogue and copy its ISBN, then start a thread on Campfire Forum's General board titled
        "{thread['title']}" with just the ISBN as the text.""", sites=[s, "forum"])
     .add("search_by_text", f"Search the catalogue for {book['title']}", after([app(s), menu(s, "home", BK)], search(s, BK, book["title"])))
     .add("copy_to_clipboard", "Copy its ISBN", copy_row(s, BK, book["id"], book["isbn"]))
     .add("create_entry", "Start the thread on Campfire Forum", elsewhere("forum", "threads", create("forum", "threads", thread)))
     .wrong_skip("copy_to_clipboard"))

    # renew a loan, signing in when the edit form asks
    loan = first((r for r in view(s, LN, tab="Active") if len(view(s, LN, q=r["number"])) == 1), "an active loan")
    renewed = {"due": later(loan["due"], 14), "status": "Renewed", "renewals": loan["renewals"] + 1}
    (task(s, "renew-active-loan", url(s, LN), f"""Renew loan {loan['number']} ({loan['member']}) on Inkwell Library: move its due
        date two weeks later, to {renewed['due']}, set the status to Renewed and the renewals to {renewed['renewals']}. My
        login is {USER[0]} / {USER[1]}.""", login=True)
     .add("search_by_text", f"Search the loans for {loan['number']}", search(s, LN, loan["number"]))
     .add("open_detail", "Open the loan", detail(s, LN, loan["id"]))
     .add("authenticate_by_form", "Sign in when the edit form asks for it", login(s, step("click", f"{LN}-edit-link")))
     .add("edit_entry", "Renew it", edit(s, LN, loan["id"], renewed, open_form=False))
     .wrong_value("edit_entry", 0, loan["due"]))

    # short books of one genre on the shelf: the genre with the most available books
    def short(g, m=None): return view(s, BK, genre=g, status="Available", **({"pages_max": m} if m else {}))
    g = max(options_of(s, BK, "genre"), key=lambda g: len(short(g)))
    M = first((m for m in range(40, 761, 20) if 2 <= len(short(g, m)) < len(short(g))), f"short {g} books")
    n = len(short(g, M))
    (task(s, "count-short-available-books", url(s, BK), f"""How many {g} books of at most {M} pages can I borrow at Inkwell
        Library right now? Show only {g}, only Available books, set the pages slider to {M} and give me the number.""")
     .add("filter_by_dropdown", f"Show only {g}", dropdown(s, BK, "genre", g))
     .add("filter_by_options", "Show only Available books", options(s, BK, "status", "Available"))
     .add("filter_by_slider", f"Limit the length to {M} pages", slider(s, BK, "pages", M))
     .add("count_entries", "Report how many books are listed")
     .ask(n, f"{plural(n, 'book')}.", "number")
     .wrong_answer(f"{plural(n + 1, 'book')}."))


# ================================================================ Marquee Tickets (events)
def events():
    s, EV, O = "events", "events", "orders"

    # export the comedy of two months and count it
    q = {"category": "Comedy", "day_from": "2027-01-01", "day_to": "2027-02-28"}
    n = len(view(s, EV, **q))
    assert 2 <= n < len(view(s, EV, category="Comedy"))
    (task(s, "export-winter-comedy", url(s, EV), """Export every Comedy event on Marquee Tickets between 2027-01-01 and
        2027-02-28 as a CSV file, and tell me how many shows are in it.""")
     .add("filter_by_dropdown", "Show only Comedy", dropdown(s, EV, "category", "Comedy"))
     .add("filter_by_date_range", "Limit the dates to January and February 2027", dates(s, EV, "day", "2027-01-01", "2027-02-28"))
     .add("download_file", "Export the list as CSV", export(s, EV, q))
     .add("count_entries", "Report how many events the export holds")
     .ask(n, f"{plural(n, 'show')}.", "number")
     .wrong_answer(f"{plural(n - 1, 'show')}."))

    # move a paid order to another section, signing in when the edit form asks
    order = first((r for r in view(s, O, tab="Paid") if r["section"] != "Balcony" and len(view(s, O, q=r["number"])) == 1),
                  "a paid order")
    other = first((x for x in ("Circle", "Stalls", "VIP") if x != order["section"]), "another section")
    (task(s, "move-order-to-balcony", url(s, O), f"""For order {order['number']} on Marquee Tickets ({order['holder']}), please
        move the seats to the Balcony section. Sign in as {USER[0]} / {USER[1]} when asked.""", login=True)
     .add("search_by_text", f"Search my orders for {order['number']}", search(s, O, order["number"]))
     .add("open_detail", "Open the order", detail(s, O, order["id"]))
     .add("authenticate_by_form", "Sign in when the edit form asks for it", login(s, step("click", f"{O}-edit-link")))
     .add("edit_entry", "Set the section to Balcony", edit(s, O, order["id"], {"section": "Balcony"}, open_form=False))
     .wrong_value("edit_entry", 0, other))

    # the cheapest concert at one venue: copy its event code
    def gigs(venue): return view(s, EV, category="Concert", venue=venue, sort="price_asc")
    venue = first((x for x in options_of(s, EV, "venue") if len(gigs(x)) >= 2 and gigs(x)[0]["price"] < gigs(x)[1]["price"]),
                  "a venue with concerts")
    v = gigs(venue)
    (task(s, "copy-cheapest-concert-code", url(s, EV), f"""I'd like to see a cheap concert at {venue}. On Marquee Tickets, show
        only Concerts at {venue}, sort them by price (lowest first) and copy the event code of the cheapest one.""")
     .add("filter_by_dropdown", "Show only Concerts", dropdown(s, EV, "category", "Concert"))
     .add("filter_by_options", f"Show only {venue}", options(s, EV, "venue", venue))
     .add("sort_by_form", "Sort by price, lowest first", sort(s, EV, "price_asc"))
     .add("copy_to_clipboard", "Copy the cheapest one's event code", copy_row(s, EV, v[0]["id"], v[0]["code"]))
     .wrong_value("copy_to_clipboard", 0, str(v[1]["id"])))


# ================================================================ write
TEST_SITE_TASKS = [recipes, mail, travel, learning, realestate]
TRAIN_SITE_TASKS = [shop, tracker, calendar, kanban, hr, bank, forum, library, events]

def main():
    for make in TEST_SITE_TASKS + TRAIN_SITE_TASKS: make()
    slugs = Counter(t.slug for t in TASKS)
    assert max(slugs.values()) == 1, [s for s, n in slugs.items() if n > 1]
    for t in TASKS:                  # a task stays on one side of the split: a train task touches no held-out site
        assert any(set(t.sites) <= set(SPLIT[k]) for k in ("test", "train")), f"{t.slug}: mixes test and training sites {t.sites}"
        t.check()
    for site in {t.site for t in TASKS}:                      # only what this script wrote before
        for old in (ROOT / site).glob("*/script.json"): shutil.rmtree(old.parent)
    for t in TASKS:
        d = ROOT / t.site / t.slug
        d.mkdir(parents=True, exist_ok=True)
        task_, verifier, script = t.files()
        for name, obj in (("task", task_), ("verifier", verifier)):
            (d / f"{name}.json").write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n")
        steps = ",\n  ".join(json.dumps(x, ensure_ascii=False) for x in script["steps"])
        (d / "script.json").write_text(f'{{"steps": [\n  {steps}\n ],\n "answer": {json.dumps(script["answer"], ensure_ascii=False)},\n'
                                       f' "wrong": {json.dumps(script["wrong"], ensure_ascii=False)}}}\n')
    by_site = Counter(t.site for t in TASKS)
    n_train = sum(t.site in SPLIT["train"] for t in TASKS)
    print(f"{len(TASKS)} scripted human-style tasks ({len(TASKS) - n_train} on test sites, {n_train} on training sites): "
          + ", ".join(f"{k} {v}" for k, v in sorted(by_site.items()))
          + f"; cross-site {sum(len(t.sites) > 1 for t in TASKS)}, login {sum(t.login for t in TASKS)},"
          f" question {sum(bool(t.answer) for t in TASKS)}")

if __name__ == "__main__":
    main()
