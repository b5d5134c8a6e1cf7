"""The browser tab's icon, drawn here so that the page asks no other site for it.

Streamlit turns a ``:material/...:`` page icon into an image fetched from fonts.gstatic.com, which
would make every visit contact Google; an image made in memory is served by the app itself.
"""

from __future__ import annotations

from PIL import Image, ImageDraw

SIZE = 64
COLOUR = (49, 51, 63, 255)


def draw_icon() -> Image.Image:
    """A balance: a post, a beam and two pans, on a transparent square."""
    image = Image.new("RGBA", (SIZE, SIZE), (0, 0, 0, 0))
    pen = ImageDraw.Draw(image)
    pen.rectangle((30, 10, 34, 54), fill=COLOUR)  # the post
    pen.rectangle((18, 54, 46, 58), fill=COLOUR)  # its foot
    pen.rectangle((8, 14, 56, 18), fill=COLOUR)  # the beam
    for centre in (14, 50):
        pen.line((centre, 18, centre - 8, 38), fill=COLOUR, width=2)
        pen.line((centre, 18, centre + 8, 38), fill=COLOUR, width=2)
        pen.chord((centre - 11, 28, centre + 11, 48), 0, 180, fill=COLOUR)  # a pan
    return image


#: Drawn once per server process (when the router is first imported).
ICON = draw_icon()
