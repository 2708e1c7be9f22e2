"""webmix.datagen end to end: tasks from the sitemaps, a real datagen run in Chromium that contacts nothing but
loopback, its kept trajectories, resume and pools."""
import json, random
from collections import Counter
from pathlib import Path

import pytest

from webmix import harness as H          # before anything imports browser_use
from webmix.catalog import FAMILY_OF, QA_MACROS, macros_for_control
from webmix.datagen import run_datagen
from webmix.pool import kept, read_results, write_pool
from webmix.tasks import all_tasks, make_tasks
from webmix.miniweb import free_ports, load_sites


def one_per_macro(tasks, seed=1):
    "One task of every macro, each on a random site (another draw than the notebook's)."
    by, rng = {}, random.Random(seed)
    for t in tasks: by.setdefault(t["macro"], []).append(t)
    return [rng.choice(by[m]) for m in sorted(by)]


def test_tasks_are_stable_and_cover_the_sitemaps():
    for name, site in load_sites().items():
        tasks = make_tasks(name)
        assert tasks == make_tasks(name)
        assert len({t["task_id"] for t in tasks}) == len(tasks)
        allowed = {m for c in site.sitemap()["controls"] for m in macros_for_control(c)}
        assert {t["macro"] for t in tasks} <= allowed
        for t in tasks:
            assert t["family"] == FAMILY_OF[t["macro"]] and t["start"]["url"].startswith(f"/sites/{name}")
            assert t["check"]["kind"] in ("request", "change", "answer", "clipboard")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    "One datagen run, one task per macro (every macro) over the embedded sites, with Chromium net logs and the audit hook on."
    tmp = tmp_path_factory.mktemp("datagen")
    tasks = one_per_macro(all_tasks())
    with H.loopback_only() as outside:
        summary = run_datagen(tmp / "run", tasks=tasks, ports=tuple(free_ports()), net_log_dir=tmp / "netlogs",
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
    results = read_results(run["dir"])
    assert len(results) == len(run["tasks"])
    n_kept = sum(r["ok"] for r in results)
    assert n_kept >= 0.95 * len(results), {r["task_id"]: r["cause"] for r in results if not r["ok"]}
    assert all(r["cause"] for r in results if not r["ok"])
    assert run["summary"]["_all"]["kept"] == n_kept


def test_kept_trajectories(run):
    for d in kept(run["dir"]).values():
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
    n = len(read_results(run["dir"]))
    run_datagen(run["dir"], tasks=run["tasks"], ports=tuple(free_ports()), progress=False)
    assert len(read_results(run["dir"])) == n
    ids = write_pool([run["dir"]], tmp_path / "pool.txt", split="all")
    assert ids == (tmp_path / "pool.txt").read_text().split() and set(ids) == set(kept(run["dir"]))
    train = write_pool([run["dir"]], tmp_path / "train.txt", split="train")
    assert set(train) <= set(ids)


def test_a_step_keeps_its_screenshot_when_browser_uses_times_out(monkeypatch, tmp_path):
    "On a busy machine browser-use's screenshot can time out; the driver then takes the page itself, before the action."
    monkeypatch.setenv("TIMEOUT_ScreenshotEvent", "0.0001")      # browser-use's own screenshot now always fails
    task = next(t for t in make_tasks("shop") if t["macro"] == "filter_by_dropdown")
    res = run_datagen(tmp_path / "run", tasks=[task], ports=tuple(free_ports(1)), progress=False)
    assert res["_all"]["kept"] == 1, read_results(tmp_path / "run")
    d = tmp_path / "run" / "accepted" / task["task_id"]
    steps = json.loads((d / "trajectory.json").read_text())["steps"]
    shots = [d / f"step_{k}.png" for k in range(1, len(steps) + 1)]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in shots)


# ── the run engine under datagen: shards, SIGKILL, faults, Ray ───────────────────

MACROS = "copy_to_clipboard,report_information,open_detail,paginate,sort_by_form"


def _lines(out):
    text = (Path(out) / "results.jsonl").read_text() if (Path(out) / "results.jsonl").exists() else ""
    assert text == "" or text.endswith("\n"), "a broken last line"
    return [json.loads(l) for l in text.splitlines()]


def _shard(out, k, *extra):
    import subprocess
    cmd = ["webmix", "datagen", "--out", str(out), "--sites", "shop", "--macros", MACROS, "--workers", "1",
           "--ports", str(free_ports(1)[0]), "--shard", f"{k}/2", *extra]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _kill_group(proc):
    "SIGKILL a run and everything it started (its own process group: servers, Chromium)."
    import os, signal, time
    try: os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError: pass
    proc.wait()
    time.sleep(1)


def test_two_shards_share_a_run_folder_and_a_killed_shard_resumes(tmp_path):
    import time
    from webmix.formats import problems
    out = tmp_path / "run"
    want = {t["task_id"] for t in all_tasks(["shop"], MACROS.split(","))}
    one, two = _shard(out, 1), _shard(out, 2)
    t_end = time.time() + 180
    while time.time() < t_end and not _lines(out) and one.poll() is None: time.sleep(0.2)
    _kill_group(one)                                       # shard 1 dies mid-run, an attempt in flight
    assert two.wait(300) == 0, two.stderr.read()[-2000:]
    assert 1 <= len(_lines(out)) < len(want)
    again = _shard(out, 1)
    assert again.wait(300) == 0, again.stderr.read()[-2000:]
    lines = _lines(out)
    assert sorted(r["task_id"] for r in lines) == sorted(want)              # every task exactly once
    assert sum(r["ok"] for r in lines) >= 0.95 * len(want), [r["cause"] for r in lines if not r["ok"]]
    for k, r in enumerate(lines): assert problems("result_datagen", r, f"line {k + 1}") == []
    for tid in kept(out):
        d = out / "accepted" / tid
        assert problems("task", json.loads((d / "task.json").read_text())) == []
        assert problems("trajectory", json.loads((d / "trajectory.json").read_text())) == []
    m = json.loads((out / "manifest.json").read_text())
    assert problems("manifest", m) == [] and sorted(s["shard"] for s in m["sessions"]) == ["1/2", "1/2", "2/2"]
    assert m["settings"] == {"seed": 0, "per_control": 1} and m["sites"]["shop"]
    # a resume with another seed stops and names the difference
    import subprocess
    r = subprocess.run(["webmix", "datagen", "--out", str(out), "--sites", "shop", "--seed", "1", "--limit", "1"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "seed 0 -> 1" in r.stderr, r.stderr[-500:]


def _watch(stop, kills):
    "Kill the first Chromium this process starts, then the MiniWeb server serving the next unit."
    import psutil, time
    me, seen = psutil.Process(), set()
    while not stop.is_set() and len(kills) < 2:
        try:
            browsers = [p for p in me.children(recursive=True) if "chrom" in p.name() and p.pid not in seen
                        and "--type=" not in " ".join(p.cmdline())]
            if browsers:
                seen.update(p.pid for p in browsers)
                time.sleep(0.8)                          # mid-unit: the browser is up, the episode under way
                if not kills: browsers[0].kill(); kills.append("chromium")
                else:
                    server = next(p for p in me.children(recursive=True) if "webmix.miniweb" in " ".join(p.cmdline()))
                    server.kill(); kills.append("server")
        except (psutil.Error, StopIteration): pass     # a unit ended first: wait for the next browser
        time.sleep(0.05)


def test_a_killed_browser_or_server_fails_one_attempt_and_the_run_goes_on(tmp_path):
    import threading
    tasks = [t for t in make_tasks("shop") if t["macro"] in ("report_information", "open_detail", "paginate")][:5]
    stop, kills = threading.Event(), []
    watcher = threading.Thread(target=_watch, args=(stop, kills), daemon=True)
    watcher.start()
    try: s = run_datagen(tmp_path / "run", tasks=tasks, workers=1, ports=free_ports(1), timeout=40, progress=False)
    finally: stop.set()
    lines = _lines(tmp_path / "run")
    assert kills == ["chromium", "server"] and len(lines) == 5, (kills, lines)
    bad = [r for r in lines if not r["ok"]]
    assert len(bad) <= 2 and all(r["cause"] for r in bad), bad        # at most the two attempts hit
    assert s["_all"]["kept"] >= 3 and lines[-1]["ok"], lines          # the server was started again for the rest


@pytest.mark.timeout(600)
def test_datagen_on_ray(tmp_path):
    pytest.importorskip("ray")
    import subprocess
    out = tmp_path / "run"
    r = subprocess.run(["webmix", "datagen", "--out", str(out), "--sites", "kanban", "--limit", "4", "--backend", "ray"],
                       capture_output=True, text=True, timeout=500)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = _lines(out)
    assert len(lines) == 4 and all(x["ok"] for x in lines), lines
    assert (out / "manifest.json").exists() and json.loads((out / "manifest.json").read_text())["sessions"][0]["backend"] == "ray"
