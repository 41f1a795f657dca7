"""The memory architectures (memn2n, ntm, han): sentences split from token ids, shapes and
masks, padding that changes nothing, teacher forcing equal to stepping, the NTM's addressing
and memory maths against finite differences, and config errors that name the key."""

from __future__ import annotations

import pytest
import torch
from helpers import assert_teacher_forcing_equals_stepping

from attnseq.config import load_config
from attnseq.data.batching import SourceBatch
from attnseq.data.vocab import Vocab
from attnseq.decoding.greedy import greedy_search
from attnseq.errors import ConfigError
from attnseq.nn import build_model
from attnseq.nn.memory_networks import addressing
from attnseq.nn.memory_networks.memn2n import PositionEncoding
from attnseq.nn.memory_networks.sentences import NO_SEPARATOR, split_sentences, token_weights

VOCAB = Vocab([".", "?", "a", "b", "c", "d", "e", "where"])
SEP = VOCAB.stoi["."]
A, B, C, D, E, WHERE, Q = (VOCAB.stoi[t] for t in ("a", "b", "c", "d", "e", "where", "?"))

ARCHS = {
    "memn2n": ["model.arch=memn2n", "model.embed_size=6"],
    "memn2n-layerwise-bag": [
        "model.arch=memn2n",
        "model.embed_size=6",
        "model.tying=layerwise",
        "model.sentence=bag",
        "model.temporal=false",
    ],
    "han": ["model.arch=han", "model.embed_size=6", "model.hidden_size=5"],
    "ntm": [
        "model.arch=ntm",
        "model.embed_size=6",
        "model.hidden_size=10",
        "model.memory_locations=12",
        "model.memory_width=5",
        "model.read_heads=2",
        "model.write_heads=2",
    ],
    "ntm-feedforward": [
        "model.arch=ntm",
        "model.controller=feedforward",
        "model.embed_size=6",
        "model.hidden_size=10",
        "model.memory_locations=12",
        "model.memory_width=5",
        "model.read_heads=3",
        "model.write_heads=2",
    ],
}


def model_of(name: str, *extra: str):
    torch.manual_seed(0)
    cfg = load_config(None, ARCHS[name] + list(extra)).model
    return build_model(cfg, len(VOCAB), len(VOCAB), shares_vocab=True, src_vocab=VOCAB).double().eval()


def stories():
    """Three padded sources: 3 sentences and a question; 1 sentence and a question; 2 sentences."""
    rows = [[A, B, SEP, C, SEP, D, E, A, SEP, WHERE, B, Q], [C, D, SEP, WHERE, A, Q], [E, SEP, A, B, SEP]]
    src = torch.zeros(3, 12, dtype=torch.long)
    for i, row in enumerate(rows):
        src[i, : len(row)] = torch.tensor(row)
    return src, src != 0


# -- sentences ------------------------------------------------------------------------------------
def test_split_sentences_into_a_grid_with_the_question_apart():
    src, mask = stories()
    s = split_sentences(src, mask, SEP, has_question=True)
    assert s.words.shape == (3, 3, 3)
    assert s.words[0].tolist() == [[A, B, 0], [C, 0, 0], [D, E, A]]
    assert s.mask.tolist() == [[True] * 3, [True, False, False], [True, True, False]]
    assert s.age[0].tolist() == [2, 1, 0] and s.age[2, :2].tolist() == [1, 0]
    assert s.question[0].tolist() == [WHERE, B, Q] and s.question[1].tolist() == [WHERE, A, Q]
    assert not s.question_mask[2].any()  # a story that ends with a separator has no question
    assert s.sentence_of[0].tolist() == [0, 0, -1, 1, -1, 2, 2, 2, -1, -1, -1, -1]
    assert s.position_of[0, :8].tolist() == [0, 1, 0, 0, 0, 0, 1, 2]


def test_documents_keep_a_last_sentence_without_separator_and_memory_keeps_the_most_recent():
    src, mask = stories()
    doc = split_sentences(src, mask, SEP, has_question=False)
    assert doc.mask.sum(1).tolist() == [4, 2, 2]
    assert doc.words[1, 1].tolist()[:3] == [WHERE, A, Q]
    recent = split_sentences(src, mask, SEP, has_question=True, max_sentences=2)
    assert recent.words[0].tolist() == [[C, 0, 0], [D, E, A]]
    assert recent.sentence_of[0, :3].tolist() == [-1, -1, -1]  # the oldest sentence fell out
    one = split_sentences(src, mask, NO_SEPARATOR, has_question=False)  # no separator: one sentence
    assert one.mask.sum(1).tolist() == [1, 1, 1]


def test_token_weights_carry_sentence_weights_onto_their_words():
    src, mask = stories()
    s = split_sentences(src, mask, SEP, has_question=True)
    p = torch.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0], [0.4, 0.6, 0.0]])
    w = token_weights(s, p)
    assert torch.allclose(w.sum(1), torch.ones(3))
    assert torch.allclose(w[0, :8], torch.tensor([0.1, 0.1, 0, 0.3, 0, 0.5 / 3, 0.5 / 3, 0.5 / 3]))
    assert torch.all(w[~mask] == 0)


def test_position_encoding_is_the_papers_formula():
    mask = torch.tensor([[True, True, True, False]])
    l = PositionEncoding().weights(mask, 4)  # J = 3 words, d = 4
    for j in range(1, 4):
        for k in range(1, 5):
            assert l[0, j - 1, k - 1].item() == pytest.approx((1 - j / 3) - (k / 4) * (1 - 2 * j / 3))
    assert torch.all(l[0, 3] == 0)


# -- the models -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ARCHS)
def test_teacher_forcing_equals_stepping(name):
    model = model_of(name)
    src, mask = stories()
    tgt_in = torch.tensor([[1, A, B], [1, C, 0], [1, D, E]])
    assert_teacher_forcing_equals_stepping(model, src, mask, tgt_in)


@pytest.mark.parametrize("name", ARCHS)
def test_padding_changes_nothing(name):
    """Each source alone gives the logits it gets inside the padded batch."""
    model = model_of(name)
    src, mask = stories()
    tgt_in = torch.tensor([[1, A], [1, B], [1, C]])
    logits = model.logits(SourceBatch(src, mask), tgt_in)
    for b in range(3):
        n = int(mask[b].sum())
        alone = model.logits(SourceBatch(src[b : b + 1, :n], mask[b : b + 1, :n]), tgt_in[b : b + 1])
        torch.testing.assert_close(logits[b], alone[0])


@pytest.mark.parametrize("name", ["memn2n", "han"])
def test_readers_answer_one_token_then_attend_no_more(name):
    model = model_of(name)
    src, mask = stories()
    features, alignment = model(SourceBatch(src, mask), torch.tensor([[1, A, B]] * 3))
    assert features.shape == (3, 3, model.decoder.feature_size)
    torch.testing.assert_close(alignment[:, 0].sum(1), torch.ones(3, dtype=torch.double))  # the answer's reading
    assert torch.all(alignment[:, 1:] == 0) and torch.all(alignment[:, 0][~mask] == 0)
    torch.testing.assert_close(features[:, 1], features[:, 2])  # after the answer: the end vector
    reading = model.encode(SourceBatch(src, mask))
    hops = reading.sentences  # (B, K, N): each read sums to one over the real sentences
    torch.testing.assert_close(hops.sum(-1), torch.ones(hops.shape[:2], dtype=torch.double))
    assert torch.all(hops.masked_select(~reading.mask.unsqueeze(1)) == 0) and not reading.mask.all()


def test_memn2n_hops_and_adjacent_tying():
    model = model_of("memn2n", "model.hops=2")
    tying = model.encoder.tying
    assert len(tying.matrices) == 3  # A^1 = B, C^1 = A^2, C^2 = W^T
    assert model.decoder.generator.weight is tying.matrices[-1].tokens.weight
    assert model.encode(SourceBatch(*stories())).sentences.shape == (3, 2, 3)
    layerwise = model_of("memn2n-layerwise-bag")
    assert len(layerwise.encoder.tying.matrices) == 2
    assert layerwise.decoder.generator.weight is not layerwise.encoder.tying.matrices[-1].tokens.weight


def test_ntm_shares_one_machine_and_aligns_reads_with_writes():
    model = model_of("ntm")
    assert model.encoder.cell is model.decoder.cell
    src, mask = stories()
    tape = model.encode(SourceBatch(src, mask))
    assert tape.keys.shape == (3, 12, 5) and tape.writing.shape == (3, 12, 2, 12)
    assert torch.all(tape.written[~mask] == 0)
    torch.testing.assert_close(tape.written[mask].sum(-1), torch.ones(int(mask.sum()), dtype=torch.double))
    hyps = greedy_search(model, SourceBatch(src, mask), torch.full((3,), 4), keep_attention=True)
    assert all(h[0].alignment.shape[1] == int(n) for h, n in zip(hyps, mask.sum(1)))


def test_adjacent_tying_needs_one_vocabulary():
    cfg = load_config(None, ARCHS["memn2n"]).model
    with pytest.raises(ConfigError, match="data.shared_vocab"):
        build_model(cfg, len(VOCAB), len(VOCAB), shares_vocab=False, src_vocab=VOCAB)


@pytest.mark.parametrize(
    "override, key",
    [
        ("model.tying=rowwise", "model.tying"),
        ("model.sentence=sum", "model.sentence"),
        ("model.cell=lstm", "model.cell"),  # han only
        ("model.separator=a b", "model.separator"),
        ("model.decoder=luong", "model.decoder"),
    ],
)
def test_config_errors_name_the_key(override, key):
    from attnseq.nn import check_model

    with pytest.raises(ConfigError, match=key):
        check_model(load_config(None, ["model.arch=memn2n", override]).model)


def test_ntm_feedforward_controller_keeps_no_state_of_its_own():
    """model.controller=feedforward: h_t = tanh(W [x_t; r_t-1] + b) whatever came before, c stays
    zero; what the machine remembers is in its memory and heads."""
    cell = model_of("ntm-feedforward").encoder.cell
    x = torch.randn(2, cell.input_size, dtype=torch.double)
    machine = cell.initial(2, x)
    machine["h"] = torch.randn_like(machine["h"])  # a controller with a state would read these
    machine["c"] = torch.randn_like(machine["c"])
    _, after = cell(x, machine)
    controls = torch.cat([x, machine["reads"].reshape(2, -1)], -1)
    torch.testing.assert_close(after["h"], torch.tanh(cell.controller(controls)))
    torch.testing.assert_close(after["c"], machine["c"])
    assert isinstance(cell.controller, torch.nn.Linear) and cell.R == 3 and cell.W == 2


def test_ntm_shifts_must_fit_the_memory():
    from attnseq.nn import check_model

    with pytest.raises(ConfigError, match="model.shift_range"):
        check_model(load_config(None, ["model.arch=ntm", "model.memory_locations=4", "model.shift_range=2"]).model)


# -- the NTM's addressing ---------------------------------------------------------------------------
def addressing_inputs(batch=2, heads=2, locations=5, width=3, shifts=3):
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.double)  # noqa: E731
    return {
        "memory": r(batch, locations, width),
        "previous": torch.softmax(r(batch, heads, locations), -1),
        "key": r(batch, heads, width),
        "strength": r(batch, heads, 1).exp(),
        "gate": torch.sigmoid(r(batch, heads, 1)),
        "shift": torch.softmax(r(batch, heads, shifts), -1),
        "gamma": 1 + r(batch, heads, 1).exp(),
    }


@pytest.mark.parametrize(
    "function, names",
    [
        (addressing.content_weights, ("memory", "key", "strength")),
        (addressing.interpolate, ("previous", "previous", "gate")),
        (addressing.circular_shift, ("previous", "shift")),
        (addressing.sharpen, ("previous", "gamma")),
        (addressing.address, ("memory", "previous", "key", "strength", "gate", "shift", "gamma")),
        (addressing.read, ("memory", "previous")),
    ],
)
def test_addressing_gradients_match_finite_differences(function, names):
    values = addressing_inputs()
    inputs = tuple(values[n].clone().requires_grad_() for n in names)
    assert torch.autograd.gradcheck(function, inputs)


def test_write_gradients_match_finite_differences():
    v = addressing_inputs()
    g = torch.Generator().manual_seed(1)
    erase = torch.rand(2, 2, 3, generator=g, dtype=torch.double)
    add = torch.randn(2, 2, 3, generator=g, dtype=torch.double)
    inputs = tuple(t.clone().requires_grad_() for t in (v["memory"], v["previous"], erase, add))
    assert torch.autograd.gradcheck(addressing.write, inputs)


def test_sharpening_is_the_normalised_power_and_never_nan():
    """softmax(gamma log w) equals w^gamma / sum w^gamma (float64), and stays a weighting in fp32
    where the powers underflow: 64 locations at 1/64 each, gamma 30 ((1/64)^30 is below fp32)."""
    v = addressing_inputs()
    powered = (v["previous"] + addressing.EPS) ** v["gamma"]
    torch.testing.assert_close(addressing.sharpen(v["previous"], v["gamma"]), powered / powered.sum(-1, keepdim=True))
    spread, gamma = torch.full((2, 3, 64), 1 / 64), torch.full((2, 3, 1), 30.0)
    underflown = (spread + addressing.EPS) ** gamma  # every power 0 in fp32
    assert torch.isnan(underflown / underflown.sum(-1, keepdim=True)).all()
    torch.testing.assert_close(addressing.sharpen(spread, gamma), spread)


@pytest.mark.parametrize("start", ["random", "initial", "zero rows"])
def test_content_weights_are_torch_cosine(start):
    """The batched product equals F.cosine_similarity broadcast over (B, H, N, W), values and
    gradients, on random memories, on the machine's first memory (every cell 1e-6), and where
    rows or keys are zero (the norm held at EPS)."""
    import torch.nn.functional as F

    v = addressing_inputs()
    memory, key = v["memory"], v["key"]
    if start == "initial":
        memory = torch.full_like(memory, 1e-6)
    if start == "zero rows":
        memory[:, ::2] = 0.0
        key[0, 0] = 0.0

    def reference(m, k, s):
        return torch.softmax(s * F.cosine_similarity(k.unsqueeze(2), m.unsqueeze(1), dim=-1, eps=addressing.EPS), -1)

    ours = [t.clone().requires_grad_() for t in (memory, key, v["strength"])]
    theirs = [t.clone().requires_grad_() for t in (memory, key, v["strength"])]
    a, b = addressing.content_weights(*ours), reference(*theirs)
    torch.testing.assert_close(a, b)
    weights = torch.randn(a.shape, dtype=a.dtype, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(
        torch.autograd.grad((a * weights).sum(), ours), torch.autograd.grad((b * weights).sum(), theirs)
    )


def test_addressing_does_what_the_paper_says():
    memory = torch.eye(4).unsqueeze(0)  # location i holds e_i
    key = torch.tensor([[[0.0, 0.0, 1.0, 0.0]]])
    w = addressing.content_weights(memory, key, torch.tensor([[[50.0]]]))
    assert w.argmax().item() == 2 and w.max().item() > 0.99  # a strong key finds its row
    uniform = addressing.content_weights(memory, key, torch.zeros(1, 1, 1))
    torch.testing.assert_close(uniform, torch.full((1, 1, 4), 0.25))  # strength 0: no preference
    one_hot = torch.tensor([[[0.0, 1.0, 0.0, 0.0]]])
    forward = addressing.circular_shift(one_hot, torch.tensor([[[0.0, 0.0, 1.0]]]))  # shift +1
    assert forward.tolist() == [[[0.0, 0.0, 1.0, 0.0]]]
    wrapped = addressing.circular_shift(torch.tensor([[[0.0, 0.0, 0.0, 1.0]]]), torch.tensor([[[0.0, 0.0, 1.0]]]))
    assert wrapped.tolist() == [[[1.0, 0.0, 0.0, 0.0]]]  # modulo N
    blurred = torch.tensor([[[0.1, 0.6, 0.3, 0.0]]])
    sharp = addressing.sharpen(blurred, torch.tensor([[[3.0]]]))
    assert sharp[0, 0, 1] > 0.85 and sharp.sum().item() == pytest.approx(1.0)
    g = addressing.interpolate(one_hot, torch.tensor([[[1.0, 0.0, 0.0, 0.0]]]), torch.tensor([[[0.25]]]))
    assert g.tolist() == [[[0.75, 0.25, 0.0, 0.0]]]
    written = addressing.write(memory, one_hot, torch.ones(1, 1, 4), torch.full((1, 1, 4), 0.5))
    assert written[0, 1].tolist() == [0.5] * 4 and torch.equal(written[0, 0], memory[0, 0])  # erase, then add
    assert addressing.read(written, one_hot).tolist() == [[[0.5] * 4]]


def test_ntm_reads_a_bit_token_as_its_bits():
    from attnseq.nn.memory_networks.ntm import bit_table

    vocab = Vocab(["0110", "1001", "x3"])
    table = bit_table(vocab)
    assert table.shape == (len(vocab), 4)
    assert table[vocab.stoi["0110"]].tolist() == [0, 1, 1, 0] and table[vocab.stoi["1001"]].tolist() == [1, 0, 0, 1]
    assert not table[vocab.stoi["x3"]].any() and not table[Vocab.pad_id].any()
    cfg = load_config(None, ARCHS["ntm"]).model
    model = build_model(cfg, len(vocab), len(vocab), src_vocab=vocab)
    assert model.encoder.cell.input_size == 6 + 4


@pytest.mark.parametrize("name", ARCHS)
def test_beam_search_finds_what_greedy_finds_and_keeps_n_best(name):
    from attnseq.config import DecodeConfig
    from attnseq.decoding.search import search

    model = model_of(name)
    src, mask = stories()
    greedy = search(model, SourceBatch(src, mask), DecodeConfig(max_len=5))
    beam = search(model, SourceBatch(src, mask), DecodeConfig(beam_size=3, n_best=2, max_len=5), keep_attention=True)
    assert all(len(b) == 2 and b[0].score >= b[1].score for b in beam)
    assert all(b[0].score >= g[0].score - 1e-6 for b, g in zip(beam, greedy))
    assert all(b[0].alignment.shape[1] == int(n) for b, n in zip(beam, mask.sum(1)))


def test_reading_attention_gradients_match_finite_differences():
    """A hop's read (masked softmax of u . m, weighted sum of c) and a HAN context attention."""
    from attnseq.nn.attention.softmax import masked_softmax
    from attnseq.nn.memory_networks.han import ContextAttention

    g = torch.Generator().manual_seed(0)
    m, c = torch.randn(2, 4, 3, generator=g, dtype=torch.double), torch.randn(2, 4, 3, generator=g, dtype=torch.double)
    u = torch.randn(2, 3, generator=g, dtype=torch.double)
    mask = torch.tensor([[True, True, True, False], [True, False, False, False]])

    def hop(m, c, u):
        p = masked_softmax(torch.einsum("bnd,bd->bn", m, u), mask, zero_empty_rows=True)
        return u + torch.einsum("bn,bnd->bd", p, c)

    assert torch.autograd.gradcheck(hop, tuple(t.requires_grad_() for t in (m, c, u)))
    torch.manual_seed(0)
    attention = ContextAttention(3, 5).double()
    assert torch.autograd.gradcheck(lambda h: attention(h, mask)[0], (m.detach().requires_grad_(),))


# -- the copy program read off the weightings (eval/tape.py) ---------------------------------------
def hand_set_ntm(locations: int = 12):
    """An NTM whose heads ignore the controller: gate 0 (no content), all the shift on +1, gamma
    about 21: each step moves every head one location on from where it was."""
    vocab = Vocab(["0110", "1001", "1111"])
    cfg = load_config(
        None,
        [
            "model.arch=ntm",
            "model.embed_size=6",
            "model.hidden_size=10",
            f"model.memory_locations={locations}",
            "model.memory_width=5",
        ],
    ).model
    model = build_model(cfg, len(vocab), len(vocab), src_vocab=vocab).double().eval()
    cell = model.encoder.cell
    heads, A, M = cell.R + cell.W, cell.addressing_size, cell.M
    with torch.no_grad():
        cell.emit.weight.zero_()
        bias = cell.emit.bias.view(-1)[: heads * A].view(heads, A)  # key, beta, g, s (-1, 0, +1), gamma
        bias.zero_()
        bias[:, M + 1] = -30.0  # g = sigmoid(-30): the previous weighting, not the content
        bias[:, M + 2 : M + 2 + cell.shifts] = torch.tensor([-30.0, -30.0, 30.0])  # shift +1
        bias[:, -1] = 20.0  # gamma = 1 + softplus(20)
    return model, vocab


def test_every_head_starts_focused_so_the_first_shift_moves_it_and_writes_go_one_after_another():
    from attnseq.eval.tape import tape_program

    model, vocab = hand_set_ntm()
    src = torch.tensor([[vocab.stoi[t] for t in ["0110", "1001", "1111", "0110", "1001"]]])
    tape = model.encode(SourceBatch(src, torch.ones_like(src, dtype=torch.bool)))
    torch.testing.assert_close(
        model.encoder.cell.initial(1, tape.keys)["weights"][0, :, 0], torch.ones(2, dtype=torch.double)
    )  # every head at location 0 before step 1
    writes = tape.writing[:, :, 0].argmax(-1).numpy()  # (1, S)
    assert writes.tolist() == [[1, 2, 3, 4, 5]]  # the first shift moved the head off location 0
    assert tape.writing[0, :, 0].max(-1).values.min() > 0.99
    program = tape_program(writes, writes, 12, focus=1.0)
    assert program.writes == 1.0 and program.first_two_apart == 1.0 and program.reads == 1.0


def test_the_copy_program_shares_count_adjacent_writes_and_reads_in_written_order():
    import numpy as np

    from attnseq.eval.tape import adjacent_steps, reads_in_order, tape_program

    writes = np.array(
        [
            [0, 0, 63, 62, 61],  # the first two vectors in one location (the flaw memory.md showed)
            [63, 62, 61, 60, 59],
        ]
    )
    assert adjacent_steps(writes, 64).tolist() == [[False, True, True, True], [True, True, True, True]]
    assert adjacent_steps(np.array([[63, 0, 2]]), 64).tolist() == [[True, False]]  # round the circle; a jump of 2
    reads = np.array([[0, 63, 62, 61, 60, 59], [63, 62, 61, 60, 59, 58]])  # one output step more (eos)
    assert reads_in_order(writes, reads).tolist() == [[True, False, False, False, False], [True] * 5]
    program = tape_program(writes, reads, 64, focus=0.9)
    assert program.writes == 0.5 and program.first_two_apart == 0.5 and program.reads == 0.5
    # a read one behind at a single step fails its sequence
    assert tape_program(writes[1:], reads[1:] - np.array([0, 0, 1, 0, 0, 0]), 64, 1.0).reads == 0.0
