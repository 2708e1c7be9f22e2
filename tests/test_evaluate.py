"""webmix.evaluate end to end, against webmix's scripted OpenAI-compatible server (real openai client, browser-use,
Chromium and MiniWeb): an oracle-arm run with done-gating and the router's note on human-style tasks, then its
regrade from grade_inputs.json alone with the server stopped, and the CLI's one-line refusals."""
import json, subprocess

from webmix import evaluate as E
from webmix.llm import ScriptedServer

MODELS = ["qwen35-4b", "drag", "io", "select", "rest", "reasoning", "pooled"]


def always_done(req):
    "A stand-in model that says done at once (every done before the last planned macro is premature)."
    return json.dumps({"evaluation_previous_goal": "", "memory": "", "next_goal": "finish",
                       "action": [{"done": {"text": "nothing found", "success": True}}]})


def texts(req):
    "Every text part of a chat request's messages."
    for m in req["messages"]:
        c = m.get("content")
        for p in c if isinstance(c, list) else [{"type": "text", "text": c or ""}]:
            if p.get("type") == "text": yield p["text"]


def test_gated_oracle_run_regrades_from_its_files(tmp_path):
    tasks = [t for t in E.human_tasks("test") if len(t["macros"]) >= 3][:2]
    out = tmp_path / "run"
    with ScriptedServer({m: always_done for m in MODELS}) as srv:
        E.run_evaluate(tasks, out, arm="oracle", vllm=srv.base_url, adapters=["drag", "io", "select", "rest"],
                       gate_note=True, record_rows=True, workers=1, progress=False)
        requests = list(srv.requests)
    df = E.load_results(out)
    assert len(df) == 2 and not df["ok"].any() and (df["gates"] == E.MAX_GATES).all()
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
    r = E.regrade(tasks, out)
    assert r == {"failed": 2, "changed": 0}
    regraded = [json.loads(l) for l in (out / "results_regraded.jsonl").read_text().splitlines()]
    assert [x["detail"] for x in regraded] == list(df["detail"]) and all(x["regraded"] for x in regraded)


def test_cli_refuses_bad_input_in_one_line(tmp_path):
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"task_id": "t1", "site": "bank"}\nnot json\n')
    cases = [(["--tasks", str(tmp_path / "missing.jsonl")], "no such tasks file"),
             (["--tasks", str(bad)], "line 1: the task has no macro"),
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
    from webmix.policy import serve_policy
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
    from webmix.policy import serve_policy
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
        slow = tmp_path / "slow"
        E.run_evaluate(human, slow, arm="base", vllm=srv.base_url, timeout=3.0, workers=1, progress=False)
        (r,) = _lines(slow)
        g = json.loads((slow / r["task_id"] / "grade_inputs.json").read_text())
        assert r["cause"] == "timeout after 3s" and r["steps"] >= 1 and g["timed_out"] == 3.0 and g["actions"], r
        assert E.regrade(human, slow) == {"failed": 1, "changed": 0}
        # a CancelledError inside one episode is that episode's failure; the others run
        real = E.prepare
        async def cancelled_once(bs, base, task):
            if task["task_id"] == ids[0]: raise asyncio.CancelledError()
            return await real(bs, base, task)
        monkeypatch.setattr(E, "prepare", cancelled_once)
        cut = tmp_path / "cut"
        E.run_evaluate(E.load_tasks(tasks_file)[:2], cut, arm="base", vllm=srv.base_url, workers=1, progress=False)
    by_id = {r["task_id"]: r for r in _lines(cut)}
    assert by_id[ids[0]]["cause"] == "cancelled" and by_id[ids[1]]["detail"] == "pending: judge"
