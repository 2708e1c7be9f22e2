"""The house's shape: every import runs down the layers (or stays in its wing), no module is over 600 lines, and the
command line parses every command's options without loading a runner.

The layers, lowest first: settings, file formats and options records; the MiniWeb world; typed records and run
folders and reports; the agent runtime; the run engine (its workers hold the agents' browsers); data generation; evaluation;
the viewers; the main job and the command line."""
import ast, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "webmix"
# lowest first; a module may import from its own layer and the layers below it
LAYERS = [("webmix.config", "webmix.formats", "webmix.command"), ("webmix.world",), ("webmix.records", "webmix.folders", "webmix.report", "webmix.episode_layout"),
          ("webmix.agents",), ("webmix.runs",), ("webmix.data",),
          ("webmix.eval.episode",), ("webmix.env.records", "webmix.env.session"),   # the episode, then the session core evaluate steps
          ("webmix.eval",), ("webmix.env",), ("webmix.views",), ("webmix.job", "webmix.cli")]
HEAVY = ("browser_use", "playwright", "pandas", "jsonschema", "IPython", "ipywidgets", "flask", "openai", "google.genai",
         "PIL", "plotly", "ray", "pydantic", "yaml")


def modules() -> dict:
    "{dotted name: path} of every module webmix exports (the notebooks' index left out)."
    return {".".join(p.relative_to(ROOT).with_suffix("").parts): p for p in sorted(PKG.rglob("*.py"))
            if p.name not in ("_modidx.py", "__init__.py")}


def layer(name: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if any(name == n or name.startswith(n + ".") for n in names))


def imports_of(name: str, path: Path) -> set:
    "The webmix modules `name` imports, at the top or inside a function (a lazy import is a dependency too)."
    pkg, out = name.rsplit(".", 1)[0], set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:                                   # relative: resolve against this module's package
                parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            if base.startswith("webmix"):
                out |= {f"{base}.{a.name}" if base in ("webmix",) or base.count(".") == 1 and f"{base}.{a.name}" in modules()
                        else base for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("webmix")}
    return {m for m in out if m != "webmix" and not m.endswith("__version__")}


def test_imports_run_down_the_layers_only():
    upward = []
    for name, path in modules().items():
        for target in imports_of(name, path):
            if target in modules() and layer(target) > layer(name):
                upward.append(f"{name} (layer {layer(name)}) imports {target} (layer {layer(target)})")
    assert not upward, "\n".join(upward)


def test_every_module_has_a_layer_and_none_is_over_600_lines():
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    assert all(layer(n) >= 0 for n in sizes)
    big = {n: s for n, s in sizes.items() if s > 600}
    assert not big, big


def test_the_command_line_parses_every_command_without_loading_a_runner():
    "Every command's --help, and the parser of them all, come from light modules: no browser, model client or widget."
    code = ("import argparse, sys\nfrom webmix.cli import parser\n"
            "def helps(p):\n"
            "    yield p.format_help()\n"
            "    for a in p._actions:\n"
            "        if isinstance(a, argparse._SubParsersAction):\n"
            "            for sp in a.choices.values(): yield from helps(sp)\n"
            "n = sum(1 for _ in helps(parser()))\n"
            f"print(n, sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m in {HEAVY!r}))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    n, loaded = p.stdout.split(" ", 1)
    assert int(n) >= 17 and loaded.strip() == "[]", p.stdout


def test_every_option_is_declared_once_in_a_record():
    "No module but the one generic builder (webmix.command) calls add_argument."
    callers = [n for n, path in modules().items() if "add_argument(" in path.read_text() and n != "webmix.command"]
    assert not callers, callers


def test_numbers_out_of_range_stop_in_one_line_before_any_folder_and_version_prints():
    "A count below its floor (or not a number at all) stops the command in one line naming the flag; nothing is written."
    cases = [(["datagen", "--workers", "0"], "--workers must be at least 1, not 0"),
             (["datagen", "--limit", "-1"], "--limit must be at least 0, not -1"),
             (["plan-data", "--chains", "0"], "--chains must be at least 1, not 0"),
             (["evaluate", "--arm", "base", "--temperature", "nan"], "--temperature must be a finite number, not nan"),
             (["main", "--eval-premature", "1.5"], "--eval-premature must be at most 1, not 1.5")]
    for argv, said in cases:
        out = ROOT / "data" / "never-made"
        argv = argv if argv[0] == "main" else [*argv, "--out", str(out)]
        p = subprocess.run(["webmix", *argv], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert p.returncode != 0 and p.stderr.strip().splitlines() == [f"webmix {argv[0]}: {said}"], (argv, p.stderr)
        assert not out.exists()
    p = subprocess.run(["webmix", "--version"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    from webmix import __version__
    assert p.returncode == 0 and p.stdout.strip() == f"webmix {__version__}"
    # the Python API refuses the same numbers (the engine's keywords as well as a record's fields)
    from webmix.command import split_options
    from webmix.data.options import DatagenOptions
    import pytest
    with pytest.raises(ValueError, match="--per-control must be at least 1, not 0"): split_options(DatagenOptions, {"per_control": 0})


def test_a_busy_port_stops_a_server_in_one_line():
    "`webmix sites serve` on a port another process holds says so in one line, no traceback."
    import socket
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0)); held.listen()
        port = held.getsockname()[1]
        p = subprocess.run(["webmix", "sites", "serve", "--ports", str(port)], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert p.returncode == 1 and p.stderr.strip().splitlines() == [
            f"webmix sites serve: port(s) [{port}] already in use: pick others with --ports"], p.stderr


def test_the_python_api_says_an_unknown_name_or_a_missing_run_in_one_line():
    "Sites as a list or one comma-separated string; an unknown site or macro is one KeyError line naming it; a missing run folder too."
    import pytest
    from webmix.data.tasks import all_tasks
    from webmix.eval.episode import load_results
    assert all_tasks("shop, bank", ["open_detail"]) == all_tasks(["shop", "bank"], ["open_detail"]) != []
    for sites, macros, said in (("shopp", None, "unknown site shopp; did you mean shop? (there are: "), (["shop"], "nosuch", "unknown macro nosuch (there are: ")):
        with pytest.raises(KeyError) as e: all_tasks(sites, macros)
        assert str(e.value).startswith(said) and "\n" not in str(e.value)
    with pytest.raises(FileNotFoundError, match="no run folder or results file at"): load_results(ROOT / "data" / "no-such-run")


def test_every_command_shows_an_example_that_parses():
    "Each command's --help ends with an example command line, and the parser takes that line as it is."
    import shlex
    from webmix.cli import COMMANDS, parser
    def leaves(cs, pre=()):
        for c in cs:
            if c.sub: yield from leaves(c.sub, pre + (c.name,))
            else: yield pre + (c.name,), c
    found = list(leaves(COMMANDS))
    assert len(found) >= 17
    for names, c in found:
        argv = shlex.split(c.example)
        assert argv[0] == "webmix" and tuple(argv[1:1 + len(names)]) == names, (names, c.example)
        ns = parser().parse_args(argv[1:])                 # a bad example exits here (argparse's usage error)
        assert ns._command is c
