"""Answer checks against answers that hedge, and graders against evidence from off-site documents, with no browser.

Every answer check (the human verifiers' tiers in checks.grade_answer, datagen's checks.check_answer) must pass each
task's scripted answer and honest sentences that state the value, and fail an answer that lists candidates: every
number from 0 to 100, the numbers or dates around the expected one, every choice of a set. The gates (checks.gate_task
for a generated task, HumanTask.grade for a human-style one) must count only evidence recorded on the pages of the
task's site(s) on the server the session ran on: the same entry from a data: document, from another port or from
another site fails the check it passes on the base origin."""
import json
import re
from datetime import timedelta

import pytest

from webmix.config import annotations_dir
from webmix.data.driver_scripts import driver_script
from webmix.data.task_context import option_text
from webmix.data.tasks import all_tasks
from webmix.eval.evaluate import human_tasks
from webmix.records import as_task
from webmix.world import answers as A
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


def off_by_one(ex) -> str:
    "A value one step from the expected one, written the same way: the next number, day, choice or code."
    if ex.type in ("count", "amount"):
        x = C.number(ex.value) + (0.01 if "." in ex.value else 1)
        return ("$" if ex.currency else "") + (f"{x:,.2f}" if "." in ex.value else f"{x:g}")
    if ex.type == "date": return str(A.read_dates(ex.value)[0][2] + timedelta(1))
    if ex.type == "choice": return ex.choices[(ex.choices.index(ex.value) + 1) % len(ex.choices)]
    digits = re.search(r"\d(?!.*\d)", ex.value)
    if digits: return ex.value[:digits.start()] + str((int(digits[0]) + 1) % 10) + ex.value[digits.end():]
    return ex.value + " II"                                                  # a sequel is another title


def rival(ex) -> str:
    "Another value of the same type, far from the expected one."
    if ex.type in ("count", "amount"): return ("$" if ex.currency else "") + f"{C.number(ex.value) * 2 + 7:g}"
    if ex.type == "date": return str(A.read_dates(ex.value)[0][2] + timedelta(40))
    if ex.type == "choice": return ex.choices[(ex.choices.index(ex.value) + 2) % len(ex.choices)]
    return "Quentin Marlowe"


def test_every_human_verifier_says_its_type():
    types = {}
    for d, task, v, _ in human_answer_tasks():
        a = v["answer"]
        assert a.get("type") in A.TYPES, (d.name, a.get("type"))
        if a["type"] == "choice": assert A.expects_of_spec(a).value in a["choices"], d.name
        types[a["type"]] = types.get(a["type"], 0) + 1
    print(types)
    assert sum(types.values()) == 178 and {"count", "amount", "date", "choice", "name"} <= set(types)


def test_every_human_verifier_passes_its_value_said_three_ways_and_fails_negated_near_and_rival_values():
    tally = {"tasks": 0, "said": 0, "wrong": 0}
    for d, task, v, script in human_answer_tasks():
        spec, q = v["answer"], task["instruction"]
        ex, got = A.expects_of_spec(spec, q), lambda a: C.grade_answer(spec, a, q)
        shown = spec["llm"]["expected"]
        # the scripted answer names the item as its pages do ('Zenith El Primero ... (Lot 69): $152'): the screens a
        # run saw hold those words; the answer's own text stands in for them here
        r = C.grade_answer(spec, script["answer"], q, [script["answer"]])
        assert r["passed"] is True, (d.name, script["answer"], r["detail"])
        if script["wrong"]["kind"] == "answer":
            assert got(script["wrong"]["answer"])["passed"] is False, (d.name, script["wrong"]["answer"])
        for said in (shown, f"The answer is {shown}.", f"It is {shown}, I checked."):
            assert got(said)["passed"] is True, (d.name, said, got(said)["detail"])
            tally["said"] += 1
        for wrong in (f"It is not {shown}.", f"Not {shown}.", off_by_one(ex), f"The answer is {rival(ex)}.",
                      f"Not found; I checked {shown}.", f"{shown} or {off_by_one(ex)}", *[LISTED] * (ex.type in ("count", "amount"))):
            assert got(wrong)["passed"] is False, (d.name, wrong, got(wrong)["detail"])
            tally["wrong"] += 1
        if ex.type in ("count", "amount", "date"):
            kind = "date" if ex.type == "date" else "number"
            value = str(A.read_dates(ex.value)[0][2]) if kind == "date" else next(m["value"] for m in spec["matchers"] if m["tier"] == "precise")
            for listed in (", ".join(near(value, kind, q)), " or ".join(sorted(near(value, kind, q)[:3]))):
                assert got(listed)["passed"] is False, (d.name, listed)
        tally["tasks"] += 1
    print(tally)
    assert tally["tasks"] == 178


def test_an_answer_the_typed_grader_cannot_read_is_ungraded_never_passed():
    spec = {"type": "count", "matchers": [{"tier": "exact", "value": "2"}], "llm": {"expected": "2"}}
    r = C.grade_answer(spec, "two of them", "How many?")
    assert r["passed"] is None and r["skipped"] and r["detail"].startswith("ungraded"), r
    verifier = {"macros": {"report_information": {"subtask": "Say how many", "conditions": []}}, "answer": spec}
    v = C.verify_task(verifier, [], "two of them", "How many?")
    assert v["passed"] is None and v["summary"].startswith("ungraded"), v
    assert C.verify_task(verifier, [], "3", "How many?")["passed"] is False and C.verify_task(verifier, [], "2", "How many?")["passed"] is True
    text = {"kind": "answer", "match": "exact", "type": "text", "value": "a summary"}
    ok, detail, _ = C.check_answer(text, "It rained.", ["a summary"])
    assert ok is None and "ungraded" in detail, detail


BRIEF = [   # (what the check expects, right sentences, wrong sentences)
    (A.Expects("count", "2"), ["2", "There are 2 lots.", "Total: 2"],
     ["Not found; I checked 2 pages.", "3, not 2.", "There are 3 results; 2 of them are on the first page.", "about 2",
      "2 or 3", "maybe 2", "It is not 2", "none", "Either 2 or 4", "approximately 2 lots"]),
    (A.Expects("count", "12"), ["12", "There are 12 lots (Lot 7 among them)."],
     ["There are 3 matching lots: Lot 12, Lot 40 and Lot 7", "It is not 12", "13"]),
    (A.Expects("count", "0"), ["0", "None.", "There are no seats left."], ["1", "Not found", "I could not tell"]),
    (A.Expects("amount", "$1,428.00", currency="$"), ["$1,428.00", "Total: 1,428", "1428", "The answer is $1,428.00.", "1428.00",
     "Porcelain crown: $1,428.00."], ["$1,429.00", "not $1,428.00", "$1,428.00 or $1,500.00", "unknown"]),
    (A.Expects("amount", "$81.95", currency="$"), ["The answer is $81.95.", "It was $81.95 on 2026-09-30.", "81.95 USD"],
     ["$91.95", "$81.95, maybe $91.95", "€81.95", "81.95 EUR"]),
    (A.Expects("choice", "Passing", ["Passing", "Failing", "Running"]), ["The answer is Passing.", "It is Passing.", "passing"],
     ["The CI is failing, not passing.", "Passing or Failing", "not passing", "Failing", "It isn't passing."]),
    (A.Expects("choice", "Failing", ["Passing", "Failing", "Running"]), ["Failing", "The CI is failing.", "Yes, CI is Failing on #9."],
     ["The CI is passing, not failing.", "Running"]),
    (A.Expects("choice", "Open", ["Open", "Closed"]), ["It is Open.", "The status of Lot 53 is Open."], ["It isn't Open.", "Closed", "Open or Closed"]),
    (A.Expects("date", "Dec 5, 2026"), ["2026-12-05", "December 5, 2026", "5 Dec 2026", "12/05/2026", "Dec 5", "It is due on Dec 5, 2026."],
     ["2026-12-06", "not 2026-12-05", "Dec 5 or Dec 6", "Not found", "05/12/2026", "around Dec 5"]),
    (A.Expects("name", "Farid Reyes"), ["Farid Reyes", "The host is Farid Reyes."],
     ["Farid Tanaka", "not Farid Reyes", "Farid Reyes or Ana Larsen", "Farid Reyes II", "maybe Farid Reyes"]),
    (A.Expects("name", "BDC-260003"), ["BDC-260003", "It is BDC 260003."], ["BDC-260004", "BDC-2600031", "I was unable to find it"]),
    (A.Expects("set", ["Dune", "Emma"], ["Dune", "Emma", "Ulysses"]), ["Emma and Dune"], ["Dune", "Dune, Emma, Ulysses", "Dune, not Emma"]),
]


ASKED = {"Failing": "Is the CI of pull request #9 failing?", "Open": "What is the status of Lot 53?",
         "Farid Reyes": "Who is the host of the event?"}                  # requests whose words the answers repeat
SCREEN = {"$1,428.00": ["Invoice 2026-114  Porcelain crown  $1,428.00  Paid"]}


@pytest.mark.parametrize("ex,right,wrong", BRIEF, ids=[f"{e.type}-{e.value}" for e, _, _ in BRIEF])
def test_grade_passes_right_sentences_and_fails_wrong_ones(ex, right, wrong):
    q, seen = ASKED.get(str(ex.value)), SCREEN.get(str(ex.value))
    for a in right: assert A.grade(ex, a, q, seen).passed is True, (a, A.grade(ex, a, q, seen))
    for a in wrong: assert A.grade(ex, a, q, seen).passed is False, (a, A.grade(ex, a, q, seen))


SAYS_MORE = [   # (what the check expects, the request, answers that state the value and more: never a pass)
    (A.Expects("count", "2"), "How many lots are open?",
     ["Could be 2.", "If I had to guess, 2.", "Anything but 2.", "Hard to say: 2.", "2 (unverified)", "2? 3?", "3, 2",
      "Search for 2 returned nothing.", "2 lots, or so it seemed", "2 and 3", "2/3", "2+", ">2", "≥ 2 lots"]),
    (A.Expects("amount", "$81.95", currency="$"), "How much was the older payment?",
     ["$81.95 is incorrect; it's 82.95.", "82.95 (previously $81.95)", "$81.95 was the old value; the current value is 82.95.",
      "between $81.95 and 82.95", "82.95, $81.95", "Porcelain crown, tooth 37: $81.95."]),
    (A.Expects("choice", "Passing", ["Passing", "Failing"]), "What does the CI show?",
     ["Passing is incorrect; it's Zephyr.", "Zephyr (previously Passing)", "Passing? Zephyr?"]),
    (A.Expects("name", "Farid Reyes"), "Who is the host?",
     ["The first one is Ana Larsen; Farid Reyes comes after it.", "Farid Reyes, Ana Larsen", "Farid Reyes/Ana Larsen",
      "It used to be Farid Reyes; now it is Ana Larsen.", "Farid Reyes is wrong; the answer is Ana Larsen."]),
]


@pytest.mark.parametrize("ex,q,said", SAYS_MORE, ids=[e.type for e, _, _ in SAYS_MORE])
def test_an_answer_that_says_more_than_its_value_is_never_a_pass(ex, q, said):
    "Stance and other values the word lists miss: what is left beside the value leaves the answer to a judge (or fails it)."
    screens = ["Lots 2 open  Ana Larsen  Farid Reyes  82.95  $81.95  Zephyr"]
    for a in said: assert A.grade(ex, a, q, screens).passed is not True, (a, A.grade(ex, a, q, screens))


def test_datagen_checks_grade_by_the_value_asserted():
    seen = ["Lot 12 Camera $1,428.00 Lot 53 Open Due Dec 5, 2026 Passing"]
    numeric = {"kind": "answer", "match": "numeric", "value": 12, "tolerance": 0}
    assert not C.check_answer(numeric, "There are 3 matching lots: Lot 12, Lot 40 and Lot 7", seen)[0]
    assert C.check_answer(numeric, "There are 12 lots.", seen)[0]
    exact = lambda v, **kw: {"kind": "answer", "match": "exact", "value": v, **kw}
    passing = exact("Passing", type="choice", choices=["Passing", "Failing"])
    for a in ("The answer is Passing.", "It is Passing."): assert C.check_answer(passing, a, seen)[0], a
    assert not C.check_answer(passing, "It is Failing.", seen)[0] and not C.check_answer(passing, "not Passing", seen)[0]
    assert C.check_answer(exact("Open", type="choice", choices=["Open", "Closed"]), "The status of Lot 53 is Open.", seen)[0]
    for a in ("2026-12-05", "December 5, 2026"): assert C.check_answer(exact("Dec 5, 2026"), a, seen)[0], a
    assert not C.check_answer(exact("Dec 5, 2026"), "2026-12-06", seen)[0]


def test_makers_type_their_answer_checks():
    types = {}
    for t in all_tasks():
        for c in answer_checks(t["check"]):
            assert c.get("type") in A.TYPES, (t["task_id"], c)
            if c["type"] == "choice": assert c["value"] in c["choices"], (t["task_id"], c)
            types[c["type"]] = types.get(c["type"], 0) + 1
    assert {"count", "amount", "date", "choice", "name"} <= set(types), types


def answer_checks(check):
    if check.get("kind") == "all":
        for c in check["checks"]: yield from answer_checks(c)
    elif check.get("kind") == "answer": yield check


def test_datagen_answers_pass_stated_and_fail_listed():
    tally = {"checks": 0, "listed": 0, "driver_sentence": 0}
    for t in all_tasks():
        for c in answer_checks(t["check"]):
            q, said = t["instruction"], driver_script(t)["answer"]
            seen = [str(c["value"]), *c.get("evidence", [])]
            ok = lambda a: C.check_answer(c, a, seen, q)[0]
            tally["checks"] += 1
            assert ok(said) is True, (t["task_id"], said, C.check_answer(c, said, seen, q)[1])
            tally["listed"] += ok(LISTED) is True
            if c["match"] != "numeric": continue
            cands = near(said, "number", q, step=1)       # whole units apart: a price's check has a cent of tolerance
            assert not ok(", ".join(cands)) and not ok(" or ".join(sorted(cands[:3]))), (t["task_id"], cands)
            for s in (f"There are {said} results.", f"The answer is {said}."): assert ok(s), (t["task_id"], s)
            if t["macro"] == "count_entries":          # the sentence the count driver says, naming the task's option
                s = f"With {option_text(t['control'], t['option'])} applied the list reports {said} results."
                assert ok(s), (t["task_id"], s, C.check_answer(c, s, seen, q)[1])
                tally["driver_sentence"] += 1
    print(tally)
    assert tally["checks"] >= 500 and tally["listed"] == 0


def test_a_set_answer_listing_every_choice_fails():
    check = {"kind": "answer", "match": "set", "value": ["Dune", "Emma"], "choices": ["Dune", "Emma", "Ulysses", "Beloved"]}
    seen = ["Dune Emma Ulysses Beloved"]
    assert C.check_answer(check, "Emma and Dune", seen)[0]
    ok, detail, _ = C.check_answer(check, "Dune, Emma, Ulysses, Beloved", seen)
    assert not ok and "besides the expected" in detail, detail
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
        g = lambda traj: {"base": B, "answer": answer, "traj": traj, "log": [], "record": [], "seen": [answer]}   # its screens' words
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
