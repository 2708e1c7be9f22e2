"""Finding and killing the processes a test started, by the folder their command lines name (a run folder, a
session's browser profile): what fault and lifecycle tests use to check that nothing was left running."""
import os, time
from pathlib import Path

import psutil


def running_on(*folders) -> list:
    "Live processes (zombies and this one aside) whose command line names a path inside one of `folders`."
    marks = [str(Path(f).resolve()) + os.sep for f in folders]
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.pid == os.getpid() or p.info["status"] == psutil.STATUS_ZOMBIE: continue
            if any(m in a for m in marks for a in p.info["cmdline"] or ()): found.append(p)
        except psutil.Error: pass
    return found


def orphans(*folders, grace=10.0) -> list:
    "The command lines of processes still running on `folders` after up to `grace` s."
    end = time.monotonic() + grace
    while (left := running_on(*folders)) and time.monotonic() < end: time.sleep(0.2)
    return [" ".join(p.info["cmdline"] or [])[:160] for p in left]


def kill_browser(folder) -> int | None:
    "SIGKILL the Chromium browser process (not a renderer or helper) whose profile is inside `folder`; -> its pid."
    for p in running_on(folder):
        cmd = p.info["cmdline"] or []
        if any(a.startswith("--user-data-dir") for a in cmd) and not any(a.startswith("--type=") for a in cmd):
            try: p.kill(); return p.pid
            except psutil.Error: pass
    return None
