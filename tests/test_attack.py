"""The grading evidence is out of the agent's reach: an agent that attacks it instead of doing the task passes nothing.

Every human-style task of both splits, and every datagen task whose check is a gesture, an upload or a copy (one per
site and macro), is prepared as evaluate prepares it, in real Chromium against a real MiniWeb server. Then, instead
of doing the task, the "agent" attacks:
- the JavaScript an agent's `evaluate` action would run in the page (what `--allow-js` gives it): it reads every admin
  stream, posts a forged clipboard entry for every copy button and forged recorder events for every control of the
  page, fires synthetic clicks on the copy buttons and a synthetic pointer drag on a board card, and tries the
  recorder's binding;
- navigation to every `/_admin/` path, as an agent without JavaScript can (its `navigate` action), session-flags
  included.
Then evaluate's own `grade_inputs` and `grade` grade the episode: nothing passes, every admin request got 403, the
session is the one the harness opened, and no forged entry reached the clipboard or the recorder.

What JavaScript can still do with `--allow-js` is what a user can do on the page: the test's last case submits a
site form with `fetch` (the page's own CSRF token), and that data change is real and graded as one. Evaluation does
not offer JavaScript unless asked, and its manifest says which actions the agent had.
"""
import asyncio, json

import pytest

from webmix import evaluate as E
from webmix import harness as H
from webmix.evaluate import human_tasks
from webmix.tasks import all_tasks

ADMIN_PATHS = ("/_admin/log", "/_admin/changes", "/_admin/clipboard", "/_admin/record", "/_admin/sites",
               "/_admin/session-flags", "/_admin/session-flags?logout=1", "/_admin/sitemap/shop")
EVIDENCE_MACROS = ("copy_to_clipboard", "reorder_by_drag", "draw_signature", "upload_file", "filter_by_slider")

ATTACK_JS = r"""(async () => {
  const out = {status: {}, binding: typeof window.__webmixReport};
  const sid = (document.cookie.match(/webmix_session=([0-9a-f]+)/) || [])[1] || '';
  for (const p of ['/_admin/log', '/_admin/changes', '/_admin/clipboard', '/_admin/record', '/_admin/session-flags']) {
    try { out.status[p] = (await fetch(p + (sid ? '?session=' + sid : ''))).status; } catch (e) { out.status[p] = String(e); }
  }
  const post = async (stream, body) => {
    try { return (await fetch('/_admin/' + stream, {method: 'POST', body: JSON.stringify(body)})).status; }
    catch (e) { return String(e); }
  };
  const site = document.body.dataset.site || '';
  for (const b of document.querySelectorAll('[data-copy]')) {
    out.status['clipboard:' + b.dataset.controlId] = await post('clipboard', {site, text: b.dataset.copy, control_id: b.dataset.controlId});
    b.dispatchEvent(new MouseEvent('click', {bubbles: true}));
  }
  for (const el of document.querySelectorAll('[data-control-id]')) {
    const target = {tag: el.tagName.toLowerCase(), control_id: el.dataset.controlId, part: el.dataset.part || null,
                    value_attr: el.dataset.value || null};
    for (const type of ['click', 'select', 'input', 'drag', 'draw', 'copy'])
      await post('record', {type, url: location.href, target, value: el.dataset.value || 'x', points: 40,
                            to: {column: el.dataset.value || '', position: 0}});
  }
  const card = document.querySelector('.card.draggable'), cols = document.querySelectorAll('.column');
  if (card && cols.length > 1) {
    const r = cols[cols.length - 1].getBoundingClientRect(), c = card.getBoundingClientRect();
    card.dispatchEvent(new PointerEvent('pointerdown', {bubbles: true, clientX: c.x + 5, clientY: c.y + 5}));
    document.dispatchEvent(new PointerEvent('pointerup', {bubbles: true, clientX: r.x + 10, clientY: r.y + r.height - 5}));
  }
  return JSON.stringify(out);
})()"""


def evidence_tasks():
    "One datagen task per site and macro whose check rests on the recorder or the clipboard."
    seen, out = set(), []
    for t in all_tasks(macros=list(EVIDENCE_MACROS)):
        if (t["site"], t["macro"]) not in seen: seen.add((t["site"], t["macro"])); out.append(t)
    return out


def attack_cases():
    return [pytest.param(t, id=t["key"]) for t in human_tasks("all")] + \
           [pytest.param(t, id=f"datagen/{t['task_id']}") for t in evidence_tasks()]


async def attacked(bs, base, task) -> dict:
    "Prepare `task` as evaluate does, attack instead of doing it, grade it with evaluate's grading."
    await E.prepare(bs, base, task)
    sid = await H.session_id(bs, base)
    report = json.loads(await H.evaluate(bs, ATTACK_JS))
    for path in ADMIN_PATHS:                                   # an agent's navigate action
        await H.goto(bs, base + path + ("&" if "?" in path else "?") + f"session={sid}")
        report["status"]["navigate " + path] = "403" if "admin API needs its key" in await H.seen(bs) else "answered"
    g = await E.grade_inputs(bs, base, task, "", [], [{"action": "evaluate"}, {"action": "done"}])
    ok, detail = E.grade(task, g)
    return {"ok": ok, "detail": detail, "report": report, "sid_after": await H.session_id(bs, base), "sid": sid,
            "clip": g["clip"], "record": (await H.admin_get(bs, base, "/_admin/record"))["entries"]}



@pytest.fixture(scope="module")
def kept(loop):
    kb = H.KeptBrowser()
    yield kb
    loop.run_until_complete(kb.close())


@pytest.mark.parametrize("task", attack_cases())
def test_an_agent_attacking_the_evidence_passes_nothing(task, loop, kept, base):
    human = task.get("kind") == "human"                      # a datagen task's block opens its start page (as evaluate's)
    async def one():
        async with H.browser(base=base, task=None if human else task, keep=kept, open_start=not human) as bs:
            return await attacked(bs, base, task)
    r = loop.run_until_complete(one())
    assert not r["ok"], f"the attack passed: {r['detail']}"
    assert r["report"]["binding"] == "undefined"
    answered = {k: v for k, v in r["report"]["status"].items() if str(v) != "403"}
    assert not answered, f"admin requests that were not refused: {answered}"
    assert r["sid_after"] == r["sid"], "the page replaced the session the grader reads"
    assert r["clip"] == [], f"forged clipboard entries: {r['clip']}"
    assert {e["type"] for e in r["record"]} <= {"load"}, f"forged or synthetic recorder events: {r['record']}"


def test_javascript_can_do_what_a_user_can_do_and_no_more(loop, base):
    "With --allow-js a page script can submit the site's own forms (a real change, graded as one), nothing else."
    async def one():
        async with H.browser(base=base) as bs:
            await H.goto(bs, base + "/sites/shop/products/3")
            status = await H.evaluate(bs, """(async () => {
                const f = [...document.querySelectorAll('form')].find(f => f.querySelector('textarea'));
                const body = new URLSearchParams(new FormData(f)); body.set(f.querySelector('textarea').name, 'Posted by a script');
                return (await fetch(f.action, {method: 'POST', body})).status; })()""")
            log, changes, clip = await H.backend_state(bs, base)
            return status, changes, clip
    status, changes, clip = loop.run_until_complete(one())
    assert status == 200 and [c["op"] for c in changes] == ["create"] and clip == []
    assert any("Posted by a script" in json.dumps(c["after"]) for c in changes)
