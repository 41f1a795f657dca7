"""The JSON API's request and response models: FastAPI validates requests against them and
documents both at /docs. Unknown fields are refused rather than ignored, and types are strict:
a field takes a value of its JSON type only (``"beam_size": true`` or ``"3"`` or ``3.0`` is
refused, not read as a number)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TranslateRequest(BaseModel):
    """POST /translate: one source sentence, decoded by one run."""

    model_config = ConfigDict(extra="forbid", strict=True)

    text: str = Field(
        description="the source sentence (not blank, Unicode text without lone surrogates; "
        "at most the server's --max-chars)"
    )
    run: str | None = Field(None, description="a run's name from GET /runs; default: the first run")
    beam_size: int | None = Field(None, description="1: greedy search; default: the run's decode.beam_size")
    n_best: int | None = Field(None, description="hypotheses returned, at most beam_size; default: beam_size")
    return_attention: bool = Field(True, description="include every attention view of each hypothesis")


class Window(BaseModel):
    width: int = Field(description="D: the window is [p_t - D, p_t + D]")
    bounds: list[list[int]] = Field(description="(T_out, 2): first and last source position per output step")
    centres: list[float] = Field(description="(T_out,): the aligned source position p_t per output step")


class Hypothesis(BaseModel):
    output: str
    score: float = Field(description="sum of token log-probabilities (over the length penalty)")
    output_tokens: list[str]
    attention: list[list[float]] | None = Field(
        None, description="(T_out, S): one row per decoding step (the end step included), reading order"
    )
    cross_attention: list[list[list[list[float]]]] | None = Field(
        None, description="(layers, heads, T_out, S): every layer's and head's attention over the source"
    )
    window: Window | None = Field(None, description="local attention's window per output step")
    p_gen: list[float] | None = Field(
        None, description="(T_out,): a copying model's generation probability per output step (1 - p_gen copied)"
    )


class SourceShape(BaseModel):
    kind: str = Field(description="the run's data.input: image (audio, ...)")
    size: list[int] = Field(description="the input's extent as the model read it: [height, width] pixels")
    grid: list[int] = Field(
        description="the cells the attention's S positions are, column by column (S = column "
        "x rows + row): [rows, columns]"
    )


class TranslateResponse(BaseModel):
    run: str
    source: str = Field(description="the text; 'upload' for a file sent to POST /translate/file")
    source_tokens: list[str] = Field(
        description="as the encoder reads them, in reading order (laid out as the "
        "run's training sources were: the book's padding)"
    )
    unknown: list[str] = Field(
        description="the source's pieces outside the run's vocabulary, each read as the "
        "unknown token (control characters such as NUL among them)"
    )
    source_shape: SourceShape | None = Field(
        None, description="a source that is a file: where the attention's S positions lie on it (null for text)"
    )
    cut: bool = Field(
        False,
        description="the source held more tokens (a file: positions) than the run's decode.max_source_len: "
        "the model read the first ones, and the outputs and attention are of those",
    )
    empty: bool = Field(
        False,
        description="the model's best output is the empty string (the source is not blank): the one "
        "case where a hypothesis is empty, always the first",
    )
    hypotheses: list[Hypothesis] = Field(description="best first")
    spectrogram: list[list[float]] | None = Field(
        None,
        description="an audio source with attention: its log-mel frames (frames, bands) as the run read them, "
        "what the attention's listener steps cover (source_shape)",
    )
    encoder_attention: list[list[list[list[float]]]] | None = Field(
        None, description="(layers, heads, S, S): the Transformer encoder's self-attention"
    )


class RunInfo(BaseModel):
    name: str
    path: str
    engine: str
    arch: str
    attention: str = Field(description="the attention scorer of a recurrent decoder ('' for a Transformer)")
    description: str
    input: str = Field(description="what its sources are (data.input): text, or image (POST /translate/file)")
    max_beam: int = Field(description="the widest beam this run may be asked for")
    default_beam: int


class ErrorResponse(BaseModel):
    error: str = Field(description="one line saying what is wrong")
    field: str | None = Field(None, description="the request field at fault")
