"""The GPU panel is planned with the rows the DataLoaders panel really takes: beside the billing
and host column its lines wrap at the left column's width, not the screen's (a Chinese verdict
line between 116 and 156 columns at 160 wide was planned as one row and laid out as two)."""

from rich.text import Text

from tests.support.snapshot_app import canned_app
from tui.ui.widgets.live import update_text
from tui.ui.widgets.loader_panel import LoaderPanel


async def test_a_long_loader_line_is_planned_as_the_rows_it_wraps_to():
    app = canned_app(2)
    async with app.run_test(size=(160, 50)) as pilot:
        app.feed()
        await pilot.pause(0.3)
        screen = app.screen
        panel = screen.query_one("#loaders", LoaderPanel)
        without = screen.other_rows()
        panel.add_class("shown")
        update_text(panel, Text("pid 4100 python train.py\n→ " + "数据加载跟不上 GPU，" * 6))  # 122 columns
        for _ in range(5):
            await pilot.pause(0.2)
        assert panel.region.height == 2 + 3  # border, the pid line, the verdict in two rows
        assert screen.other_rows() - without == panel.region.height
