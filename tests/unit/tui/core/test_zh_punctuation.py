"""Chinese text uses full-width punctuation (issue 23: "Chinese text uses ASCII colons in
places"): in a Chinese sentence ：，；（）, while commands, paths and code in backticks keep
ASCII (a full-width comma inside `ssh-keygen -R …` would not paste into a shell)."""

import os
import re

import pytest

from tui.core.i18n import parse_po

from tests.support.sshd import REPO

CATALOG = os.path.join(REPO, "tui", "locale", "zh_CN", "LC_MESSAGES", "gputui.po")
CJK = "\u4e00-\u9fff"
FULL_WIDTH = "：，；（）"
# msgids whose ASCII punctuation next to Chinese is syntax, not prose
ALLOWED = {
    "--listen wants ADDRESS:PORT, e.g. 127.0.0.1:9835 (got %r)",  # 地址:端口 is the format
}


def prose(text):
    """The text outside `code spans` (each span kept as one placeholder)."""
    return re.sub(r"`[^`]*`", "`…`", text)


def ascii_in_chinese(text):
    """The ASCII :,;() that sit in Chinese prose of `text`: after a Chinese character (a
    colon, comma, semicolon, an opening or closing parenthesis), before one (a comma or
    semicolon, an opening parenthesis), or closing a parenthesis opened after one."""
    t = prose(text)
    found = []
    for m in re.finditer(r"[:,;()]", t):
        left = t[:m.start()].rstrip(" ")[-1:]
        right = t[m.end():].lstrip(" ")[:1]
        after_cjk = bool(left) and re.match("[%s]" % CJK, left) is not None
        before_cjk = bool(right) and re.match("[%s]" % CJK, right) is not None
        c = m.group()
        if after_cjk or (before_cjk and c in ",;("):
            found.append(c)
    for m in re.finditer(r"[%s]\s*\(([^()`]*)\)" % CJK, t):  # 标签 (x): the ")" too
        found.append(")")
    return found


def full_width_in_code(text):
    return [c for span in re.findall(r"`[^`]*`", text) for c in span if c in FULL_WIDTH + "。"]


@pytest.mark.parametrize("text, ascii_found", [
    ("机器的登录 shell 没有应答：请检查 ~/.bashrc", []),
    ("机器的登录 shell 没有应答: 请检查", [":"]),
    ("磁盘已满，请清理", []),
    ("磁盘已满, 请清理", [","]),
    ("取消 (esc)", ["(", ")"]),
    ("取消（esc）", []),
    ("运行 `case $- in *i*) ;; *) return;; esac` 让它返回", []),  # code keeps ASCII
    ("GPU 0, GPU 1", []),  # no Chinese around: not a Chinese sentence
    ("保存到 /tmp/a,b", []),  # a path after a space and Chinese: the comma is the path's
])
def test_the_rule(text, ascii_found):
    assert ascii_in_chinese(text) == ascii_found


def catalog():
    with open(CATALOG, encoding="utf-8") as f:
        entries = parse_po(f.read(), CATALOG)
    for msgid, msgstr in entries.items():
        for text in (msgstr if isinstance(msgstr, list) else [msgstr]):
            if text:
                yield (msgid if isinstance(msgid, str) else msgid[0]), text


def test_chinese_sentences_use_full_width_punctuation():
    bad = ["%r -> %r (%s)" % (msgid, text, "".join(found)) for msgid, text in catalog()
           if msgid not in ALLOWED and (found := ascii_in_chinese(text))]
    assert not bad, "\n".join(bad)


def test_code_spans_keep_ascii_punctuation():
    bad = ["%r -> %r" % (msgid, text) for msgid, text in catalog() if full_width_in_code(text)]
    assert not bad, "\n".join(bad)
