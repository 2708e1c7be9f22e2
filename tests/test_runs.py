"""webmix.runs in real processes, with units that need only a MiniWeb server (no browser): shards sharing one out
folder, a run killed with SIGKILL and resumed, a second unsharded run refused, a resume with other settings refused,
a server killed mid-run, a dead run's temp folder with a process still on it, and the same units on a local Ray."""
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
    def cmdline(p):                          # a child may end between the listing and this (a browser's helper)
        try: return " ".join(p.cmdline())
        except psutil.Error: return ""
    kids = [p for p in psutil.Process().children(recursive=True) if "webmix.world.miniweb" in cmdline(p)]
    return {"ok": True, "base": worker.base, "servers": len(kids)}


def test_units_that_need_no_miniweb_get_no_server(tmp_path):
    r = runs.run_units([{"task_id": f"u{i}"} for i in range(3)], servers_listening, tmp_path / "run", runner="plain",
                       workers=2, progress=False, miniweb=False)
    assert r.ok == 3 and {(x["base"], x["servers"]) for x in r.results} == {(None, 0)}, r.results
    r = runs.run_units([{"task_id": "w"}], servers_listening, tmp_path / "run2", runner="plain", workers=1, progress=False)
    assert r.results[0]["base"].startswith("http://127.0.0.1:") and r.results[0]["servers"] == 1, r.results


def test_a_run_ends_what_still_runs_on_a_dead_runs_temp_folder_then_removes_it(tmp_path):
    """A dead run's temp folder with a process still on it (a shell makes `<host>-<its pid>-<nonce>/`, leaves `tail -f`
    reading a file in it, and exits: the leftover's parent is PID 1, as a dead run's browser's is): the next run on the
    out folder ends that process before it removes the folder, which stays removed; a live process's folder stays."""
    import psutil, shlex
    from test_orphans import running_in
    out = tmp_path / "run"
    root = (out / "_tmp").resolve()
    live = root / f"{runs.HOST}-{os.getpid()}-a1b2c3"
    (live / "_browsers").mkdir(parents=True)
    sh = subprocess.run(["sh", "-c", f'd={shlex.quote(str(root))}/{runs.HOST}-$$-d0d0d0; mkdir -p "$d/_browsers/b"; '
                         'touch "$d/_browsers/b/log"; tail -f "$d/_browsers/b/log" >/dev/null 2>&1 & echo $$ $!'],
                        capture_output=True, text=True, check=True, timeout=30)
    dead, pid = map(int, sh.stdout.split())
    stale, leftover = root / f"{runs.HOST}-{dead}-d0d0d0", psutil.Process(pid)
    try:
        assert not psutil.pid_exists(dead) and [p.pid for p in running_in(stale)] == [pid]
        r = runs.run_units(units(2), runs.fetch_title, out, runner="pages", workers=1, progress=False)
        assert r.ok == 2 and not running_in(stale)
        assert not leftover.is_running() or leftover.status() == psutil.STATUS_ZOMBIE
        time.sleep(0.5)
        assert not stale.exists() and live.is_dir() and [d.name for d in root.iterdir()] == [live.name]
    finally:
        if leftover.is_running(): leftover.kill()


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


async def dies_or_fetches(unit, worker) -> dict:
    """A unit that ends its own process (a worker process killed mid-unit) when asked, else fetch_title's. A unit
    with a `barrier` folder waits there (up to a minute) until units of two processes have reached it: the
    surviving worker cannot run them all alone, so the replacement of the dead one has to take its share."""
    if unit.get("die"): os._exit(1)
    if unit.get("barrier"):
        import asyncio
        b = Path(unit["barrier"]); b.mkdir(exist_ok=True); (b / str(os.getpid())).touch()
        for _ in range(600):
            if len(list(b.iterdir())) >= 2: break
            await asyncio.sleep(0.1)
    return await runs.fetch_title(unit, worker)


def test_processes_backend_runs_units_in_worker_processes_and_replaces_a_dead_one(tmp_path):
    out = tmp_path / "run"
    us = units(6) + [{"task_id": "dies", "path": "/", "die": True}] + units(10)[6:]
    for u in us[7:]: u["barrier"] = str(tmp_path / "barrier")
    r = runs.run_units(us, dies_or_fetches, out, runner="pages", workers=2, backend="processes", progress=False)
    assert r.ok == 10 and [x["task_id"] for x in r.results if not x["ok"]] == ["dies"], r.results
    assert "worker process" in next(x["cause"] for x in r.results if not x["ok"])
    pids = {x["pid"] for x in r.results if x["ok"]}
    after = {int(f.name) for f in (tmp_path / "barrier").iterdir()}
    assert len(after) == 2 and after <= pids and os.getpid() not in pids    # two workers after the death: one replaced it
    assert not (out / "_tmp").exists()
    again = runs.run_units(us, dies_or_fetches, out, runner="pages", workers=2, backend="processes", progress=False)
    assert again.todo == 0 and len(lines(out)) == 11


def test_a_killed_run_on_worker_processes_leaves_no_process_behind(tmp_path):
    import psutil
    out = tmp_path / "run"
    p = spawn(out, 40, 0.5, 'backend="processes"')
    deadline = time.time() + 60
    while len(lines(out, missing_ok=True)) < 2 and time.time() < deadline: time.sleep(0.2)
    kids = psutil.Process(p.pid).children(recursive=True)
    assert len(lines(out)) >= 2 and len(kids) >= 4, kids       # two worker processes and their servers
    p.send_signal(signal.SIGKILL); p.wait()
    gone, alive = psutil.wait_procs(kids, timeout=20)
    assert not alive, [(q.pid, q.cmdline()[:4]) for q in alive]


async def fails_once(unit, worker) -> dict:
    "A unit whose first try fails (an infrastructure fault, masked), and which succeeds when tried again; or one that fails on its own."
    mark = Path(worker.out) / f".tried-{unit['task_id']}"
    if unit.get("flaky") and not mark.exists():
        mark.touch()
        raise RuntimeError("the browser would not start")
    if unit.get("own"): return {"ok": False, "cause": "the agent did not finish"}
    return await runs.fetch_title(unit, worker)


def test_limit_counts_the_folder_and_retry_failed_runs_only_masked_units_again(tmp_path):
    out, us = tmp_path / "run", units(6)
    us[1]["flaky"], us[4]["own"] = True, True
    run = lambda **kw: runs.run_units(us, fails_once, out, runner="pages", workers=1, progress=False, **kw)
    assert run(limit=3).todo == 3 and len(lines(out)) == 3           # u001 failed among them
    assert run(limit=3).todo == 0                                     # three are in the folder already: a kill's rerun adds none
    assert run(limit=4).todo == 1 and len(lines(out)) == 4
    rest = run()
    assert rest.todo == 2 and [r["task_id"] for r in lines(out) if not r["ok"]] == ["u001", "u004"]
    (masked,) = [r for r in lines(out) if r.get("masked")]
    assert masked["task_id"] == "u001" and masked["cause"] == "RuntimeError: the browser would not start"
    assert rest.failed == 1 and rest.masked == 0 and rest.summary()["masked"] == 0
    assert run().todo == 0                                            # a failure stays without --retry-failed
    again = run(retry_failed=True)                                    # the masked one runs again, the unit's own failure never
    assert again.todo == 1 and again.ok == 1 and run(retry_failed=True).todo == 0
    latest = runs.latest(lines(out))
    assert len(latest) == 6 and [k for k, r in latest.items() if not r["ok"]] == ["u004"]


def test_shards_of_two_splits_cannot_share_a_folder(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    with runs.folder_lock(out, (1, 2)), runs.folder_lock(out, (2, 2)):
        with pytest.raises(runs.FolderBusy, match=r"shards of another split \(2\) are running"):
            with runs.folder_lock(out, (1, 3)): pass
    with runs.folder_lock(out, (1, 3)): pass                           # the first split has ended: a new one may start


def test_an_out_that_cannot_be_a_run_folder_is_refused_in_one_line(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out, why in ((afile, "a file is there, not a folder"), (afile / "sub", "a part of the path is a file")):
        with pytest.raises(runs.RunRefused, match=why): runs.run_units(units(1), runs.fetch_title, out, runner="pages")
        p = subprocess.run(["webmix", "datagen", "--sites", "shop", "--limit", "1", "--out", str(out)],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 1 and why in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert afile.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_a_run_folder_removed_mid_run_stops_the_run_and_is_not_made_again(tmp_path):
    import shutil, threading
    out = tmp_path / "run"
    def remove_after_the_first_line():
        end = time.time() + 60
        while time.time() < end and not lines(out, missing_ok=True): time.sleep(0.02)
        while out.exists():                      # as `rm -rf` again would: a worker may write into it while it goes
            shutil.rmtree(out, ignore_errors=True)
    t = threading.Thread(target=remove_after_the_first_line)
    t.start()
    with pytest.raises(runs.OutRemoved, match="was removed during the run"):
        runs.run_units(units(8, sleep=0.3), runs.fetch_title, out, runner="pages", workers=2, progress=False)
    t.join()
    time.sleep(0.5)
    assert not out.exists(), [str(p) for p in out.rglob("*")]
