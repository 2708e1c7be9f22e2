"""webmix.env's adapters, each driven by its own library: gymnasium's env checker and make, OpenEnv's server app
(uvicorn) and client over its WebSocket, and TRL's way of turning an environment's methods into tools
(transformers' get_json_schema) and calling them. One short task: open the Fleet page from the car rental site's
menu; the right actions earn 1, a wrong ending 0, and a bad action is an error the episode survives."""
import inspect, json, threading, time

import pytest

import gymnasium, openenv, transformers     # the dev extra's: a missing one fails here, never a skip

TASK = "carrental-open_menu_item-d2749e57d7"
FLEET = {"control_id": "home-menu", "value": "/sites/carrental/fleet"}
DONE = {"text": "Opened the Fleet page.", "success": True}


def test_gym_env_checker_and_reward(base):
    from gymnasium.utils.env_checker import check_env
    from webmix.env.gym import ENV_ID
    env = gymnasium.make(ENV_ID, base=base, task_id=TASK, screenshot_shape=(225, 320))
    try:
        obs, info = env.reset(options={"task_id": TASK})
        assert obs in env.observation_space and "Fleet" in obs["elements_text"] and obs["screenshot"].shape == (225, 320, 3)
        bad = env.step("not an action")
        assert bad[0]["error"] and bad[1:4] == (0.0, False, False) and bad[4]["error_kind"] == "bad_action"
        mid = env.step(json.dumps({"click": FLEET}))
        assert mid[0]["url"].endswith("/sites/carrental/fleet") and mid[1:4] == (0.0, False, False)
        obs, reward, terminated, truncated, info = env.step(json.dumps({"done": DONE}))
        assert (reward, terminated, truncated, info["ended_by"], info["passed"]) == (1.0, True, False, "done", True)
        env.reset(options={"task_id": TASK})
        assert env.step(json.dumps({"done": DONE}))[1:3] == (0.0, True)      # done without opening the page
        check_env(env.unwrapped, skip_close_check=True)                     # its random actions are errors, not exceptions
    finally:
        env.close()


def test_openenv_server_and_client(base, free_port):
    import uvicorn
    from webmix.env.openenv import WebmixAction, WebmixClient, openenv_app
    srv = uvicorn.Server(uvicorn.Config(openenv_app(base, max_sessions=2, screenshot=False), host="127.0.0.1",
                                        port=free_port, log_level="warning"))
    th = threading.Thread(target=srv.run, daemon=True)
    th.start()
    t0 = time.monotonic()
    while not srv.started and time.monotonic() - t0 < 30: time.sleep(0.05)
    try:
        with WebmixClient(base_url=f"http://127.0.0.1:{free_port}").sync() as c:
            first = c.reset(task_id=TASK)
            assert "Fleet" in first.observation.elements_text and not first.done
            bad = c.step(WebmixAction(action={"click": {"control_id": "no-such-control"}}))
            assert "no element" in bad.observation.error and not bad.done
            c.step(WebmixAction(action={"click": FLEET}))
            last = c.step({"done": DONE})
            st = c.state()
            assert (last.reward, last.done, last.observation.info["ended_by"]) == (1.0, True, "done")
            assert (st.step_count, st.passed, st.task_id) == (2, True, TASK)
            c.reset(task_id=TASK)
            assert c.step({"done": DONE}).reward == 0.0
            with pytest.raises(RuntimeError, match="unknown_task"): c.reset(task_id="no-such-task")
    finally:
        srv.should_exit = True
        th.join(15)


def test_trl_tools_and_rewards(base):
    from transformers.utils import get_json_schema
    from webmix.env.trl import WebmixToolEnv, webmix_reward, webmix_tool_env
    env = webmix_tool_env(base)()
    # as GRPOTrainer lists an environment's tools: the class's public functions but reset and get_reward
    tools = {n: getattr(env, n) for n, _ in inspect.getmembers(WebmixToolEnv, predicate=inspect.isfunction)
             if n not in ("reset", "get_reward") and not n.startswith("_")}
    assert set(tools) == {"click", "type_text", "select_option", "scroll", "press_keys", "navigate", "go_back", "drag",
                          "upload_file", "done"}
    for name, f in tools.items():
        fn = get_json_schema(f)["function"]
        assert fn["name"] == name and fn["description"]
        assert all(p.get("description") for p in fn["parameters"].get("properties", {}).values()), name

    def rollout(calls):
        first = env.reset(prompt=[{"role": "user", "content": "Do the task."}], task_id=TASK, variant=None)
        out = []
        for name, args in calls:                 # TRL's tool loop: a raising tool becomes {"error": ...}
            try: out.append(str(tools[name](**args)))
            except Exception as e: out.append(str({"error": str(e)}))
        return first, out, webmix_reward([env])[0]

    try:
        first, out, r1 = rollout([("click", {"control_id": "no-such-control"}), ("click", FLEET), ("done", {"text": DONE["text"]})])
        assert "Open the Fleet page" in first and "home-menu" in first
        assert "Error: no element with control id 'no-such-control'" in out[0] and "fleet" in out[1] and "ended (done)" in out[2] and r1 == 1.0
        _, out, r0 = rollout([("done", {"text": DONE["text"]}), ("click", FLEET)])
        assert r0 == 0.0 and env.reward == 0.0 and "episode ended" in out[1]
        _, _, r_closed = rollout([("click", FLEET)])                # never said done: graded as it stands
        assert r_closed in (0.0, 1.0) and env.session.done
    finally:
        env._close()
