"""`webmix check-graders`: the graders' negative controls run as a new user runs them (the command, its exit status, its
table and JSON report), and wrong answers written by hand, unlike the command's own templates, that every grader must fail."""
import json, re, subprocess

import pytest

from webmix import formats
from webmix.data.tasks import split_tasks
from webmix.eval.check_graders import KINDS, annotated_tasks, datagen_answer_task, grade, human_answer_task
from webmix.world.sites import load_sites

HEADER = ["tasks", "right", "right pass", "wrong", "wrong pass", "ungraded"]


def _run(*args):
    return subprocess.run(["webmix", "check-graders", *args], capture_output=True, text=True, timeout=300)


def _table(stdout):
    "The table's rows (cells split at runs of two spaces), up to its 'all' row."
    rows = []
    for line in stdout.splitlines():
        rows.append(re.split(r"\s{2,}", line.strip()))
        if rows[-1][0] == "all": return rows
    raise AssertionError(f"no 'all' row in:\n{stdout}")


def test_every_shipped_grader_fails_every_wrong_answer(tmp_path):
    "CI's negative controls: on every shipped task no wrong answer passes, and right answers of each kind pass at least 98%."
    out = tmp_path / "graders.json"
    r = _run("--out", str(out))
    report = json.loads(out.read_text())
    assert r.returncode == 0 and report["passed"], r.stdout[-3000:]
    assert report["tasks"]["human"] == 178 and report["tasks"]["datagen"] > 900 and report["tasks"]["drop"] > 10
    assert all(s["wrong_passed"] == 0 and s["right_rate"] >= 0.98 for s in report["by_kind"].values()), report["by_kind"]


def test_a_tasks_file_of_another_draw(tmp_path):
    "Tasks the shipped draw does not hold (another seed, two per control): a choice of signs ('$$'), a measure ('3.8 kg')."
    tasks = tmp_path / "t.jsonl"
    made = subprocess.run(["webmix", "tasks", "--sites", "restaurant,helpdesk,vetclinic,mail", "--per-control", "2", "--seed", "3",
                           "--out", str(tasks)], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    r = _run("--no-human", "--tasks", str(tasks), "--by", "site")
    assert r.returncode == 0, r.stdout[-3000:]
    assert [row[0] for row in _table(r.stdout)[1:]] == ["helpdesk", "mail", "restaurant", "vetclinic", "all"]
    r = _run("--tasks", str(tmp_path / "none.jsonl"))
    assert r.returncode == 1 and "--tasks" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_the_command_on_a_small_split(tmp_path):
    out = tmp_path / "graders.json"
    r = _run("--split", "test", "--sites", "mail,travel", "--limit", "12", "--out", str(out))
    report = json.loads(out.read_text())
    assert formats.problems("grader_report", report) == []
    assert r.returncode == 0 and report["passed"], r.stdout[-2000:]
    rows = _table(r.stdout)
    assert rows[0] == ["kind", *HEADER] and all(len(row) == 7 for row in rows)
    assert {row[0] for row in rows[1:-1]} == set(report["by_kind"]) and set(report["by_kind"]) <= set(KINDS)
    assert report["tasks"]["human"] and report["tasks"]["datagen"] and report["probes"] > 100
    assert {p["site"] for p in report["wrong_passed"] + report["right_failed"]} <= {"mail", "travel"}
    wrong = sum(s["wrong_passed"] for s in report["by_kind"].values())
    assert (f"FAILED: {wrong:,} wrong answer" in r.stdout) == (wrong > 0)      # every wrong pass is a failure, said at the end


def test_the_command_by_site_and_its_refusals():
    r = _run("--split", "test", "--sites", "mail", "--no-human", "--limit", "5", "--by", "site")
    rows = _table(r.stdout)
    assert rows[0] == ["site", *HEADER] and [row[0] for row in rows[1:]] == ["mail", "all"]
    assert r.returncode == 0, r.stdout[-2000:]
    r = _run("--split", "train", "--sites", "mail")
    assert r.returncode == 1 and "mail: not on the train split" in r.stderr
    r = _run("--no-human", "--no-datagen")
    assert r.returncode == 1 and "leave no task" in r.stderr


# wrong answers by hand: none of them is one of the command's templates
HAND_WRONG = ["Approximately {x}", "I believe it's {x} but I'm not sure", "{x}? No, {y}.", "Maybe {x}.",
              "Either {x} or {y}", "It used to be {x}; now it is {y}.", "{y} (not {x})", "Definitely not {x}",
              "{x} is wrong; the answer is {y}.", "Somewhere between {x} and {y}"]
KEYS = [(s, k) for s in ("human", "datagen") for k in ("count", "amount", "date", "choice", "name")]


@pytest.fixture(scope="module")
def tasks():
    "A task of each source and answer kind that has a rival value."
    sites = load_sites()
    human = [a for t in annotated_tasks("all") if (a := human_answer_task(t, sites))]
    datagen = [a for t in split_tasks("all", ["shop", "mail", "travel", "auctions", "codereview"]) if (a := datagen_answer_task(t, sites))]
    out = {}
    for a in human + datagen:
        if a.others: out.setdefault(f"{a.source} {a.kind}", a)
    return out


@pytest.mark.parametrize("template,key", [(t, f"{s} {k}") for t in HAND_WRONG for s, k in KEYS])
def test_hand_written_wrong_answers_fail(tasks, template, key):
    if key not in tasks: pytest.skip(f"no {key} task with a rival value")
    at = tasks[key]
    answer = template.format(x=at.expected, y=at.others[0])
    ok, detail = grade(at, answer, [at.expected, at.others[0], answer])
    assert ok is not True, f"{at.task_id}: {answer!r} passed ({detail})"
