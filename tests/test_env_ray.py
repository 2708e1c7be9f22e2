"""Session hosts as Ray actors behind one front (webmix.env.ray_hosts.RayHosts), served by the env's HTTP app in place
of a SessionHost: on a real local Ray (2 CPUs) with 2 actors, each its own MiniWeb server and browser, two sessions
open on different actors (the least-loaded takes the second), one stepped to reward 1 and the other to reward 0,
both closed; an id that names no actor is an unknown session; the metrics add up over the actors; Ray is shut down
at the end."""
import pytest

import ray
from fastapi.testclient import TestClient   # noqa: E402

from webmix.env.ray_hosts import RayHosts    # noqa: E402
from webmix.env.server import make_app       # noqa: E402
from webmix.env.session import find_task, task_ids   # noqa: E402
from webmix.runs import ray_init             # noqa: E402


@pytest.fixture
def local_ray(monkeypatch):
    if ray.is_initialized(): ray.shutdown()
    monkeypatch.setenv("RAY_raylet_start_wait_time_s", "180")     # a loaded machine starts the raylet slowly
    ray_init(workers=2)
    try: yield ray
    finally: ray.shutdown()


def test_two_actors_route_sessions_to_their_rewards(local_ray, tmp_path):
    nav = [i for i in task_ids("test", ("datagen",)) if "-open_menu_item-" in i][:2]
    right = find_task(nav[0])
    hosts = RayHosts(actors=2, out=tmp_path / "rollouts", max_sessions=4, screenshots=False, warm=1)
    with TestClient(make_app(hosts)) as client:              # the app's lifespan starts and stops the actors
        assert client.get("/health").json()["status"] == "ok"
        a = client.post("/sessions", json={"task_id": nav[0]}).json()
        b = client.post("/sessions", json={"task_id": nav[1]}).json()
        ia, ib = a["session_id"].split("-")[0], b["session_id"].split("-")[0]
        assert {ia, ib} == {"0", "1"}, (a["session_id"], b["session_id"])      # the second went to the other actor
        assert "/sites/" in a["observation"]["url"] and a["observation"]["elements"]

        act = {"click": {"control_id": right.control["control_id"], "value": right.option["value"]}}
        r = client.post(f"/sessions/{a['session_id']}/step", json={"action": act}).json()
        assert r["observation"]["url"].endswith(right.option["value"]) and not r["done"], r["observation"]["url"]
        r = client.post(f"/sessions/{a['session_id']}/step", json={"action": {"done": {"text": "Opened it.", "success": True}}}).json()
        assert (r["reward"], r["done"], r["info"]["ended_by"]) == (1.0, True, "done"), r["info"]
        r = client.post(f"/sessions/{b['session_id']}/step", json={"action": {"done": {"text": "No.", "success": False}}}).json()
        assert (r["reward"], r["done"]) == (0.0, True), r["info"]
        assert client.post(f"/sessions/{b['session_id']}/verify").json()["passed"] is False

        m = client.get("/metrics").json()
        assert (m["opened"], m["steps"], m["sessions_open"], m["actors_answering"]) == (2, 3, 2, 2), m
        for s in (a, b):
            assert client.delete(f"/sessions/{s['session_id']}").json()["episode"]
        assert client.get("/health").json()["sessions_open"] == 0
        for sid in (a["session_id"], "7-nope", "nope"):                        # closed, no such actor, no actor at all
            e = client.post(f"/sessions/{sid}/step", json={"action": {"done": {"text": "x"}}})
            assert (e.status_code, e.json()["error_kind"]) == (404, "unknown_session"), e.text
    assert hosts.status == "stopped" and not hosts.actors
    assert len((tmp_path / "rollouts" / "results.jsonl").read_text().splitlines()) == 2       # both actors saved theirs
