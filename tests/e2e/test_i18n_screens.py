"""The Chinese UI is complete (issue 14): every marked string has a translation, and the main
screens rendered in zh through the demo box show no English UI text.

Two nets: (1) lookups that fell back to English are recorded while the screens run (a string
wrapped in _() but missing from the catalog); (2) every ASCII word left on the rendered screen
must be a technical term or come from the box's own data (a string never wrapped at all)."""

import gettext
import glob
import io
import os
import re

import pytest
from rich.console import Console

from tui.core import i18n
from tui.remote.demo_box import DemoBox
from tui.ui.demo import demo_app, local_dirs_inside

from tests.e2e.test_app import wait_for
from tests.support import REPO

ROOT = REPO
WORD = r"[A-Za-z][A-Za-z_]{2,}"  # what counts as an English word on screen
PLACEHOLDER = re.compile(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa%]")


def same_placeholders(src, dst):
    """Positional %-placeholders must come in the same order; named ones (%(rate)s) may
    move, as Chinese word order wants, but the same set must be there."""
    a, b = PLACEHOLDER.findall(src), PLACEHOLDER.findall(dst)
    if a and all(p.startswith("%(") for p in a + b):
        return sorted(a) == sorted(b)
    return a == b


def source_files():
    return glob.glob(os.path.join(ROOT, "tui", "**", "*.py"), recursive=True)


def test_every_marked_string_is_in_the_catalog_with_the_same_placeholders():
    catalog = i18n.catalog_entries("zh")
    found = i18n.source_messages(source_files())
    assert len(found) > 150  # the extraction sees the app, not an empty list
    missing, bad = [], []
    for key, where in found.items():
        text = catalog.get(key)
        if isinstance(key, tuple):
            if not text or not all(text):
                missing.append("%s  (%s)" % (key[0], where[0]))
                continue
            sources, targets = [key[1]], text
        else:
            if not text:
                missing.append("%s  (%s)" % (key, where[0]))
                continue
            sources, targets = [key], [text]
        for src in sources:
            for dst in targets:
                if not same_placeholders(src, dst):
                    bad.append("%r -> %r" % (src, dst))
    assert not missing, "no zh translation:\n" + "\n".join(missing)
    assert not bad, "placeholders differ (positional ones keep their order):\n" + "\n".join(bad)


def test_the_catalog_compiles_and_plural_forms_are_chinese():
    t = i18n.translations_for("zh")
    assert t.ngettext("%d GPU, as rented", "%d GPUs, as rented", 1) == \
        t.ngettext("%d GPU, as rented", "%d GPUs, as rented", 8)
    assert len(i18n.catalog_entries("zh")) > 150


class Recorder(gettext.NullTranslations):
    """The fallback of the zh catalog: every lookup it answers had no translation."""

    def __init__(self):
        super().__init__()
        self.missed = set()

    def gettext(self, message):
        self.missed.add(message)
        return message

    def ngettext(self, singular, plural, n):
        self.missed.add(singular)
        return singular if n == 1 else plural


@pytest.fixture
def zh_recorded(monkeypatch):
    t = gettext.GNUTranslations(io.BytesIO(i18n.mo_bytes(i18n.catalog_entries("zh"))))
    recorder = Recorder()
    t.add_fallback(recorder)
    monkeypatch.setattr(i18n, "_translations", t)
    monkeypatch.setattr(i18n, "_current", "zh")
    yield recorder
    i18n.set_language("en")


def screen_text(app):
    """The screen as the terminal shows it, as plain text."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True,
                                                        screen_stack=app._background_screens))
    return console.export_text()


# Words that stay as they are in Chinese UIs (and on AutoDL's own pages); the last line is the
# demo box's own error text (its python has no torch), which is data.
TECHNICAL = set("""
gputui GPU GPUs CPU RAM VRAM CUDA NVIDIA tmux python python3 torch pip conda SSH ssh PTY ECC MIG
vGPU SFTP MiB GiB GB MB KiB MHz TFLOPS bf16 fp16 fp32 rtt ms ctrl Ctrl esc enter tab shift space
pgup pgdn
num_workers pin_memory prefetch_factor DataLoader DataLoaders dataloader pid PID CNY USD EUR
sha256 HF_ENDPOINT export bash zsh fish PyPI README matmul demo box sim simulated rsync git LMDB tar freeze True False
iowait worker env nvitop Hugging Face net_check_urls
None ModuleNotFoundError module named
CUDA_VISIBLE_DEVICES
PHB PIX PXB SYS NODE NVSWITCH NVLink P2P tmpfs ext4 xfs overlay dev shm mnt home
persistent_workers max torchrun rank
""".split())  # last two lines: nvidia-smi topo words and the box's filesystems in doctor
# (issue 22); DataLoader arguments, its wait stats (p50 p95 max) and distributed terms


def values(doc):
    """Every string value in a JSON-like document (keys are ours, not the box's)."""
    if isinstance(doc, dict):
        for v in doc.values():
            yield from values(v)
    elif isinstance(doc, (list, tuple)):
        for v in doc:
            yield from values(v)
    elif doc is not None:
        yield str(doc)


def box_words(app):
    """Words that come from the box or its config (names, commands, paths): shown as they are."""
    st = app.box.state
    data = [st.sample, st.inventory, st.jobs, st.host_label, app.box.host,
            [vars(r) for r in st.proc_rows()], app.config.path,
            app.box.billing.preset.name, app.box.billing.preset.release_command or ""]
    return set(re.findall(WORD, " ".join(values(data))))


def english_left(text, allowed):
    known = TECHNICAL | allowed
    words = set(re.findall(WORD, text)) - known
    # a word cut at a panel's edge ("prefetc…") counts as the word it starts
    return sorted(w for w in words if not any(k.startswith(w) for k in known))


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
async def test_main_screens_in_chinese(size, zh_recorded):
    b = await DemoBox().start()
    try:
        with local_dirs_inside(b.dir):
            app = demo_app(b, "a100x2")
            async with app.run_test(size=size) as pilot:
                await wait_for(pilot, lambda: app.box.state.samples_seen >= 2 and app.box.state.proc_rows(),
                               timeout=30)
                await pilot.pause(0.5)
                shown = {}
                allowed = box_words(app)
                shown["dashboard"] = screen_text(app)
                header = str(app.query_one("#status").render())
                assert "在线" in header and "¥" in header  # state and money, in Chinese
                await pilot.press("question_mark")
                await pilot.pause(0.5)
                shown["help"] = screen_text(app)
                await pilot.press("escape")
                await pilot.press("t")
                await pilot.pause(1.0)
                shown["tmux"] = screen_text(app)
                await pilot.press("escape")
                await pilot.press("d")
                await wait_for(pilot, lambda: app.box.preflight_checks is not None and
                               not app.screen.query_one("#doctor-busy").display, timeout=60)
                shown["doctor"] = screen_text(app)
                await pilot.press("escape")
                await pilot.press("R")
                await pilot.pause(4)
                shown["release"] = screen_text(app)
                allowed |= box_words(app)
                await app.action_quit()
    finally:
        await b.stop()
    # _() of a text that is already Chinese (the help screen translates bindings that a
    # screen translated when it was built) is harmless: only English misses count
    translations = {v for v in i18n.catalog_entries("zh").values() if isinstance(v, str)}
    missed = sorted(m for m in zh_recorded.missed if m not in translations)
    problems = {name: english_left(text, allowed) for name, text in shown.items()}
    problems = {k: v for k, v in problems.items() if v}
    assert not missed and not problems, (
        "shown without a zh translation: %s\nEnglish words on the zh screens: %s\n%s" % (
            missed, problems, "\n".join(shown[k] for k in problems)))


def test_no_function_binds_the_name_it_translates_with():
    """`host, _, port = ...` in a function that also calls _() makes `_` local there: the
    translation call then fails at run time (UnboundLocalError, or calls a string)."""
    import ast
    bad = []
    for path in source_files():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            in_comprehension = {id(n) for c in ast.walk(fn) if isinstance(
                c, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) for n in ast.walk(c)}
            binds = any(isinstance(n, ast.Name) and n.id == "_" and isinstance(n.ctx, ast.Store)
                        and id(n) not in in_comprehension for n in ast.walk(fn))
            calls = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "_"
                        for n in ast.walk(fn))
            if binds and calls:
                bad.append("%s:%d %s" % (os.path.relpath(path, ROOT), fn.lineno, fn.name))
    assert not bad, bad
