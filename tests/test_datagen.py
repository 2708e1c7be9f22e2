"""webmix.datagen end to end: tasks from the sitemaps, a real datagen run in Chromium that contacts nothing but
loopback, its kept trajectories, resume and pools."""
import json, random
from collections import Counter
from pathlib import Path

import pytest

from webmix import harness as H          # before anything imports browser_use
from webmix import datagen as D
from webmix.catalog import FAMILY_OF, QA_MACROS
from webmix.miniweb import free_ports, load_sites


def one_per_macro(tasks, seed=1):
    "One task of every macro, each on a random site (another draw than the notebook's)."
    by, rng = {}, random.Random(seed)
    for t in tasks: by.setdefault(t["macro"], []).append(t)
    return [rng.choice(by[m]) for m in sorted(by)]


def test_tasks_are_stable_and_cover_the_sitemaps():
    for name, site in load_sites().items():
        tasks = D.make_tasks(name)
        assert tasks == D.make_tasks(name)
        assert len({t["task_id"] for t in tasks}) == len(tasks)
        allowed = {m for c in site.sitemap()["controls"] for m in D.macros_for_control(c)}
        assert {t["macro"] for t in tasks} <= allowed
        for t in tasks:
            assert t["family"] == FAMILY_OF[t["macro"]] and t["start"]["url"].startswith(f"/sites/{name}")
            assert t["check"]["kind"] in ("request", "change", "answer", "clipboard")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    "One datagen run, one task per macro (every macro) over the embedded sites, with Chromium net logs and the audit hook on."
    tmp = tmp_path_factory.mktemp("datagen")
    tasks = one_per_macro(D.all_tasks())
    with H.loopback_only() as outside:
        summary = D.run_datagen(tmp / "run", tasks=tasks, ports=tuple(free_ports()), net_log_dir=tmp / "netlogs",
                                progress=False)
    return {"dir": tmp / "run", "tasks": tasks, "summary": summary, "outside": list(outside), "netlogs": tmp / "netlogs"}


def test_the_run_covers_every_macro(run):
    from webmix.catalog import MACROS
    assert {t["macro"] for t in run["tasks"]} == set(MACROS)


def test_datagen_contacts_nothing_but_loopback(run):
    assert run["outside"] == [], run["outside"]                 # the Python side: the audit hook saw no other host
    logs = sorted(run["netlogs"].glob("*.json"))
    assert len(logs) == len(run["tasks"])
    hosts = set().union(*(H.net_log_hosts(p) for p in logs))
    assert hosts and all(H.is_loopback(h) for h in hosts), hosts   # the Chromium side: its net log


def test_kept_on_the_first_attempt_and_causes_named(run):
    results = D.read_results(run["dir"])
    assert len(results) == len(run["tasks"])
    kept = sum(r["ok"] for r in results)
    assert kept >= 0.95 * len(results), {r["task_id"]: r["cause"] for r in results if not r["ok"]}
    assert all(r["cause"] for r in results if not r["ok"])
    assert run["summary"]["_all"]["kept"] == kept


def test_kept_trajectories(run):
    for tid in D.kept_ids(run["dir"]):
        d = run["dir"] / "accepted" / tid
        task, traj = json.loads((d / "task.json").read_text()), json.loads((d / "trajectory.json").read_text())
        els = json.loads((d / "elements.json").read_text())
        assert traj["site"] == task["site"] and traj["macro"] == task["macro"] and traj["start_kind"] == task["start"]["kind"]
        assert [s["action"] for s in traj["steps"][-2:]] == ["macro_done", "done"]
        assert (traj["answer"] not in (None, "")) == (task["macro"] in QA_MACROS)
        for k, s in enumerate(traj["steps"], 1):
            assert (d / f"step_{k}.png").exists() and s["memory"] and s["duration"] is not None
            if "index" in s["params"]:
                assert s["element"]["control_id"] and str(s["params"]["index"]) in els[str(k)]


def test_resume_skips_done_attempts_and_pool(run, tmp_path):
    n = len(D.read_results(run["dir"]))
    D.run_datagen(run["dir"], tasks=run["tasks"], ports=tuple(free_ports()), progress=False)
    assert len(D.read_results(run["dir"])) == n
    ids = D.write_pool([run["dir"]], tmp_path / "pool.txt", split="all")
    assert ids == (tmp_path / "pool.txt").read_text().split() and set(ids) == set(D.kept_ids(run["dir"]))
    train = D.write_pool([run["dir"]], tmp_path / "train.txt", split="train")
    assert set(train) <= set(ids)


def test_a_step_keeps_its_screenshot_when_browser_uses_times_out(monkeypatch, tmp_path):
    "On a busy machine browser-use's screenshot can time out; the driver then takes the page itself, before the action."
    monkeypatch.setenv("TIMEOUT_ScreenshotEvent", "0.0001")      # browser-use's own screenshot now always fails
    task = next(t for t in D.make_tasks("shop") if t["macro"] == "filter_by_dropdown")
    res = D.run_datagen(tmp_path / "run", tasks=[task], ports=tuple(free_ports(1)), progress=False)
    assert res["_all"]["kept"] == 1, D.read_results(tmp_path / "run")
    d = tmp_path / "run" / "accepted" / task["task_id"]
    steps = json.loads((d / "trajectory.json").read_text())["steps"]
    shots = [d / f"step_{k}.png" for k in range(1, len(steps) + 1)]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in shots)
