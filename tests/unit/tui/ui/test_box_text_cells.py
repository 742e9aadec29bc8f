"""Chinese text is cut by terminal columns with a visible '…' (issue 23: the release screen's
FIX column was cut without one, two columns per character counted as one)."""

from rich.cells import cell_len

from tui.ui.boxtext_rich import box_text


def test_cjk_cut_by_columns_with_ellipsis():
    t = box_text("t：tmux 面板（对窗格按 Ctrl-C）· k：结束 GPU 进程", limit=20)
    assert cell_len(t.plain) <= 20 and t.plain.endswith("…")
    assert box_text("abc", limit=3).plain == "abc"
    assert box_text("abcdef", limit=4).plain == "abc…"
    t = box_text("面板面板", limit=4)  # "面" + "…" = 3 columns: a second would straddle
    assert t.plain == "面…"
