"""Nothing left behind by a SIGKILLed run, in real processes: a `webmix datagen` run killed with SIGKILL (the runner
alone, as `kill -9 PID` does, not its process group) leaves no process on its run folder and no server on its ports
within seconds, and the next run on that folder ends a dead run's leftover Chromium before it removes its temp folder,
which then stays removed."""
import os, shlex, signal, subprocess, time
from pathlib import Path

import psutil

from webmix.world.servers import free_ports, port_free
from webmix.runs import HOST

CHROMIUM = "/usr/bin/chromium"
MACROS = "report_information,open_detail,paginate"        # quick units on the shop


def running_in(folder) -> list:
    "Live processes (zombies aside) whose command line names a path inside `folder`."
    mark = str(Path(folder).resolve()) + os.sep
    return [p for p in psutil.process_iter(["cmdline", "status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE and any(mark in a for a in p.info["cmdline"] or ())]


def browsers(folder) -> list:
    "The Chromium browser processes (not their renderers and helpers) running on `folder`."
    return [p for p in running_in(folder) if not any(a.startswith("--type=") for a in p.info["cmdline"])]


def until(check, seconds):
    "Poll `check()` every 0.1 s until it is true or `seconds` pass; its last value."
    end = time.monotonic() + seconds
    while not (got := check()) and time.monotonic() < end: time.sleep(0.1)
    return got


def datagen(out, ports, *extra, stderr=subprocess.DEVNULL):
    "A `webmix datagen` run on the shop as a process of its own (its own session, so cleanup can reach what it left)."
    cmd = ["webmix", "datagen", "--out", str(out), "--sites", "shop", "--macros", MACROS, "--workers", str(len(ports)),
           "--ports", ",".join(map(str, ports)), *extra]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, text=True, start_new_session=True)


def end_all(proc, folder):
    "Cleanup whatever the test leaves, by pid: the run's process group, then anything still running on `folder`."
    try: os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError: pass
    proc.wait()
    for p in running_in(folder):
        try: p.kill()
        except psutil.Error: pass


def leftover_chromium(tmp_root) -> tuple:
    """A Chromium on a stale temp folder, as a dead run leaves one: a shell makes `<host>-<its pid>-<nonce>/` under
    `tmp_root`, starts Chromium on a profile inside it and exits, so the pid in the name is gone and Chromium's parent
    is PID 1. -> (the folder, Chromium's pid)."""
    script = (f'd={shlex.quote(str(tmp_root))}/{HOST}-$$-0dead0; mkdir -p "$d/_browsers/browser-left"; '
              f'{CHROMIUM} --headless=new --no-sandbox --remote-debugging-port=0 --disable-gpu '
              f'--host-resolver-rules="MAP * ~NOTFOUND , EXCLUDE 127.0.0.1" --proxy-server=http://127.0.0.1:9 '
              f'--user-data-dir="$d/_browsers/browser-left/profile" about:blank >/dev/null 2>&1 & echo $$ $!')
    sh = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True, timeout=30)
    dead, pid = map(int, sh.stdout.split())
    return tmp_root / f"{HOST}-{dead}-0dead0", pid


def test_a_killed_run_leaves_no_browser_and_the_next_run_ends_a_dead_runs_leftover(tmp_path):
    out, ports = (tmp_path / "run").resolve(), free_ports(2)
    first = datagen(out, ports)
    try:
        # both workers' browsers up, a unit under way: then SIGKILL the runner alone
        def up_and_rendering():
            procs = running_in(out / "_tmp")
            rendering = any("--type=renderer" in p.info["cmdline"] for p in procs)
            return procs if len(browsers(out / "_tmp")) >= 2 and rendering else []
        up = until(up_and_rendering, 90)
        assert up and first.poll() is None, "no two browsers of the run came up"
        before = len(up)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        gone = until(lambda: not running_in(out), 5)
        after = running_in(out)
        assert gone and not after, [" ".join(p.info["cmdline"])[:200] for p in after]
        assert until(lambda: all(map(port_free, ports)), 5), "a MiniWeb server outlived its run"
        print(f"SIGKILL of the runner: {before} processes on its folder before, {len(after)} after")
        (stale,) = [d for d in (out / "_tmp").iterdir()]         # the dead run's temp folder, left behind
        assert stale.name.startswith(f"{HOST}-{first.pid}-")
    finally:
        end_all(first, out)
    # a leftover Chromium of a dead run, still writing into its profile: the next run ends it, then removes the folder
    folder, pid = leftover_chromium(out / "_tmp")
    again = None
    try:
        assert until(lambda: len(running_in(folder)) >= 3, 30), "the leftover Chromium did not come up"
        assert not psutil.pid_exists(int(folder.name.split("-")[-2]))
        left = len(running_in(folder))
        again = datagen(out, free_ports(1), "--limit", "1", stderr=subprocess.PIPE)
        _, err = again.communicate(timeout=120)
        assert again.returncode == 0, err[-2000:]
        assert not running_in(folder), f"the leftover Chromium (pid {pid}) or one of its processes survived the rerun"
        time.sleep(1)                                              # a browser still alive would write its profile back
        assert not folder.exists() and not stale.exists() and not (out / "_tmp").exists()
        print(f"the rerun ended a dead run's leftover Chromium ({left} processes) and removed its folder")
    finally:
        if again is not None: end_all(again, out)
        for p in running_in(folder):
            try: p.kill()
            except psutil.Error: pass
