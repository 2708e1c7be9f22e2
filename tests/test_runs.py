"""webmix.runs in real processes, with units that need only a MiniWeb server (no browser): shards sharing one out
folder, a run killed with SIGKILL and resumed, a second unsharded run refused, a resume with other settings refused,
a server killed mid-run, and the same units on a local Ray."""
import json, os, signal, subprocess, sys, textwrap, time
from pathlib import Path

import pytest

from webmix import runs
from webmix.formats import problems


def units(n, sleep=0.0):
    return [{"task_id": f"u{i:03d}", "path": "/sites/shop", "sleep": sleep} for i in range(n)]


def spawn(out, n, sleep, *extra):
    "A process running `n` page units into `out` (extra: keyword arguments of run_units, as source text)."
    code = textwrap.dedent(f"""
        from webmix import runs
        from tests.test_runs import units
        r = runs.run_units(units({n}, {sleep}), runs.fetch_title, {str(out)!r}, runner="pages", workers=2,
                           progress=False, settings={{"n": {n}}}, {", ".join(extra)})
        print(r.ok, r.failed, r.skipped)""")
    return subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parent.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def lines(out, missing_ok=False):
    "Every line of results.jsonl, parsed; fails on a broken one."
    p = Path(out) / "results.jsonl"
    if missing_ok and not p.exists(): return []
    return [json.loads(l) for l in p.read_text().splitlines()]


def assert_once_each(out, n):
    got = lines(out)
    keys = [r["task_id"] for r in got]
    assert sorted(keys) == sorted(u["task_id"] for u in units(n)), (len(keys), len(set(keys)))
    assert all(r["ok"] for r in got), [r for r in got if not r["ok"]][:3]
    for k, r in enumerate(got): assert not problems("result", r, f"line {k + 1}"), problems("result", r)
    assert not problems("manifest", json.loads((Path(out) / "manifest.json").read_text()))
    assert not (Path(out) / "_tmp").exists(), "temp folders left behind"


def test_two_shards_share_an_out_folder_and_a_killed_shard_resumes(tmp_path):
    out, n = tmp_path / "run", 40
    a, b = spawn(out, n, 0.15, "shard='1/2'"), spawn(out, n, 0.15, "shard='2/2'")
    t_end = time.time() + 60
    while time.time() < t_end and not any(r["pid"] == a.pid for r in lines(out, missing_ok=True)): time.sleep(0.1)
    a.send_signal(signal.SIGKILL)                       # mid-run: shard 1 dies with units in flight
    assert b.wait(120) == 0, b.stderr.read()[-2000:]
    a.wait()
    done_before = len(lines(out))
    assert done_before < n
    again = spawn(out, n, 0.0, "shard='1/2'")
    assert again.wait(120) == 0, again.stderr.read()[-2000:]
    assert_once_each(out, n)
    m = json.loads((out / "manifest.json").read_text())
    assert [s["shard"] for s in m["sessions"]].count("1/2") == 2 and m["settings"] == {"n": n}


def test_second_unsharded_run_is_refused_and_other_settings_stop_a_resume(tmp_path):
    out = tmp_path / "run"
    first = spawn(out, 30, 0.2)
    t_end = time.time() + 60
    while time.time() < t_end and not lines(out, missing_ok=True): time.sleep(0.1)
    second = spawn(out, 30, 0.0)
    assert second.wait(60) != 0 and "in use by another webmix run" in second.stderr.read()
    assert first.wait(120) == 0, first.stderr.read()[-2000:]
    with pytest.raises(runs.ManifestMismatch, match=r"n 30 -> 31"):
        runs.run_units(units(31), runs.fetch_title, out, runner="pages", settings={"n": 31}, progress=False)
    r = runs.run_units(units(31), runs.fetch_title, out, runner="pages", settings={"n": 31}, progress=False, force=True)
    assert r.todo == 1 and r.ok == 1
    assert_once_each(out, 31)


async def kill_my_server(unit, worker):
    "A unit that kills its worker's MiniWeb server (as a crash would) and then needs it."
    import psutil, urllib.request
    if unit.get("kill"):
        port = int(worker.base.rsplit(":", 1)[1])
        for c in psutil.net_connections("tcp"):
            if c.status == "LISTEN" and c.laddr.port == port: os.kill(c.pid, signal.SIGKILL)
        time.sleep(0.5)
    urllib.request.urlopen(worker.base + "/sites/shop", timeout=5).read()
    return {"ok": True}


def test_a_killed_server_fails_its_unit_and_is_restarted(tmp_path):
    us = [{"task_id": f"k{i}", "kill": i == 1} for i in range(6)]
    r = runs.run_units(us, kill_my_server, tmp_path / "run", runner="kill", workers=1, progress=False)
    bad = {x["task_id"]: x["cause"] for x in r.results if not x["ok"]}
    assert list(bad) == ["k1"] and ("URLError" in bad["k1"] or "Connection" in bad["k1"]), bad
    assert r.ok == 5                     # the units after it ran on a server started again


async def servers_listening(unit, worker):
    "What a unit sees of MiniWeb: its worker's base URL, and how many MiniWeb servers of this process tree listen."
    import psutil
    me = psutil.Process()
    kids = [p for p in me.children(recursive=True) if "webmix.miniweb" in " ".join(p.cmdline())]
    return {"ok": True, "base": worker.base, "servers": len(kids)}


def test_units_that_need_no_miniweb_get_no_server(tmp_path):
    r = runs.run_units([{"task_id": f"u{i}"} for i in range(3)], servers_listening, tmp_path / "run", runner="plain",
                       workers=2, progress=False, miniweb=False)
    assert r.ok == 3 and {(x["base"], x["servers"]) for x in r.results} == {(None, 0)}, r.results
    r = runs.run_units([{"task_id": "w"}], servers_listening, tmp_path / "run2", runner="plain", workers=1, progress=False)
    assert r.results[0]["base"].startswith("http://127.0.0.1:") and r.results[0]["servers"] == 1, r.results


@pytest.mark.timeout(300)
def test_ray_backend_runs_the_same_units_and_resumes(tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "run"
    us = units(8) + [{"task_id": "boom", "path": "/", "raise": "bad unit"}]
    r = runs.run_units(us, runs.fetch_title, out, runner="pages", workers=2, backend="ray", progress=False)
    assert r.ok == 8 and [x["cause"] for x in r.results if not x["ok"]] == ["RuntimeError: bad unit"]
    assert len({x["pid"] for x in r.results}) == 2 and all(x["pid"] != os.getpid() for x in r.results)
    again = runs.run_units(us, runs.fetch_title, out, runner="pages", workers=2, backend="ray", progress=False)
    assert again.todo == 0 and len(lines(out)) == 9
