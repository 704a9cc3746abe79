"""Dot-and-interval charts (the report's plots), written as SVG and as PNG without a plotting
library.

A chart is laid out once into shapes in pixels (lines, dots, diamonds, texts). The SVG is those
shapes written out with two decimals, so its bytes depend only on the numbers plotted: no
plotting library, font file or FreeType version is involved, and text widths for the layout come
from a fixed table (`text_width`). The PNG is the same shapes drawn by Pillow with its built-in
font at twice the size and reduced by half (smooth edges), so it depends on the pinned Pillow.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field

from ifaudit.io.formats.escape import one_line, xml_text

WIDTH = 1125  # pixels: 7.5 inches at 150 dpi, as the report's plots always were
FONT = "DejaVu Sans, Bitstream Vera Sans, Verdana, Arial, sans-serif"
TITLE_SIZE, TICK_SIZE, LABEL_SIZE, LEGEND_SIZE, NOTE_SIZE = 23.0, 20.0, 20.0, 17.0, 15.0
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
BLACK, AXIS_GREY, GRID, SEPARATOR = "#000000", "#808080", "#dedede", "#d0d0d0"

# Advance widths in ems of DejaVu Sans (the SVG's first font), for the layout only: the left
# margin must hold the longest row label. Characters not listed count as wide as a capital.
_WIDTHS = {
    **dict.fromkeys("0123456789", 0.636),
    **dict(
        zip(
            "abcdefghijklmnopqrstuvwxyz",
            (
                0.613,
                0.635,
                0.550,
                0.635,
                0.615,
                0.352,
                0.635,
                0.634,
                0.278,
                0.278,
                0.579,
                0.278,
                0.974,
                0.634,
                0.612,
                0.635,
                0.635,
                0.411,
                0.521,
                0.392,
                0.634,
                0.592,
                0.818,
                0.592,
                0.592,
                0.525,
            ),
        )
    ),
    **dict.fromkeys(" .,:;!|'", 0.318),
    **dict.fromkeys("()[]{}", 0.390),
    **dict.fromkeys("-–", 0.361),
    **dict.fromkeys("_/\\", 0.500),
    **dict.fromkeys("+=<>−", 0.838),
    **dict.fromkeys("%", 0.950),
}
_WIDE = 0.75
# The PNG's built-in font has no minus sign or dashes: drawn as hyphens there.
_PNG_TEXT = str.maketrans({"−": "-", "–": "-", "—": "-"})


def text_width(text: str, size: float) -> float:
    return size * sum(_WIDTHS.get(char, _WIDE) for char in one_line(text))


@dataclass(frozen=True)
class Point:
    """A value with its interval on row `y`, and an optional note written right of the interval."""

    y: float
    value: float
    low: float
    high: float
    note: str = ""


@dataclass(frozen=True)
class Series:
    colour: str
    points: tuple[Point, ...]
    label: str = ""  # its legend entry, if any
    dot: float = 5.2  # radius in pixels


@dataclass(frozen=True)
class Diamond:
    """A hollow diamond marker (a published figure)."""

    x: float
    y: float
    colour: str


@dataclass(frozen=True)
class Chart:
    title: str
    xlabel: str
    xlim: tuple[float, float]
    ylim: tuple[float, float]  # the rows' y at the top and at the bottom of the axes
    yticks: tuple[tuple[float, str], ...]
    series: tuple[Series, ...]
    row_height: float  # pixels per unit of y
    tick_size: float = TICK_SIZE
    diamonds: tuple[Diamond, ...] = ()
    diamond_label: str = ""  # the diamonds' legend entry, if any
    separators: tuple[float, ...] = ()  # faint lines across the axes at these y
    zero_line: bool = False
    message: str = ""  # written across empty axes
    top_axis: bool = False  # the x tick labels above the axes too (a tall chart: the scale in sight from its top)


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    colour: str
    width: float


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    radius: float
    colour: str


@dataclass(frozen=True)
class Rhombus:
    x: float
    y: float
    radius: float
    colour: str
    width: float


@dataclass(frozen=True)
class Text:
    x: float
    y: float  # the baseline
    text: str
    size: float
    anchor: str = "start"  # start, middle or end, as SVG's text-anchor
    colour: str = BLACK

    def __post_init__(self) -> None:
        # A label is free text: drawn on one line of printable characters, in the SVG and the PNG alike.
        object.__setattr__(self, "text", one_line(self.text))


Shape = Line | Dot | Rhombus | Text


@dataclass
class Drawing:
    width: float
    height: float
    title: str
    shapes: list[Shape] = field(default_factory=list)


def ticks(low: float, high: float, most: int = 8) -> list[float]:
    """Round values from `low` to `high`: the smallest step of 1, 2, 2.5 or 5 times a power of
    ten that gives at most `most` of them."""
    span = max(high - low, 1e-9)
    power = 10.0 ** math.floor(math.log10(span / most))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0, 20.0):
        step = factor * power
        first = math.ceil(low / step - 1e-9)
        values = [(first + index) * step for index in range(int((high - first * step) / step + 1e-9) + 1)]
        if len(values) <= most:
            return [round(value, 10) + 0.0 for value in values]
    return [low, high]


def _tick_label(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:g}"


def layout(chart: Chart) -> Drawing:
    """The chart's shapes in pixels; everything below is arithmetic on the chart's numbers."""
    left = 14 + max((text_width(label, chart.tick_size) for _, label in chart.yticks), default=0.0) + 16
    right = WIDTH - 30
    top = 84.0 if chart.top_axis else 48.0
    height = abs(chart.ylim[1] - chart.ylim[0]) * chart.row_height
    bottom = top + height
    (x0, x1), (y0, y1) = chart.xlim, chart.ylim

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (right - left)

    def py(y: float) -> float:
        return top + (y - y0) / (y1 - y0) * height

    shapes: list[Shape] = []
    for value in ticks(x0, x1):
        shapes.append(Line(px(value), top, px(value), bottom, GRID, 1.2))
        shapes.append(Line(px(value), bottom, px(value), bottom + 7, BLACK, 1.6))
        shapes.append(Text(px(value), bottom + 30, _tick_label(value), TICK_SIZE, "middle"))
        if chart.top_axis:
            shapes.append(Line(px(value), top - 7, px(value), top, BLACK, 1.6))
            shapes.append(Text(px(value), top - 14, _tick_label(value), TICK_SIZE, "middle"))
    shapes += [Line(left, py(y), right, py(y), SEPARATOR, 1.0) for y in chart.separators]
    if chart.zero_line:
        shapes.append(Line(px(0.0), top, px(0.0), bottom, AXIS_GREY, 2.0))
    for y, label in chart.yticks:
        shapes.append(Line(left - 7, py(y), left, py(y), BLACK, 1.6))
        shapes.append(Text(left - 11, py(y) + 0.35 * chart.tick_size, label, chart.tick_size, "end"))
    for series in chart.series:
        for point in series.points:
            shapes += _interval(px(point.low), px(point.high), px(point.value), py(point.y), series)
            if point.note:
                shapes.append(Text(px(point.high) + 10, py(point.y) + 0.35 * NOTE_SIZE, point.note, NOTE_SIZE))
    shapes += [Rhombus(px(d.x), py(d.y), 6.5, d.colour, 2.4) for d in chart.diamonds]
    if chart.message:
        shapes.append(Text((left + right) / 2, (top + bottom) / 2, chart.message, LABEL_SIZE, "middle"))
    shapes += [Line(left, top, left, bottom, BLACK, 1.6), Line(left, bottom, right, bottom, BLACK, 1.6)]
    shapes.append(Text(left, top - (52 if chart.top_axis else 16), chart.title, TITLE_SIZE))
    shapes.append(Text((left + right) / 2, bottom + 64, chart.xlabel, LABEL_SIZE, "middle"))
    end = bottom + 84  # below the x label
    for index, (glyph, label) in enumerate(_legend(chart)):  # one entry a line, under the x label
        y = bottom + 110 + 28 * index
        shapes += (
            _interval(left + 8, left + 40, left + 24, y, glyph) if glyph else [Rhombus(left + 24, y, 6.5, BLACK, 2.4)]
        )
        shapes.append(Text(left + 54, y + 0.35 * LEGEND_SIZE, label, LEGEND_SIZE))
        end = y + 26
    return Drawing(WIDTH, round(end), chart.title, shapes)


def _legend(chart: Chart) -> list[tuple[Series | None, str]]:
    """Each labelled series with its error-bar glyph, then the diamonds' entry (glyph None)."""
    entries: list[tuple[Series | None, str]] = [(series, series.label) for series in chart.series if series.label]
    return entries + ([(None, chart.diamond_label)] if chart.diamond_label else [])


def _interval(low: float, high: float, value: float, y: float, series: Series) -> list[Shape]:
    """An error bar: the interval's line with a cap at each end, and the dot on top."""
    return [
        Line(low, y, high, y, series.colour, 2.6),
        Line(low, y - 6.5, low, y + 6.5, series.colour, 2.6),
        Line(high, y - 6.5, high, y + 6.5, series.colour, 2.6),
        Dot(value, y, series.dot, series.colour),
    ]


def _n(value: float) -> str:
    return f"{value:.2f}"


def svg(drawing: Drawing) -> bytes:
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(drawing.width)}" height="{_n(drawing.height)}" '
        f'viewBox="0 0 {_n(drawing.width)} {_n(drawing.height)}" font-family="{FONT}">',
        f"<title>{xml_text(drawing.title)}</title>",
        f'<rect width="{_n(drawing.width)}" height="{_n(drawing.height)}" fill="#ffffff"/>',
    ]
    for shape in drawing.shapes:
        if isinstance(shape, Line):
            out.append(
                f'<line x1="{_n(shape.x1)}" y1="{_n(shape.y1)}" x2="{_n(shape.x2)}" y2="{_n(shape.y2)}" '
                f'stroke="{shape.colour}" stroke-width="{_n(shape.width)}"/>'
            )
        elif isinstance(shape, Dot):
            out.append(f'<circle cx="{_n(shape.x)}" cy="{_n(shape.y)}" r="{_n(shape.radius)}" fill="{shape.colour}"/>')
        elif isinstance(shape, Rhombus):
            corners = " ".join(f"{_n(x)},{_n(y)}" for x, y in _corners(shape))
            out.append(
                f'<polygon points="{corners}" fill="none" stroke="{shape.colour}" stroke-width="{_n(shape.width)}"/>'
            )
        else:
            out.append(
                f'<text x="{_n(shape.x)}" y="{_n(shape.y)}" font-size="{_n(shape.size)}" '
                f'text-anchor="{shape.anchor}" fill="{shape.colour}">{xml_text(shape.text)}</text>'
            )
    return ("\n".join(out) + "\n</svg>\n").encode("utf-8")


def _corners(shape: Rhombus) -> list[tuple[float, float]]:
    r = shape.radius
    return [(shape.x, shape.y - r), (shape.x + r, shape.y), (shape.x, shape.y + r), (shape.x - r, shape.y)]


def png(drawing: Drawing) -> bytes:
    """The drawing rasterized by Pillow: lines and markers at twice the size, then halved (smooth
    edges), and the text on top at the final size (FreeType smooths it already)."""
    from PIL import Image, ImageDraw, ImageFont

    scale = 2
    image = Image.new("RGB", (round(drawing.width) * scale, round(drawing.height) * scale), "#ffffff")
    draw = ImageDraw.Draw(image)
    for shape in drawing.shapes:
        if isinstance(shape, Line):
            box = [shape.x1 * scale, shape.y1 * scale, shape.x2 * scale, shape.y2 * scale]
            draw.line(box, fill=shape.colour, width=max(1, round(shape.width * scale)))
        elif isinstance(shape, Dot):
            r = shape.radius * scale
            x, y = shape.x * scale, shape.y * scale
            draw.ellipse([x - r, y - r, x + r, y + r], fill=shape.colour)
        elif isinstance(shape, Rhombus):
            corners = [(x * scale, y * scale) for x, y in _corners(shape)]
            draw.polygon(corners, outline=shape.colour, width=round(shape.width * scale))
    image = image.reduce(scale)
    draw = ImageDraw.Draw(image)
    fonts: dict[float, ImageFont.FreeTypeFont | ImageFont.ImageFont] = {}
    anchors = {"start": "ls", "middle": "ms", "end": "rs"}
    for text in (shape for shape in drawing.shapes if isinstance(shape, Text)):
        font = fonts.get(text.size) or fonts.setdefault(text.size, ImageFont.load_default(text.size))
        draw.text(
            (text.x, text.y), text.text.translate(_PNG_TEXT), fill=text.colour, font=font, anchor=anchors[text.anchor]
        )
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
