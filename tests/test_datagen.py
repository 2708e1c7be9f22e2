"""webmix.data.datagen end to end: tasks from the sitemaps, a real datagen run in Chromium that contacts nothing but
loopback, its kept trajectories, resume and pools; event checks graded from the recorder, by datagen's gate and by
evaluate alike; the tasks file `webmix tasks` writes."""
import asyncio, json, random
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from webmix.agents import harness as H          # before anything imports browser_use
from webmix.agents import actions as HA
from webmix.agents import offline as HO
from webmix.agents import session as HS
from webmix.world import checks
from webmix.data import drivers as D
from webmix.eval import evaluate as E
from webmix.episode_layout import line_text
from webmix.world.catalog import FAMILY_OF, QA_MACROS, macros_for_control
from webmix.config import split_of
from webmix.data.datagen import run_datagen
from webmix.data.pool import kept, read_results, write_pool
from webmix import formats
from webmix.folders import variant_table
from webmix.records import as_task, on_variant
from webmix.data.tasks import all_tasks, make_tasks
from webmix.data.plan_data import _joined
from webmix.data.wording import text_faults
from webmix.world.sites import load_sites, sitemap
from webmix.world.servers import free_ports
from row_layout import REFERENCE, datagen_layout


def one_per_macro(tasks, seed=1):
    "One task of every macro, each on a random site (another draw than the notebook's)."
    by, rng = {}, random.Random(seed)
    for t in tasks: by.setdefault(t["macro"], []).append(t)
    return [rng.choice(by[m]) for m in sorted(by)]


def test_tasks_are_stable_and_cover_the_sitemaps():
    """Every site's tasks are the same twice, cover its sitemap, and read as a person writes them: no word written twice,
    no doubled stop, no Python repr, alone or joined into one request as plan-data joins them."""
    instructions = []
    for name, site in load_sites().items():
        tasks = make_tasks(name)
        assert tasks == make_tasks(name)
        assert len({t["task_id"] for t in tasks}) == len(tasks)
        allowed = {m for c in site.sitemap()["controls"] for m in macros_for_control(c)}
        assert {t["macro"] for t in tasks} <= allowed
        for t in tasks:
            assert t["family"] == FAMILY_OF[t["macro"]] and t["start"]["url"].startswith(f"/sites/{name}")
            assert t["check"]["kind"] in ("request", "change", "answer", "clipboard")
        instructions += [t["instruction"] for t in tasks]
    assert len(instructions) > 6000
    assert [(s, text_faults(s)) for s in instructions if text_faults(s)] == []
    rng = random.Random(5)
    joined = [_joined(rng.sample(instructions, rng.randint(2, 4))) for _ in range(2000)]
    assert [(s, text_faults(s)) for s in joined if text_faults(s)] == []


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One datagen run, one task per macro (every macro) over the embedded sites, each on one of the site variants 0, 1
    and 2 in turn (webmix.world.variants), with Chromium net logs and the audit hook on."""
    tmp = tmp_path_factory.mktemp("datagen")
    tasks = [on_variant(t, i % 3) for i, t in enumerate(one_per_macro(all_tasks()))]
    with HO.loopback_only() as outside:
        results = run_datagen(tmp / "run", tasks=tasks, ports=tuple(free_ports()), net_log_dir=tmp / "netlogs",
                              progress=False)
    return {"dir": tmp / "run", "tasks": tasks, "summary": results.attrs["summary"], "results": results, "outside": list(outside), "netlogs": tmp / "netlogs"}


def test_the_run_covers_every_macro(run):
    from webmix.world.catalog import MACROS
    assert {t["macro"] for t in run["tasks"]} == set(MACROS)


def test_datagen_contacts_nothing_but_loopback(run):
    assert run["outside"] == [], run["outside"]                 # the Python side: the audit hook saw no other host
    logs = sorted(run["netlogs"].glob("*.json"))
    assert len(logs) == len(run["tasks"])
    hosts = set().union(*(HO.net_log_hosts(p) for p in logs))
    assert hosts and all(HO.is_loopback(h) for h in hosts), hosts   # the Chromium side: its net log


def test_kept_on_the_first_attempt_and_causes_named(run):
    results = read_results(run["dir"])
    assert len(results) == len(run["tasks"])
    n_kept = sum(r["ok"] for r in results)
    assert n_kept >= 0.95 * len(results), {r["task_id"]: r["cause"] for r in results if not r["ok"]}
    assert all(r["cause"] for r in results if not r["ok"])
    assert run["summary"]["_all"]["kept"] == n_kept == run["results"]["ok"].sum()
    assert sorted(run["results"]["task_id"]) == sorted(t["task_id"] for t in run["tasks"])     # one row a task
    table = variant_table(results).splitlines()                 # kept on every variant: the robustness table datagen prints
    assert [line.split()[0] for line in table[1:4]] == ["0", "1", "2"] and table[-1].startswith("spread"), table


def test_kept_trajectories(run):
    for d in kept(run["dir"]).values():
        task, traj = json.loads((d / "task.json").read_text()), json.loads((d / "trajectory.json").read_text())
        els = json.loads((d / "elements.json").read_text())
        assert traj["site"] == task["site"] and traj["macro"] == task["macro"] and traj["start_kind"] == task["start"]["kind"]
        assert traj["variant"] == task.get("variant", 0) and d.name.endswith(f"~v{traj['variant']}" if traj["variant"] else "")
        rec = json.loads((d / "episode.json").read_text())
        assert rec["layout"] == "datagen" and formats.problems("episode", rec) == [] and len(rec["steps"]) == len(traj["steps"])
        assert [s["action"] for s in traj["steps"][-2:]] == ["macro_done", "done"]
        assert datagen_layout(d) == REFERENCE["datagen"], d            # the files, keys and screenshot size rows had
        assert (traj["answer"] not in (None, "")) == (task["macro"] in QA_MACROS)
        for k, s in enumerate(traj["steps"], 1):
            assert (d / f"step_{k}.png").exists() and s["memory"] and s["duration"] is not None
            said = [task["instruction"]] + [s.get(f) for f in ("evaluation_previous_goal", "memory", "next_goal")]
            assert [(x, text_faults(x)) for x in said if text_faults(x)] == [], d     # the text rows train on
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
    res = run_datagen(tmp_path / "run", tasks=[task], ports=tuple(free_ports(1)), progress=False).attrs["summary"]
    assert res["_all"]["kept"] == 1, read_results(tmp_path / "run")
    d = tmp_path / "run" / "accepted" / task["task_id"]
    steps = json.loads((d / "trajectory.json").read_text())["steps"]
    shots = [d / f"step_{k}.png" for k in range(1, len(steps) + 1)]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in shots)


# ── event checks: graded from the recorder, alike by datagen's gate and by evaluate ──────────

def _wrong_site(site, control_id):
    "Another site with a control of this id."
    return next(s for s, spec in sorted(load_sites().items())
                if s != site and any(c["control_id"] == control_id for c in spec.sitemap()["controls"]))


async def slider_through_the_address_bar(lv, t):
    "Another filter of the page moved, then the slider's value typed into the address: the list the task asks for, the slider untouched."
    other = next(c for c in sitemap(t["site"])["controls"] if c["page"] == t["control"]["page"] and c["kind"] == "dropdown")
    opt = next(o for o in other["options"] if o["value"])
    async for s in D.locate(lv, other["control_id"], "another filter", tag="select"): yield s
    i, node = lv.found
    yield D.step("select_dropdown", {"index": i, "text": opt["text"]}, node=node, value=opt["text"])
    async for s in D.settle(lv, lambda: lv.arg(other["name"]) == opt["value"], "the other filter applied"): yield s
    u = urlsplit(lv.url)
    args = {**{k: v[-1] for k, v in parse_qs(u.query).items()}, **t["check"]["query"]}
    yield D.step("navigate", {"url": f"{u.scheme}://{u.netloc}{u.path}?{urlencode(args)}"})
    async for s in D.settle(lv, lambda: D.query_holds(lv, t["check"]["query"]), "the list the task asks for"): yield s
    async for s in D.finish(lv, "The list is filtered."): yield s


async def card_through_its_edit_form(lv, t):
    "The card's column set in its record's edit form (another control), not dragged on the board."
    o, group = t["option"], next(iter(t["check"]["fields"]))
    form = next(c for c in sitemap(t["site"])["controls"] if c["control_id"] == f"{t['check']['collection']}-edit")
    yield D.step("navigate", {"url": f"{lv.base}/sites/{t['site']}" + form["page"].replace("/1/", f"/{o['record']}/", 1)})
    async for s in D.fill_form(lv, {**t, "option": {"form": form["control_id"], "fields": [[group, o["column"]]]}}): yield s
    async for s in D.finish(lv, f"{o['title']} is in {o['column']}."): yield s


async def signature_beside_the_pad(lv, t):
    "The name typed and the stroke drawn over the name field (another control) instead of the pad, then saved."
    o, cid = t["option"], t["control"]["control_id"]
    async for s in D.type_into(lv, o["signer_control"], "the name field", o["signer"], "Typing the signer's name."): yield s
    field = f"input{D.css(o['signer_control'])}"
    async for s in D.into_view(lv, field, "the name field"): yield s
    b = lv.found
    pts = await lv.normalized([(b["x"] + fx * b["w"], b["y"] + b["h"] / 2) for fx, _ in D.SIGNATURE])
    yield D.step("draw", {"points": [{"x": x, "y": y} for x, y in pts]}, element=await lv.describe(field))
    async for s in D.click(lv, cid, "the Save signature button", "Saving.", "the form is sent", part="submit"): yield s
    async for s in D.finish(lv, f"Signed as {o['signer']}."): yield s


async def upload_on_another_site(lv, t):
    "The task's file uploaded with the control of the same id on another site's page, not on the task's site."
    cid = t["control"]["control_id"]
    yield D.step("navigate", {"url": f"{lv.base}/sites/{_wrong_site(t['site'], cid)}{t['control']['page']}"})
    async for s in D.locate(lv, cid, "the file input", part=None, tag="input"): yield s
    i, node = lv.found
    yield D.step("upload_file", {"index": i, "path": lv.files[0]}, node=node, value=t["option"]["filename"])
    async for s in D.click(lv, cid, "the Upload button", "Submitting the upload form.", "the file is uploaded", part="submit"): yield s
    async for s in D.settle(lv, lambda: bool(lv.arg("uploaded")), "the upload confirmation"): yield s
    async for s in D.finish(lv, f"Uploaded {t['option']['filename']}."): yield s


# macro -> (site of its task, the event its verifier wants, a wrong way to do it: acting on another control)
EVENT_KINDS = {"filter_by_slider": ("shop", "drag", slider_through_the_address_bar),
               "reorder_by_drag": ("kanban", "drag", card_through_its_edit_form),
               "draw_signature": ("bank", "draw", signature_beside_the_pad),
               "upload_file": ("realestate", "upload", upload_on_another_site)}


def event_task(macro, site):
    "The task datagen makes for `macro` on `site` (a board task that moves its card to another column)."
    return next(t for t in make_tasks(site, per_control=3) if t["macro"] == macro
                and (macro != "reorder_by_drag" or t["option"]["from"] != t["option"]["column"]))


@pytest.fixture(scope="module")
def event_runs(tmp_path_factory):
    "The four tasks run twice in Chromium: by their scripted drivers, and each the wrong way."
    tmp = tmp_path_factory.mktemp("events")
    tasks = {m: event_task(m, site) for m, (site, _, _) in EVENT_KINDS.items()}
    run_datagen(tmp / "right", tasks=list(tasks.values()), ports=tuple(free_ports(1)), workers=1, progress=False)
    with pytest.MonkeyPatch.context() as mp:
        for m, (_, _, wrong) in EVENT_KINDS.items(): mp.setitem(D.DRIVERS, m, wrong)
        run_datagen(tmp / "wrong", tasks=list(tasks.values()), ports=tuple(free_ports(1)), workers=1, progress=False)
    return tmp, tasks


def _graded(run, tid):
    "The attempt's result line and the grade inputs its gate saved."
    r = next(r for r in read_results(run) if r["task_id"] == tid)
    d = run / ("accepted" if r["ok"] else "rejected") / tid
    return r, json.loads((d / "grade_inputs.json").read_text())


@pytest.mark.parametrize("macro", list(EVENT_KINDS))
def test_an_event_check_passes_the_right_control_and_fails_another(event_runs, macro):
    tmp, tasks = event_runs
    task, (_, action, _) = tasks[macro], EVENT_KINDS[macro]
    cid = task["control"]["control_id"]
    right, g = _graded(tmp / "right", task["task_id"])
    assert right["ok"], right["cause"]
    assert any(e["action"] == action and e["target"].get("control_id") == cid for e in checks.recorded_events(g["record"], task["site"]))
    wrong, _ = _graded(tmp / "wrong", task["task_id"])
    assert not wrong["ok"] and wrong["cause"].startswith("gate: "), wrong["cause"]
    assert f"verifier: no action event with action='{action}', target='{cid}'" in wrong["detail"], wrong["detail"]
    if macro == "filter_by_slider":       # the list the task asks for, reached without the slider: the event alone fails it
        assert wrong["detail"].startswith("verifier: "), wrong["detail"]


@pytest.mark.parametrize("macro", list(EVENT_KINDS))
def test_datagen_and_evaluate_grade_an_attempt_alike(event_runs, macro):
    "Evaluate's grade of a datagen task, from the inputs datagen's gate read (as --regrade reads grade_inputs.json)."
    tmp, tasks = event_runs
    task = tasks[macro]
    for run in (tmp / "right", tmp / "wrong"):
        r, g = _graded(run, task["task_id"])
        ok, detail = E.grade(task, g)
        whole = json.loads((run / ("accepted" if r["ok"] else "rejected") / task["task_id"] / "episode.json").read_text())["grade"]
        assert (ok, detail) == (r["ok"], whole["detail"]) and line_text(detail, 500) == r["detail"]   # the line a short form
        assert E.grade(task, {**g, "actions": [{"drag": {"x1": 1, "y1": 2, "x2": 3, "y2": 4}}]}) == E.grade(task, g)  # what a model says counts for nothing


SLIDER_BOX_JS = """(() => { const e = document.querySelector(%s); e.scrollIntoView({block: "center"});
  const r = e.getBoundingClientRect(); return [r.x, r.y + r.height / 2, r.width, +e.value, +e.min, +e.max]; })()"""


async def drag_slider_to(bs, task):
    "Drag the task's slider thumb to its option's value with the mouse (CDP input, as a person's drag), then wait for the list."
    x, y, w, cur, lo, hi = await HS.evaluate(bs, SLIDER_BOX_JS % json.dumps('input[type="range"]' + D.css(task["control"]["control_id"])))
    px = lambda v: x + D.THUMB_PX / 2 + (v - lo) / (hi - lo) * (w - D.THUMB_PX)
    await HA.stroke(bs, [(px(cur), y), (px(float(task["option"]["value"])), y)])
    name, value = next(iter(task["check"]["query"].items()))
    for _ in range(50):
        if f"{name}={value}" in (await HS.evaluate(bs, "location.href") or ""): return
        await asyncio.sleep(0.2)
    raise AssertionError(f"the list never reloaded with {name}={value}")


def test_evaluate_reads_the_recorder_into_its_grade_inputs(base):
    "evaluate's grade_inputs on live sessions: the slider dragged in Chromium passes; the same list opened by its URL fails."
    task = event_task("filter_by_slider", "shop")
    said = [{"drag": {"x1": 300, "y1": 400, "x2": 500, "y2": 400}}]          # the model's actions: both episodes claim the drag
    async def episode(act):
        async with H.browser(base, task) as bs:
            await act(bs)
            return await as_task(task).grade_inputs(HS.BrowserPage(bs, base), None, [await HS.seen(bs)], said)
    typed = lambda bs: HS.goto(bs, base + task["check"]["path"] + "?" + urlencode(task["check"]["query"]))
    async def in_a_new_tab(bs):                           # the agent opened a tab: the next step's hook records it too
        await bs.navigate_to(base + task["start"]["url"], new_tab=True)
        await HS.enable_clipboard(bs)
        await drag_slider_to(bs, task)
    dragged, by_url = asyncio.run(episode(lambda bs: drag_slider_to(bs, task))), asyncio.run(episode(typed))
    ok, detail = E.grade(task, asyncio.run(episode(in_a_new_tab)))
    assert ok, detail
    assert "record" in dragged and "events" not in dragged
    ok, detail = E.grade(task, json.loads(json.dumps(dragged, default=str)))        # as --regrade reads the file
    assert ok, detail
    assert (ok, detail) == (bool(checks.gate_task(task, dragged)[0]), str(checks.gate_task(task, dragged)[1]))
    ok, detail = E.grade(task, by_url)
    assert not ok and detail.startswith("verifier: no action event with action='drag'"), detail


def test_tasks_file_holds_datagen_tasks_that_evaluate_reads(tmp_path):
    import subprocess
    from webmix.cli import main
    out = tmp_path / "tasks" / "train.jsonl"
    p = subprocess.run(["webmix", "tasks", "--split", "train", "--macros", "filter_by_slider,upload_file", "--seed", "3",
                        "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    made = all_tasks([s for s in sorted(load_sites()) if split_of(s) == "train"], ["filter_by_slider", "upload_file"], seed=3)
    assert [json.loads(l) for l in out.read_text().splitlines()] == made == [t.to_dict() for t in E.load_tasks(out)]
    main(["tasks", "--sites", "shop", "--limit", "4", "--out", str(tmp_path / "shop.jsonl")])
    assert [t.to_dict() for t in E.load_tasks(tmp_path / "shop.jsonl")] == all_tasks(["shop"])[:4]
    p = subprocess.run(["webmix", "tasks", "--sites", "shop,atlantis", "--out", str(tmp_path / "bad.jsonl")],
                       capture_output=True, text=True, timeout=300)
    names = ", ".join(sorted(load_sites()))
    assert p.returncode == 1 and p.stderr.strip() == f"webmix tasks: unknown site atlantis (there are: {names})", p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    (tmp_path / "a_file").write_text("")
    for extra, msg in [(["--macros", "juggle"], "unknown macro juggle"), (["--sites", "mail", "--split", "train"], "mail: not on the train split"),
                       (["--out", str(tmp_path)], "is a folder"), (["--out", str(tmp_path / "a_file" / "t.jsonl")], "is a file, not a folder")]:
        argv = extra if "--out" in extra else [*extra, "--out", str(tmp_path / "bad.jsonl")]
        p = subprocess.run(["webmix", "tasks", *argv], capture_output=True, text=True, timeout=300)
        said = p.stderr.strip()
        assert p.returncode == 1 and msg in said and len(said.splitlines()) == 1 and said.startswith("webmix tasks: "), (extra, said)
    assert not (tmp_path / "bad.jsonl").exists()


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
                    server = next(p for p in me.children(recursive=True) if "webmix.world.miniweb" in " ".join(p.cmdline()))
                    server.kill(); kills.append("server")
        except (psutil.Error, StopIteration): pass     # a unit ended first: wait for the next browser
        time.sleep(0.05)


def test_a_killed_browser_or_server_fails_one_attempt_and_the_run_goes_on(tmp_path):
    import threading
    tasks = [t for t in make_tasks("shop") if t["macro"] in ("report_information", "open_detail", "paginate")][:5]
    stop, kills = threading.Event(), []
    watcher = threading.Thread(target=_watch, args=(stop, kills), daemon=True)
    watcher.start()
    try: s = run_datagen(tmp_path / "run", tasks=tasks, workers=1, ports=free_ports(1), timeout=40, progress=False).attrs["summary"]
    finally: stop.set()
    lines = _lines(tmp_path / "run")
    assert kills == ["chromium", "server"] and len(lines) == 5, (kills, lines)
    bad = [r for r in lines if not r["ok"]]
    assert len(bad) <= 2 and all(r["cause"] for r in bad), bad        # at most the two attempts hit
    assert s["_all"]["kept"] >= 3 and lines[-1]["ok"], lines          # the server was started again for the rest


def test_a_browser_that_will_not_start_is_masked_and_retry_failed_keeps_the_attempts(tmp_path):
    """A Chromium that exits at once is the machine's failure, not the driver's: every attempt's line is valid and
    masked (counted apart), and `--retry-failed` with a working Chromium runs exactly those again and keeps them."""
    import os, subprocess, sys
    out = tmp_path / "run"
    cmd = ["webmix", "datagen", "--sites", "shop", "--macros", "navigate_home", "--out", str(out),
           "--workers", "1", "--ports", str(free_ports(1)[0])]
    broken = subprocess.run(cmd, env={**os.environ, "WEBMIX_CHROMIUM": "/bin/false"}, capture_output=True, text=True, timeout=300)
    lines = _lines(out)
    assert lines and all(r["ok"] is False and r.get("masked") is True for r in lines), (broken.stdout[-1500:], lines[:1])
    assert all(not formats.problems("result_datagen", r) for r in lines), formats.problems("result_datagen", lines[0])
    assert "masked" in broken.stdout, broken.stdout[-800:]
    again = subprocess.run(cmd + ["--retry-failed"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout[-1500:] + again.stderr[-1500:]
    latest = {r["task_id"]: r for r in _lines(out)}
    assert len(latest) == len(lines) and all(r["ok"] for r in latest.values()), list(latest.values())[:2]


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


async def cancel_in_dialog(lv, t):
    "The wrong way: open the dialog, then Cancel it (nothing is deleted), and say it is done."
    cid = t["control"]["control_id"]
    async for s in D.click(lv, cid, "the Delete button", "Opening the dialog.", "a dialog asks", tag="button", part=None): yield s
    async for s in D.click(lv, cid, "the dialog's Cancel button", "Dismissing the dialog.", "the dialog is closed", part="cancel"): yield s
    async for s in D.finish(lv, f"Deleted {t['option']['title']}."): yield s


def test_a_modal_dialog_confirmed_deletes_and_one_dismissed_fails_its_check(tmp_path):
    """The modal_dialog kind (a spec's `delete: confirm`) on two sites in Chromium: its scripted driver opens the dialog and
    confirms, and the gate keeps the attempt; a driver that dismisses the dialog instead deletes nothing and fails."""
    tasks = [next(t for t in make_tasks(site) if t["macro"] == "confirm_in_dialog") for site in ("bank", "forum")]
    run_datagen(tmp_path / "right", tasks=tasks, ports=tuple(free_ports(1)), workers=1, progress=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(D.DRIVERS, "confirm_in_dialog", cancel_in_dialog)
        run_datagen(tmp_path / "wrong", tasks=tasks, ports=tuple(free_ports(1)), workers=1, progress=False)
    right, wrong = read_results(tmp_path / "right"), read_results(tmp_path / "wrong")
    assert len(right) == len(wrong) == 2 and all(r["ok"] for r in right), [r["cause"] for r in right]
    assert not any(r["ok"] for r in wrong) and all(r["cause"].startswith("gate:") for r in wrong), [r["cause"] for r in wrong]
    for d in kept(tmp_path / "right").values():                # the dialog was in the way: two clicks on the control
        steps = json.loads((d / "trajectory.json").read_text())["steps"]
        assert [s["element"].get("part") for s in steps if s["action"] == "click"] == [None, "confirm"], steps


async def pick_then_save(lv, form, found, what):
    "Click the element found (index, node), submit the form, and say it is done: the tail of the wrong form drivers."
    i, node = found
    yield D.step("click", {"index": i}, node=node, memory=f"Picking {what}.", goal="Pick it", after="picked")
    async for s in D.click(lv, form, "the submit button", "Submitting.", "saved", tag="button"): yield s
    async for s in D.finish(lv, "Saved."): yield s


async def submit_as_said(lv, t):
    "The wrong way on a formatted field: type the value as the task says it, submit, and say it is done."
    o = t["option"]
    (fn, _), = o["fields"]
    async for s in D.type_into(lv, f"{o['form']}-{fn}", "the field", o["said"], "Typing the value as given."): yield s
    async for s in D.click(lv, o["form"], "the submit button", "Submitting.", "the form is sent", tag="button"): yield s
    async for s in D.finish(lv, "Saved."): yield s


async def pick_another_suggestion(lv, t):
    "The wrong way in an autocomplete box: type the value's first letters and pick a suggestion that is not it."
    o = t["option"]
    (fn, text), = o["fields"]
    cid = f"{o['form']}-{fn}"
    async for s in D.type_into(lv, cid, "the box", text[:2], "Typing the first letters.", part="query"): yield s
    other = lambda: next(((i, n) for i, n in lv.find_all(cid, part="option") if D.node_text(n) != text), None)
    async for s in D.settle(lv, lambda: other() is not None, "another suggestion"): yield s
    async for s in pick_then_save(lv, o["form"], other(), "a suggestion"): yield s


async def open_first_listed(lv, t):
    "The wrong way on a Load more list: open the first record shown instead of loading more until the asked one shows."
    o = t["option"]
    async for s in D.click(lv, o["detail"], "the first link", "Opening the first record.", "a record is open", tag="a"): yield s
    async for s in D.settle(lv, lambda: lv.path != urlsplit(t["start"]["url"]).path, "a record page"): yield s
    async for s in D.finish(lv, "Opened it."): yield s


async def open_a_neighbour(lv, t):
    "The wrong way in a menu bar: open the right submenu, then pick another page of it."
    o, cid = t["option"], t["control"]["control_id"]
    async for s in D.click(lv, cid, "the section", "Opening the submenu.", "open", part="section", value=o["section"]): yield s
    other = lambda: next(((i, n) for i, n in lv.find_all(cid, tag="a") if (n.attributes or {}).get("data-value") != o["value"]), None)
    async for s in D.settle(lv, lambda: other() is not None, "the submenu"): yield s
    i, node = other()
    yield D.step("click", {"index": i}, node=node, memory="Choosing a page.", goal="Open it", after="a page is open")
    async for s in D.finish(lv, "Opened it."): yield s


async def read_while_busy(lv, t):
    "The wrong way on a busy button: press it and report what the page shows at once, before the request answered."
    cid = t["control"]["control_id"]
    async for s in D.click(lv, cid, "the Check button", "Checking.", "checking", tag="button"): yield s
    shown = await lv.text_of(D.css(cid, part="result", tag="output"))
    async for s in D.finish(lv, f"It shows {shown}.", answer=shown): yield s


async def accept_the_other(lv, t):
    "The wrong way on a cookie banner: press the other button than the one the task asks for."
    cid, other = t["control"]["control_id"], "all" if t["option"]["value"] == "necessary" else "necessary"
    async for s in D.click(lv, cid, "the other button", "Answering the banner.", "answered", value=other, tag="button"): yield s
    async for s in D.finish(lv, "Answered."): yield s


async def read_after_it_faded(lv, t):
    "The wrong way on a toast: create the record, look away for eight seconds, then report what the toast shows."
    async for s in D.fill_form(lv, t): yield s
    for _ in range(2): yield D.step("wait", {"seconds": 5}, memory="Waiting.", goal="Wait", after="waited")
    shown = await lv.text_of(D.css(t["control"]["control_id"], part="message", tag="p"))
    async for s in D.finish(lv, f"It shows {shown!r}.", answer=shown or "no code"): yield s


async def day_of_the_shown_month(lv, t):
    "The wrong way in a calendar widget: open it and pick the day in the month it shows, without moving to the date's month."
    o = t["option"]
    (fn, value), = o["fields"]
    cid = f"{o['form']}-{fn}"
    async for s in D.click(lv, cid, "the calendar", "Opening the calendar.", "open", part="open"): yield s
    async for s in D.settle(lv, lambda: lv.find(cid, part="day") is not None, "the calendar"): yield s
    same_day = [(i, n) for i, n in lv.find_all(cid, part="day") if (n.attributes or {}).get("data-value", "")[8:] == value[8:]]
    wrong = next(((i, n) for i, n in same_day + lv.find_all(cid, part="day") if (n.attributes or {}).get("data-value") != value))
    async for s in pick_then_save(lv, o["form"], wrong, "the day"): yield s


async def stop_at_the_review(lv, t):
    "The wrong way in a wizard: fill every step and stop at the review without submitting it."
    o = t["option"]
    for _ in range(len(o["fields"])):
        shown = await D.wizard_step(lv, o["form"])
        if shown == "review": break
        async for s in D.fill_fields(lv, t, [p for p in o["fields"] if p[0] in shown]): yield s
        async for s in D.click(lv, o["form"], "Next", "Next step.", "next", part="next", tag="button"): yield s
        async def moved(was=shown): return await D.wizard_step(lv, o["form"]) != was
        async for s in D.settle(lv, moved, "the next step"): yield s
    async for s in D.finish(lv, "Filled in."): yield s


async def pay_without_the_code(lv, t):
    "The wrong way in a payment frame: the card number and expiry, no security code, then Pay now."
    o, cid = t["option"], t["control"]["control_id"]
    for part in ("number", "expiry"):
        async for s in D.type_into(lv, cid, f"the {part}", o[part], "Typing the card.", part=part): yield s
    async for s in D.click(lv, cid, "Pay now", "Paying.", "paid", part="submit"): yield s
    async for s in D.finish(lv, "Paid."): yield s


async def another_star(lv, t):
    "The wrong way in a rating widget: a star next to the one asked for."
    o = t["option"]
    async for s in D.click(lv, t["control"]["control_id"], "a star", "Rating.", "rated", part="star", value=o["stars"] % 5 + 1): yield s
    async for s in D.finish(lv, "Rated."): yield s


NEW_MECHANICS = {"fix_inline_error": (("hr", "mail"), submit_as_said),
                 "pick_from_suggestions": (("hr", "library"), pick_another_suggestion),
                 "load_more_rows": (("bank", "tracker"), open_first_listed),
                 "open_submenu_item": (("bank", "realestate"), open_a_neighbour),
                 "read_live_value": (("travel", "events"), read_while_busy),
                 "answer_cookie_banner": (("library", "events"), accept_the_other),
                 "read_toast": (("calendar", "tracker"), read_after_it_faded),
                 "pick_date_in_calendar": (("bank", "tracker"), day_of_the_shown_month),
                 "create_with_wizard": (("bank", "travel"), stop_at_the_review),
                 "pay_in_frame": (("events", "travel"), pay_without_the_code),
                 "rate_in_widget": (("recipes", "library"), another_star)}


def test_real_web_mechanics_are_driven_right_and_fail_when_done_wrong(tmp_path):
    """Eleven mechanics in Chromium, two sites each: a formatted field refused with an inline error and written again
    in its format, a record picked from an autocomplete box's suggestions, a record reached through a list's Load more
    button, a page opened from a menu bar's submenu, a value fetched by a button that is disabled while its slow
    request runs, a cookie banner answered as asked, a confirmation code read off a toast before it fades, a date
    picked in a calendar widget after moving to its month, a record created through a wizard's steps and review, a
    payment made in a form inside an iframe, a rating given with a web component's shadow-root buttons. Each
    scripted driver is kept; a wrong driver (the value left as the task said it, another suggestion picked, the first
    listed record opened, a neighbouring submenu page opened, the value read while the button was busy, the other
    banner button, the toast read after it faded, the day picked in the month the calendar opened on, a wizard left at
    its review, a payment without its security code, another star) fails its check."""
    tasks = [next(t for t in make_tasks(site) if t["macro"] == m) for m, (sites, _) in NEW_MECHANICS.items() for site in sites]
    run_datagen(tmp_path / "right", tasks=tasks, ports=tuple(free_ports(1)), workers=1, progress=False)
    with pytest.MonkeyPatch.context() as mp:
        for m, (_, wrong) in NEW_MECHANICS.items(): mp.setitem(D.DRIVERS, m, wrong)
        run_datagen(tmp_path / "wrong", tasks=tasks, ports=tuple(free_ports(1)), workers=1, progress=False)
    right, wrong = read_results(tmp_path / "right"), read_results(tmp_path / "wrong")
    assert len(right) == len(wrong) == 2 * len(NEW_MECHANICS) and all(r["ok"] for r in right), [r["cause"] for r in right]
    assert not any(r["ok"] for r in wrong), [r["cause"] for r in wrong]
    steps = {d.name.split("-")[1]: json.loads((d / "trajectory.json").read_text())["steps"] for d in kept(tmp_path / "right").values()}
    fix = [s for s in steps["fix_inline_error"] if s["action"] == "input"]
    assert len(fix) == 2 and fix[0]["params"]["text"] != fix[1]["params"]["text"], fix       # refused, then written in format
    assert any((s.get("element") or {}).get("part") == "option" for s in steps["pick_from_suggestions"])
    assert sum(s["action"] == "click" for s in steps["load_more_rows"]) >= 2
    assert [s["element"].get("part") for s in steps["open_submenu_item"] if s["action"] == "click"] == ["section", None]
    assert [s for s in steps["read_live_value"] if s["action"] == "wait"], "the value came after the button was busy"
    assert [s["element"]["attributes"].get("data-value") for s in steps["answer_cookie_banner"] if s["action"] == "click"] in (["all"], ["necessary"])
    assert [s["element"].get("part") for s in steps["create_with_wizard"] if s["action"] == "click"].count("next") >= 2


def test_a_board_drag_checks_the_top_only_when_its_wording_asks_for_it():
    "A drop below a column's first card passes a task that only names the column; a top wording wants the first place."
    from webmix.world.checks import run_check
    tasks = [t for site in ("kanban", "crm", "tracker") for t in make_tasks(site, per_control=6) if t["macro"] == "reorder_by_drag"]
    asks_top = lambda t: "top" in t["instruction"].replace(t["option"]["title"], "") or "first" in t["instruction"].replace(t["option"]["title"], "")
    assert any(asks_top(t) for t in tasks) and any(not asks_top(t) for t in tasks), [t["instruction"] for t in tasks]
    for t in tasks:
        c = t["check"]
        (grp, col), order = next(iter(c["fields"].items())), next((k for k in c["fields"] if k != next(iter(c["fields"]))), "position")
        moved = lambda after: {"log": [], "events": [], "clipboard": [], "answer": None, "seen": [],
                               "changes": [{"collection": c["collection"], "op": "update", "id": c["id"], "after": after}]}
        assert run_check(c, moved({grp: col, order: 1}))[0], t["instruction"]
        assert run_check(c, moved({grp: col, order: 3}))[0] != asks_top(t), (t["instruction"], c)
        assert not run_check(c, moved({grp: col + " (another column)", order: 1}))[0], t["instruction"]
