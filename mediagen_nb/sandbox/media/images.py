"""Drawing images: a seeded gradient-and-shapes canvas with the prompt on it, preview cards, a face."""

import colorsys
import functools
import io

from PIL import Image, ImageDraw, ImageFilter, ImageFont

from mediagen_nb.sandbox.media.spec import seeded


def _color(hue: float, saturation: float, value: float) -> tuple[int, int, int]:
    """Convert an HSV triple (hue wraps around) to an 8-bit RGB tuple."""
    r, g, b = colorsys.hsv_to_rgb(hue % 1.0, saturation, value)
    return round(r * 255), round(g * 255), round(b * 255)


@functools.lru_cache(maxsize=64)
def typeface(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Return Pillow's bundled font at `size` pixels (cached: loading it is the slow part of drawing text)."""
    return ImageFont.load_default(size=size)


def canvas(prompt: str, seed: int, width: int, height: int, variant: int = 0) -> Image.Image:
    """Draw the seeded gradient-and-shapes composition that images, frames and previews start from."""
    rng = seeded("canvas", seed, prompt, variant)
    hue = rng.random()
    top = _color(hue, 0.55, 0.95)
    bottom = _color(hue + rng.uniform(0.25, 0.6), 0.65, 0.4)
    # Rotating the 256x256 ramp with expand=True leaves its centre square fully covered at any angle.
    ramp = Image.linear_gradient("L").rotate(rng.uniform(0, 360), Image.Resampling.BICUBIC, expand=True)
    cx, cy = ramp.width // 2, ramp.height // 2
    mask = ramp.crop((cx - 90, cy - 90, cx + 90, cy + 90)).resize((width, height), Image.Resampling.BILINEAR)
    image = Image.composite(
        Image.new("RGB", (width, height), bottom), Image.new("RGB", (width, height), top), mask
    )
    draw = ImageDraw.Draw(image, "RGBA")  # RGBA fills blend into the RGB picture
    side = min(width, height)
    for _ in range(rng.randint(4, 8)):
        r = rng.uniform(0.08, 0.35) * side
        x, y = rng.uniform(0, width), rng.uniform(0, height)
        fill = (*_color(hue + rng.uniform(-0.3, 0.3), rng.uniform(0.3, 0.8), rng.uniform(0.5, 1.0)), 110)
        shape = rng.randrange(3)
        if shape == 0:
            draw.ellipse((x - r, y - r, x + r, y + r), fill=fill)
        elif shape == 1:
            draw.rounded_rectangle((x - r, y - r * 0.6, x + r, y + r * 0.6), radius=r * 0.2, fill=fill)
        else:
            draw.regular_polygon((x, y, r), 3, rotation=rng.uniform(0, 120), fill=fill)
    return image


def _wrap(text: str, font: ImageFont.FreeTypeFont | ImageFont.ImageFont, max_width: float) -> list[str]:
    """Break `text` into lines no wider than `max_width` pixels, splitting over-long words by character."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if font.getlength(candidate) <= max_width:
            line = candidate
            continue
        if line:
            lines.append(line)
        line = ""
        for char in word:
            if line and font.getlength(line + char) > max_width:
                lines.append(line)
                line = ""
            line += char
    if line:
        lines.append(line)
    return lines


def caption(draw: ImageDraw.ImageDraw, size: tuple[int, int], text: str, font_size: int) -> None:
    """Draw `text` wrapped on a translucent panel over the lower part of a `size` picture."""
    if not text.strip():
        return
    width, height = size
    font = typeface(font_size)
    margin = max(2, font_size // 2)
    line_height = round(font_size * 1.25)
    lines = _wrap(text, font, width - 4 * margin)
    room = max(1, int(height * 0.45 - 2 * margin) // line_height)
    if len(lines) > room:
        lines = [*lines[: room - 1], lines[room - 1] + "..."]
    top = height - margin - 2 * margin - len(lines) * line_height
    draw.rounded_rectangle((margin, top, width - margin, height - margin), radius=margin, fill=(0, 0, 0, 120))
    for i, line in enumerate(lines):
        draw.text((2 * margin, top + margin + i * line_height), line, font=font, fill=(255, 255, 255, 255))


def picture(prompt: str, seed: int, width: int, height: int) -> Image.Image:
    """Compose the picture for an image spec: the seeded canvas with the prompt wrapped onto it."""
    image = canvas(prompt, seed, width, height)
    caption(ImageDraw.Draw(image, "RGBA"), image.size, prompt, max(8, min(width, height) // 20))
    return image


def image_bytes(image: Image.Image, fmt: str) -> bytes:
    """Encode `image` as PNG or JPEG bytes (both encoders are deterministic)."""
    buffer = io.BytesIO()
    if fmt == "jpg":
        image.save(buffer, "JPEG", quality=88)
    else:
        image.save(buffer, "PNG")
    return buffer.getvalue()


def render_image(prompt: str, *, seed: int, width: int, height: int) -> bytes:
    """Render a PNG of a seeded gradient/shape composition with `prompt` drawn on it."""
    return image_bytes(picture(prompt, seed, width, height), "png")


def render_preview(model_id: str) -> bytes:
    """Render the 320x180 catalog preview card for `model_id`: its own background with the id in big type."""
    image = canvas(model_id, 0, 320, 180)
    draw = ImageDraw.Draw(image, "RGBA")
    draw.rectangle((0, 118, 320, 180), fill=(0, 0, 0, 140))
    size = 26
    while size > 9 and typeface(size).getlength(model_id) > 296:
        size -= 1
    draw.text((12, 149), model_id, font=typeface(size), anchor="lm", fill=(255, 255, 255, 255))
    draw.text((12, 10), "model preview", font=typeface(12), fill=(255, 255, 255, 210))
    return image_bytes(image, "png")


def face_png() -> bytes:
    """Draw the sample portrait (512x512): a frontal face on a blurred backdrop, a lip-sync input."""
    image = canvas("studio portrait backdrop", 21, 512, 512).filter(ImageFilter.GaussianBlur(14))
    draw = ImageDraw.Draw(image)
    skin, shade, hair, lips, iris = (
        (226, 184, 152),
        (200, 152, 122),
        (58, 40, 30),
        (176, 78, 86),
        (70, 110, 60),
    )
    draw.ellipse((86, 408, 426, 680), fill=(52, 84, 130))  # shoulders
    draw.rectangle((218, 320, 294, 440), fill=shade)  # neck
    draw.ellipse((138, 70, 374, 330), fill=hair)  # hair behind the head
    draw.ellipse((146, 214, 184, 286), fill=shade)  # ears
    draw.ellipse((328, 214, 366, 286), fill=shade)
    draw.ellipse((164, 100, 348, 372), fill=skin)  # face
    draw.chord((156, 84, 356, 214), 180, 360, fill=hair)  # fringe
    for cx, tilt in ((214, -5), (298, 5)):
        draw.ellipse((cx - 22, 222, cx + 22, 246), fill=(250, 250, 248))
        draw.ellipse((cx - 10, 224, cx + 10, 244), fill=iris)
        draw.ellipse((cx - 5, 229, cx + 5, 239), fill=(10, 10, 10))
        draw.line((cx - 24, 206 - tilt, cx + 22, 206 + tilt), fill=hair, width=6)  # eyebrows
    draw.line((256, 244, 246, 292, 262, 298), fill=shade, width=4, joint="curve")  # nose
    draw.chord((220, 312, 292, 344), 0, 180, fill=lips)  # mouth
    draw.line((222, 320, 290, 320), fill=(120, 50, 56), width=2)
    return image_bytes(image, "png")
