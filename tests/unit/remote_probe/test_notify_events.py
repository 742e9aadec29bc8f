"""The daemon's messages: rendered from templates (English on the box, the user's
language when the laptop pushed it), box text sanitized, one key per event."""

import pytest

from remote_probe.notify import events as ne
from remote_probe.notify import queue as notify_queue
from tui.core import i18n
from tui.core.notify import messages as notify_messages

CRASH = {"job": "train.py (tmux main:0.0)", "box": "autodl-a100", "cause": "cuda_oom",
         "runtime": "2 h 13 min",
         "evidence": "torch.OutOfMemoryError: CUDA out of memory.\n\x1b[31m  loss.backward()\x1b[0m"}


def test_crash_message_names_job_box_and_cause():
    title, body = ne.render("crashed", CRASH)
    assert title == "train.py (tmux main:0.0) crashed on autodl-a100: CUDA out of memory"
    assert "still billing" in body and "torch.OutOfMemoryError" in body
    assert "\x1b" not in body and "loss.backward()" in body


def test_every_kind_has_a_template_and_renders_with_missing_fields():
    assert set(ne.TEMPLATES) == set(notify_queue.KINDS) | set(ne.VARIANTS)
    for kind in notify_queue.KINDS:
        title, body = ne.render(kind, {})
        assert title and body and "%(" not in title + body


def test_laptop_english_templates_are_the_box_defaults_word_for_word():
    i18n.set_language("en")
    assert {k: tuple(v) for k, v in notify_messages.templates().items()} == ne.TEMPLATES
    assert notify_messages.causes() == ne.CAUSES


def test_pushed_chinese_templates_are_used():
    i18n.set_language("zh")
    try:
        templates, causes = notify_messages.templates(), notify_messages.causes()
    finally:
        i18n.set_language("en")
    title, body = ne.render("crashed", CRASH, templates, causes)
    assert title == "train.py (tmux main:0.0) 在 autodl-a100 上崩溃：CUDA 显存不足"
    assert "机器仍在计费" in body
    for kind in notify_queue.KINDS:  # every translation is usable by the box
        t, b = ne.render(kind, {"box": "b"}, templates, causes)
        assert t != ne.render(kind, {"box": "b"})[0], kind


@pytest.mark.parametrize("bad", [
    ["%(job)s crashed %(nonexistent)s", "x"],   # asks for a field the event lacks
    ["%(job)s %d", "x"],                          # not a mapping format
    "just a string",
    ["only one"],
    [1, 2],
])
def test_unusable_pushed_template_falls_back_to_english(bad):
    title, _ = ne.render("crashed", CRASH, {"crashed": bad})
    assert title.endswith("crashed on autodl-a100: CUDA out of memory")


def test_fields_are_capped_and_titles_single_line():
    fields = dict(CRASH, job="j\nsecond line" + "x" * 1000, evidence="e" * 5000)
    title, body = ne.render("crashed", fields)
    assert "\n" not in title and len(title) <= ne.FIELD_CHARS
    assert len(body) < ne.EVIDENCE_CHARS + 2 * ne.FIELD_CHARS + 200


def test_event_keys():
    a = ne.event_key("crashed", "box1", "main:0.0", run=1700000000)
    assert a == ne.event_key("crashed", "box1", "main:0.0", run=1700000000)
    assert a != ne.event_key("crashed", "box1", "main:0.0", run=1700000999)
    assert a != ne.event_key("hung", "box1", "main:0.0", run=1700000000)
    assert ne.event_key("crashed", "a|b", "c") != ne.event_key("crashed", "a", "b|c")
