"""webmix.records: the typed task kinds against the JSON Schemas of the files that hold them and against every task
webmix has: the makers' datagen tasks of every site, taskgen's proposed task lines, the human-style tasks."""
import pytest

from webmix import formats as F
from webmix.eval.evaluate import human_tasks
from webmix.records import (KINDS, DatagenTask, HumanTask, OnlineTask, ProposedTask, TaskFileError, as_task,
                            MAX_INSTRUCTION)
from webmix.eval.propose import task_line
from webmix.data.tasks import all_tasks
from webmix.config import annotations_dir


@pytest.fixture(scope="module")
def made():
    return all_tasks()


def test_each_schema_requires_only_fields_its_class_has():
    for cls, name in ((DatagenTask, "task"), (ProposedTask, "proposed_task")):
        assert set(F.schema(name)["required"]) <= set(cls.model_fields), name
    assert set(KINDS) == {"datagen", "human", "proposed", "online"}


def test_every_generated_task_loads_typed_and_dumps_back_unchanged(made):
    typed = [as_task(t, t["task_id"]) for t in made]
    assert {type(t) for t in typed} == {DatagenTask}
    assert [t.to_dict() for t in typed] == made                      # nothing added, nothing lost, nothing retyped
    bad = [p for t in typed for p in F.problems("task", t.to_dict(), t.task_id)]
    assert bad == [], bad[:5]
    for t in typed[:50]:
        assert t.session_flags() == ({"logout": 1} if (t.control or {}).get("role") == "login" else dict((t.control or {}).get("prep") or {}))
        assert t.family_plan()[-1] == t.macro and t.success_family() == t.family


def test_proposed_lines_and_human_tasks_are_their_kinds():
    line = task_line({"site": "shop", "home": "/sites/shop/"}, "Find the cheapest desk lamp in the shop.", "info", "p")
    assert F.problems("proposed_task", line) == [] and as_task(line).to_dict() == line
    humans = human_tasks("all")
    assert len(humans) == len(list(annotations_dir().glob("*/*/task.json"))) and all(isinstance(t, HumanTask) for t in humans)
    cross = next(t for t in humans if len(t.sites) > 1)
    assert cross.start_url("http://h") == "http://h/" and "Apps: " in cross.prompt("http://h")
    login = next(t for t in humans if t.needs_login)
    assert login.session_flags() == {"logout": 1}


def test_a_task_that_breaks_a_field_is_one_line_naming_it(made):
    t = made[0]
    cases = {"the task has no check": {k: v for k, v in t.items() if k != "check"},
             "task_id: '../x' cannot name a folder": {**t, "task_id": "../x"},
             "task_id: 'a ' cannot name a folder": {**t, "task_id": "a "},
             "start: start.url is not a /sites/ path": {**t, "start": {"url": "https://elsewhere/"}},
             "macro: Input should be a valid string": {**t, "macro": 3},
             "instruction: String should have at most": {**t, "instruction": "x" * (MAX_INSTRUCTION + 1)},
             "unknown task kind 'weird'": {**t, "kind": "weird"}}
    for want, obj in cases.items():
        with pytest.raises(TaskFileError) as e: as_task(obj, "f.jsonl, line 2")
        msg = str(e.value)
        assert msg.startswith("f.jsonl, line 2: ") and want in msg and "\n" not in msg, (want, msg)
    with pytest.raises(TaskFileError, match="unknown task kind 'human'"): as_task({**t, "kind": "human"}, "x", ("datagen", "proposed"))


def test_an_online_task_has_its_website_host_as_site_and_no_miniweb_session():
    t = as_task({"kind": "online", "task_id": "7", "instruction": "Find it.", "confirmed_task": "Find it.",
                 "website": "https://www.Example.org:8443/a", "web_name": "Example"})
    assert isinstance(t, OnlineTask) and t.site == "example.org:8443" and t.field("web_name") == "Example"
    assert t.judged and t.grade({}) == (False, "pending: judge") and t["website"] == t.start_url()


def test_answer_checks_take_names_quotes_negatives_and_nested_choices_both_ways():
    """Answers a grader once got wrong, each graded right and its wrong twin failed: a name that reads as a number
    (Nan), a quoted title before a full stop, a choice inside an expected item, a money-formatted numeric value, a
    negative number (and a dash that is punctuation before a positive one)."""
    from webmix.world import checks as C
    shown = ["Nan Rivera joined in 2021", "Dune; Dune Messiah; Emma", "Balance: $35.00", "Change: -3 points", "Items - 3"]
    grade = lambda check, answer: C.check_answer(check, answer, shown)[0]
    assert C.value_matches("Nan", "Nan") and not C.value_matches("Nan", "Ann") and C.number("inf") is None
    assert C.precise_match("Nan", "Her name is Nan") and not C.precise_match("Nan", "Her name is Ann")
    assert grade({"match": "exact", "value": "Dune"}, "'Dune'.") and not grade({"match": "exact", "value": "Dune"}, "'Dune Messiah'.")
    nested = {"match": "set", "value": ["Dune Messiah"], "choices": ["Dune", "Dune Messiah", "Emma"]}
    assert grade(nested, "Dune Messiah") and not grade(nested, "Dune Messiah and Emma")
    assert not grade(nested, "Dune and Dune Messiah")                 # "Dune" on its own is an extra
    money = {"match": "numeric", "value": "$35.00"}
    assert grade(money, "It is 35 dollars") and not grade(money, "It is 36 dollars")
    negative = {"match": "numeric", "value": -3}
    assert grade(negative, "The change is -3") and not grade(negative, "The change is 3")
    assert grade({"match": "numeric", "value": 3}, "Items - 3")       # a dash before a positive value is punctuation
