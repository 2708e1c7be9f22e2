"""Taskgen (webmix.eval.propose, taskjudge, taskgen) and webmix.eval.judge end to end: tasks proposed by the scripted proposer, attempted by evaluation's base
arm against the scripted policy in Chromium (with human-style tasks of the training sites beside them, whose verifier grades are the truth),
judged by the scripted judges through the real openai and google-genai clients (faults, retries, the cache, a SIGKILL),
validated against the verifiers, and selected as rows up to a budget."""
import contextlib, io, json, os, re, shutil, signal, subprocess, sys, threading, time
from pathlib import Path

import pytest

from webmix import formats, runs
from webmix.agents import llm
from webmix.config import json_lines
from webmix.eval import judge as J
from webmix.eval import propose as PR
from webmix.eval import stand_ins as S
from webmix.eval import taskgen as T
from webmix.eval import taskjudge as TJ
from webmix.cli import main as cli
from webmix.eval.evaluate import human_tasks, load_tasks, run_evaluate
from webmix.world.servers import free_ports
from webmix.eval.policy import serve_policy

HUMAN_IDS = ("start-board-card", "export-budget-outdoor-gear", "second-page-top-poster", "count-short-available-books")
HUMAN = len(HUMAN_IDS)                        # human-style episodes beside the proposed ones: the validation set


def read_lines(path) -> list:
    "The objects of a JSON-lines file."
    return [v for _, v in json_lines(Path(path).read_text(), path)]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    "An evaluation run of 4 proposed tasks (shop, kanban) and 4 human-style ones, on the scripted policy, rows recorded."
    d = tmp_path_factory.mktemp("tg")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli(["taskgen", "propose", "--out", str(d / "tasks.jsonl"), "--sites", "shop,kanban", "--per-site", "2"])
    proposed = load_tasks(d / "tasks.jsonl")
    humans = [t for t in human_tasks("train") if t["task_id"] in HUMAN_IDS]    # training sites, short scripts
    with serve_policy(port=free_ports(1)[0], faults={"premature": 0.3}, seed=3) as pol:
        run_evaluate(proposed + humans, d / "run", vllm=pol.base_url, record_rows=True, workers=2, ports=free_ports(2),
                     progress=False)
    return {"dir": d, "run": d / "run", "code": code, "stdout": buf.getvalue(), "proposed": proposed, "humans": humans}


def test_propose_writes_tasks_evaluation_runs(run):
    assert run["code"] == 0
    first = run["stdout"].splitlines()[0]
    assert first.startswith("no model server named") and "stand-ins" in first and "real model" in first
    lines = read_lines(run["dir"] / "tasks.jsonl")
    assert len(lines) == 4 and {t["site"] for t in lines} == {"shop", "kanban"}
    for t in lines:
        assert formats.problems("proposed_task", t) == []
        assert t["start_path"] == f"/sites/{t['site']}/" and t["proposer"] == S.STAND_IN
    # resumable by site: a rerun with one more site proposes for that site only
    counts = PR.propose(run["dir"] / "tasks.jsonl", sites=["shop", "kanban", "hr"], per_site=2, say=lambda *_: None)
    assert counts == {"hr": 2} and len(read_lines(run["dir"] / "tasks.jsonl")) == 6
    # every episode ran, the proposed ones pending the judge with their rows
    res = {r["task_id"]: r for r in runs.latest(runs.read_results(run["run"])).values()}
    assert len(res) == 4 + HUMAN
    for t in run["proposed"]:
        r, ep = res[t["task_id"]], run["run"] / t["task_id"]
        assert r["ok"] is False and r["kind"] == "proposed" and "pending: judge" in r["detail"], r
        assert (ep / "rows" / "rows.jsonl").exists() and (ep / "grade_inputs.json").exists()
        assert json.loads((ep / "episode.json").read_text())["instruction"] == t["instruction"]


def test_judge_evidence_faults_retries_cache_and_gemini(run, tmp_path):
    rdir = run["run"]
    eps = TJ.run_episodes(rdir)
    keys = [k for k, *_ in eps]
    humans = [t["task_id"] for t in run["humans"]]
    flaky, broken = run["proposed"][0]["task_id"], run["proposed"][1]["task_id"]
    verdicts = {k: ("SUCCESS" if i % 2 == 0 else "NOT SUCCESS") for i, k in enumerate(humans)}
    judge = TJ.ScriptedJudge(seed=5, verdicts=verdicts, delay=5.0,
                            faults={flaky: ["http500", "malformed"],        # one request per try: the client's retries are off
                                    broken: ["timeout", "http500", "malformed"]})
    with llm.ScriptedServer(judge) as srv:
        spec = S.model_spec("scripted-judge", srv.base_url, timeout=2.5)
        s = TJ.judge_run(rdir, spec, workers=3, progress=False, say=lambda *_: None)
        # the broken episode failed three times: an error line, no verdict, not counted
        assert s["errors"] == 1 and s["not_judged"] == [broken] and s["judged"] == len(keys) - 1, (s, judge.requests)
        jdir = TJ.judge_dir(rdir)
        assert not (jdir / f"{broken}.json").exists()
        err = read_lines(jdir / "errors.jsonl")
        assert [e["task_id"] for e in err] == [broken] and "try 3" in err[0]["error"]
        assert formats.check_jsonl("judge_error", jdir / "errors.jsonl") == []
        assert formats.problems("judge_summary", json.loads((jdir / "_summary.json").read_text())) == []
        assert "Timeout" in err[0]["error"] and "500" in err[0]["error"] and "no verdict" in err[0]["error"]
        rec = json.loads((jdir / f"{flaky}.json").read_text())
        assert rec["tries"] == 3 and formats.problems("judge_record", rec) == []
        for k in humans: assert json.loads((jdir / f"{k}.json").read_text())["verdict"] == verdicts[k]
        # the prompt carries the backend evidence: the session's requests and data changes, and the screenshots
        req = next(r for r in srv.requests if isinstance(r, dict) and TJ.episode_of(S.user_text(r)) == humans[0])
        text, g = S.user_text(req), json.loads((rdir / humans[0] / "grade_inputs.json").read_text())
        logged = [e for e in g["log"] if not TJ.SKIP_PATH.search(e["path"])]
        assert logged and f"{logged[-1]['method']} {logged[-1]['path']}" in text.split("SERVER REQUESTS")[1]
        assert TJ.fmt_changes(g["changes"]) in text and S.image_count(req) == len(TJ.shot_paths(rdir / humans[0])) >= 2
        # a rerun judges only the episode without a verdict: every other one is cached
        before = len(judge.requests)
        s2 = TJ.judge_run(rdir, spec, workers=3, progress=False, say=lambda *_: None)
        assert judge.requests[before:] == [broken] and s2["errors"] == 0 and s2["judged"] == len(keys)
    # the Gemini route: google-genai pointed at the scripted server
    gem = TJ.ScriptedJudge(seed=5)
    with llm.ScriptedServer(gem) as srv, pytest.MonkeyPatch.context() as mp:
        mp.setenv("GOOGLE_GEMINI_BASE_URL", srv.root)
        mp.setenv("GEMINI_API_KEY", "test-key")
        s = TJ.judge_run(rdir, S.model_spec("gemini-3.5-flash"), workers=2, out=tmp_path / "gem", progress=False,
                        say=lambda *_: None)
        assert s["judged"] == len(keys) and all("gemini" in r for r in srv.requests[0:1] if isinstance(r, dict))
        assert json.loads((tmp_path / "gem" / f"{keys[0]}.json").read_text())["model"] == "gemini-3.5-flash"


def test_validate_matches_a_hand_computed_confusion_matrix(run):
    jdir = TJ.judge_dir(run["run"])
    if not jdir.exists(): pytest.skip("needs the judge test's records")
    truth = {r["task_id"]: bool(r["ok"]) for r in runs.latest(runs.read_results(run["run"])).values() if r["kind"] == "human"}
    said = {k: json.loads((jdir / f"{k}.json").read_text())["predicted_label"] == 1 for k in truth}
    tp = sum(truth[k] and said[k] for k in truth); tn = sum(not truth[k] and not said[k] for k in truth)
    fp = sum(said[k] and not truth[k] for k in truth); fn = sum(truth[k] and not said[k] for k in truth)
    pairs, table = TJ.compare(run["run"], jdir)
    a = table.iloc[0]
    assert (a.tp, a.fp, a.fn, a.tn, a.episodes) == (tp, fp, fn, tn, HUMAN)
    assert a.agreement == round((tp + tn) / HUMAN, 4)
    assert a.precision == (round(tp / (tp + fp), 4) if tp + fp else None)
    assert set(pairs.task_id) == set(truth)                          # proposed episodes have no verifier: left out
    by_site = table[table.by == "site"]
    assert by_site.episodes.sum() == HUMAN and set(by_site.group) == {t["site"] for t in run["humans"]}
    fig = TJ.validation_figure(pairs, table)
    assert fig.data[0].z[0][0] == tp and fig.data[0].z[1][1] == tn


def test_webjudge_on_miniweb_episodes_in_the_online_layout(run):
    online = J.as_online(run["run"])
    assert sorted(p.name for p in online.iterdir()) == sorted(k for k, *_ in TJ.run_episodes(run["run"]))
    wj = J.ScriptedWebJudge(seed=2)
    handlers = {"webjudge_key_points": wj.key_points, "webjudge_screenshot": wj.screenshot, "webjudge_outcome": wj.outcome}
    with llm.ScriptedServer(lambda r: S.stand_in_reply(r, **handlers)) as srv:
        s = J.webjudge_run(online, S.model_spec("scripted-webjudge", srv.base_url), workers=1, progress=False, say=lambda *_: None)
    out = TJ.judge_dir(online, "webjudge")
    assert out.parent == online.parent and [p.name for p in out.iterdir() if p.is_dir()] == ["_judges"]   # beside the folder, plain files
    assert {p.parent.name for p in (out / "_judges").glob("*/*.json")} == {TJ.judge_id("scripted-webjudge", "webjudge", f"{J.WEBJUDGE_VERSION}-t{J.SCORE_THRESHOLD}")}
    assert s["judged"] == s["episodes"] == 4 + HUMAN and s["errors"] == 0
    # per episode: one key-point call, one call per screenshot, then the outcome with the screenshots scored >= 3
    calls, i = wj.requests, 0
    for key, ep in J.online_episodes(online):
        n = len(J.read_online_episode(ep)["shots"])
        assert n >= 2
    kinds = [k for k, _ in calls]
    assert kinds.count("key_points") == kinds.count("outcome") == 4 + HUMAN
    while i < len(calls):
        assert calls[i][0] == "key_points"
        j = i + 1
        while calls[j][0] == "screenshot": j += 1
        assert calls[j] == ("outcome", sum(score >= 3 for _, score in calls[i + 1:j]))
        i = j + 1
    for f in out.glob("*.json"):
        if f.name.startswith("_"): continue
        rec = json.loads(f.read_text())
        assert formats.problems("judge_record", rec) == [] and rec["method"] == "webjudge"
        assert rec["chosen"] == [x["image"] for x in rec["scores"] if x["score"] >= 3]
    pairs, table = TJ.compare(run["run"], out)
    assert table.iloc[0].episodes == HUMAN
    # the command on an online output folder, no model server named: the stand-ins, one verdict file per episode
    copy = online.with_name("copy")
    shutil.copytree(online, copy)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf): assert cli(["judge", "--method", "webjudge", str(copy)]) == 0
    assert buf.getvalue().startswith("no model server named")
    assert sorted(f.stem for f in copy.with_name("copy_webjudge").glob("*.json") if not f.name.startswith("_")) == \
           sorted(p.name for p in copy.iterdir())
    # --cache: judged again, every request is answered from the folder (none reaches the server), verdicts unchanged
    recs = lambda d: {f.stem: json.loads(f.read_text()) for f in d.glob("*.json") if not f.name.startswith("_")}
    cache = online.parent / "judge-cache"
    with llm.ScriptedServer(lambda r: S.stand_in_reply(r, **handlers)) as srv:
        spec = S.model_spec("scripted-webjudge", srv.base_url, cache=cache)
        J.webjudge_run(online, spec, workers=1, out=online.parent / "wj1", progress=False, say=lambda *_: None)
        asked = len(srv.requests)
        J.webjudge_run(online, spec, workers=1, out=online.parent / "wj2", progress=False, say=lambda *_: None)
        assert asked > 0 and len(srv.requests) == asked
    one, two = recs(online.parent / "wj1"), recs(online.parent / "wj2")
    assert {k: (r["response"], r["predicted_label"]) for k, r in one.items()} == \
           {k: (r["response"], r["predicted_label"]) for k, r in two.items()}
    assert sum(r["cache_hits"] for r in one.values()) < sum(r["model_calls"] for r in one.values())   # (alike key-point asks hit)
    assert all(r["cache_hits"] == r["model_calls"] > 0 and formats.problems("judge_record", r) == [] for r in two.values())
    # ... and from the command line, on the stand-ins: the second run's records say every call was a cache hit
    for k in range(2):
        shutil.rmtree(copy.with_name("copy_webjudge"))
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli(["judge", "--method", "webjudge", str(copy), "--cache", str(online.parent / "cli-cache")]) == 0
        hits = [r["cache_hits"] == r["model_calls"] > 0 for r in recs(copy.with_name("copy_webjudge")).values()]
        assert hits and all(hits) == (k == 1), (k, hits)


def test_rows_budget_interleaving_and_schema(run, tmp_path):
    jdir = TJ.judge_dir(run["run"])
    if not jdir.exists(): pytest.skip("needs the judge test's records")
    wins = [t["task_id"] for t in run["proposed"] if json.loads((jdir / f"{t['task_id']}.json").read_text())["predicted_label"]]
    steps = {k: len(read_lines(run["run"] / k / "rows" / "rows.jsonl")) for k in wins}
    assert wins and all(steps.values())
    order = T.round_robin([t["task_id"] for t in run["proposed"]], T.site_of_task)
    assert [T.site_of_task(k) for k in order] == ["kanban", "shop", "kanban", "shop"]      # sites take turns
    # a budget that is every success's steps: all kept, exactly
    total = sum(steps.values())
    tasks = run["dir"] / "tasks.jsonl"                    # the task order (the run's own is the order episodes ended)
    rep = T.select_rows(run["run"], tmp_path / "all", total, tasks, say=lambda *_: None)
    assert rep["selected_rows"] == total and rep["short_by"] == 0 and rep["selected"] == [k for k in order if k in wins]
    assert formats.problems("taskgen_report", rep) == [] and rep["invalid"] == []
    for k in rep["selected"]:
        assert formats.check_jsonl("step_row", tmp_path / "all" / k / "rows.jsonl") == []
        assert sorted(p.name for p in (tmp_path / "all" / k).glob("step_*.png")) and (tmp_path / "all" / k / "episode.json").exists()
    # one step short of that: whole episodes only, never over the budget, the walk goes on past one that does not fit
    rep = T.select_rows(run["run"], tmp_path / "all", total - 1, tasks, say=lambda *_: None)
    assert rep["selected_rows"] <= total - 1 and rep["selected_rows"] == sum(steps[k] for k in rep["selected"])
    assert len(rep["selected"]) == len(wins) - 1
    assert sorted(p.name for p in (tmp_path / "all").iterdir() if p.is_dir()) == sorted(rep["selected"])   # replaced
    # the CLI: a bad run folder is one clear line
    with pytest.raises(SystemExit, match="no such run folder"):
        cli(["taskgen", "rows", str(tmp_path / "nope"), "--out", str(tmp_path / "x")])


def test_sigkill_during_judge_then_rerun_judges_no_episode_twice(run, tmp_path):
    rdir = tmp_path / "run"
    shutil.copytree(run["run"], rdir, ignore=shutil.ignore_patterns("rows", "history.json"))
    keys = [k for k, *_ in TJ.run_episodes(rdir)]
    slow = TJ.ScriptedJudge(seed=1, delay=1.0, faults={k: ["timeout"] for k in keys})   # every first answer takes 1 s
    with llm.ScriptedServer(slow) as srv:
        code = (f"import sys; from webmix.cli import main; sys.exit(main(['taskgen', 'judge', {str(rdir)!r}, '--base-url', "
                f"{srv.base_url!r}, '--model', 'scripted-judge', '--workers', '1']))")
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        jdir = TJ.judge_dir(rdir)
        t0 = time.time()
        while time.time() - t0 < 120 and len([f for f in jdir.glob("*.json") if not f.name.startswith("_")]) < 2 and p.poll() is None:
            time.sleep(0.1)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        judged = {f.stem for f in jdir.glob("*.json") if not f.name.startswith("_")}
        assert 2 <= len(judged) < len(keys)
        before = len(slow.requests)
        s = TJ.judge_run(rdir, S.model_spec("scripted-judge", srv.base_url), workers=2, progress=False, say=lambda *_: None)
        again = set(slow.requests[before:])
    assert s["judged"] == len(keys) and s["errors"] == 0
    assert not again & judged and again == set(keys) - judged


ELEMENT_LINE = re.compile(r'<[a-z0-9-]+( [a-z-]+="[^"]*")*>( .+)? -> ')     # the online runner's `<tag k="v"> name -> `


def test_as_online_writes_the_action_lines_the_online_runner_writes(run, tmp_path):
    online = J.as_online(run["run"], tmp_path / "online")
    clicks = 0
    for key, ep, _, _ in TJ.run_episodes(run["run"]):
        result = json.loads((online / key / "result.json").read_text())
        acts = [next(iter(a.items())) for a in json.loads((ep / "grade_inputs.json").read_text())["actions"]]
        acts = [(name, params) for name, params in acts if name not in ("done", "macro_done")]    # an answer, not an action
        assert len(result["action_history"]) == len(acts), key
        for (name, params), line in zip(acts, result["action_history"]):
            if name == "click" and "index" in params:
                assert ELEMENT_LINE.match(line) and line.endswith(" -> CLICK") and "index" not in line, line
                clicks += line.startswith("<") and not line.startswith("<element>")
            elif name == "input": assert ELEMENT_LINE.match(line) and line.endswith(f" -> TYPE: {params['text']}"), line
            elif name == "select_dropdown": assert ELEMENT_LINE.match(line) and line.endswith(f" -> SELECT: {params['text']}"), line
            elif name == "navigate": assert line == f"NAVIGATE -> {params['url']}"
            elif name == "scroll": assert line in ("SCROLL DOWN", "SCROLL UP")
            else: assert line.startswith(name.upper() + " "), line
        steps = len(json.loads((ep / "history.json").read_text())["history"])
        assert len(result["thoughts"]) == steps and all(isinstance(t, str) for t in result["thoughts"])
    assert clicks >= 1                                     # element clicks carry the element acted on, as online's do


def kill_listener(port) -> None:
    "Kill this process's child that listens on `port` (a MiniWeb server dying mid-episode)."
    import psutil
    for p in psutil.Process().children(recursive=True):
        try:
            if any(c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in p.net_connections("tcp")): p.kill()
        except psutil.Error: pass


def test_validation_leaves_out_episodes_no_verifier_graded(tmp_path):
    from webmix.eval.policy_play import ScriptedPolicy
    from webmix.eval.policy_prompt import history_marks, request_text
    ids = {"graded": "start-board-card", "slow": "second-page-top-poster", "broken": "count-short-available-books"}
    tasks = {t["task_id"]: t for t in human_tasks("train") if t["task_id"] in ids.values()}
    policy, release, port = ScriptedPolicy(seed=3), threading.Event(), free_ports(1)[0]

    def model(body):
        "The scripted policy; stuck on one task's second step (a timeout); the server killed as another task answers."
        text = request_text(body) or ""
        if tasks[ids["slow"]]["instruction"] in text and history_marks(text): release.wait(240)
        reply = policy.respond(body)
        if tasks[ids["broken"]]["instruction"] in text and "done" in (reply.get("action") or [{}])[0]: kill_listener(port)
        return reply

    rdir = tmp_path / "run"
    with llm.ScriptedServer({"base": model}) as srv:
        try: run_evaluate([tasks[ids[k]] for k in ("graded", "slow", "broken")], rdir, vllm=srv.base_url, base_name="base",
                          timeout=45, workers=1, ports=[port], progress=False)
        finally: release.set()
    lines = runs.latest(runs.read_results(rdir))
    assert lines[ids["slow"]]["cause"].startswith("timeout") and lines[ids["broken"]]["ok"] is None, lines
    assert json.loads((rdir / ids["broken"] / "grade_inputs.json").read_text()).get("error"), "the server died: no grade inputs"
    truth = bool(lines[ids["graded"]]["ok"])
    right = {ids["graded"]: "SUCCESS" if truth else "NOT SUCCESS", ids["slow"]: "SUCCESS", ids["broken"]: "SUCCESS"}
    wrong = {**right, ids["graded"]: "NOT SUCCESS" if truth else "SUCCESS"}
    # a right judge agrees on every graded episode; the two graded by nothing are counted apart, not as false positives
    with llm.ScriptedServer(TJ.ScriptedJudge(verdicts=right)) as srv:
        r = TJ.validate(rdir, S.model_spec("scripted-judge", srv.base_url), workers=1, progress=False, say=lambda *_: None)
    a = r["table"].iloc[0]
    assert (a.episodes, a.agreement, a.fp, a.ungraded) == (1, 1.0, 0, 2), r["table"]
    assert sorted((u["task_id"], u["why"]) for u in r["ungraded"]) == sorted([(ids["slow"], "timeout"), (ids["broken"], "error")])
    assert set(r["pairs"].task_id) == {ids["graded"]} and r["table"][r["table"].by == "site"].ungraded.sum() == 2
    saved = json.loads((TJ.judge_dir(rdir) / "_validate.json").read_text())
    assert saved["metrics"]["ungraded"] == 2 and len(saved["ungraded"]) == 2
    # a wrong judge disagrees
    with llm.ScriptedServer(TJ.ScriptedJudge(verdicts=wrong)) as srv:
        TJ.judge_run(rdir, S.model_spec("scripted-judge", srv.base_url), workers=1, out=tmp_path / "wrong", progress=False,
                    say=lambda *_: None)
    assert TJ.compare(rdir, tmp_path / "wrong")[1].iloc[0].agreement == 0.0
    # WebJudge's validation path: the same episodes left out
    by_text = {tasks[k]["instruction"]: v for k, v in right.items()}
    with llm.ScriptedServer(lambda req: S.stand_in_reply(req, **webjudge_handlers(J.ScriptedWebJudge(verdicts=by_text)))) as srv:
        w = J.validate_judge(rdir, "webjudge", S.model_spec("scripted-webjudge", srv.base_url), workers=1, progress=False,
                             say=lambda *_: None)
    b = w["table"].iloc[0]
    assert (b.episodes, b.agreement, b.ungraded) == (1, 1.0, 2) and len(w["ungraded"]) == 2
    # the command says how many were left out, and why
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf): cli(["taskgen", "validate", str(rdir)])
    assert "2 episode(s) no verifier graded (error: 1, timeout: 1): left out of the agreement" in buf.getvalue()


def webjudge_handlers(wj) -> dict:
    return {"webjudge_key_points": wj.key_points, "webjudge_screenshot": wj.screenshot, "webjudge_outcome": wj.outcome}


def copy_run(run, dest) -> Path:
    "A copy of the fixture's run folder (its judge records stay behind)."
    shutil.copytree(run["run"], dest)
    return dest


def test_judge_records_are_keyed_by_the_judge(run, tmp_path, monkeypatch):
    rdir = copy_run(run, tmp_path / "run")
    keys = [k for k, *_ in TJ.run_episodes(rdir)]
    quiet = dict(workers=2, progress=False, say=lambda *_: None)
    first = TJ.judge_run(rdir, None, **quiet)                                   # the scripted stand-in
    assert first["judged_now"] == len(keys)
    other = TJ.ScriptedJudge(seed=9)
    with llm.ScriptedServer(other) as srv:
        s = TJ.judge_run(rdir, S.model_spec("another-model", srv.base_url), **quiet)
        # another model judges every episode again (it asked about each), and its records say who judged what
        assert s["judged_now"] == len(keys) and sorted(other.requests) == sorted(keys), s
        rec = json.loads((TJ.judge_dir(rdir) / f"{keys[0]}.json").read_text())
        assert rec["model"] == "another-model" and rec["judge"] == TJ.judge_id("another-model")
        assert rec["prompt_version"] == TJ.PROMPT_VERSION and len(rec["episode_hash"]) == 64
        assert formats.problems("judge_record", rec) == []
        # the same judge again asks nothing; an episode whose content changed is judged again
        before = len(other.requests)
        g = rdir / keys[0] / "grade_inputs.json"
        g.write_text(json.dumps({**json.loads(g.read_text()), "answer": "another answer"}))
        again = TJ.judge_run(rdir, S.model_spec("another-model", srv.base_url), **quiet)
        assert other.requests[before:] == [keys[0]] and again["judged_now"] == 1
    # back to the stand-in: its own records of the first pass, no request, for the episodes that did not change
    back = TJ.judge_run(rdir, None, **quiet)
    assert (back["reused"], back["judged_now"]) == (len(keys) - 1, 1), back
    assert formats.problems("judge_summary", json.loads((TJ.judge_dir(rdir) / "_summary.json").read_text())) == []
    # `webmix taskgen judge .`: the current folder, its records beside it
    monkeypatch.chdir(rdir)
    with contextlib.redirect_stdout(io.StringIO()): assert cli(["taskgen", "judge", "."]) == 0
    assert TJ.judge_dir(".") == tmp_path / "run_judge"


def test_cut_off_episodes_are_never_a_success_nor_selected(run, tmp_path):
    rdir = copy_run(run, tmp_path / "run")
    p0, p1 = (t["task_id"] for t in run["proposed"][:2])
    # one proposed episode timed out, another lost its model server (their newest result lines and grade inputs say so)
    for key, g_add, cause in ((p0, {"timed_out": 60}, "timeout after 60s"),
                              (p1, {"model_error": "APIConnectionError: Connection error."}, "model server failed: APIConnectionError")):
        g = rdir / key / "grade_inputs.json"
        g.write_text(json.dumps({**json.loads(g.read_text()), **g_add}))
        line = {**runs.latest(runs.read_results(rdir))[key], "cause": cause}
        with open(rdir / "results.jsonl", "a") as f: f.write(json.dumps(line) + "\n")
    judge = TJ.ScriptedJudge(verdicts={k: "SUCCESS" for k, *_ in TJ.run_episodes(rdir)})     # a judge that says SUCCESS to all
    with llm.ScriptedServer(judge) as srv:
        s = TJ.judge_run(rdir, S.model_spec("scripted-judge", srv.base_url), workers=2, progress=False, say=lambda *_: None)
    assert p0 not in judge.requests and p1 not in judge.requests and s["cut_off"] == 2, s
    for key, why in ((p0, "timeout"), (p1, "model server failed")):
        rec = json.loads((TJ.judge_dir(rdir) / f"{key}.json").read_text())
        assert rec["predicted_label"] == 0 and rec["cut_off"].startswith(why) and formats.problems("judge_record", rec) == []
        # a SUCCESS record written before (an older judge's) does not select its rows either
        (TJ.judge_dir(rdir) / f"{key}.json").write_text(json.dumps({**rec, "predicted_label": 1, "verdict": "SUCCESS"}))
    rep = T.select_rows(rdir, tmp_path / "rows", 10_000, run["dir"] / "tasks.jsonl", say=lambda *_: None)
    assert p0 not in rep["selected"] and p1 not in rep["selected"] and rep["selected"]
    assert sorted(c["task_id"] for c in rep["cut_off"]) == sorted([p0, p1])


def test_rows_of_repeated_tasks_are_selected_by_episode(run, tmp_path):
    rdir = tmp_path / "run"
    rdir.mkdir()
    lines = runs.latest(runs.read_results(run["run"]))
    with_rows = [t["task_id"] for t in run["proposed"] if (run["run"] / t["task_id"] / "rows" / "rows.jsonl").exists()][:1]
    assert with_rows
    jdir = TJ.judge_dir(rdir)
    jdir.mkdir()
    for key in with_rows:                           # the task run with --repeats 2: <id>~r0 and <id>~r1, each a SUCCESS
        for r in (0, 1):
            shutil.copytree(run["run"] / key, rdir / f"{key}~r{r}")
            with open(rdir / "results.jsonl", "a") as f: f.write(json.dumps({**lines[key], "task_id": f"{key}~r{r}", "repeat": r}) + "\n")
            (jdir / f"{key}~r{r}.json").write_text(json.dumps({"task_id": f"{key}~r{r}", "method": "taskgen", "predicted_label": 1,
                                                             "verdict": "SUCCESS", "response": "{}", "model": "m"}))
    rep = T.select_rows(rdir, tmp_path / "rows", 10_000, run["dir"] / "tasks.jsonl", say=lambda *_: None)
    assert sorted(rep["selected"]) == sorted(f"{k}~r{r}" for k in with_rows for r in (0, 1)), rep


def test_the_stand_ins_annotations_follow_webmix_data_and_a_bad_task_json_is_one_line(tmp_path, monkeypatch):
    from webmix.config import annotations_dir
    from webmix.eval.policy_plans import annotations_folder, load_solutions
    src = next(d for d in sorted(annotations_dir().glob("*/*")) if (d / "script.json").exists())
    data = tmp_path / "data"
    shutil.copytree(src, data / "annotations" / src.parent.name / src.name)
    monkeypatch.setenv("WEBMIX_DATA", str(data))
    assert annotations_folder() == data / "annotations" and [s["key"] for s in load_solutions()] == [f"{src.parent.name}/{src.name}"]
    bad = data / "annotations" / src.parent.name / src.name / "task.json"
    bad.write_text('{"task_id": ')
    with pytest.raises(SystemExit, match=re.escape(str(bad))):      # what serve-policy prints, in one line
        load_solutions()


def test_validation_leaves_out_episodes_whose_grade_is_unknown(tmp_path):
    "ok null (a grade error, an answer no tier could decide) or a model server that failed: no verifier NO, counted apart."
    rdir, jdir = tmp_path / "run", tmp_path / "run_judge"
    base = {"kind": "human", "site": "kanban", "family": "Forms & text", "detail": "d", "cause": None}
    lines = [{**base, "task_id": "known", "ok": False}, {**base, "task_id": "grader", "ok": None, "grade_error": "KeyError: 'x'"},
             {**base, "task_id": "undecided", "ok": None}, {**base, "task_id": "server", "ok": False, "model_error": "APIConnectionError"}]
    jdir.mkdir(parents=True)
    for line in lines:
        (rdir / line["task_id"]).mkdir(parents=True)
        (rdir / line["task_id"] / "grade_inputs.json").write_text(json.dumps({"log": [], "answer": "x"}))
        (jdir / f"{line['task_id']}.json").write_text(json.dumps({"task_id": line["task_id"], "predicted_label": 1}))
    (rdir / "results.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))
    pairs, table = TJ.compare(rdir, jdir)
    assert list(pairs.task_id) == ["known"] and (table.iloc[0].fp, table.iloc[0].ungraded) == (1, 3)
    assert sorted((u["task_id"], u["why"]) for u in TJ.graded_outcomes(rdir)[1]) == [
        ("grader", "grade error"), ("server", "model server failed"), ("undecided", "not graded")]
