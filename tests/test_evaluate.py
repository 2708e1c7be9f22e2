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
            assert all((out / k / p["image_url"]["url"]).exists() for m in row["messages"]
                       for p in (m["content"] if isinstance(m["content"], list) else []) if p.get("type") == "image_url")
