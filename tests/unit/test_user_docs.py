"""The user docs (README.md, README.zh-CN.md, docs/guide/) in sync with the code, both ways
(issue 37).

- Commands and options: every `gputui COMMAND --option` the docs name exists in the real
  command line (the argparse parser `tui.cli.build_parser()` builds, the one `--help` prints),
  and every command, subcommand and option of that parser is named in the guide.
- Config keys: every key the guide names (TOML examples, `[table] key`, `key = value`) is one the
  config readers accept, and every key they accept is in the guide. The readers keep no single
  list, so the accepted keys are derived from them (see `accepted_keys`) and each derivation is
  checked against the reader's behaviour.
- Both languages: the Chinese guide names the same commands, options and keys, page for page.
- The rest the guide promises: every binding id and notification kind, an example URL for every
  notification service, the benchmarks table as the saved runs give it, links that resolve.
"""

import argparse
import dataclasses
import importlib
import importlib.util
import os
import pkgutil
import re

import pytest

from tests.support.sshd import REPO

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

GUIDE = os.path.join(REPO, "docs", "guide")
READMES = {"en": "README.md", "zh": "README.zh-CN.md"}
ZH = ".zh-CN.md"
# The first two commands of each README, exactly: a fresh machine copies them, .ci/run runs the second.
TRY_IT = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/gputui demo"
TESTS = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest"
# Written by another hand (docs/dependencies*.md): linked before they land.
PENDING_LINKS = {"docs/dependencies.md", "docs/dependencies.zh-CN.md"}


# ---------------------------------------------------------------- reading the docs

def guide_pages(lang):
    names = sorted(n for n in os.listdir(GUIDE) if n.endswith(".md"))
    return [n for n in names if n.endswith(ZH) == (lang == "zh")]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def guide(lang):
    """{page name: text} of the guide in `lang`."""
    return {n: read(os.path.join(GUIDE, n)) for n in guide_pages(lang)}


FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")


def fenced(text):
    """(language, body) of every fenced block."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def spans(text):
    """Every inline code span outside the fenced blocks (a table's `\\|` read as `|`)."""
    return [s.replace("\\|", "|") for s in SPAN.findall(FENCE.sub("", text))]


def sections(text):
    """(heading, body) for each part of a page under a `#` heading."""
    parts = re.split(r"^(#{1,6} .*)$", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


# ---------------------------------------------------------------- the command line

def parser_tree():
    """{(command, ...): parser} for the whole command line: () is `gputui` itself."""
    from tui.cli import build_parser
    tree = {}

    def walk(path, parser):
        tree[path] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(path + (name,), sub)
    walk((), build_parser())
    return tree


def options_of(parser):
    return {o for a in parser._actions for o in a.option_strings if o.startswith("--")} - {"--help"}


GLOBAL_VALUED = ("--log", "--lang")
OPTION = re.compile(r"--[a-z][a-z0-9-]*")


@dataclasses.dataclass
class Invocation:
    command: tuple  # () for `gputui` alone; ("notify", "test")
    options: list
    words: str  # what it was read from, for the failure message


def _invocation(words, tree, i):
    """The invocation whose command word is words[i] (after `gputui` and its global options)."""
    opts = []
    while i < len(words) and words[i].startswith("-"):
        opts += OPTION.findall(words[i])
        i += 2 if words[i] in GLOBAL_VALUED else 1
    command = ()
    while i < len(words) and re.fullmatch(r"[a-z][a-z-]*", words[i]):
        here = tree.get(command)
        subs = here is not None and any(isinstance(a, argparse._SubParsersAction) for a in here._actions)
        if command and not subs:
            break  # a command's own words (HOST, paths) are not commands
        command += (words[i],)
        i += 1
    for word in words[i:]:
        if word in ("|", "||", "&&", ";") or word == "gputui" or word.endswith("bin/gputui"):
            break
        opts += OPTION.findall(word)
    return Invocation(command, opts, " ".join(words))


def invocations(text, tree):
    """Every gputui command line in the code of a page: `gputui ...` in fenced shell and text
    blocks and in inline code, and inline code that starts with a command's name (`doctor
    --no-smoke`). Comments in fenced blocks are not read."""
    top = {p[0] for p in tree if p}
    lines = []
    for lang, body in fenced(text):
        if lang in ("", "sh", "bash", "text", "console"):
            lines += [re.sub(r"(^|\s)#.*$", "", line) for line in body.splitlines()]
    found = []
    for line in lines + spans(text):
        words = re.sub(r"\$\(|[()`]", " ", line).split()  # a quoted "gputui" is a word, not the command
        starts = [i + 1 for i, w in enumerate(words) if w == "gputui" or w.endswith("bin/gputui")]
        if line not in lines:  # inline code is a command only from its start; `…; gputui tried …` is prose
            starts = [1] if words and (words[0] == "gputui" or words[0].endswith("bin/gputui")) else \
                [0] if words and words[0] in top else []
        for i in starts:
            found.append(_invocation(words, tree, i))
    return found


def standalone_options(text):
    """Options named on their own in inline code (`--remote-python PATH`)."""
    return [o for s in spans(text) if s.startswith("--") for o in OPTION.findall(s)]


def bench_options():
    """The benches' own options (`--rtt-ms 200`), which the benchmarks page names."""
    found = set()
    for name in os.listdir(os.path.join(REPO, "bench")):
        if name.endswith(".py"):
            found |= set(re.findall(r"add_argument\(\s*\"(--[a-z0-9-]+)\"", read(os.path.join(REPO, "bench", name))))
    return found


def command_problems(texts, tree):
    """What the docs name that the command line does not have: [(page, what)]."""
    everything = set().union(*(options_of(p) for p in tree.values()))
    problems = []
    for page, text in texts.items():
        for inv in invocations(text, tree):
            if inv.command not in tree:
                problems.append((page, "no command `gputui %s` (in: %s)" % (" ".join(inv.command), inv.words)))
                continue
            allowed = options_of(tree[inv.command]) | options_of(tree[()]) | {"--help"}
            problems += [(page, "`gputui %s` has no %s (in: %s)" % (" ".join(inv.command), o, inv.words))
                         for o in inv.options if o not in allowed]
        problems += [(page, "no option %s in any command" % o) for o in standalone_options(text)
                     if o not in everything | bench_options()]
    return problems


def commands_named(texts, tree):
    return {inv.command for text in texts.values() for inv in invocations(text, tree)
            if "gputui" in inv.words.split() or re.search(r"bin/gputui\b", inv.words)}


def options_named(texts, tree):
    named = set()
    for text in texts.values():
        named |= {o for inv in invocations(text, tree) for o in inv.options}
        named |= set(standalone_options(text))
    return named


def missing_from(texts, tree):
    """What the command line has that the docs do not name: [what]."""
    named = commands_named(texts, tree)
    # a group (`gputui notify`) is named by naming one of its commands (`gputui notify test`)
    missing = ["command `gputui %s`" % " ".join(p) for p in tree
               if p and not any(n[:len(p)] == p for n in named)]
    everything = set().union(*(options_of(p) for p in tree.values()))
    missing += ["option %s" % o for o in sorted(everything - options_named(texts, tree))]
    return missing


@pytest.fixture(scope="module")
def tree():
    return parser_tree()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_command_and_option_the_docs_name_exists(lang, tree):
    texts = dict(guide(lang), **{READMES[lang]: read(os.path.join(REPO, READMES[lang]))})
    assert command_problems(texts, tree) == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_guide_names_every_command_and_option(lang, tree):
    assert {("connect",), ("fleet",), ("notify", "test")} <= set(tree)  # the parser is the whole one
    assert missing_from(guide(lang), tree) == []


def test_a_command_deleted_from_the_guide_is_found(tree):
    """The check above can fail: the guide without `gputui ledger` (and with an option and a
    command that do not exist) is reported."""
    texts = {n: "\n".join(line for line in t.splitlines() if "ledger" not in line) for n, t in guide("en").items()}
    assert "command `gputui ledger`" in missing_from(texts, tree)
    assert "option --csv" in missing_from(texts, tree)  # only `gputui ledger` has it
    texts["extra.md"] = "```sh\ngputui teleport mybox\ngputui status mybox --yaml\n```\nand `--nope`\n"
    problems = [what for _page, what in command_problems(texts, tree)]
    assert any(p.startswith("no command `gputui teleport`") for p in problems), problems
    assert any(p.startswith("`gputui status` has no --yaml") for p in problems), problems
    assert "no option --nope in any command" in problems


def test_invocations_are_read_the_way_a_shell_reads_them(tree):
    text = ("```sh\n"
            "gputui fleet --check || notify-send \"gputui\" \"$(gputui fleet --json | tail -1)\"\n"
            "gputui --lang zh doctor mybox --no-smoke   # gputui bogus --in-a-comment\n"
            ".venv/bin/gputui demo\n"
            "```\n"
            "`gputui notify test mybox`, `status --json`, `gputui --log FILE COMMAND ...`, `~/.cache/gputui`\n")
    got = [(i.command, i.options) for i in invocations(text, tree)]
    assert got == [(("fleet",), ["--check"]), (("fleet",), ["--json"]),
                   (("doctor",), ["--lang", "--no-smoke"]), (("demo",), []),
                   (("notify", "test"), []), (("status",), ["--json"]), ((), ["--log"])]


# ---------------------------------------------------------------- config keys

def _find(package, name, test=lambda obj, mod: True):
    """The object called `name` in some module of `package`, wherever the module now lives (the
    modules of tui/core move into folders; the function stays what it is)."""
    pkg = importlib.import_module(package)
    for info in pkgutil.walk_packages(pkg.__path__, package + "."):
        try:
            mod = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - a module that cannot be imported here is not the one
            continue
        obj = getattr(mod, name, None)
        if obj is not None and getattr(obj, "__module__", mod.__name__) == mod.__name__ and test(obj, mod):
            return obj, mod
    raise LookupError("no %s in %s" % (name, package))


def notify_reader():
    """(notify_settings, its module): the reader of [notify] and [hosts.NAME.notify]."""
    return _find("tui.core", "notify_settings", lambda obj, mod: callable(obj) and hasattr(mod, "_KEYS"))


HOST = ("hosts", "NAME")
# [exporter]: tui/remote/exporter.py load_auth reads these three (by name, no list); checked below.
EXPORTER_KEYS = {"bearer_token", "bearer_token_file", "basic_auth_file"}


def accepted_keys():
    """{table path: keys the readers accept there}. `[defaults]`/`[hosts.NAME]` and their
    `.autostop`: the fields of config.HostConfig / AutostopConfig (the reader's defaults), with its
    type tables; `[notify]`/`[hosts.NAME.notify]`: the notify reader's _KEYS; `language` at the
    top: tui.core.i18n; `[providers.autodl] token` and `[exporter]`: read by name in
    Config.autodl_token and exporter.load_auth. Each is held to the reader's behaviour below."""
    from tui.core import config
    host = {f.name for f in dataclasses.fields(config.HostConfig)} - {"autostop"}
    host |= set(getattr(config, "_TYPES", {}))
    auto = {f.name for f in dataclasses.fields(config.AutostopConfig)} | set(getattr(config, "_AUTOSTOP_TYPES", {}))
    notify = set(notify_reader()[1]._KEYS)
    return {(): {"language"}, ("defaults",): host, HOST: host, ("defaults", "autostop"): auto,
            HOST + ("autostop",): auto, ("notify",): notify, HOST + ("notify",): notify,
            ("providers", "autodl"): {"token"}, ("exporter",): set(EXPORTER_KEYS)}


TABLES_ONLY = {("hosts",), ("keymap",), ("providers",)}


def _norm(path):
    path = tuple(path)
    return HOST + path[2:] if path[:1] == ("hosts",) and len(path) >= 2 else path


def _flatten(data, path=()):
    """(table path, key) for every value; [keymap] ids apart (they are binding ids)."""
    for key, value in data.items():
        if isinstance(value, dict):
            yield from _flatten(value, path + (key,))
        else:
            yield _norm(path), key


def _header(inner):
    """`hosts."root@h:22".notify` -> ("hosts", "NAME", "notify"), read as TOML reads it."""
    try:
        data = tomllib.loads("[%s]\n" % inner.replace("*", "NAME"))
    except tomllib.TOMLDecodeError:
        return None
    path = []
    while data:
        (key, data), = data.items()
        path.append(key)
    return _norm(path)


def keys_named(text):
    """What a page says about config keys -> (pairs {(table, key)}, tables {table}, loose keys
    {key} from `key = value` spans, keymap ids {id} from TOML)."""
    pairs, tables, loose, keymap = set(), set(), set(), set()
    for lang, body in fenced(text):
        if lang == "toml":
            for table, key in _flatten(tomllib.loads(body)):
                (keymap.add(key) if table == ("keymap",) else pairs.add((table, key)))
    for s in spans(text):
        m = re.fullmatch(r"\[([^\]]+)\](?:\s+([a-z_]+)\b.*)?", s)
        if m:
            table = _header(m.group(1))
            if table is not None:
                tables.add(table)
                if m.group(2):
                    pairs.add((table, m.group(2)))
            continue
        m = re.fullmatch(r"([a-z_]+) = .+", s)
        if m:
            loose.add(m.group(1))
    return pairs, tables, loose, keymap


def key_problems(texts):
    known = accepted_keys()
    every = set().union(*known.values())
    problems = []
    for page, text in texts.items():
        pairs, tables, loose, _ = keys_named(text)
        problems += [(page, "[%s] is no table the config has" % ".".join(t)) for t in tables
                     if t not in known and t not in TABLES_ONLY]
        problems += [(page, "[%s] %s is no setting" % (".".join(t), k)) for t, k in pairs
                     if t != ("keymap",) and k not in known.get(t, ())]
        problems += [(page, "%s = ... is no setting" % k) for k in loose if k not in every]
    return problems


def keys_missing(texts):
    """(table, key) the readers accept that the guide names nowhere ([defaults] or [hosts.NAME]
    count as one, and so do their .autostop and .notify tables)."""
    named = set().union(*(keys_named(t)[0] for t in texts.values()))
    alike = {("defaults",): HOST, ("defaults", "autostop"): HOST + ("autostop",), ("notify",): HOST + ("notify",)}
    named |= {(alike[t], k) for t, k in named if t in alike}
    named |= {(t, k) for t2, k in named for t, same in alike.items() if same == t2}
    return sorted((t, k) for t, keys in accepted_keys().items() for k in keys if (t, k) not in named)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_config_key_the_docs_name_is_accepted(lang):
    texts = dict(guide(lang), **{READMES[lang]: read(os.path.join(REPO, READMES[lang]))})
    assert key_problems(texts) == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_guide_names_every_config_key(lang):
    assert keys_missing(guide(lang)) == []


def test_a_key_deleted_from_the_guide_or_misspelt_is_found():
    texts = {n: t.replace("at_budget", "at_budgte") for n, t in guide("en").items()}
    assert (HOST + ("autostop",), "at_budget") in keys_missing(texts)
    assert any("at_budgte is no setting" in what for _p, what in key_problems(texts))


def _unknown(problems, key):
    return any("unknown setting %r" % key in p for p in problems)


def test_the_host_and_autostop_keys_are_the_ones_the_reader_accepts():
    from tui.core.config import Config
    known = accepted_keys()
    for table in ("defaults", "hosts"):
        for key in known[HOST] | {"no_such_key"}:
            entry = {key: "x"}
            data = {"defaults": entry} if table == "defaults" else {"hosts": {"b": entry}}
            cfg = Config(data, "config.toml")
            cfg.host("b")
            assert _unknown(cfg.problems, key) == (key == "no_such_key"), (table, key, cfg.problems)
        for key in known[HOST + ("autostop",)] | {"no_such_key"}:
            entry = {"autostop": {key: "x"}}
            cfg = Config({"defaults": entry} if table == "defaults" else {"hosts": {"b": entry}}, "config.toml")
            cfg.host("b")
            assert _unknown(cfg.problems, key) == (key == "no_such_key"), (table, key, cfg.problems)


def test_the_notify_keys_are_the_ones_the_reader_accepts():
    notify_settings, _mod = notify_reader()
    for key in accepted_keys()[("notify",)] | {"no_such_key"}:
        for data in ({"notify": {key: None}}, {"hosts": {"b": {"notify": {key: None}}}}):
            _settings, problems = notify_settings(data, "b")
            assert _unknown(problems, key) == (key == "no_such_key"), (data, problems)


def test_the_other_keys_are_read():
    from tui.core.config import Config, HostConfig
    language_from_config, _mod = _find("tui.core", "language_from_config")
    assert language_from_config({"language": "zh"}) == "zh"
    assert Config({"providers": {"autodl": {"token": "t0k"}}}).autodl_token(HostConfig()) == ("t0k", None)


def test_the_exporter_keys_are_read(tmp_path):
    load_auth, _mod = _find("tui.remote", "load_auth")
    (tmp_path / "token").write_text("t0k\n")
    (tmp_path / "basic").write_text("user:pw\n")
    got = {"bearer_token": load_auth({"bearer_token": "t0k"}, env={}).token,
           "bearer_token_file": load_auth({"bearer_token_file": str(tmp_path / "token")}, env={}).token,
           "basic_auth_file": load_auth({"basic_auth_file": str(tmp_path / "basic")}, env={}).basic}
    assert set(got) == EXPORTER_KEYS and got == {"bearer_token": "t0k", "bearer_token_file": "t0k",
                                                 "basic_auth_file": "user:pw"}
    assert not load_auth({"bearer-token": "t0k"}, env={})  # a misspelt key is not read (nor reported)


def _merged_examples(text):
    merged = {}

    def merge(into, data):
        for k, v in data.items():
            if isinstance(v, dict) and isinstance(into.get(k), dict):
                merge(into[k], v)
            else:
                into[k] = v
    for lang, body in fenced(text):
        if lang == "toml":
            merge(merged, tomllib.loads(body))
    return merged


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_configuration_page_loads_without_a_problem(lang):
    """Every example of the configuration page together is a config the readers take whole:
    the right types, valid URLs, event names, signals and keys."""
    from tui.core.config import Config
    data = _merged_examples(guide(lang)["config" + (ZH if lang == "zh" else ".md")])
    cfg = Config(data, "config.toml")
    cfg.host("mybox")
    cfg.keymap()
    assert cfg.problems == []
    assert notify_reader()[0](data, "mybox")[1] == []


def test_a_host_notify_table_is_not_reported_unknown():
    from tui.core.config import Config
    cfg = Config({"hosts": {"mybox": {"notify": {"urls": ["ntfy://gputui_alerts"]}}}}, "config.toml")
    cfg.host("mybox")
    assert cfg.problems == []


# ---------------------------------------------------------------- both languages

def _pair(page):
    return page[:-3] + ZH


def test_every_page_has_its_chinese_page_with_the_same_sections():
    en, zh = guide_pages("en"), guide_pages("zh")
    assert [_pair(p) for p in en] == zh
    for page in en:
        count = [len(re.findall(r"^#{1,3} ", read(os.path.join(GUIDE, p)), re.M)) for p in (page, _pair(page))]
        assert count[0] == count[1], (page, count)


def test_the_chinese_guide_names_the_same_commands_options_and_keys(tree):
    en, zh = guide("en"), guide("zh")
    assert commands_named(zh, tree) == commands_named(en, tree)
    assert options_named(zh, tree) == options_named(en, tree)
    assert set().union(*(keys_named(t)[0] for t in zh.values())) == \
        set().union(*(keys_named(t)[0] for t in en.values()))


def _commands_of(text):
    return [" ".join(re.sub(r"(^|\s)#.*$", "", line).split()) for lang, body in fenced(text)
            if lang == "sh" for line in body.splitlines()]


def test_the_readmes_start_with_the_two_commands_and_stay_short():
    ci = read(os.path.join(REPO, ".ci", "run"))
    assert TESTS in ci.splitlines()
    for name in READMES.values():
        text = read(os.path.join(REPO, name))
        blocks = [body.strip() for lang, body in fenced(text) if lang == "sh"]
        assert blocks[:2] == [TRY_IT, TESTS], name
        assert len(text.splitlines()) <= 200, name
    en, zh = (read(os.path.join(REPO, n)) for n in READMES.values())
    assert _commands_of(en) == _commands_of(zh)
    assert len(re.findall(r"^## ", en, re.M)) == len(re.findall(r"^## ", zh, re.M))


# ---------------------------------------------------------------- what else the guide promises

def binding_ids():
    import inspect

    import tui.ui
    from textual.binding import Binding
    ids = set()
    for info in pkgutil.walk_packages(tui.ui.__path__, "tui.ui."):
        for _name, cls in inspect.getmembers(importlib.import_module(info.name), inspect.isclass):
            ids |= {b.id for b in getattr(cls, "BINDINGS", None) or () if isinstance(b, Binding) and b.id}
    return ids


def keymap_ids_named(texts):
    named = set()
    for text in texts.values():
        named |= keys_named(text)[3]
        for heading, body in sections(text):
            if "[keymap]" in heading:
                named |= set(re.findall(r"^\| `([a-z][a-z_.]*)` \|", body, re.M))
    return named


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_keymap_ids_are_the_apps(lang):
    assert keymap_ids_named(guide(lang)) == binding_ids()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_notification_kind_and_service_is_in_the_guide(lang):
    from remote_probe.wire import channel_requests, channel_urls, notify_kinds
    texts = guide(lang)
    watch = texts["watch" + (ZH if lang == "zh" else ".md")]
    assert set(notify_kinds.KINDS) <= {w for s in spans(watch) for w in re.findall(r"[a-z_0-9]+", s)}
    urls = [u for t in texts.values() for s in spans(t) for u in re.findall(r"\b[a-z]+://\S+", s)]
    for lang_, body in (b for t in texts.values() for b in fenced(t)):
        if lang_ == "toml":
            data = tomllib.loads(body)
            for table in [data.get("notify") or {}] + [(h or {}).get("notify") or {}
                                                       for h in (data.get("hosts") or {}).values()]:
                assert all(channel_requests.validate_url(u) is None for u in table.get("urls", [])), table
                assert set(table.get("events", [])) | set(table.get("quiet_allow", [])) <= set(notify_kinds.KINDS)
                urls += table.get("urls", [])
    working = {u.split("://")[0] for u in urls if channel_requests.validate_url(u) is None}
    assert set(channel_urls.SCHEMES) <= working, set(channel_urls.SCHEMES) - working


def _readme_table():
    spec = importlib.util.spec_from_file_location("readme_table", os.path.join(REPO, "bench", "readme_table.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_benchmarks_table_is_the_saved_runs():
    rt = _readme_table()
    pages = [read(os.path.join(REPO, p)) for p in rt.PAGES]
    blocks = [p.partition(rt.BEGIN)[2].partition("\n")[2].partition(rt.END)[0] for p in pages]
    assert blocks[0] == blocks[1], "the en and zh benchmark pages hold the same table"
    inputs = rt.page_inputs(pages[0])
    assert inputs and all(os.path.exists(p) for p in inputs), inputs
    assert rt.table_rows(pages[0]) == list(rt.rows(list(rt.results(inputs)))), \
        "regenerate: python bench/readme_table.py --write bench/results/<the runs>"
    assert rt.with_block(pages[0], blocks[0].strip("\n") + "\n") == pages[0]  # --write puts it back as it is


def _slug(heading):
    text = re.sub(r"[`*]", "", heading.lstrip("#").strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_the_links_resolve():
    files = [os.path.join(REPO, n) for n in READMES.values()] + \
        [os.path.join(GUIDE, n) for n in guide_pages("en") + guide_pages("zh")]
    bad = []
    for path in files:
        for target in re.findall(r"\]\(([^)\s]+)\)", FENCE.sub("", read(path))):
            if re.match(r"[a-z]+:", target):
                continue
            rel, _sep, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), rel)) if rel else path
            if os.path.relpath(dest, REPO) in PENDING_LINKS:
                continue
            if not os.path.exists(dest):
                bad.append((os.path.relpath(path, REPO), target))
            elif anchor and dest.endswith(".md"):
                if anchor not in {_slug(h) for h in re.findall(r"^#{1,6} .*$", FENCE.sub("", read(dest)), re.M)}:
                    bad.append((os.path.relpath(path, REPO), target))
    assert bad == []
