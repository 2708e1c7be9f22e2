"""Bounds on what a model can make an episode do, against webmix's scripted OpenAI-compatible server, a real Chromium
and a real MiniWeb server: a reply (or one of its fields, or the text it asks to type) over its cap is a failed step
named on the result line, never a crash of the step nor a cached reply; an episode whose agent will not stop is cut at
its timeout, within a short grace, with the steps it took."""
import asyncio, json, time

from webmix.agents import harness as H
from webmix.agents.llm import MAX_TYPED_CHARS, ScriptedServer
from webmix.agents.calls import ResponseCache
from webmix.eval import evaluate as E
from webmix.world.servers import free_ports


def step(action, **fields) -> str:
    "An agent step's reply with one action; `fields` replace its thought fields."
    return json.dumps({"evaluation_previous_goal": "", "memory": "", "next_goal": "", **fields, "action": [action]})


def scripted(first, then=None):
    "A model that answers `first` to its first step request, then `then` (default: `first` again); plain requests 'ok'."
    asked = []
    def respond(req):
        if not req.get("response_format"): return "ok"
        asked.append(req)
        return first if len(asked) == 1 or then is None else then
    return respond, asked


def run(tmp_path, respond, timeout=60.0, **kw) -> tuple:
    "One human-style task's episode under `respond` -> (its result line, its episode folder, seconds the run took)."
    task = E.human_tasks("test")[:1]
    out, t0 = tmp_path / "run", time.monotonic()
    with ScriptedServer({"qwen35-4b": respond}) as srv:
        E.run_evaluate(task, out, arm="base", vllm=srv.base_url, workers=1, ports=free_ports(1), progress=False,
                       timeout=timeout, **kw)
    (line,) = E.runs.read_results(out)
    return line, out / line["task_id"], time.monotonic() - t0


def errors(ep) -> list:
    "The errors of the steps history.json holds, in order (the steps without one left out)."
    items = json.loads((ep / "history.json").read_text())["history"]
    return [e for it in items for e in [next((r["error"] for r in it.get("result") or [] if r.get("error")), None)] if e]


def test_a_10mb_memory_is_a_reply_error_and_the_episode_is_kept(tmp_path):
    "One good step, then replies whose memory is 10 MB: failed steps, then the agent stops; nothing of them cached."
    respond, asked = scripted(step({"wait": {"seconds": 1}}), step({"wait": {"seconds": 1}}, memory="m" * 10_000_000))
    line, ep, took = run(tmp_path, respond, cache=str(tmp_path / "cache"))
    assert line["ok"] is False and line["reply_error"].startswith("ReplyOverCap: "), line
    assert "over MAX_REPLY_CHARS (200,000)" in line["reply_error"] and "not valid steps" in line["cause"], line
    # asked: the good step, 3 failed ones and browser-use's last try after them; one step taken, counted alike everywhere
    record = json.loads((ep / "episode.json").read_text())
    assert [s["action"] for s in record["steps"]] == ["wait"] and line["steps"] == 1 and len(asked) == 5, (line, len(asked))
    assert line["model_calls"] == 5 and line["completion_tokens"] > 2_000_000, line      # the capped replies were paid for
    errs = errors(ep)
    assert errs[-4:] == [errs[-1]] * 4 and "over MAX_REPLY_CHARS" in errs[-1], errs
    assert len(ResponseCache(tmp_path / "cache")) == 1                       # the good step's reply, none of the others
    assert (ep / "grade_inputs.json").exists() and (ep / "final.png").exists()
    print(f"10 MB memory: {line['steps']} steps, {took:.1f} s")


def test_a_5mb_input_is_a_reply_error_not_typing(tmp_path):
    "An input of 5 MB of text (over the reply's cap), then one of 50,000 characters (over the typed text's): nothing typed."
    respond, asked = scripted(step({"input": {"index": 1, "text": "x" * 5_000_000}}),
                              step({"input": {"index": 1, "text": "y" * 50_000}}))
    line, ep, took = run(tmp_path, respond)
    assert line["ok"] is False and f"over MAX_TYPED_CHARS ({MAX_TYPED_CHARS:,})" in line["reply_error"], line
    assert "input's text is 50,000 characters" in line["reply_error"] and len(asked) == 4, line
    errs = errors(ep)
    assert "over MAX_REPLY_CHARS" in errs[0] and all("over MAX_TYPED_CHARS" in e for e in errs[1:]), errs
    assert json.loads((ep / "episode.json").read_text())["steps"] == []          # no step acted
    g = json.loads((ep / "grade_inputs.json").read_text())
    assert not any("input" in a for a in g["actions"]) and "x" * 100 not in json.dumps(g["log"]), g["actions"]
    assert line["duration_s"] < 60, line
    print(f"5 MB input: {len(asked)} requests, {took:.1f} s")


def test_an_agent_that_will_not_stop_is_cut_at_its_timeout_with_its_steps(tmp_path):
    "A step, then waits of 600 s: the episode ends within ~30 s of --timeout 20, with its steps and grade inputs."
    respond, asked = scripted(step({"scroll": {"down": True, "pages": 0.5}}), step({"wait": {"seconds": 600}}))
    line, ep, took = run(tmp_path, respond, timeout=20.0)
    assert line["cause"] == "timeout after 20s" and line["ok"] is False, line
    assert line["duration_s"] < 30 and took < 45, (line["duration_s"], took)
    record = json.loads((ep / "episode.json").read_text())
    assert [s["action"] for s in record["steps"]] == ["scroll"] and len(asked) >= 2, record["steps"]   # the wait it was in: cut
    g = json.loads((ep / "grade_inputs.json").read_text())
    assert g["timed_out"] == 20.0 and {"scroll": {"down": True, "pages": 0.5}} in g["actions"], g["actions"]
    print(f"wait 600 s: {line['steps']} steps, {line['duration_s']:.1f} s in the unit, {took:.1f} s the run")


def test_run_within_returns_in_time_whatever_the_agent_does():
    "An agent that ignores its cancellation is abandoned after the grace; one cancelled by its caller is cancelled too."
    async def stubborn(released):
        while not released.is_set():
            try: await released.wait()
            except asyncio.CancelledError: pass
        return "finished"
    async def main():
        bs, released, t0 = H.make_session(headless=True), asyncio.Event(), time.monotonic()
        got = await H.run_within(stubborn(released), 1.0, bs, grace=1.0)
        took, spoiled = time.monotonic() - t0, bs._webmix_spoiled
        released.set(); await asyncio.sleep(0.01)
        inner = asyncio.ensure_future(asyncio.sleep(30))
        async def agent(): return await inner
        outer = asyncio.ensure_future(H.run_within(agent(), 60, H.make_session(headless=True)))
        await asyncio.sleep(0.1); outer.cancel()
        try: await outer
        except asyncio.CancelledError: pass
        return got, took, spoiled, inner.cancelled()
    got, took, spoiled, inner_cancelled = asyncio.run(main())
    assert got == (None, 1.0) and spoiled and 2.0 <= took < 2.5 and inner_cancelled, (got, took)


def test_an_action_that_ignores_its_cancellation_is_abandoned_after_the_grace(tmp_path, monkeypatch):
    """A `wait` that goes on waiting when cancelled (as an action stuck in a thread or in a CDP call the browser never
    answers): the line comes back at --timeout plus the grace, not when the action ends (30 s)."""
    from webmix.agents import actions as HA
    from webmix.agents.offline import ActionResult
    made = HA.make_tools
    def stuck_tools(*args, **kw):
        tools = made(*args, **kw)
        async def stuck(params, **context):
            t_end = time.monotonic() + 30
            while time.monotonic() < t_end:
                try: await asyncio.sleep(t_end - time.monotonic())
                except asyncio.CancelledError: pass              # will not stop
            return ActionResult(extracted_content="waited")
        tools.registry.registry.actions["wait"].function = stuck
        return tools
    monkeypatch.setattr(H, "make_tools", stuck_tools)          # what acting_agent makes every episode's tools with
    respond, asked = scripted(step({"scroll": {"down": True, "pages": 0.5}}), step({"wait": {"seconds": 3}}))
    line, ep, took = run(tmp_path, respond, timeout=15.0)
    assert line["cause"] == "timeout after 15s" and line["ok"] is False, line
    assert line["duration_s"] < 15 + H.RUN_GRACE_S + 6, line["duration_s"]
    record = json.loads((ep / "episode.json").read_text())
    assert [s["action"] for s in record["steps"]][:1] == ["scroll"] and (ep / "grade_inputs.json").exists(), record["steps"]
    print(f"stuck wait: {line['steps']} steps, {line['duration_s']:.1f} s in the unit, {took:.1f} s the run")
