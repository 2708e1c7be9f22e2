"""webmix.eval.evaluate end to end, against webmix's scripted OpenAI-compatible server (real openai client, browser-use,
Chromium and MiniWeb): an oracle-arm run with done-gating and the router's note on human-style tasks, then its
regrade from grade_inputs.json alone with the server stopped, its tokens and cost, its rerun from the response cache
(with the server up, then stopped), and the CLI's one-line refusals."""
import json, subprocess

from webmix import formats
from webmix.eval import evaluate as E
from webmix.episode_layout import line_text
from webmix.views.episodes import load_episode
from webmix.records import ProposedTask
from webmix.agents.llm import ScriptedServer
from webmix.eval.regrade import regrade

MODELS = ["qwen35-4b", "drag", "io", "select", "rest", "reasoning", "pooled"]


def done_saying(text):
    "A stand-in model that says done at once with `text` (every done before the last planned macro is premature)."
    return lambda req: json.dumps({"evaluation_previous_goal": "", "memory": "", "next_goal": "finish",
                                   "action": [{"done": {"text": text, "success": True}}]})


always_done = done_saying("nothing found")


def texts(req):
    "Every text part of a chat request's messages."
    for m in req["messages"]:
        c = m.get("content")
        for p in c if isinstance(c, list) else [{"type": "text", "text": c or ""}]:
            if p.get("type") == "text": yield p["text"]


def test_gated_oracle_run_regrades_from_its_files(tmp_path):
    tasks = [t for t in E.human_tasks("test") if len(t["macros"]) >= 3][:2]
    out = tmp_path / "run"
    arm = dict(arm="oracle", adapters=["drag", "io", "select", "rest"], gate_note=True, record_rows=True, workers=1,
               progress=False, cache=str(tmp_path / "cache"), price="qwen35-4b=0.15/0.6/0.075,*=0.3/1.2")
    with ScriptedServer({m: always_done for m in MODELS}) as srv:
        E.run_evaluate(tasks, out, vllm=srv.base_url, **arm)
        requests = list(srv.requests)
        # the same run again, from the cache its first run filled: no request reaches the server, the same results
        E.run_evaluate(tasks, tmp_path / "again", vllm=srv.base_url, **arm)
        assert len(srv.requests) == len(requests)
    df = E.load_results(out)
    assert len(df) == 2 and not df["ok"].any() and (df["gates"] == E.MAX_GATES).all()
    # every request counted: tokens as the server's usage gave them, priced, none from the cache the first time
    assert (df["model_calls"] == [len(m) for m in df["models"]]).all() and df["model_calls"].sum() == len(requests)
    assert (df["prompt_tokens"] > 1000).all() and (df["completion_tokens"] > 0).all() and (df["cache_hits"] == 0).all()
    assert (df["cost_usd"] > 0).all() and (df["cached_tokens"] > 0).any()          # the system prompt is a cached prefix
    first_steps = json.loads((out / df["task_id"][0] / "episode.json").read_text())["steps"]
    assert first_steps and all(s["usage"]["model"] and s["usage"]["prompt_tokens"] > 0 for s in first_steps)
    again = E.load_results(tmp_path / "again")
    same = ["task_id", "ok", "detail", "cause", "steps", "models", "gates", "prompt_tokens", "completion_tokens"]
    assert again[same].to_dict("records") == df[same].to_dict("records")
    assert (again["cache_hits"] == again["model_calls"]).all() and (again["cost_usd"] == 0).all()
    assert "prompt_tokens" in E.tokens_by_arm(df).columns and E.tokens_by_arm(df).loc["oracle", "episodes"] == 2
    # the server is stopped: a run from the full cache still completes, alike
    E.run_evaluate(tasks, tmp_path / "offline", vllm=srv.base_url, **arm)
    assert E.load_results(tmp_path / "offline")[same].to_dict("records") == df[same].to_dict("records")
    # each episode's models follow its plan, one macro further at each gated done
    for _, r in df.iterrows():
        plan = E.arm_models("oracle", next(t for t in tasks if t["task_id"] == r["task_id"]), "qwen35-4b",
                            {"drag", "io", "select", "rest"})
        assert r["models"] == plan[:E.MAX_GATES + 1], (r["models"], plan)
    # the note reached the specialist's next request, and only after a gate
    noted = [i for i, q in enumerate(requests) if any("The router's plan still has" in t for t in texts(q))]
    assert noted and 0 not in noted
    for key in df["task_id"]:
        ep = out / key
        assert (ep / "grade_inputs.json").exists() and (ep / "trace.json").exists() and (ep / "history.json").exists()
        assert not (ep / "rows.jsonl").exists()                      # rows only for passing episodes
    # the server is stopped: every grade again from the files alone
    r = regrade(tasks, out)
    assert pick(r, "failed", "regraded", "changed", "could_not") == (2, len(df), 0, 0), r
    regraded = [json.loads(l) for l in (out / "results_regraded.jsonl").read_text().splitlines()]
    assert [x["detail"] for x in regraded] == list(df["detail"]) and all(x["regraded"] for x in regraded)


def test_cli_refuses_bad_input_in_one_line(tmp_path):
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"task_id": "t1", "site": "bank"}\nnot json\n')
    good = {"task_id": "t2", "site": "shop", "macro": "open_detail", "instruction": "Open it.", "start": {"url": "/sites/shop/"}, "check": {}}
    files = {"latin1.jsonl": json.dumps(good).encode().replace(b"Open it.", b"Open \xe9.") + b"\n", "empty.jsonl": b"\n",
             "types.jsonl": json.dumps({**good, "macro": ["open_detail"]}).encode() + b"\n",
             "blank.jsonl": json.dumps({**good, "task_id": " "}).encode() + b"\n",
             "start.jsonl": json.dumps({**good, "start": {"url": "http://elsewhere/"}}).encode() + b"\n"}
    for name, data in files.items(): (tmp_path / name).write_bytes(data)
    cases = [(["--tasks", str(tmp_path / "missing.jsonl")], "no such tasks file"),
             (["--tasks", str(bad)], "line 1: the task has no instruction, macro, start, check"),
             (["--tasks", str(tmp_path / "latin1.jsonl")], "latin1.jsonl: not UTF-8 text"),
             (["--tasks", str(tmp_path / "empty.jsonl")], "empty.jsonl: no tasks in the file"),
             (["--tasks", str(tmp_path / "types.jsonl")], "types.jsonl, line 1: macro: Input should be a valid string"),
             (["--tasks", str(tmp_path / "blank.jsonl")], "blank.jsonl, line 1: task_id: ' ' cannot name a folder"),
             (["--tasks", str(tmp_path / "start.jsonl")], "start.jsonl, line 1: start: start.url is not a /sites/ path"),
             (["--human", "--vllm", "http://127.0.0.1:9/v1"], "no OpenAI-compatible server answers at http://127.0.0.1:9/v1")]
    for extra, msg in cases:
        p = subprocess.run(["webmix", "evaluate", "--arm", "oracle", "--out", str(tmp_path / "o"), *extra],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 1 and msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, (extra, p.stderr)
    p = subprocess.run(["webmix", "evaluate", "--arm", "nope", "--human", "--out", "x"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "invalid choice: 'nope'" in p.stderr


def test_gating_rescues_premature_dones_and_rows_are_the_sent_requests(tmp_path):
    "On the scripted policy (a simulator) with premature dones: --gate-done passes more; a passing episode's rows are its requests."
    from webmix.formats import problems
    from webmix.eval.policy import serve_policy
    tasks = E.human_tasks("test")[:4]
    ok = {}
    for gate in (False, True):
        with serve_policy(port=0, faults={"premature": 0.5}, seed=1) as srv:
            out = tmp_path / f"gate-{gate}"
            E.run_evaluate(tasks, out, arm="oracle", vllm=srv.base_url, adapters=["drag", "io", "select", "rest"],
                           gate_done=gate, record_rows=True, workers=2, progress=False)
            sent = list(srv.requests)
        df = E.load_results(out)
        ok[gate] = int(df["ok"].sum())
    assert ok[True] > ok[False], ok
    ungated = E.load_results(tmp_path / "gate-False")
    failed = ungated[ungated["ok"] != True]
    kinds = failed["failure"].dropna().tolist()          # a unit that failed before its episode has no kind
    assert "premature done" in kinds and set(kinds) <= set(E.FAILURE_KINDS), failed[["task_id", "failure", "cause"]].to_dict("records")
    # the viewer marks the step whose done the router gated, and shows each step's tokens
    from webmix.views.episodes import GATED, load_episode
    from webmix.views.episode_viewer import step_html
    gated = [(ep, s) for k in df["task_id"] for ep in [load_episode(out / k)] for s in ep.steps if s.gated == GATED]
    assert len(gated) == int(df["gates"].sum()) > 0 and "(--gate-done)" in step_html(*gated[0]), int(df["gates"].sum())
    assert all(s.usage and "prompt" in step_html(ep, s) for ep, s in gated)
    passed = df[df["ok"]]
    assert len(passed) and all((out / k / "rows.jsonl").exists() for k in passed["task_id"])
    assert not any((out / k / "rows.jsonl").exists() for k in df[~df["ok"]]["task_id"])
    sent_texts = [list(texts(q)) for q in sent]
    for k in passed["task_id"]:
        for row in map(json.loads, (out / k / "rows.jsonl").read_text().splitlines()):
            assert list(texts(row)) in sent_texts                  # the exact request, images saved beside as files
            assert problems("step_row", row) == [], problems("step_row", row)
            assert all((out / k / p["image_url"]["url"]).exists() for m in row["messages"]
                       for p in (m["content"] if isinstance(m["content"], list) else []) if p.get("type") == "image_url")


def _proposed(path, n):
    "A taskgen-style tasks file of `n` proposed tasks (no verifier: the scripted policy plays its generic episode)."
    sites = ["shop", "kanban"]
    lines = [{"kind": "proposed", "task_id": f"tg-{sites[i % 2]}-{i:08x}", "site": sites[i % 2], "sites": [sites[i % 2]],
              "macro": "proposed", "macros": [], "instruction": f"Look around the home page and say what it shows ({i}).",
              "start_path": f"/sites/{sites[i % 2]}/", "task_kind": "info", "verifier": None} for i in range(n)]
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))
    return [l["task_id"] for l in lines]


def test_killed_run_resumes_proposed_rows_timeouts_and_cancellation(tmp_path, monkeypatch):
    """SIGKILL mid-run and --resume: every episode once; proposed tasks' rows whatever the outcome; a timed-out
    episode keeps its steps and grade inputs; a CancelledError in an episode is one failed result."""
    import asyncio, time
    from test_datagen import _kill_group, _lines
    from webmix.formats import problems
    from webmix.eval.policy import serve_policy
    from webmix.eval.policy_play import ScriptedPolicy
    tasks_file = tmp_path / "tasks.jsonl"
    ids = _proposed(tasks_file, 5)
    out = tmp_path / "run"
    with serve_policy(port=0, seed=1) as srv:
        cmd = ["webmix", "evaluate", "--tasks", str(tasks_file), "--arm", "base", "--record-rows", "--vllm", srv.base_url,
               "--out", str(out), "--workers", "1"]
        first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        t_end = time.time() + 180
        while time.time() < t_end and len(_lines(out)) < 2 and first.poll() is None: time.sleep(0.1)
        _kill_group(first)                                   # killed with an episode in flight
        assert 2 <= len(_lines(out)) < len(ids)
        again = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-2000:]
        lines = _lines(out)
        assert sorted(r["task_id"] for r in lines) == sorted(ids)                 # each exactly once
        for r in lines:
            assert r["kind"] == "proposed" and not r["ok"] and r["detail"] == "pending: judge" and r["rows"] >= 1
            ep = out / r["task_id"]
            assert json.loads((ep / "episode.json").read_text())["instruction"].startswith("Look around")
            assert (ep / "final.png").exists() and len(list(ep.glob("screen_*.png"))) == r["screenshots"] >= 1
            g = json.loads((ep / "grade_inputs.json").read_text())
            assert g["actions"] and g["log"] and "answer" in g
            rows = [json.loads(l) for l in (ep / "rows" / "rows.jsonl").read_text().splitlines()]
            assert len(rows) == r["rows"] and rows[-1]["op"] == "done"
            for row in rows: assert problems("step_row", row) == [], problems("step_row", row)
        # past --timeout: the steps taken so far are kept, graded never a success, and regrade agrees
        human = [t for t in E.human_tasks("test") if len(t["macros"]) >= 3][:1]
        slow, policy = tmp_path / "slow", ScriptedPolicy(seed=1)
        def slowly(body):
            time.sleep(1.0)
            return policy.respond(body)
        # 8 s with the stand-in answering after 1 s: a cold browser's first step fits, the task's ten or more do not
        with ScriptedServer({"qwen35-4b": slowly}) as slow_srv:
            E.run_evaluate(human, slow, arm="base", vllm=slow_srv.base_url, timeout=8.0, workers=1, progress=False)
        (r,) = _lines(slow)
        g = json.loads((slow / r["task_id"] / "grade_inputs.json").read_text())
        assert r["cause"] == "timeout after 8s" and r["steps"] >= 1 and g["timed_out"] == 8.0 and g["actions"], r
        assert pick(regrade(human, slow), "failed", "changed", "could_not") == (1, 0, 0)
        # a CancelledError inside one episode is that episode's failure; the others run
        real = ProposedTask.prepare
        async def cancelled_once(task, page):
            if task.task_id == ids[0]: raise asyncio.CancelledError()
            return await real(task, page)
        monkeypatch.setattr(ProposedTask, "prepare", cancelled_once)
        cut = tmp_path / "cut"
        E.run_evaluate(E.load_tasks(tasks_file)[:2], cut, arm="base", vllm=srv.base_url, workers=1, progress=False)
    by_id = {r["task_id"]: r for r in _lines(cut)}
    assert by_id[ids[0]]["cause"] == "cancelled" and by_id[ids[1]]["detail"] == "pending: judge"


def reply(action) -> str:
    "An agent step's reply with one action."
    return json.dumps({"evaluation_previous_goal": "", "memory": "", "next_goal": "", "action": [action]})


def schema_text(req) -> str:
    "The structured output a request asks for (its action union among it), as text."
    return json.dumps(req.get("response_format") or {})


def one_line_refusal(p) -> str:
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1, (p.returncode, p.stderr[-2000:])
    return p.stderr.strip()


def evaluate_cli(*args, timeout=180):
    return subprocess.run(["webmix", "evaluate", *args], capture_output=True, text=True, timeout=timeout)


BROKEN_START = {"task_id": "broken-start", "site": "shop", "macro": "upload_file", "instruction": "Upload it.",
                "start": {"url": "/sites/shop/"}, "check": {"kind": "url"},
                "option": {"filename": "../x.pdf", "content": "x"}}   # a file it cannot write: the unit fails before its episode


def test_options_are_one_record_and_a_resume_that_changes_one_is_refused(tmp_path, capsys):
    from dataclasses import fields
    # not settings: where the server is, the reply cache, the prices, and the site variants (each variant's episodes are units of their own, <id>~vN)
    assert set(E.EvalOptions().settings()) == {f.name for f in fields(E.EvalOptions)} - {"vllm", "variants", "variant", "cache", "price"} | {"actions"}
    out = tmp_path / "run"
    with ScriptedServer({m: always_done for m in MODELS}) as srv, ScriptedServer({m: always_done for m in MODELS}) as other:
        E.run_evaluate([BROKEN_START], out, arm="base", vllm=srv.base_url, workers=1)
        # every unit failed before an episode started: a summary, not a KeyError
        assert "0 episodes, 1 without an episode: ValueError: broken-start: file name '../x.pdf' cannot name a folder (1); 1 masked" in capsys.readouterr().out
        settings = json.loads((out / "manifest.json").read_text())["settings"]
        assert settings["repeats"] == 1 and settings["allow_js"] is False and settings["agent_version"] == "v1"
        before = sorted(p.name for p in out.iterdir())
        p = evaluate_cli("--human", "--task-ids", "add-finance-assignment", "--arm", "base", "--repeats", "3",
                         "--vllm", srv.base_url, "--out", str(out))
        assert "was made with other settings: repeats 1 -> 3. Use a new --out" in one_line_refusal(p)
        assert sorted(p.name for p in out.iterdir()) == before                  # no T~r0..2 beside T
        # the task selection is compared too: the same tasks file with other tasks in it is another selection
        tf, out2 = tmp_path / "tasks.jsonl", tmp_path / "run2"
        tf.write_text(json.dumps(BROKEN_START) + "\n")
        assert evaluate_cli("--tasks", str(tf), "--arm", "base", "--vllm", srv.base_url, "--out", str(out2)).returncode == 0
        tf.write_text(json.dumps({**BROKEN_START, "task_id": "broken-start-2"}) + "\n")
        p = evaluate_cli("--tasks", str(tf), "--arm", "base", "--vllm", srv.base_url, "--out", str(out2))
        assert "was made with other settings: task selection {" in one_line_refusal(p)
        sessions = json.loads((out2 / "manifest.json").read_text())["sessions"]
        assert [s["args"]["retry_failed"] for s in sessions] == [False] and sessions[0]["provenance"]["webmix_version"]
        for change, named in [({"agent_version": "v6"}, "agent_version 'v1' -> 'v6'"), ({"allow_js": True}, "allow_js False -> True"),
                              ({"timeout": 60}, "timeout 600.0 -> 60.0"), ({"sub_cap": 5}, "sub_cap 15 -> 5")]:
            try: E.run_evaluate([BROKEN_START], out, arm="base", vllm=srv.base_url, workers=1, progress=False, **change)
            except E.runs.ManifestMismatch as e: assert named in str(e), (named, str(e))
            else: raise AssertionError(f"{change} was not refused")
        # another server (say, restarted on another port) serving the same names decides nothing: the resume goes on
        capsys.readouterr()
        E.run_evaluate([BROKEN_START], out, arm="base", vllm=other.base_url, workers=1)
        assert "0 episodes, 1 without an episode: ValueError: broken-start: file name '../x.pdf' cannot name a folder (1); 1 masked" in capsys.readouterr().out
    assert len(E.load_results(out)) == 1


def test_agent_version_and_served_names_are_checked_before_any_browser(tmp_path):
    out = tmp_path / "o"
    with ScriptedServer({"qwen35-4b": always_done, "drag": always_done}) as srv:
        cases = [(["--arm", "agent_planner", "--agent-version", "v2"], "unknown agent version 'v2' (versions: v1, v6, v7)"),
                 (["--arm", "base", "--base-name", "other"], "does not serve other (it serves: qwen35-4b, drag)"),
                 (["--arm", "pooled"], "does not serve pooled (it serves"),
                 (["--arm", "oracle", "--adapters", "drag,io"], "does not serve io (it serves"),
                 (["--arm", "agent_planner", "--planner-name", "planner"], "does not serve planner (it serves")]
        for extra, msg in cases:
            p = evaluate_cli("--human", "--vllm", srv.base_url, "--out", str(out), *extra)
            assert msg in one_line_refusal(p), (extra, p.stderr)
    assert not out.exists()                                    # refused before the run folder, let alone a browser
    o = E.EvalOptions(arm="oracle", adapters=("drag", "io"))
    human = [t for t in E.human_tasks("test") if "io" in E.arm_models("oracle", t, "qwen35-4b", {"io"})][:1]
    assert "io" in E.requested_models(o, human) and "pooled" not in E.requested_models(o, human)


def test_task_ids_that_cannot_name_a_folder_stop_where_the_tasks_are_loaded(tmp_path):
    good = {**BROKEN_START, "task_id": "good-1"}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(good) + "\n" + json.dumps({**good, "task_id": "../../x"}) + "\n")
    try: E.load_tasks(tasks)
    except E.TaskFileError as e: assert str(e) == f"{tasks}, line 2: task_id: '../../x' cannot name a folder", e
    else: raise AssertionError("loaded")
    outside = tmp_path / "a" / "x"                             # where <out>/../../x would land
    outside.mkdir(parents=True)
    (outside / "keep.txt").write_text("mine")
    p = evaluate_cli("--tasks", str(tasks), "--arm", "base", "--out", str(tmp_path / "a" / "b" / "out"))
    assert "line 2: task_id: '../../x' cannot name a folder" in one_line_refusal(p)
    assert (outside / "keep.txt").read_text() == "mine" and not (tmp_path / "a" / "b").exists()
    tasks.write_text(json.dumps(good) + "\n")
    assert [t["task_id"] for t in E.load_tasks(tasks)] == ["good-1"]
    try: E.run_evaluate([{**good, "task_id": "../x"}], tmp_path / "out", vllm="http://127.0.0.1:9/v1", progress=False)
    except ValueError as e: assert str(e) == "task 1 of 1: task_id: '../x' cannot name a folder"
    else: raise AssertionError("ran")


def test_gate_note_names_the_plan_left_from_the_step_the_done_came_in(tmp_path):
    "The last planned macro is never acted on (macro_done three times, then done): the note names that step."
    task = next(t for t in E.human_tasks("all") if t["task_id"] == "copy-largest-travel-debit")
    assert [E.family_of(m) for m in task["macros"]][-1] == "Out-of-page I/O" and len(task["macros"]) == 4
    steps = []
    def script(req):
        if not req.get("response_format"): return "ok"
        steps.append(req)
        return reply({"macro_done": {}} if len(steps) <= 3 else {"done": {"text": "copied", "success": True}})
    with ScriptedServer({m: script for m in MODELS}) as srv:
        E.run_evaluate([task], tmp_path / "run", arm="oracle", vllm=srv.base_url, adapters=["drag", "io", "select", "rest"],
                       gate_note=True, workers=1, progress=False)
    (r,) = E.load_results(tmp_path / "run").to_dict("records")
    assert r["gates"] == 1 and len(steps) == 5, (r, len(steps))
    noted = [i for i, q in enumerate(steps) if any("The router's plan still has" in t for t in texts(q))]
    assert noted == [4], noted
    assert any("The router's plan still has 1 step: Out-of-page I/O (copy a value" in t for t in texts(steps[4]))


def test_agent_planner_keeps_the_planners_history_and_agents_get_no_javascript_unless_allowed(tmp_path):
    task = [t for t in E.human_tasks("test") if len(t["macros"]) >= 3][:1]
    specialist_asks, planner_turns = [], []
    def planner(req):
        if not req.get("response_format"): return "ok"
        planner_turns.append(req)
        if len(planner_turns) == 1: return reply({"delegate": {"family": "Navigation", "instruction": "Stay on this page."}})
        return reply({"done": {"text": "finished", "success": True}})
    def specialist(req):
        if req.get("response_format"): specialist_asks.append(req)
        return always_done(req)
    with ScriptedServer({"planner": planner, "qwen35-4b": specialist}) as srv:
        E.run_evaluate(task, tmp_path / "planner", arm="agent_planner", vllm=srv.base_url, planner_name="planner",
                       workers=1, progress=False)
    (r,) = E.load_results(tmp_path / "planner").to_dict("records")
    ep = tmp_path / "planner" / r["task_id"]
    saved = json.loads((ep / "planner_history.json").read_text())["history"]
    assert r["planner_steps"] == len(saved) == 2 and (ep / "history_0.json").exists(), r
    assert '"delegate"' in schema_text(planner_turns[0]) and specialist_asks
    assert all('"evaluate"' not in schema_text(q) and '"click"' in schema_text(q) for q in specialist_asks)
    settings = json.loads((tmp_path / "planner" / "manifest.json").read_text())["settings"]
    assert settings["actions"] == E.agent_actions() and "evaluate" not in settings["actions"] and "click" in settings["actions"]
    # --allow-js: the single agent is offered evaluate, and the manifest says so
    asks = []
    def recorded(req):
        if req.get("response_format"): asks.append(req)
        return always_done(req)
    with ScriptedServer({m: recorded for m in MODELS}) as srv:
        E.run_evaluate(task, tmp_path / "js", arm="base", vllm=srv.base_url, allow_js=True, workers=1, progress=False)
    assert asks and all('"evaluate"' in schema_text(q) for q in asks)
    settings = json.loads((tmp_path / "js" / "manifest.json").read_text())["settings"]
    assert settings["allow_js"] is True and settings["actions"] == E.agent_actions(allow_js=True)
    assert set(E.agent_actions(allow_js=True)) - set(E.agent_actions()) == {"evaluate"}


def test_a_grader_that_fails_keeps_the_episode_as_success_unknown_and_regrade_grades_it(tmp_path, monkeypatch, free_port):
    "The verifier's LLM tier configured but not answering, and a history that will not save: the episode is kept."
    from browser_use.agent.views import AgentHistoryList
    task = [t for t in E.human_tasks("test") if t["task_id"] == "add-finance-assignment"]
    assert task[0]["verifier"]["answer"]["llm"]                # "a few of them" gives no count: the LLM tier is asked
    monkeypatch.setenv("WEBMIX_JUDGE_MODEL", "judge")
    monkeypatch.setenv("WEBMIX_JUDGE_URL", f"http://127.0.0.1:{free_port}/v1")          # nothing listens there
    def will_not_save(self, path): raise TypeError("Object of type Thing is not JSON serializable")
    monkeypatch.setattr(AgentHistoryList, "save_to_file", will_not_save)
    out = tmp_path / "run"
    with ScriptedServer({m: done_saying("a few of them") for m in MODELS}) as srv:
        E.run_evaluate(task, out, arm="base", vllm=srv.base_url, workers=1, progress=False)
    monkeypatch.undo()
    (r,) = E.runs.read_results(out)
    assert r["ok"] is None and "APIConnectionError" in r["grade_error"] and r["cause"].startswith("grade error: "), r
    assert r["unsaved"] == {"history.json": "TypeError: Object of type Thing is not JSON serializable"}, r
    ep = out / r["task_id"]
    assert (ep / "grade_inputs.json").exists() and (ep / "episode.json").exists() and (ep / "final.png").exists()
    df = E.load_results(out)
    table = E.success_table(df)
    assert table.loc["ungraded", "base"] == "1" and table.loc["all", "base"] == "0/1"     # counted, never a pass
    assert table.loc["masked", "base"] == "0" and table.loc["episodes", "base"] == "1"
    assert E.tally(df) == {f"base/{r['family']}": {"ok": 0, "episodes": 1, "ungraded": 1, "masked": 0}}
    # a grader that still fails leaves it a grade error; one that answers grades it
    broken = [{**task[0].to_dict(), "verifier": {"macros": ["not", "a", "mapping"]}}]
    assert pick(regrade(broken, out), "ungraded", "regraded", "changed", "could_not") == (1, 1, 0, 0)
    with ScriptedServer("YES: the answer gives the count.") as judge:
        monkeypatch.setenv("WEBMIX_JUDGE_MODEL", "judge")
        monkeypatch.setenv("WEBMIX_JUDGE_URL", judge.base_url)
        got = regrade(task, out)
    (line,) = [json.loads(l) for l in (out / "results_regraded.jsonl").read_text().splitlines()]
    assert pick(got, "failed", "changed") == (1, 1) and line["ok"] is False and "grade_error" not in line, line
    assert line["cause"].startswith("not graded a success: failed: ") and "answer by llm tier" in line["detail"]   # the judge said YES


def pick(d, *keys) -> tuple: return tuple(d.get(k, 0) for k in keys)


def test_site_variants_are_episodes_of_their_own_graded_alike(tmp_path, capsys):
    """Two human-style tasks on site variants 0 and 1 (webmix.world.variants): each variant's episode is a unit of its
    own (<id>~v1) whose record names its variant; the scripted stand-in's right play passes on both variants and its
    wrong play (a macro left out, another value, a wrong answer) fails on both; the run ends with success by variant."""
    from webmix.eval.policy import serve_policy
    tasks = E.human_tasks("train")[:2]
    ids = {t["task_id"] for t in tasks}
    for play, want in (("correct", True), ("wrong", False)):
        out = tmp_path / play
        with serve_policy(port=0, seed=1, variant=play) as srv:
            E.run_evaluate(tasks, out, arm="oracle", vllm=srv.base_url, adapters=["drag", "io", "select", "rest"], variants=2,
                           workers=2)
        lines = {r["task_id"]: r for r in (json.loads(l) for l in (out / "results.jsonl").read_text().splitlines())}
        assert set(lines) == ids | {f"{i}~v1" for i in ids}
        assert all(r["ok"] is want for r in lines.values()), {k: r.get("cause") for k, r in lines.items()}
        assert all(r.get("variant", 0) == (1 if k.endswith("~v1") else 0) for k, r in lines.items())
        for k in lines:
            rec = json.loads((out / k / "episode.json").read_text())
            assert rec.get("variant", 0) == lines[k].get("variant", 0) and rec["layout"] == "agent" and rec["steps"]
            assert len(rec["steps"]) == lines[k]["steps"], k                   # one count of steps, in every file
            g = rec["grade"]                                                    # the grade whole; the line a short form
            assert g["ok"] is lines[k]["ok"] and line_text(g["detail"]) == lines[k]["detail"], (g, lines[k])
            assert g.get("cause") == lines[k].get("cause") or line_text(g["cause"]) == lines[k]["cause"], (g, lines[k])
            pages = [json.loads(l) for l in (out / k / "dom.jsonl").read_text().splitlines()]   # the page each call saw
            assert formats.check_jsonl("dom", out / k / "dom.jsonl") == [] and rec["files"]["dom"] == "dom.jsonl"
            assert len(pages) >= len(rec["steps"]) and all("data-control-id" in p["html"] for p in pages), k
            assert formats.check_jsonl("agent_log", out / k / "log.jsonl") == [] and rec["files"]["log"] == "log.jsonl"
            steps = load_episode(out / k).steps                                 # the agent's own log, under its steps
            assert sum(bool(s.log) for s in steps) >= len(steps) - 1 and any("Step" in x["message"] for s in steps for x in s.log), k
        table = capsys.readouterr().out.split("variant  units")[1].splitlines()
        assert [row.split()[:3] for row in table[1:3]] == [["0", "2", str(2 * want)], ["1", "2", str(2 * want)]], table


SHORT, LONG = "seat-waiting-party", "cheapest-nonstop-flight"      # the stand-in's plays: 3 steps, 7 steps


def test_a_400_is_the_agents_failure_and_retry_failed_runs_only_masked_episodes(tmp_path):
    """`webmix evaluate --human --arm base` against the stand-in answering HTTP 400 "maximum context length" from each
    episode's fifth step on: the 3-step task passes, the 7-step one is graded a failure (counted in the success table,
    not masked); the manifest and the table say the stand-in answered. With one masked line added (a MiniWeb server
    that would not start), `--retry-failed` runs that episode again and not the agent's failure."""
    from webmix.eval.policy import serve_policy
    out, log = tmp_path / "run", tmp_path / "requests.jsonl"
    with serve_policy(port=0, overflow_at=5, request_log=str(log)) as srv:
        cmd = ["webmix", "evaluate", "--human", "--task-ids", f"{SHORT},{LONG}", "--arm", "base", "--vllm", srv.base_url,
               "--out", str(out), "--workers", "1"]
        first = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert first.returncode == 0, first.stderr[-3000:]
        lines = {r["task_id"]: r for r in E.runs.read_results(out)}
        assert lines[SHORT]["ok"] is True, lines[SHORT]
        long = lines[LONG]
        assert long["ok"] is False and not long.get("masked") and "maximum context length" in long["model_refused"], long
        assert long["cause"].startswith("not graded a success: the model server refused the agent's request"), long
        assert "model_error" not in long and long["steps"] >= 3, long          # the model steps before the 400
        assert long["failure"] == "model error" and lines[SHORT]["failure"] is None, long
        table = E.success_table(E.load_results(out))
        arm = "base (scripted stand-in)"
        assert table.loc["all", arm] == "1/2" and table.loc["masked", arm] == "0" and table.loc["episodes", arm] == "2", table
        assert arm in first.stdout and "2 episodes: 2 graded, 0 ungraded (no pass), 0 masked" in first.stdout, first.stdout
        summary = (out / "summary.md").read_text()                  # the tables `webmix report <out>` prints, kept beside
        assert f"| {arm} | 2 | 1 | 50% [" in summary and summary.endswith(subprocess.run(
            ["webmix", "report", str(out)], capture_output=True, text=True, timeout=60).stdout), summary
        models = json.loads((out / "manifest.json").read_text())["models"]
        assert models and all("scripted stand-in" in m["served_by"] for m in models), models
        # a masked line for the passing task, as the engine writes one for a server that would not start
        masked = {**lines[SHORT], "ok": False, "masked": True, "cause": "MiniWeb server: RuntimeError: it would not start"}
        for k in ("detail", "steps", "answer", "done", "models"): masked.pop(k, None)
        with open(out / "results.jsonl", "a") as f: f.write(json.dumps(masked) + "\n")
        asked = len(log.read_text().splitlines())
        again = subprocess.run(cmd + ["--retry-failed"], capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr[-3000:]
    keys = [r["task_id"] for r in E.runs.read_results(out)]
    assert keys.count(SHORT) == 3 and keys.count(LONG) == 1, keys           # only the masked episode ran again
    assert E.runs.latest(E.runs.read_results(out))[SHORT]["ok"] is True
    assert len(log.read_text().splitlines()) > asked


def test_a_planner_whose_model_fails_before_delegating_leaves_its_episode(tmp_path):
    """agent_planner: the planner's model fails on its first turn. A 5xx masks the episode, a 400 is graded a failure;
    either way the episode folder is kept. The specialists are given the task's files."""
    from webmix.agents.agent import Team
    task = [t for t in E.human_tasks("test") if t["task_id"] == SHORT]
    for status in (500, 400):
        def planner(req):
            if not req.get("response_format"): return "ok"
            raise RuntimeError("scripted fault: HTTP 500")      # ScriptedServer answers 500
        srv = ScriptedServer({"planner": planner, "qwen35-4b": always_done})
        if status == 400:                                      # the planner's prompt over the context, as vLLM says it
            from flask import request
            from webmix.eval.policy import overflow
            inner = srv.app.view_functions["completions"]
            srv.app.view_functions["completions"] = lambda: (overflow(request.get_json()) if request.get_json().get("model") == "planner"
                                                             else inner())
        with srv:
            E.run_evaluate(task, tmp_path / str(status), arm="agent_planner", vllm=srv.base_url, planner_name="planner",
                           workers=1, progress=False)
        (r,) = E.runs.read_results(tmp_path / str(status))
        assert (tmp_path / str(status) / SHORT / "episode.json").exists() and "trace" not in r, r
        if status == 500: assert r["masked"] is True and r["ok"] is None and r["cause"].startswith("model server failed"), r
        else: assert r["ok"] is False and not r.get("masked") and "maximum context length" in r["model_refused"], r
    team = Team(lambda f: "base", "http://127.0.0.1:9/v1", "the task", files=["/tmp/report.pdf"])
    assert team.specialist("Out-of-page I/O", "Upload the report.", "base", "http://127.0.0.1:9/").available_file_paths == ["/tmp/report.pdf"]


def test_a_broken_annotation_stops_evaluate_in_one_line_naming_it(tmp_path):
    "A task.json that is no JSON, or that lacks a field, in the data folder's annotations: one line, no traceback."
    import os, shutil
    from webmix.config import data_dir
    data = tmp_path / "data"
    shutil.copytree(data_dir(), data, ignore=shutil.ignore_patterns("runs", "rows", "pools", "benchmarks"))
    broken = data / "annotations" / "bank" / "export-dining-month" / "task.json"
    for text, said in (('{"task_id": ', "not valid JSON"), ('{"task_id": "x"}', "the task has no site")):
        broken.write_text(text)
        p = subprocess.run(["webmix", "evaluate", "--human", "--human-split", "all", "--arm", "base", "--out", str(tmp_path / "run")],
                           capture_output=True, text=True, timeout=120, env={**os.environ, "WEBMIX_DATA": str(data)})
        line = one_line_refusal(p)
        assert str(broken) in line and said in line, line


def test_seed_gives_each_sampled_episode_a_seed_of_its_own(tmp_path):
    "With --temperature above 0 every request of an episode carries a seed drawn from --seed and the episode: the same again, another per repeat."
    task = [t for t in E.human_tasks("test") if t["task_id"] == "add-finance-assignment"]
    seeds = {}
    for seed, out in ((5, "a"), (5, "b"), (6, "c")):
        with ScriptedServer({m: always_done for m in MODELS}) as srv:
            E.run_evaluate(task, tmp_path / out, arm="base", vllm=srv.base_url, workers=1, progress=False, temperature=0.7,
                           repeats=2, seed=seed)
            seeds[out] = sorted({r.get("seed") for r in srv.requests if "messages" in r})
    assert len(seeds["a"]) == 2 and None not in seeds["a"] and seeds["a"] == seeds["b"] and set(seeds["c"]).isdisjoint(seeds["a"])
    with ScriptedServer({m: always_done for m in MODELS}) as srv:          # at temperature 0 no seed is sent
        E.run_evaluate(task, tmp_path / "d", arm="base", vllm=srv.base_url, workers=1, progress=False, seed=5)
        assert {r.get("seed") for r in srv.requests if "messages" in r} == {None}
