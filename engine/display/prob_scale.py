"""The one probability colour scale: which colour shades a token chosen with
probability p, and which text colour stays readable on it. Plain Python (no Qt):
the app's token views and the HTML export both draw from here.

Two scales: "heat" (red → yellow → green, as in heat maps) and "cividis" (dark blue
→ grey → yellow, readable with the common colour-vision deficiencies).
"""

from __future__ import annotations

RGB = tuple[int, int, int]

DEFAULT_SCALE = "heat"
SCALES: dict[str, tuple[tuple[float, RGB], ...]] = {
    "heat": ((0.0, (248, 105, 107)), (0.5, (255, 235, 132)), (1.0, (99, 190, 123))),
    # matplotlib's cividis (CC0), sampled at nine points.
    "cividis": tuple(
        (i / 8, c)
        for i, c in enumerate(
            (
                (0, 32, 77),
                (6, 54, 110),
                (65, 77, 107),
                (97, 100, 111),
                (125, 124, 120),
                (155, 148, 119),
                (188, 175, 111),
                (224, 203, 94),
                (255, 234, 70),
            )
        )
    ),
}
SCALE_LABELS = {"heat": "Red → green", "cividis": "Colour-blind safe (cividis)"}
CLI_SCALES = {"red-green": "heat", "cividis": "cividis"}  # `export --scale` name -> scale
NOT_REPORTED_RGB: RGB = (238, 238, 238)  # no probability: neutral, never a made-up shade
DARK_TEXT: RGB = (0, 0, 0)
LIGHT_TEXT: RGB = (255, 255, 255)


def scale_name(name: str | None) -> str:
    """`name` if it is a known scale, else the default one."""
    return name if name in SCALES else DEFAULT_SCALE


def prob_rgb(p: float | None, scale: str = DEFAULT_SCALE) -> RGB:
    """The shading colour of a token chosen with probability p (None: not reported)."""
    if p is None:
        return NOT_REPORTED_RGB
    stops = SCALES[scale_name(scale)]
    p = min(max(p, 0.0), 1.0)
    for (p0, c0), (p1, c1) in zip(stops, stops[1:], strict=False):
        if p <= p1:
            f = (p - p0) / (p1 - p0)
            return tuple(round(a + (b - a) * f) for a, b in zip(c0, c1, strict=True))
    return stops[-1][1]


def hex_rgb(rgb: RGB) -> str:
    """'#rrggbb' for an (r, g, b) triple."""
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def gradient_stops(scale: str = DEFAULT_SCALE) -> list[tuple[float, str]]:
    """The scale's stops as (position, '#rrggbb'), for a gradient legend."""
    return [(p, hex_rgb(c)) for p, c in SCALES[scale_name(scale)]]


def luminance(rgb: RGB) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0 black … 1 white)."""

    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: RGB, b: RGB) -> float:
    """WCAG 2 contrast ratio of two colours (1 … 21; text wants at least 4.5)."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def text_rgb(background: RGB) -> RGB:
    """The text colour (near-black or white) with the higher contrast on `background`."""
    dark, light = contrast_ratio(DARK_TEXT, background), contrast_ratio(LIGHT_TEXT, background)
    return DARK_TEXT if dark >= light else LIGHT_TEXT
