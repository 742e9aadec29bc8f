"""The language machinery (issue 14): locale choice, .po compilation, lookups."""

import gettext
import io

import pytest

from tui.core import i18n


@pytest.fixture
def zh():
    i18n.set_language("zh")
    yield
    i18n.set_language("en")


@pytest.mark.parametrize("env,lang", [
    ({}, "en"),
    ({"LANG": "zh_CN.UTF-8"}, "zh"),
    ({"LANG": "zh_TW.UTF-8"}, "zh"),
    ({"LANG": "zh_HK.Big5"}, "zh"),
    ({"LANG": "zh_SG"}, "zh"),
    ({"LANG": "en_US.UTF-8"}, "en"),
    ({"LANG": "C.UTF-8"}, "en"),
    ({"LANG": "zh_CN.UTF-8", "LC_ALL": "en_US.UTF-8"}, "en"),   # LC_ALL first
    ({"LANG": "en_US.UTF-8", "LC_MESSAGES": "zh_CN.UTF-8"}, "zh"),
    ({"LANG": "de_DE.UTF-8"}, "en"),                            # no catalog: English
    ({"LC_ALL": "", "LANG": "zh_CN.UTF-8"}, "zh"),              # empty means unset
])
def test_language_from_locale_variables(env, lang):
    assert i18n.language_from_env(env) == lang


def test_cli_beats_config_beats_locale():
    env = {"LANG": "zh_CN.UTF-8"}
    assert i18n.choose_language(None, {"language": "en"}, env) == "en"
    assert i18n.choose_language(None, {"defaults": {"language": "zh"}}, {}) == "zh"
    assert i18n.choose_language("en", {"defaults": {"language": "zh"}}, env) == "en"
    assert i18n.choose_language(None, {"language": 3}, env) == "zh"  # wrong type: ignored
    with pytest.raises(i18n.LanguageError):
        i18n.choose_language("fr", None, env)


def test_po_parser_reads_multiline_plurals_and_skips_fuzzy():
    po = '''
msgid ""
msgstr "Content-Type: text/plain; charset=UTF-8\\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\\n"

# a comment
msgid "one "
"line"
msgstr "eine "
"Zeile"

#, fuzzy
msgid "guess"
msgstr "Vermutung"

msgid "%d GPU"
msgid_plural "%d GPUs"
msgstr[0] "%d Karte"
msgstr[1] "%d Karten"

msgid "quote \\"x\\""
msgstr "Zitat \\"x\\""
'''
    entries = i18n.parse_po(po)
    assert entries["one line"] == "eine Zeile"
    assert "guess" not in entries
    assert entries[("%d GPU", "%d GPUs")] == ["%d Karte", "%d Karten"]
    t = gettext.GNUTranslations(io.BytesIO(i18n.mo_bytes(entries)))
    assert t.gettext("one line") == "eine Zeile"
    assert t.gettext("guess") == "guess"
    assert t.ngettext("%d GPU", "%d GPUs", 1) == "%d Karte"
    assert t.ngettext("%d GPU", "%d GPUs", 3) == "%d Karten"
    assert t.gettext('quote "x"') == 'Zitat "x"'


def test_broken_po_names_the_line():
    with pytest.raises(ValueError, match="x.po:2"):
        i18n.parse_po('msgid "a"\nmsgstr b\n', "x.po")


def test_lookups_follow_set_language(zh):
    assert i18n.language() == "zh"
    assert i18n._("Quit") == "退出"
    assert i18n._("no such string, ever") == "no such string, ever"
    i18n.set_language("en")
    assert i18n._("Quit") == "Quit"
    with pytest.raises(i18n.LanguageError):
        i18n.set_language("klingon")


def test_empty_text_stays_empty(zh):
    assert i18n._("") == ""  # not the catalog header
