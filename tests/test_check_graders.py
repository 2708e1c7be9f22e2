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


def test_the_command_on_a_small_split(tmp_path):
    out = tmp_path / "graders.json"
    r = _run("--split", "test", "--sites", "mail,travel", "--limit", "12", "--out", str(out))
    report = json.loads(out.read_text())
    assert formats.problems("grader_report", report) == []
    assert r.returncode == (0 if report["passed"] else 1), r.stderr[-2000:]
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
    assert r.returncode in (0, 1), r.stderr[-2000:]
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
