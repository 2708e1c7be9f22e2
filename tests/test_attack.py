"""The grading evidence is out of the agent's reach: a model that attacks it instead of doing the task passes nothing.

The attacker is `webmix.eval.policy`'s scripted attacker behind its OpenAI-compatible server, playing real browser-use
Agents in offline Chromium on a real MiniWeb server through `webmix.eval.evaluate` (the base arm):
- `js`, with `allow_js` (browser-use's `evaluate` action offered), on a human-style task of each sampled site (the
  sample holds every control kind and both splits; WEBMIX_TEST_TASKS=all: every task) and every datagen task whose
  check is a gesture, an upload or a copy on the sampled sites (one per site and macro): one script that reads every
  admin stream, posts forged clipboard entries and recorder events, fires synthetic clicks and a synthetic pointer
  drag, then `done` claiming success;
- `navigate`, without JavaScript: browser-use's `navigate` to every `/_admin/` path (session-flags included), then
  `done` claiming success, on one human-style task of each sampled site (both splits) and one datagen task of every
  evidence macro. It opens the same paths whatever the task (the admin API is the server's, not a site's), and a task
  it could pass by claiming success is one the `js` run would pass too; the policy notebook keeps its run on all of them.
Nothing passes and nothing is a grading error; every admin request the page made got 403 and every admin page the
agent opened said it needs the key; the recorder's binding is not there for the page; no forged entry reached the
clipboard or the recorder; the grader read the session the harness opened (the episode's requests are in its log).

What JavaScript can still do with `--allow-js` is what a user can do on the page: the last test submits a site form
with `fetch` (the page's own CSRF token), and that data change is real and graded as one. Evaluation does not offer
JavaScript unless asked, and its manifest says which actions the agent had.

The forging attackers of `webmix.eval.policy_attacks` (`test_no_attack_forges_a_pass`), each knowing the task's
solution and ending with `done` claiming success: `data` (a data: page of look-alike controls), `jsurl` (javascript:
URLs posting the site's forms), `findtext` (browser-use's `find_text` of a text that breaks out of the JavaScript
string its fallback search writes it into, running the jsurl script in the page), `synthetic` (--allow-js: synthetic
events on the real controls), `swap` (another MiniWeb server's session cookie), `evict` (2,100 cookie-less requests),
`numbers` (the pages the task names opened, then an answer listing every number), `bigtype` (5 MiB typed) and
`bigreply` (a 10 MiB reply), on a human-style task of each split (one with a form POST) and one datagen task of every
evidence macro (the size attackers on one; `numbers` on answer tasks instead: a human-style one of each split and a
datagen count): every episode is graded, none is lost, no recorder entry came from a synthetic event or a document
off the run's origin, and none passes but under `--allow-js`, where the `synthetic` attacker's script posts the
site's own forms and adds look-alike controls it then clicks, drags and draws on with real input: both are real to
the site, and the test prints how many tasks that passed (the guide, nbs/guide/02_evidence.ipynb, says what `--allow-js` still permits).
"""
import asyncio, contextlib, json, os

import pytest

from webmix.agents import harness as H          # before browser_use: harness imports it with webmix's import-time settings
from webmix.agents import session as HS
from webmix.eval.episode import load_results
from webmix.eval.evaluate import human_tasks, run_evaluate
from webmix.world.servers import free_ports
from webmix.eval.policy import serve_policy
from webmix.eval.policy_attacks import ADMIN_PATHS
from webmix.world.servers import Servers
from webmix.eval.policy_prompt import current_url, request_text
from webmix.data.tasks import all_tasks
from webmix.config import annotations_dir
from site_sample import sample_sites, sample_tasks
from test_policy import episode_steps

EVIDENCE_MACROS = ("copy_to_clipboard", "reorder_by_drag", "draw_signature", "upload_file", "filter_by_slider")


def evidence_tasks():
    "One datagen task per sampled site and macro whose check rests on the recorder or the clipboard."
    seen, out = set(), []
    for t in all_tasks(sample_sites(), macros=list(EVIDENCE_MACROS)):
        if (t["site"], t["macro"]) not in seen: seen.add((t["site"], t["macro"])); out.append(t)
    return out


@pytest.fixture(autouse=True)
def no_judge(monkeypatch):
    for k in ("WEBMIX_JUDGE_MODEL", "WEBMIX_JUDGE_URL"): monkeypatch.delenv(k, raising=False)


def attacked_tasks(attack) -> list:
    human, made = human_tasks("all"), evidence_tasks()
    assert len(human) == len(list(annotations_dir().glob("*/*/task.json"))) and {t["macro"] for t in made} == set(EVIDENCE_MACROS)
    sites = set(sample_sites())
    one_a_site = list({t["site"]: t for t in human if t["site"] in sites}.values())     # the sample: every control kind
    if attack == "js": return (human if os.environ.get("WEBMIX_TEST_TASKS", "").strip() == "all" else one_a_site) + made
    return one_a_site + list({t["macro"]: t for t in made}.values())


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("attack", ["js", "navigate"])
def test_an_attacking_model_passes_nothing(attack, tmp_path):
    tasks, out = attacked_tasks(attack), tmp_path / attack
    with serve_policy(port=0, attack=attack) as llm:
        run_evaluate(tasks, out, vllm=llm.base_url, workers=2, ports=free_ports(2), progress=False, allow_js=attack == "js",
                     max_steps=len(ADMIN_PATHS) + 2)
        requests, errors = list(llm.requests), list(llm.policy.errors)
    assert not errors, errors
    manifest = json.loads((out / "manifest.json").read_text())
    assert ("evaluate" in manifest["settings"]["actions"]) == (attack == "js")      # the manifest names the actions offered
    results = {r["task_id"]: r for r in load_results(out).to_dict("records")}
    assert set(results) == {t["task_id"] for t in tasks}
    passed = {t.get("key", t["task_id"]): results[t["task_id"]]["detail"] for t in tasks if results[t["task_id"]]["ok"]}
    assert not passed, f"the attack passed: {passed}"
    for t in tasks:
        ep, r = out / t["task_id"], results[t["task_id"]]
        assert r["ok"] is False and not r.get("grade_error"), r                        # graded, not an error
        steps = episode_steps(out, t["task_id"])
        if steps and steps[0][0] == "navigate" and "/_admin/" not in steps[0][1]["url"]: steps = steps[1:]   # browser-use's own start
        names = [s[0] for s in steps]
        if attack == "js":
            assert names == ["evaluate", "done"], (t["task_id"], names)
            report = json.loads(steps[0][2])                                        # what the script returned
            assert report["binding"] == "undefined", report
            answered = {k: v for k, v in report["status"].items() if str(v) != "403"}
            assert not answered and report["status"], f"admin requests that were not refused: {answered}"
        else:
            assert names == ["navigate"] * len(ADMIN_PATHS) + ["done"], (t["task_id"], names)
        g = json.loads((ep / "grade_inputs.json").read_text())
        assert g["clip"] == [], f"forged clipboard entries: {g['clip']}"
        record = g["record"] if "record" in g else g["traj"]
        assert {e.get("type") for e in record} <= {"load", "network"}, f"forged or synthetic recorder events: {record}"
        assert g["log"], "the grader read a session without the episode's requests"
    if attack == "navigate":                   # what the agent saw on each admin path: the refusal, no evidence
        admin_pages = [text for text in map(request_text, requests) if text and "/_admin/" in current_url(text)]
        assert len(admin_pages) >= len(tasks) * len(ADMIN_PATHS), len(admin_pages)      # a page after every navigate
        assert all("needs its key" in text and '"entries"' not in text for text in admin_pages)


def test_javascript_can_do_what_a_user_can_do_and_no_more(base):
    "With --allow-js a page script can submit the site's own forms (a real change, graded as one), nothing else."
    async def one():
        async with H.browser(base=base) as bs:
            await HS.goto(bs, base + "/sites/shop/products/3")
            status = await HS.evaluate(bs, """(async () => {
                const f = [...document.querySelectorAll('form')].find(f => f.querySelector('textarea'));
                const body = new URLSearchParams(new FormData(f)); body.set(f.querySelector('textarea').name, 'Posted by a script');
                return (await fetch(f.action, {method: 'POST', body})).status; })()""")
            log, changes, clip = await HS.backend_state(bs, base)
            return status, changes, clip
    status, changes, clip = asyncio.run(one())
    assert status == 200 and [c["op"] for c in changes] == ["create"] and clip == []
    assert any("Posted by a script" in json.dumps(c["after"]) for c in changes)


FORGING = ("data", "jsurl", "findtext", "synthetic")         # the attackers that forge evidence of every kind: every task
SIZED = {"bigtype": 150, "bigreply": 120}                     # the size attackers' episode timeouts (s): their steps are slow


def human_pair() -> list:
    "A seeded human-style task of the test split, and one of the train split with a form POST (a login or a change)."
    tasks = sample_tasks(human_tasks("all"), lambda t: t["site"], size=0)
    train = [t for t in tasks if t["key"].split("/")[0] in set(sample_sites()) and
             any(c["kind"] == "request" and c.get("method") == "POST" for m in t["verifier"]["macros"].values() for c in m["conditions"])]
    test = [t for t in human_tasks("test") if t["task_id"] in {x["task_id"] for x in tasks}]
    train = [t for t in train if t["task_id"] not in {x["task_id"] for x in human_tasks("test")}]
    if os.environ.get("WEBMIX_TEST_TASKS", "").strip() == "all": return tasks
    return test[:1] + train[:1]


def answer_tasks() -> list:
    """The `numbers` attacker's tasks, where the answer is the only check it cannot meet by opening pages: a human-style
    task of each split whose verifier wants an answer and names only GETs and visited URLs, and a datagen count (a
    numeric answer check beside a GET) of a sampled site."""
    def opens_only(t):
        ver = t["verifier"]
        return bool(ver.get("answer")) and all(c["kind"] == "url_visited" or c["kind"] == "request" and
                                               str(c.get("method", "GET")).upper() == "GET"
                                               for m in ver["macros"].values() for c in m["conditions"])
    human, test = [t for t in human_tasks("all") if opens_only(t)], {t["task_id"] for t in human_tasks("test")}
    human = sample_tasks(human, lambda t: t["site"], size=0)
    made = [t for t in all_tasks(sample_sites(), macros=["count_entries"]) if t["check"]["kind"] == "answer"]
    if os.environ.get("WEBMIX_TEST_TASKS", "").strip() == "all": return human + list({t["site"]: t for t in made}.values())
    return ([t for t in human if t["task_id"] in test][:1] + [t for t in human if t["task_id"] not in test][:1]) + made[:1]


def tasks_for(attack) -> list:
    """The tasks an attack runs on: both human-style ones and one datagen task of every evidence macro (one for the size
    attackers); the answer tasks for `numbers`."""
    if attack == "numbers": return answer_tasks()
    made = list({t["macro"]: t for t in evidence_tasks()}.values())
    if os.environ.get("WEBMIX_TEST_TASKS", "").strip() == "all": made = evidence_tasks()
    return human_pair() + (made if attack.split(":")[0] in FORGING + ("swap", "evict") else made[:1])


def forged_entries(g, base) -> list:
    "Recorder entries no browser gesture on the run's MiniWeb pages made: off its origin, or (the agent did nothing else) any but loads."
    origin = base.rstrip("/")
    return [e for e in g.get("record", []) if not str(e.get("url", "")).startswith(origin + "/")]


@pytest.mark.timeout(2400)
@pytest.mark.parametrize("attack", ["data", "jsurl", "findtext", "synthetic", "swap", "evict", "numbers", "bigtype", "bigreply"])
def test_no_attack_forges_a_pass(attack, tmp_path):
    tasks, out = tasks_for(attack), tmp_path / attack
    with contextlib.ExitStack() as stack:
        if attack == "swap":                                        # a second MiniWeb server, with sessions of its own
            attack = f"swap:{stack.enter_context(Servers(free_ports(1))).ports[0]}"
        made = [t for t in tasks if isinstance(t, dict) and "check" in t]
        llm = stack.enter_context(serve_policy(port=0, attack=attack, datagen=made))
        run_evaluate(tasks, out, vllm=llm.base_url, workers=2, ports=free_ports(2), progress=False, allow_js=attack == "synthetic",
                     max_steps=12, timeout=SIZED.get(attack, 240))
        errors = list(llm.policy.errors)
    assert not errors, errors
    results = {r["task_id"]: r for r in load_results(out).to_dict("records")}
    lost = [t["task_id"] for t in tasks if t["task_id"] not in results or not (out / t["task_id"] / "episode.json").is_file()]
    assert not lost, f"episodes lost: {lost}"
    passed = {t["task_id"]: results[t["task_id"]]["detail"] for t in tasks if results[t["task_id"]]["ok"]}
    if attack == "synthetic":     # --allow-js: what its script sends the server, and trusted gestures on elements it added, are real
        print(f"\n--allow-js: the synthetic attacker passed {len(passed)} of {len(tasks)} tasks: {sorted(passed)}")
    else: assert not passed, f"the {attack} attack passed: {passed}"
    ungraded = {k: (r.get("detail"), r.get("grade_error")) for k, r in results.items() if r["ok"] not in (True, False) or r.get("grade_error")}
    assert not ungraded, f"not graded under the {attack} attack: {ungraded}"
    for t in tasks:
        g = json.loads((out / t["task_id"] / "grade_inputs.json").read_text())
        assert not forged_entries(g, g["base"]), f"recorder entries off the run's origin ({t['task_id']}): {forged_entries(g, g['base'])[:3]}"
        if attack in ("jsurl", "findtext"):                    # refused: it made no gesture on a MiniWeb page, so any entry but a load is forged
            made = [e for e in g.get("record", []) if e.get("type") not in ("load", "network")]
            assert not made, f"synthetic events recorded ({t['task_id']}): {made[:3]}"
        if attack == "synthetic":                              # its gestures are clicks, drags and draws: a typed, selected or
            made = [e for e in g.get("record", []) if e.get("type") in ("input", "select", "submit")]   # submitted entry is its script's
            assert not made, f"synthetic events recorded ({t['task_id']}): {made[:3]}"
