"""How long `webmix --help` and every command's `--help` take, against a baseline measured in the same run: a process
that imports every runner module before parsing (what the command line did when each runner registered its own flags).

    python benchmarks/cli_help.py [--repeats 5]

Each figure is the median wall time of fresh processes (Python's start included); the ratio is baseline / command.
Target: every one under 1 s; exit 1 when one is not."""
import argparse, statistics, subprocess, sys, time

RUNNERS = ["webmix.data.tasks", "webmix.data.datagen", "webmix.data.pool", "webmix.data.plan_data", "webmix.eval.evaluate",
           "webmix.eval.policy", "webmix.eval.online", "webmix.eval.taskgen", "webmix.eval.judge", "webmix.views.rows",
           "webmix.views.episode_viewer", "webmix.job", "webmix.cli"]


def commands() -> list:
    "Every command path, as `webmix` parses it: ['sites', 'list'], ['evaluate'], ..."
    import argparse as ap
    from webmix.cli import parser
    def walk(p, prefix):
        subs = [a for a in p._actions if isinstance(a, ap._SubParsersAction)]
        if not subs: return [prefix]
        return [path for a in subs for name, sp in a.choices.items() for path in walk(sp, prefix + [name])]
    return walk(parser(), [])


def wall(argv, repeats) -> float:
    "Median seconds of `argv` run `repeats` times."
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--repeats", type=int, default=5)
    args = a.parse_args()
    py = sys.executable
    base = wall([py, "-c", "import " + ", ".join(RUNNERS)], args.repeats)
    rows = [("webmix --help", wall([py, "-c", "from webmix.cli import main; main(['--help'])"], args.repeats))]
    for path in commands():
        code = f"from webmix.cli import main; main({path + ['--help']!r})"
        rows.append(("webmix " + " ".join(path) + " --help", wall([py, "-c", code], args.repeats)))
    print(f"baseline (import every runner, then parse): {base:.2f} s")
    w = max(len(n) for n, _ in rows)
    for name, s in rows: print(f"{name:<{w}}  {s:5.2f} s  {base / s:5.1f}x faster")
    print(f"slowest: {max(s for _, s in rows):.2f} s; every one under 1 s: {all(s < 1 for _, s in rows)}")
    return rows


if __name__ == "__main__":
    from targets import verdict
    slowest = max(s for _, s in main())
    sys.exit(verdict({"slowest --help (s)": (round(slowest, 2), "< 1", slowest < 1)}))
