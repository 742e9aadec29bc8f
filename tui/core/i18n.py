"""The UI language (issue 14): English source strings, a Simplified Chinese catalog.

Catalogs are `.po` files kept in the repository (tui/locale/<lang>/LC_MESSAGES/gputui.po); they
are compiled at load into `.mo` bytes in memory and read by the stdlib's GNUTranslations, so no
build step and no extra dependency. `_()` and `ngettext()` look the current language up at call
time, so `set_language()` takes effect for everything translated after it.

Class-level texts (Textual BINDINGS, DEFAULT_CSS titles) are evaluated when their module is
imported: `tui/cli/` main() sets the language before it imports any UI module, and the UI
translates binding descriptions again when a screen is built (tui/ui/translate.py), so tests
that switch language after import still see the right text.

JSON output and everything sent over the wire stay English: only text meant for a person goes
through `_()`."""

import ast
import gc
import gettext
import os
import struct
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

DOMAIN = "gputui"
LOCALE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "locale")
LANGUAGES = ("en", "zh")
# Catalog directory of each language; Traditional locales read Simplified until a zh_TW catalog exists.
CATALOG = {"zh": "zh_CN"}

_current = "en"
_translations = gettext.NullTranslations()
_cache: Dict[str, gettext.GNUTranslations] = {}
# What parse_po returns: {msgid: msgstr} and {(msgid, msgid_plural): [msgstr, ...]}
Entries = Dict[Union[str, Tuple[str, str]], Any]


class LanguageError(ValueError):
    pass


def normalize(value: object) -> Optional[str]:
    """'zh_CN.UTF-8', 'zh-TW', 'zh', 'en_US', 'C' -> 'zh' / 'en'; None when unknown or empty."""
    if not value or not isinstance(value, str):
        return None
    v = value.strip().split(".")[0].split("@")[0].replace("-", "_").lower()
    if v.startswith("zh"):
        return "zh"
    if v.startswith("en") or v in ("c", "posix"):
        return "en"
    return None


def language_from_env(environ: Optional[Mapping[str, str]] = None) -> str:
    """The first of LC_ALL, LC_MESSAGES, LANG that is set decides (POSIX precedence); a set
    variable naming a language we have no catalog for means English, not the next variable."""
    environ = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(name)
        if value:
            return normalize(value) or "en"
    return "en"


def language_from_config(data: object) -> Optional[str]:
    """`language = "zh"` at the top level or under [defaults]; [defaults] wins."""
    if not isinstance(data, dict):
        return None
    defaults = data.get("defaults")
    if isinstance(defaults, dict) and normalize(defaults.get("language")):
        return normalize(defaults.get("language"))
    return normalize(data.get("language"))


def choose_language(cli: Optional[str] = None, config_data: object = None,
                    environ: Optional[Mapping[str, str]] = None) -> str:
    """--lang beats the config, the config beats the locale variables."""
    if cli:
        lang = normalize(cli)
        if lang is None:
            raise LanguageError("unknown language %r (choose from: %s)" % (cli, ", ".join(LANGUAGES)))
        return lang
    return language_from_config(config_data) or language_from_env(environ)


# --- .po reading and .mo writing ----------------------------------------------------------------

def _unquote(text: str, where: str) -> str:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError("%s: not a quoted string: %s" % (where, text))
    if not isinstance(value, str):
        raise ValueError("%s: not a quoted string: %s" % (where, text))
    return value


def parse_po(text: str, where: str = "<po>") -> Entries:
    """The entries of a .po file: {msgid: msgstr} and {(msgid, msgid_plural): [msgstr...]}.

    Handles what this project writes: comments, msgctxt-free entries, multi-line strings,
    plurals, fuzzy flags (fuzzy entries are skipped, as msgfmt does)."""
    entries: Entries = {}
    cur: Dict[Union[str, int], str] = {}
    key: Union[str, int, None] = None
    fuzzy = False

    def flush() -> None:
        nonlocal cur, key, fuzzy
        if "msgid" in cur and not fuzzy:
            if "msgid_plural" in cur:
                forms = [cur[k] for k in sorted(k for k in cur if isinstance(k, int))]
                entries[(cur["msgid"], cur["msgid_plural"])] = forms
            else:
                entries[cur["msgid"]] = cur.get("msgstr", "")
        cur, key, fuzzy = {}, None, False

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        here = "%s:%d" % (where, n)
        if not line:
            flush()
            continue
        if line.startswith("#"):
            if line.startswith("#,") and "fuzzy" in line:
                if "msgid" in cur:
                    flush()
                fuzzy = True
            continue
        if line.startswith('"'):
            if key is None:
                raise ValueError("%s: continuation line without a keyword" % here)
            cur[key] += _unquote(line, here)
            continue
        word, _sep, rest = line.partition(" ")
        if word == "msgid" and "msgid" in cur:
            flush()
        if word.startswith("msgstr[") and word.endswith("]"):
            key = int(word[7:-1])
        elif word in ("msgid", "msgid_plural", "msgstr", "msgctxt"):
            key = word
        else:
            raise ValueError("%s: unknown keyword %r" % (here, word))
        cur[key] = _unquote(rest.strip(), here)
    flush()
    return entries


def mo_bytes(entries: Entries) -> bytes:
    """GNU .mo bytes for `entries` (as parse_po returns), the format GNUTranslations reads."""
    pairs: List[Tuple[str, str]] = []
    for k, v in entries.items():
        if isinstance(k, tuple):
            if not any(v):
                continue
            pairs.append(("\0".join(k), "\0".join(v)))
        elif v or k == "":
            pairs.append((k, v))
    pairs.sort()
    ids = [k.encode("utf-8") for k, _ in pairs]
    strs = [v.encode("utf-8") for _, v in pairs]
    n = len(pairs)
    keystart = 7 * 4 + 16 * n
    valuestart = keystart + sum(len(i) + 1 for i in ids)
    koffsets: List[int] = []
    voffsets: List[int] = []
    off = 0
    for i in ids:
        koffsets += [len(i), keystart + off]
        off += len(i) + 1
    off = 0
    for s in strs:
        voffsets += [len(s), valuestart + off]
        off += len(s) + 1
    header = struct.pack("Iiiiiii", 0x950412de, 0, n, 7 * 4, 7 * 4 + n * 8, 0, 0)
    return (header + struct.pack("%di" % len(koffsets), *koffsets)
            + struct.pack("%di" % len(voffsets), *voffsets)
            + b"".join(i + b"\0" for i in ids) + b"".join(s + b"\0" for s in strs))


def po_path(lang: str) -> str:
    return os.path.join(LOCALE_DIR, CATALOG[lang], "LC_MESSAGES", DOMAIN + ".po")


def catalog_entries(lang: str) -> Entries:
    with open(po_path(lang), encoding="utf-8") as f:
        return parse_po(f.read(), po_path(lang))


def translations_for(lang: str) -> gettext.NullTranslations:
    """The compiled catalog of `lang` (cached); NullTranslations for English."""
    if lang == "en":
        return gettext.NullTranslations()
    if lang not in _cache:
        import io
        _cache[lang] = gettext.GNUTranslations(io.BytesIO(mo_bytes(catalog_entries(lang))))
    return _cache[lang]


def set_language(lang: str) -> str:
    """Switch the UI language ('en' or 'zh', or any locale name normalize() knows)."""
    global _current, _translations
    norm = normalize(lang)
    if norm is None:
        raise LanguageError("unknown language %r (choose from: %s)" % (lang, ", ".join(LANGUAGES)))
    _translations = translations_for(norm)
    _current = norm
    return norm


def language() -> str:
    return _current


def _(message: str) -> str:
    # gettext("") is the catalog's header, never what a caller with an empty text wants
    return _translations.gettext(message) if message else message


def ngettext(singular: str, plural: str, n: int) -> str:
    return _translations.ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Marks a string for the catalog where it is defined; `_()` translates it where it is shown."""
    return message


def _parse(source: str, path: str) -> ast.Module:
    """ast.parse with the garbage collector held off: a finalizer that raises inside the parse
    has its traceback formatted, and on CPython 3.11 that formatting parses again and breaks
    the outer parse ("AST constructor recursion depth mismatch", seen once in the suite)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, path)
    finally:
        if enabled:
            gc.enable()


def source_messages(paths: Iterable[str]) -> Dict[Union[str, Tuple[str, str]], List[str]]:
    """{msgid or (singular, plural): [where...]} for every `_("…")`, `N_("…")`, `background("…")`
    (a worker name, shown in its failure notice) and
    `ngettext("…", "…", n)` with literal text in these Python files (the catalog check's list)."""
    found: Dict[Union[str, Tuple[str, str]], List[str]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            tree = _parse(f.read(), path)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            args = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None
                    for a in node.args]
            key: Union[str, Tuple[str, str], None] = None
            if node.func.id in ("_", "N_", "background") and args and args[0] is not None:
                key = args[0]
            elif node.func.id == "ngettext" and len(args) >= 2:
                singular, plural = args[0], args[1]
                if singular is not None and plural is not None:
                    key = (singular, plural)
            if key is not None:
                found.setdefault(key, []).append("%s:%d" % (path, node.lineno))
    return found
