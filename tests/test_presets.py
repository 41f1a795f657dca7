"""The recommended preset for a data set, and the settings it takes for that data."""

from __future__ import annotations

import random

from helpers import write_tsv
from hypothesis import given
from hypothesis import strategies as st

from attnseq.presets import SEPARATE, alphabet_shared, recommended_config

LATIN = "abcdefghijklmnopqrstuvwxyz"
CYRILLIC = "абвгдежзийклмнопрстуфхцчшщыэюя"


def words(alphabet: str, n: int, rng: random.Random) -> list[str]:
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(4, 9))) for _ in range(n)]


def text_folder(folder, target_alphabet: str):
    """train/dev/test.tsv of English-like sources and targets of 3 words in ``target_alphabet``,
    about 6,000 distinct target words (text: the subword preset)."""
    rng = random.Random(0)
    sources, targets = words(LATIN, 6000, rng), words(target_alphabet, 6000, rng)
    pairs = [(" ".join(rng.sample(sources, 3)), " ".join(rng.sample(targets, 3))) for _ in range(3000)]
    folder.mkdir(parents=True)
    for split, part in (("train", pairs[:2800]), ("dev", pairs[2800:2900]), ("test", pairs[2900:])):
        write_tsv(folder / f"{split}.tsv", part)
    return folder


@given(st.text(LATIN, min_size=1), st.text(CYRILLIC, min_size=1), st.text(LATIN + CYRILLIC))
def test_the_shared_alphabet_is_the_share_of_target_letters_the_sources_use(latin, cyrillic, mixed):
    assert alphabet_shared([(latin, cyrillic)]) == 0.0
    assert alphabet_shared([(latin + cyrillic, cyrillic), (latin, latin)]) == 1.0
    share = alphabet_shared([(latin, mixed)])
    assert 0.0 <= share <= 1.0
    assert share == (sum(c in latin for c in mixed) / len(mixed) if mixed else 1.0)


def test_text_in_two_alphabets_keeps_two_vocabularies_and_one_alphabet_shares_one(tmp_path):
    """English to a Latin-script language: the subword preset as it is (one vocabulary, tied
    embeddings); to a Cyrillic one: SEPARATE, which the user's --set still overrides."""
    from attnseq.cli import build_parser
    from attnseq.cli.train import load_config

    latin = text_folder(tmp_path / "latin", LATIN)
    cyrillic = text_folder(tmp_path / "cyrillic", CYRILLIC)
    assert recommended_config(latin)[0].name == "recommended-subword.yaml"
    assert recommended_config(latin)[1] == []
    assert recommended_config(cyrillic)[1] == list(SEPARATE)
    args = build_parser().parse_args(["train", "--data", str(cyrillic), "--out", str(tmp_path / "r")])
    assert not load_config(args).data.shared_vocab
    args = build_parser().parse_args(
        ["train", "--data", str(cyrillic), "--out", str(tmp_path / "r"), "--set", "data.shared_vocab=true"]
    )
    assert load_config(args).data.shared_vocab
