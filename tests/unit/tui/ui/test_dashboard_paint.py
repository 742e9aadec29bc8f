"""What the idle dashboard paints (issue 25): the containers that only arrange the panels are
hidden from Textual's renderer (their children are shown), so their ~76 blank lines are not
rendered and cropped again on every update; the picture is the same, faded when stale too."""

from tests.support.snapshot_app import canned_app


def painted_lines(widget):
    return len(widget._styles_cache._cache)  # Textual's per-widget cache of rendered lines


async def test_the_arranging_containers_are_not_painted_and_their_panels_are():
    app = canned_app(8)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(3):
            app.feed()
            await pilot.pause(0.3)
        screen = app.screen
        assert painted_lines(screen.query_one("#body")) == 0
        assert painted_lines(screen.query_one("#left")) == 0
        for panel in ("#gpus", "#procs", "#billing", "#host"):
            widget = screen.query_one(panel)
            assert widget.visible and painted_lines(widget) == widget.region.height, panel
        live = app.export_screenshot()
        assert "GPUs" in live  # the GPU panel's text is on the screen, not hidden with its container
        # stale: the panels fade through #body's opacity although #body itself is not painted
        screen.query_one("#body").add_class("stale")
        await pilot.pause(0.3)
        assert app.export_screenshot() != live
