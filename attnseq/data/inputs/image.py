"""``data.input: image``: the source column names an image file (PNG, JPEG, anything Pillow
reads), read in grey levels, scaled to ``height`` pixel rows (its aspect ratio kept) and turned so
that ink is high and the background 0 (``invert`` for dark ink on a light page), the value the
batch pads with. Its features are the image's columns: (width, height), uint8."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import DataError
from ...schema import number
from .base import INPUTS, InputKind, check_text_settings

# Each cell of the grid the model reads (a column of ``height`` rows, ``positions`` of them) may come
# from at most 16 x 16 pixels of the file: a larger image is refused from its header, before decoding.
PIXELS_PER_CELL = 256


@dataclass
class ImageOptions:
    height: int = number(32, 8, 1024)  # pixel rows every image is scaled to (its width scaled alike)
    invert: bool = True  # dark ink on a light background (the page's ink becomes high values)


@INPUTS.register("image", options=ImageOptions)
class ImageInput(InputKind):
    """Images in grey levels, ``options.height`` pixel rows each, read column by column."""

    default_frontend = "conv"

    @property
    def feature_size(self) -> int:
        return self.options.height

    def check(self, data) -> None:
        check_text_settings(self, data)

    def budget(self, positions: int) -> int:
        """The most pixels an image may declare when the model reads ``positions`` columns of it
        (0: no limit of ours; Pillow's own guard against decompression bombs still applies)."""
        return positions * self.options.height * PIXELS_PER_CELL if positions else 0

    def _features(self, source, name: str, positions: int = 0) -> np.ndarray:
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(source) as image:  # the header only: nothing is decoded yet
                width, height = image.size
                budget = self.budget(positions)
                if budget and width * height > budget:
                    raise DataError(
                        f"{name}: an image of {width} x {height} pixels, over the {budget:,} pixels a model "
                        f"reading {positions} columns (decode.max_source_len) of {self.options.height} rows "
                        f"decodes; send it scaled down"
                    )
                grey = image.convert("L")
        except Image.DecompressionBombError:  # Pillow's own limit, met before the header reached ours
            limit = (
                f"the {self.budget(positions):,} pixels a model reading {positions} columns decodes"
                if positions
                else (f"Pillow's limit of {2 * Image.MAX_IMAGE_PIXELS:,} pixels")
            )
            raise DataError(f"{name}: an image declaring more than {limit}; send it scaled down") from None
        except (OSError, UnidentifiedImageError, ValueError) as err:
            raise DataError(f"{name}: cannot read as an image ({err})") from None
        rows = self.options.height
        columns = max(1, round(width * rows / height))
        if positions and columns > positions + 1:  # the model reads the first ``positions``: scale no more
            kept = min(width, math.ceil((positions + 1) * height / rows))
            grey, width, columns = grey.crop((0, 0, kept, height)), kept, positions + 1
        if (columns, rows) != (width, height):
            grey = grey.resize((columns, rows), Image.Resampling.BILINEAR)
        pixels = np.asarray(grey, dtype=np.uint8)  # (H, W)
        if self.options.invert:
            pixels = 255 - pixels
        return np.ascontiguousarray(pixels.T)  # (W, H): a column per position

    def read(self, path: Path, positions: int = 0) -> np.ndarray:
        wrong = self.probe(path)
        if wrong is not None:
            raise DataError(f"{path}: {wrong}")
        return self._features(path, str(path), positions)

    def read_bytes(self, data: bytes, name: str, positions: int = 0) -> np.ndarray:
        return self._features(io.BytesIO(data), name, positions)

    def geometry(self, features: np.ndarray) -> tuple[int, ...]:
        """(height, width) in pixels, as the model read the image."""
        return (features.shape[1], features.shape[0])

    def probe(self, path: Path) -> str | None:
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(path):
                return None
        except FileNotFoundError:
            return "no such file"
        except UnidentifiedImageError:
            return "not an image Pillow can read"
        except OSError as err:
            return err.strerror or str(err)


def image_array(features: np.ndarray, invert: bool = True) -> np.ndarray:
    """The image (H, W) uint8 of ``features`` (W, H) as ImageInput read it, ink dark again when
    ``invert``: what a plot draws under the attention."""
    pixels = np.asarray(features).T
    return 255 - pixels if invert else pixels
