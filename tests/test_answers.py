"""Answer checks against answers that hedge, and graders against evidence from off-site documents, with no browser.

Every answer check (the human verifiers' tiers in checks.grade_answer, datagen's checks.check_answer) must pass each
task's scripted answer and honest sentences that state the value, and fail an answer that lists candidates: every
number from 0 to 100, the numbers or dates around the expected one, every choice of a set. The gates (checks.gate_task
for a generated task, HumanTask.grade for a human-style one) must count only evidence recorded on the pages of the
task's site(s) on the server the session ran on: the same entry from a data: document, from another port or from
another site fails the check it passes on the base origin."""
import json
from datetime import timedelta

import pytest

from webmix.config import annotations_dir
from webmix.data.driver_scripts import driver_script
from webmix.data.task_context import option_text
from webmix.data.tasks import all_tasks
from webmix.eval.evaluate import human_tasks
from webmix.records import as_task
from webmix.world import checks as C

B = "http://127.0.0.1:8318"
ELSEWHERE = ("data:text/html,<script src='/static/webmix.js'></script>", "http://127.0.0.1:9001", "http://localhost:8318")
LISTED = " ".join(map(str, range(101)))


@pytest.fixture(autouse=True)
def no_judge(monkeypatch):
    "The regex, exact and precise tiers only: a listed answer must fail them, not wait for a judge."
    for k in ("WEBMIX_JUDGE_MODEL", "WEBMIX_JUDGE_URL"): monkeypatch.delenv(k, raising=False)


def human_answer_tasks():
    out = []
    for d in sorted(annotations_dir().glob("*/*")):
        v = json.loads((d / "verifier.json").read_text())
        if "answer" in v:
            out.append((d, json.loads((d / "task.json").read_text()), v, json.loads((d / "script.json").read_text())))
    return out


def kind_of(values):
    if any(len(C.dates_in(str(x))) == 1 for x in values): return "date"
    return "number" if any(C.number(x) is not None for x in values) else "text"


def near(value, kind, question="", step=None) -> list:
    """The expected value and its nearest neighbours (a cent apart for a price, else `step`) that the question does not
    write, as the value is written: what a hedging answer lists."""
    if kind == "date":
        d, asked = min(C.dates_in(value)), C.dates_in(question, min(C.dates_in(value)).year)
        return [str(d + timedelta(k)) for k in range(-30, 31) if k == 0 or d + timedelta(k) not in asked]
    x, asked = C.number(value), {y for y, _, _ in C.number_mentions(question)}
    step = step or (0.01 if "." in str(value) else 1)
    ys = sorted((round(x + k * step, 2) for k in range(-9, 10)), key=lambda y: abs(y - x))
    return [f"{y:.2f}" if "." in str(value) else f"{y:g}" for y in ys if y == x or y not in asked][:11]


def test_human_answers_pass_stated_and_fail_listed():
    tally = {"tasks": 0, "correct": 0, "listed_before": 0, "listed": 0, "honest": 0}
    for d, task, v, script in human_answer_tasks():
        spec, q, values = v["answer"], task["instruction"], C.answer_values(v["answer"])
        passes = lambda a: C.grade_answer(spec, a, q)["passed"]
        tally["tasks"] += 1
        r = C.grade_answer(spec, script["answer"], q)
        assert r["passed"], (d.name, script["answer"], r["detail"])
        tally["correct"] += 1
        if script["wrong"]["kind"] == "answer": assert not passes(script["wrong"]["answer"]), d.name
        tally["listed_before"] += any(C.TIERS[m["tier"]](m, LISTED) for m in spec["matchers"])
        tally["listed"] += passes(LISTED)
        kind, precise = kind_of(values), next(m["value"] for m in spec["matchers"] if m["tier"] == "precise")
        if kind == "text": continue
        for listed in (", ".join(near(precise, kind, q)), " or ".join(sorted(near(precise, kind, q)[:3]))):
            assert not passes(listed), (d.name, listed)
        for said in (f"There are {precise} results.", f"The answer is {precise}.", f"It is {precise}, I checked."):
            assert passes(said), (d.name, said, C.grade_answer(spec, said, q)["detail"])
            tally["honest"] += 1
    print(tally)
    assert tally["tasks"] >= 150 and tally["listed"] == 0 and tally["listed_before"] > tally["tasks"] / 2


def answer_checks(check):
    if check.get("kind") == "all":
        for c in check["checks"]: yield from answer_checks(c)
    elif check.get("kind") == "answer": yield check


def test_datagen_answers_pass_stated_and_fail_listed():
    tally = {"checks": 0, "listed_before": 0, "listed": 0, "driver_sentence": 0}
    for t in all_tasks():
        for c in answer_checks(t["check"]):
            q, said = t["instruction"], driver_script(t)["answer"]
            seen = [str(c["value"]), *c.get("evidence", [])]
            ok = lambda a: C.check_answer(c, a, seen, q)[0]
            tally["checks"] += 1
            assert ok(said), (t["task_id"], said, C.check_answer(c, said, seen, q)[1])
            tally["listed_before"] += C.ANSWER_MATCHERS[c["match"]](c, LISTED)[0]
            tally["listed"] += ok(LISTED)
            if c["match"] != "numeric": continue
            cands = near(said, "number", q, step=1)       # whole units apart: a price's check has a cent of tolerance
            assert not ok(", ".join(cands)) and not ok(" or ".join(sorted(cands[:3]))), (t["task_id"], cands)
            for s in (f"There are {said} results.", f"The answer is {said}."): assert ok(s), (t["task_id"], s)
            if t["macro"] == "count_entries":          # the sentence the count driver says, naming the task's option
                s = f"With {option_text(t['control'], t['option'])} applied the list reports {said} results."
                assert ok(s), (t["task_id"], s, C.check_answer(c, s, seen, q)[1])
                tally["driver_sentence"] += 1
    print(tally)
    assert tally["checks"] >= 500 and tally["listed"] == 0 and tally["listed_before"] > tally["checks"] / 2


def test_a_set_answer_listing_every_choice_fails():
    check = {"kind": "answer", "match": "set", "value": ["Dune", "Emma"], "choices": ["Dune", "Emma", "Ulysses", "Beloved"]}
    seen = ["Dune Emma Ulysses Beloved"]
    assert C.check_answer(check, "Emma and Dune", seen)[0]
    ok, detail, _ = C.check_answer(check, "Dune, Emma, Ulysses, Beloved", seen)
    assert not ok and "extra ['Ulysses', 'Beloved']" in detail, detail
    assert C.check_answer({**check, "value": check["choices"]}, "Dune, Emma, Ulysses, Beloved", seen)[0]   # all of them, when all are right


def test_hedged_reads_the_kind_of_each_number():
    assert C.hedged("34", "The cheapest is NW 2753 at $74.00, with 34 seats left.") == []
    assert C.hedged("34", "NW 2753 has 34 seats, NW 2754 has 33 seats") == ["33"]
    assert C.hedged("53", "It is Lot 52, Lot 53 or Lot 54") == ["52", "54"] and C.hedged("53", "It is 53 (Lot 12)") == []
    assert C.hedged("$81.95", "The charge on 2026-09-30 was $81.95.") == []
    assert C.hedged("12", "It's 12, give or take 2") == ["2"]
    assert C.hedged("2027-01-11", "2027-01-11 at 08:45 (tooth 16)") == [] and C.hedged("2027-01-11", "1/11/2027 or 1/12/2027") == ["1/12/2027"]
    assert C.hedged("7", "It is 7 (see 2026-12-01 to 2026-12-31)", "How many from 2026-12-01 to 2026-12-31?") == []


# --- evidence from off-site documents

def copy_task():
    return {"task_id": "shop-copy_to_clipboard-1", "site": "shop", "instruction": "Copy the number of order 7.", "option": {},
            "start": {"url": "/sites/shop/orders"}, "check": {"kind": "clipboard", "text": "ORD-4821"},
            "verifier": {"checks": [{"kind": "event", "action": "copy", "target": "orders-copy"}]}}


def inputs(record=(), clip=()):
    return {"base": B, "log": [], "record": list(record), "changes": [], "clip": list(clip), "answer": None, "seen": []}


def copied(origin, site="shop"):
    "The recorder's copy entry and the clipboard write of one click on an order's copy button, on `origin`."
    url = f"{origin}/sites/{site}/orders"
    rec = {"t": 1.0, "type": "copy", "url": url, "target": {"tag": "button", "control_id": "orders-copy", "value_attr": "7"},
           "value": "ORD-4821"}
    return rec, {"t": 1.0, "site": site, "text": "ORD-4821", "control_id": "orders-copy"}


def test_a_generated_task_counts_only_evidence_from_its_site_on_the_base_origin():
    rec, clip = copied(B)
    ok, detail, _ = C.gate_task(copy_task(), inputs([rec], [clip]))
    assert ok, detail
    assert C.gate_task(copy_task(), inputs([rec], [{**clip, "url": rec["url"]}]))[0]
    assert C.gate_task(copy_task(), inputs([rec], [{**clip, "origin": B}]))[0]
    for where in ELSEWHERE:
        forged, _ = copied(where)
        ok, detail, _ = C.gate_task(copy_task(), inputs([forged], [clip]))
        assert not ok and detail.startswith("verifier: no action event") and "no action event recorded" in detail, (where, detail)
        for mark in ({"url": forged["url"]}, {"origin": where}):
            ok, detail, _ = C.gate_task(copy_task(), inputs([rec], [{**clip, **mark}]))
            assert not ok and "nothing was copied" in detail, (where, mark, detail)
    other_rec, other_clip = copied(B, "hr")              # the same control id on another site of the same server
    ok, detail, _ = C.gate_task(copy_task(), inputs([other_rec], [other_clip]))
    assert not ok and "nothing was copied" in detail and "no action event recorded" in detail, detail
    assert not C.gate_task(copy_task(), inputs([rec], ["ORD-4821"]))[0]      # a bare text names no site


def synthetic_run(verifier, page_origin, site):
    "A trajectory that meets every condition of a verifier: the server's log entries, and recorder entries on `page_origin`."
    out = []
    for spec in verifier["macros"].values():
        for c in spec["conditions"]:
            if c["kind"] == "request":
                out.append({"type": "network", "t": 1.0, "site": site, "method": c.get("method", "GET"), "path": c["path"],
                            "query": c.get("query") or {}, "form": c.get("form") or {}, "status": 200})
            elif c["kind"] == "action_included":
                out.append({"type": "action", "t": 1.0, "url": f"{page_origin}/sites/{site}/", **{k: v for k, v in c.items() if k != "kind"}})
            else: out.append({"type": "load", "t": 1.0, "url": page_origin + c["url"]})
    return out


def test_a_human_task_counts_only_actions_and_loads_on_its_sites_on_the_base_origin():
    graded = 0
    for t in human_tasks("all"):
        conds = [c for s in t.verifier["macros"].values() for c in s["conditions"]]
        if not any(c["kind"] == "action_included" for c in conds): continue
        answer = json.loads((annotations_dir() / t.key / "script.json").read_text())["answer"]
        g = lambda traj: {"base": B, "answer": answer, "traj": traj, "log": [], "record": []}
        ok, detail = t.grade(g(synthetic_run(t.verifier, B, t.site)))
        assert ok, (t.key, detail)
        for where in ELSEWHERE:
            ok, detail = t.grade(g(synthetic_run(t.verifier, where, t.site)))
            assert not ok and "no action event" in detail, (t.key, where, detail)
        others = [s for s in ("shop", "hr", "bank", "mail") if s not in t.sites]
        ok, detail = t.grade(g(synthetic_run(t.verifier, B, others[0])))
        assert not ok, (t.key, detail)
        graded += 1
    assert graded >= 100, graded


def test_a_saved_grade_input_regrades_the_same():
    "grade_inputs.json saved before the origin rule: its entries carry their url, so the same grade comes back."
    t = next(t for t in human_tasks("all") if t.key.startswith("auctions/"))
    answer = json.loads((annotations_dir() / t.key / "script.json").read_text())["answer"]
    g = json.loads(json.dumps({"base": B, "answer": answer, "traj": synthetic_run(t.verifier, B, t.site), "log": [], "record": []}))
    assert as_task(t.model_dump()).grade(g) == t.grade(g) and t.grade(g)[0]
