"""Every human-style task (data/annotations/<site>/<task>/), on the test sites and on the training sites, run in real Chromium.

A task's script.json lists the steps a person would take (click, type, select, tick, drag, draw, upload on the
elements the sitemap names by data-control-id, and wait for a busy button's answer) and the answer they would give:
a suggestion of an autocomplete box is clicked by the text it shows once it is listed, a Load more link waits for
the rows it appends, a `wait` step waits until the button's output shows a value. The correct run must pass
checks.verify_task over the session's recorder stream merged with the server log; the `wrong` run (a skipped
macro, another value, or a wrong answer) must fail it, on the macro (or the answer) it broke.
A task is all on test sites or all on training sites, and evaluate's `--human-split` picks exactly the tasks of its side.
Regenerate the tasks with scripts/make_human_tasks.py after a site-spec change."""
import asyncio, json, re
from collections import Counter
from pathlib import Path
from urllib.request import Request, urlopen

import pytest
from playwright.async_api import async_playwright

from webmix.world.catalog import FAMILY_OF, MACROS
from webmix.config import CHROMIUM, admin_headers
from webmix.agents.playwright import playwright_acts_on, playwright_session
from webmix.world.checks import merge_server_log, verify_task
from webmix.eval.evaluate import human_tasks
from webmix.eval.policy_plans import wrong_script
from site_sample import sample_tasks

DATA = Path(__file__).resolve().parents[1] / "data"
SPLIT = {k: set(v) for k, v in json.loads((DATA / "site_split.json").read_text()).items()}
TEST_SITES, TRAIN_SITES = SPLIT["test"], SPLIT["train"]
TASKS = sorted(p.parent for p in (DATA / "annotations").glob("*/*/script.json")
               if json.loads((p.parent / "task.json").read_text())["site"] in TEST_SITES | TRAIN_SITES)
REPLAYED = sample_tasks(TASKS, lambda d: d.parent.name)      # the tasks replayed in Chromium (WEBMIX_TEST_TASKS=all: every one)
IDS = [f"{d.parent.name}/{d.name}" for d in REPLAYED]
UPLOAD = b"%PDF-1.4\n% a small file a person picked from their disk\n"

# what an action on an element leads to: a page load, a download, rows a Load more link appends in place (the page script
# fetches them and puts the next link where it was), or nothing the runner must wait for
OUTCOME_JS = """el => el.closest('a[download]') ? 'download' : el.closest('a[data-more]') ? 'more'
  : (el.closest('a[href]') || el.matches('[data-autosubmit]') || (el.form && el.type === 'submit')) ? 'load' : ''"""
# a busy button has answered: its output shows a value (not the "—" before nor the "…" while busy) and it is enabled again
ANSWERED_JS = """([out, button]) => { const o = document.querySelector(out), b = document.querySelector(button);
  return !!o && !['', '\u2014', '\u2026'].includes(o.textContent.trim()) && !!b && !b.disabled; }"""


def load(d):
    return [json.loads((d / f"{n}.json").read_text()) for n in ("task", "verifier", "script")]


def admin(base, stream, sid):
    with urlopen(Request(f"{base}/_admin/{stream}?session={sid}", headers=admin_headers()), timeout=10) as r:
        return json.load(r)["entries"]


def locate(page, s):
    "The element a step acts on: its control (and part, and option or record value), or a CSS selector."
    if "selector" in s: return page.locator(s["selector"]).first
    sel = f'[data-control-id="{s["control_id"]}"]' + (f'[data-part="{s["part"]}"]' if s.get("part") else ":not([data-part])")
    if s.get("part") == "option" and "text" in s:           # a suggestion, by the text a person reads in the list
        return page.locator(sel).filter(has_text=re.compile(f"^{re.escape(s['text'])}$")).first
    if s["do"] in ("click", "check") and "value" in s: sel += f'[data-value="{s["value"]}"]'
    return page.locator(sel).first


ACTIONS = {"click": lambda el, s: el.click(),
           "fill": lambda el, s: el.fill(s["value"]),
           "select": lambda el, s: el.select_option(s["value"]),
           "check": lambda el, s: el.set_checked(s.get("on", True)),
           "upload": lambda el, s: el.set_input_files({"name": s["value"], "mimeType": "application/octet-stream", "buffer": UPLOAD})}


async def drag(page, s):
    "Drag a board card onto the bottom of another column with the mouse (the page script posts the move, then reloads)."
    card = page.locator(f'[data-control-id="{s["control_id"]}"][data-part="card"][data-value="{s["value"]}"]')
    col = page.locator(f'[data-control-id="{s["control_id"]}"][data-part="column"][data-value="{s["to"]}"]')
    await card.scroll_into_view_if_needed()
    a, b = await card.bounding_box(), await col.bounding_box()
    await page.mouse.move(a["x"] + a["width"] / 2, a["y"] + a["height"] / 2)
    await page.mouse.down()
    await page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] - 8, steps=8)
    async with page.expect_navigation():
        await page.mouse.up()


async def draw(page, s):
    "A signature: one zig-zag stroke across the pad."
    pad = page.locator(f'canvas[data-control-id="{s["control_id"]}"]')
    await pad.scroll_into_view_if_needed()
    b = await pad.bounding_box()
    x, y, h = b["x"] + 30, b["y"] + b["height"] * 0.7, b["height"]
    await page.mouse.move(x, y)
    await page.mouse.down()
    for i in range(1, 13): await page.mouse.move(x + 25 * i, y - h * 0.4 * (i % 2))
    await page.mouse.up()


async def answered(page, s):
    "Wait until a busy button's output shows the value its slow request fetched, and the button is enabled again."
    cid = s["control_id"]
    await page.wait_for_function(ANSWERED_JS, arg=[f'output[data-control-id="{cid}"][data-part="{s.get("part", "result")}"]',
                                                  f'button[data-control-id="{cid}"]'])


async def run_step(page, base, s):
    if s["do"] == "goto": return await page.goto(base + s["url"])
    if s["do"] == "drag": return await drag(page, s)
    if s["do"] == "draw": return await draw(page, s)
    if s["do"] == "wait": return await answered(page, s)
    el = locate(page, s)
    outcome = await el.evaluate(OUTCOME_JS)           # waits until the element is there (a suggestion comes a moment later)
    if outcome == "load":
        async with page.expect_navigation(): await act(page, el, s)
    elif outcome == "download":
        async with page.expect_download(): await act(page, el, s)
    elif outcome == "more":                           # the link goes once the next rows are in (the next link in its place)
        await act(page, el, s)
        await el.wait_for(state="detached")
    else: await act(page, el, s)


async def act(page, el, s):
    "A step's action; a select, a fill or an upload with its element marked for the recorder (Playwright sets their values by script)."
    if s["do"] not in ("select", "fill", "upload"): return await ACTIONS[s["do"]](el, s)
    async with playwright_acts_on(page, el): return await ACTIONS[s["do"]](el, s)


async def settled_record(base, sid, url):
    "The recorder stream once its reports of the last page load have arrived."
    last = None
    for _ in range(100):
        rec = await asyncio.to_thread(admin, base, "record", sid)
        if rec == last and any(e.get("type") == "load" and e.get("url") == url for e in rec): return rec
        last = rec
        await asyncio.sleep(0.05)
    return last


async def run_task(browser, base, task, steps):
    """A fresh context and MiniWeb session (logged out when the task needs a login), the steps -> (the trajectory, the
    text of every screen it showed: what an agent saw, which an answer may repeat beside its value)."""
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    try:
        page = await ctx.new_page()
        page.set_default_timeout(20_000)
        sid = await playwright_session(ctx, page, base, {"logout": 1} if task["needs_login"] else None)
        await page.goto(base + ("/" if len(task["sites"]) > 1 else task["starting_url"]))
        seen = [await page.inner_text("body")]
        for i, s in enumerate(steps):
            try: await run_step(page, base, s)
            except Exception as e: raise AssertionError(f"step {i} {s} failed on {page.url}: {e}") from None
            seen.append(await page.inner_text("body"))
        return merge_server_log(await settled_record(base, sid, page.url), await asyncio.to_thread(admin, base, "log", sid)), seen
    finally:
        await ctx.close()



@pytest.fixture(scope="module")
def browser(loop):
    pw = loop.run_until_complete(async_playwright().start())
    b = loop.run_until_complete(pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]))
    yield b
    loop.run_until_complete(b.close())
    loop.run_until_complete(pw.stop())


@pytest.fixture(autouse=True)
def no_judge(monkeypatch):
    "Grading here is the regex, exact and precise tiers only."
    for k in ("WEBMIX_JUDGE_MODEL", "WEBMIX_JUDGE_URL"): monkeypatch.delenv(k, raising=False)


@pytest.fixture(scope="module")
def runs(request, loop, browser, base):
    "The browser runs the selected tests need, a few at a time: {(task dir, 'correct'|'wrong'): trajectory or the error}."
    keys = set()
    for item in request.session.items:
        d = getattr(item, "callspec", None) and item.callspec.params.get("d")
        if d is None or item.module.__name__ != __name__: continue
        wrong = item.originalname == "test_wrong_run_fails" and load(d)[2]["wrong"]["kind"] != "answer"
        keys.add((d, "wrong" if wrong else "correct"))

    async def one(key, gate):
        task, _, script = load(key[0])
        async with gate:
            try: return key, await run_task(browser, base, task, script["steps"] if key[1] == "correct" else wrong_script(script)["steps"])
            except Exception as e: return key, e

    async def every():
        gate = asyncio.Semaphore(3)
        return dict(await asyncio.gather(*(one(k, gate) for k in sorted(keys))))
    return loop.run_until_complete(every())


def trajectory(runs, d, kind):
    "The run's trajectory and the texts of its screens."
    got = runs[(d, kind)]
    if isinstance(got, Exception): raise got
    return got


def split_of(task):
    "'test' or 'train': the side of the split every site of the task is on (None when it mixes them)."
    return next((k for k in ("test", "train") if set(task["sites"]) <= SPLIT[k]), None)


def test_tasks_cover_both_splits():
    """At least 120 tasks over the test sites and 180 over the training sites, 4 or more on each site, none mixing the two; task.json and
    verifier.json agree, with the catalog and the login rule; the training tasks cover every macro family; evaluate's
    --human-split test/train selects exactly the tasks of that side."""
    by_split = {"test": [], "train": []}
    for d in TASKS:
        task, verifier, _ = load(d)
        assert task["task_id"] == d.name and task["site"] == task["sites"][0] and split_of(task), task["sites"]
        assert 2 <= len(task["macros"]) <= 4 and all(m.split("#")[0] in MACROS for m in task["macros"]), task["macros"]
        assert list(verifier["macros"]) == task["macros"] == list(task["macro_subtasks"])
        assert task["needs_login"] == ("authenticate_by_form" in verifier["macros"])      # start logged out exactly when the task logs in
        start = task["starting_url"]
        assert start == "/" if len(task["sites"]) > 1 else start.startswith(f"/sites/{task['site']}")
        by_split[split_of(task)].append((d, task, verifier))
    for k, least, cross, logins, questions in (("test", 120, 4, 4, 10), ("train", 180, 2, 3, 10)):
        got = by_split[k]
        assert len(got) >= least and {t["site"] for _, t, _ in got} == SPLIT[k], k
        assert sum(len(t["sites"]) > 1 for _, t, _ in got) >= cross and sum(t["needs_login"] for _, t, _ in got) >= logins, k
        assert sum("answer" in v for *_, v in got) >= questions, k
        assert {f"{d.parent.name}/{d.name}" for d, *_ in got} == {t["key"] for t in human_tasks(k)}, k
    assert {FAMILY_OF[m.split("#")[0]] for _, t, _ in by_split["train"] for m in t["macros"]} == set(FAMILY_OF.values())
    per_site = Counter(t["site"] for got in by_split.values() for _, t, _ in got)
    assert min(per_site.values()) >= 4, sorted(s for s, n in per_site.items() if n < 4)      # at least 4 on every site


@pytest.mark.parametrize("d", REPLAYED, ids=IDS)
def test_correct_run_passes(runs, d):
    task, verifier, script = load(d)
    traj, seen = trajectory(runs, d, "correct")
    r = verify_task(verifier, traj, script["answer"], task["instruction"], seen=seen)
    assert r["passed"] is True, r["summary"]


@pytest.mark.parametrize("d", REPLAYED, ids=IDS)
def test_wrong_run_fails(runs, d):
    task, verifier, script = load(d)
    w = script["wrong"]
    if w["kind"] == "answer":                 # the correct run's actions, then a wrong answer
        traj, seen = trajectory(runs, d, "correct")
        r = verify_task(verifier, traj, w["answer"], task["instruction"], seen=seen)
        assert r["passed"] is False and r["answer"]["passed"] is False, r["summary"]     # failed, not left ungraded
        assert all(m["passed"] for m in r["by_macro"].values()), r["summary"]      # only the answer is wrong
    else:
        traj, seen = trajectory(runs, d, "wrong")
        r = verify_task(verifier, traj, script["answer"], task["instruction"], seen=seen)
        assert r["passed"] is False and not r["by_macro"][w["macro"]]["passed"], r["summary"]
