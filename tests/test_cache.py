"""The model-response cache (webmix.agents.calls) reruns anywhere: a run of `evaluate --cache DIR` with the scripted
stand-in server (real openai client, browser-use, Chromium and MiniWeb) reruns into another folder on other ports with
the server stopped, every request a cache hit and every episode the same; repeats of a sampled request (temperature
above 0) are samples of their own, and at temperature 0 they share one. The key leaves out what differs from one run
to the next (ports, tab and node ids, the folder of the files at hand, the day browser-use's step info names)."""
import json, socket

from webmix.agents.calls import BrowserNames, request_key
from webmix.eval import evaluate as E
from webmix.eval.policy import serve_policy


def page_request(port, tab, first_id, day, folder):
    "A chat request as browser-use writes one, with the names a browser, a run folder and a day choose."
    text = (f"<user_request>\nAdd the receipt.\nYou start on http://127.0.0.1:{port}/sites/expenses\n</user_request>\n"
            f"<agent_state>\n<available_file_paths>{folder}/_files/receipt.pdf\nUse with absolute paths</available_file_paths>\n"
            f"<step_info>Step1 maximum:40\nToday:{day}</step_info>\n</agent_state>\n"
            f"<browser_state>\nCurrent tab: {tab}\nTab {tab}: http://127.0.0.1:{port}/sites/expenses - Expenses\n"
            f"[{first_id}]<a />\n\tHome\n[{first_id + 5}]<input type=file />\n</browser_state>")
    return {"model": "qwen35-4b", "temperature": 0.0, "messages": [
        {"role": "system", "content": "You are an agent. Use index 15 for the first field."},
        {"role": "user", "content": [{"type": "text", "text": text}]}]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def key(req): return request_key(BrowserNames(req).keyed(req))


def test_a_requests_key_leaves_out_the_run_and_the_day():
    one = page_request(8471, "98BE", 170, "2026-12-07", "/tmp/A/_tmp/vm-2176-882cee/upload-taxi-receipt")
    two = page_request(49213, "8238", 172, "2027-01-15", "/srv/B/_tmp/ci-31-0a1b2c/upload-taxi-receipt")
    assert key(one) == key(two)
    other = json.loads(json.dumps(one).replace("Add the receipt", "Add the invoice"))   # the page or task differs: a miss
    assert key(other) != key(one)


def test_a_cached_run_reruns_elsewhere_and_sampled_repeats_are_their_own(tmp_path):
    tasks = [t for t in E.human_tasks("test") if t.task_id == "airport-branch-phone-and-address"]
    cache, same = str(tmp_path / "cache"), ["task_id", "repeat", "ok", "detail", "cause", "steps", "answer"]
    run = dict(workers=1, progress=False, cache=cache, repeats=2)
    with serve_policy(port=0) as llm:
        hot = E.run_evaluate(tasks, tmp_path / "A", vllm=llm.base_url, temperature=0.7, ports=[free_port()], **run)
        cold = E.run_evaluate(tasks, tmp_path / "A0", vllm=llm.base_url, temperature=0.0, ports=[free_port()], **run)
    url = llm.base_url                                     # the server is stopped from here on
    # at temperature 0.7 each repeat is a sample of its own: repeat 1 asked the server too (nothing shared with repeat 0)
    assert hot["ok"].all() and (hot["model_calls"] > 0).all()
    assert (hot["cache_hits"] == 0).all() and (hot["cache_misses"] == hot["model_calls"]).all(), hot.to_dict("records")
    # at temperature 0 the repeats share one reply: repeat 1 is answered from repeat 0's
    by = cold.set_index("repeat")
    assert by.loc[0, "cache_hits"] == 0 and by.loc[1, "cache_hits"] == by.loc[1, "model_calls"] > 0
    # another folder, other ports, no server: every request a hit, every episode the same, the summary says so
    again = E.run_evaluate(tasks, tmp_path / "B", vllm=url, temperature=0.7, ports=[free_port()], **run)
    assert again[same].to_dict("records") == hot[same].to_dict("records")
    assert (again["cache_hits"] == again["model_calls"]).all() and (again["cache_misses"] == 0).all()
    table = E.tokens_by_arm(again)
    assert table.loc["base", "cache_misses"] == 0 and table.loc["base", "cache_hits"] == again["model_calls"].sum()
