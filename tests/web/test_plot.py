"""The Savings page's bar chart: one bar per bucket, heights proportional, round ticks, dates
under the axis, a tooltip per bar, and an empty chart that says so."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from velesmem.web import plot

SVG = "{http://www.w3.org/2000/svg}"
DAY = 86_400


def test_one_bar_per_point_heights_proportional_with_a_dated_tooltip() -> None:
    points = [plot.Point(100 * DAY, 500), plot.Point(101 * DAY, 1000), plot.Point(103 * DAY, 0)]
    root = ET.fromstring(str(plot.bars(points, "tokens saved per day")))
    rects = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "plot-bar"]
    assert len(rects) == 3
    heights = [float(r.get("height", "0")) for r in rects]
    assert heights[1] == 2 * heights[0] and heights[2] == 0
    assert [r.find(f"{SVG}title").text for r in rects] == [  # type: ignore[union-attr]
        "1970-04-11: 500 tokens", "1970-04-12: 1,000 tokens", "1970-04-14: 0 tokens"]


def test_ticks_are_round_numbers() -> None:
    assert plot.nice_step(1000) == 200
    assert plot.nice_step(37) == 10
    assert plot.nice_step(0) == 1
    root = ET.fromstring(str(plot.bars([plot.Point(0, 930)], "x")))
    ticks = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "plot-tick"]
    assert ticks[:6] == ["0", "200", "400", "600", "800", "1k"]


def test_at_most_six_dates_under_the_axis_for_a_long_series() -> None:
    points = [plot.Point(d * DAY, d) for d in range(90)]
    root = ET.fromstring(str(plot.bars(points, "x")))
    dates = [t.text for t in root.iter(f"{SVG}text")
             if t.get("class") == "plot-tick" and "-" in (t.text or "")]
    assert 1 < len(dates) <= plot.X_LABELS and dates[0] == "1970-01-01"


def test_an_empty_series_says_nothing_was_recorded() -> None:
    svg = str(plot.bars([], "tokens saved <per day>"))
    assert "nothing recorded yet" in svg and "<per day>" not in svg
    ET.fromstring(svg)


def test_a_single_day_is_a_bar_not_a_wall() -> None:
    root = ET.fromstring(str(plot.bars([plot.Point(0, 10)], "x")))
    bar = next(r for r in root.iter(f"{SVG}rect") if r.get("class") == "plot-bar")
    assert float(bar.get("width", "0")) == plot.BAR_MAX_W
