"""The rooms of tui/ (docs/architecture.md, "The rooms"): the import contract holds and can fail."""

import inspect
import os
import shutil
import subprocess
import sys

from tests.support.sshd import REPO

LINT = os.path.join(os.path.dirname(sys.executable), "lint-imports")


def lint(cwd, env=None):
    return subprocess.run([LINT, "--config", os.path.join(cwd, "pyproject.toml")], cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def test_import_contract_is_kept():
    result = lint(REPO)
    assert result.returncode == 0, result.stdout
    assert "5 kept, 0 broken" in result.stdout


def test_import_contract_catches_a_forbidden_import(tmp_path):
    """The contracts are not vacuous: textual in core, the UI in remote, the CLI in ui, the probe's
    wire in a widget or a reader of the model, and a probe internal on the laptop all fail them."""
    cases = {
        "tui/core/text/format.py": ("import textual.widgets\n", "no textual, no asyncssh BROKEN"),
        "tui/remote/ssh/connect.py": ("import tui.ui.app\n", "layers"),
        "tui/ui/background.py": ("import tui.cli\n", "layers"),
        "tui/ui/widgets/gpu_panel.py": ("from remote_probe.wire import throttle_names\n",
                                        "never read the wire BROKEN"),
        "tui/core/fleet/rows.py": ("from remote_probe import wire\n", "never read the wire BROKEN"),
        # a probe internal on the laptop: only remote_probe.wire (and the bundle's entries)
        "tui/core/text/format.py#probe": ("import remote_probe.procfs\n", "remote_probe.wire only"),
    }
    for path, (line, broken) in cases.items():
        tree = tmp_path / path.replace("/", "_").replace("#", "_")
        shutil.copytree(os.path.join(REPO, "tui"), tree / "tui")
        shutil.copytree(os.path.join(REPO, "remote_probe"), tree / "remote_probe")
        shutil.copy(os.path.join(REPO, "pyproject.toml"), tree / "pyproject.toml")
        with open(tree / path.split("#")[0], "a") as f:
            f.write(line)
        env = dict(os.environ, PYTHONPATH=str(tree))
        result = lint(str(tree), env)
        assert result.returncode != 0, (path, result.stdout)
        assert broken in result.stdout and "BROKEN" in result.stdout, result.stdout


def test_status_never_imports_textual():
    """`gputui status` is a plain command: no UI toolkit loaded (start-up cost, headless boxes)."""
    code = ("import sys; from tui.cli import main; "
            "rc = main(['status', 'nobody@127.0.0.1:1']); "
            "print('TEXTUAL' if any(m == 'textual' or m.startswith('textual.') for m in sys.modules) "
            "else 'NO-TEXTUAL', rc)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=60)
    assert "NO-TEXTUAL 2" in out.stdout, out.stdout + out.stderr


def test_cli_piped_into_head_ends_quietly():
    """`gputui scenarios | head -1` and friends: no BrokenPipeError traceback."""
    out = subprocess.run("%s -m tui scenarios | head -c 1" % sys.executable, shell=True, cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert out.stderr == "" and len(out.stdout) == 1


def test_every_subcommand_and_option_has_help():
    from tui.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd")
    for name, p in sub.choices.items():
        assert p.description, name
        for action in p._actions:
            if action.dest != "help":
                assert action.help, (name, action.dest)


def import_cycles(*packages):
    """Every import circle among the modules of `packages` (each as a sorted list of module
    names), function-local imports included: grimp reads every import statement."""
    import grimp
    graph = grimp.build_graph(*packages, cache_dir=None)
    modules = graph.modules
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & modules) for m in modules}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan: each strongly connected component of more than one module is a circle
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges[v]:
                cycles.append(sorted(comp))

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return cycles


def test_no_import_cycle_anywhere():
    """Not between rooms (the layers contract) nor inside one: a module never imports,
    even inside a function, something that imports it back."""
    assert import_cycles("tui", "remote_probe") == []


def test_the_cycle_check_sees_a_function_local_import(tmp_path):
    """The check is not vacuous: the circle this round broke (billing_clock -> ledger ->
    report -> billing_clock, its last edge inside a function) is found again when put back."""
    tree = tmp_path / "tree"
    shutil.copytree(os.path.join(REPO, "tui"), tree / "tui")
    shutil.copytree(os.path.join(REPO, "remote_probe"), tree / "remote_probe")
    with open(tree / "tui" / "core" / "billing" / "ledger.py", "a") as f:
        f.write("\n\ndef _late():\n    from tui.core.report import status_text\n    return status_text\n")
    with open(tree / "tui" / "core" / "report.py", "a") as f:
        f.write("\n\ndef _later():\n    from tui.core.billing.clock import BillingClock\n"
                "    return BillingClock\n")
    code = "import sys\nsys.path.insert(0, %r)\n%s\nprint(import_cycles('tui', 'remote_probe'))" % (
        str(tree), inspect.getsource(import_cycles))
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "['tui.core.billing.clock', 'tui.core.billing.ledger', 'tui.core.report']" in out.stdout, out.stdout


def room_folders(root):
    """(folder, its .py file names) for every folder under root's tui/ and remote_probe/."""
    for room in ("tui", "remote_probe"):
        for folder, _dirs, files in os.walk(os.path.join(root, room)):
            yield folder, [n for n in files if n.endswith(".py")]


MAX_MODULE_LINES = 550  # "no module over ~500 lines", with a little slack for a merge in flight


def oversized_modules(root, limit=MAX_MODULE_LINES):
    """(path, lines) of every .py under root's tui/ and remote_probe/ longer than `limit`."""
    found = []
    for folder, modules in room_folders(root):
        for name in modules:
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                n = sum(1 for _line in f)
            if n > limit:
                found.append((os.path.relpath(path, root), n))
    return sorted(found)


def test_no_module_is_over_about_500_lines():
    """A module that grows past this is cut by role (as ssh/, wire/, procfs/, cli/ were)."""
    assert oversized_modules(REPO) == []


def test_the_size_check_sees_a_long_module(tmp_path):
    (tmp_path / "tui" / "core").mkdir(parents=True)
    (tmp_path / "remote_probe").mkdir()
    (tmp_path / "tui" / "core" / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    (tmp_path / "remote_probe" / "short.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    assert oversized_modules(str(tmp_path)) == [(os.path.join("tui", "core", "long.py"),
                                                 MAX_MODULE_LINES + 1)]


MAX_FOLDER_MODULES = 16  # "no folder holds more than ~15 modules" (issue 37); __init__ not counted


def crowded_folders(root, limit=MAX_FOLDER_MODULES):
    """(folder, modules) of every package under root's tui/ and remote_probe/ with more than
    `limit` modules of its own: a newcomer reads the tree, so parts get folders."""
    found = []
    for folder, modules in room_folders(root):
        mods = [n for n in modules if n not in ("__init__.py", "__main__.py")]
        if len(mods) > limit:
            found.append((os.path.relpath(folder, root), len(mods)))
    return sorted(found)


def prefix_families(root, size=3):
    """(folder, prefix, names) for each group of `size` or more modules in one folder whose
    names share a first word (notify_a, notify_b, notify_c): such a family is a folder."""
    found = []
    for folder, modules in room_folders(root):
        by_prefix = {}
        for n in modules:
            if not n.startswith("_") and "_" in n:  # __init__, _private: no first word
                by_prefix.setdefault(n.split("_")[0], []).append(n)
        for prefix, names in sorted(by_prefix.items()):
            if len(names) >= size:
                found.append((os.path.relpath(folder, root), prefix, sorted(names)))
    return found


def test_no_folder_of_the_probe_or_the_laptop_is_crowded():
    assert crowded_folders(REPO) == []


def test_no_prefix_family_of_three_lives_outside_a_folder():
    assert prefix_families(REPO) == []


def test_the_layout_checks_see_a_crowded_folder_and_a_family(tmp_path):
    core = tmp_path / "tui" / "core"
    core.mkdir(parents=True)
    (tmp_path / "remote_probe").mkdir()
    for i in range(MAX_FOLDER_MODULES + 1):
        (core / ("m%d.py" % i)).write_text("")
    for name in ("notify_a.py", "notify_b.py", "watch_a.py", "watch_b.py", "watch_c.py", "__init__.py",
                 "__main__.py", "_private.py"):
        (tmp_path / "remote_probe" / name).write_text("")
    assert crowded_folders(str(tmp_path)) == [(os.path.join("tui", "core"), MAX_FOLDER_MODULES + 1)]
    assert prefix_families(str(tmp_path)) == [
        ("remote_probe", "watch", ["watch_a.py", "watch_b.py", "watch_c.py"])]
