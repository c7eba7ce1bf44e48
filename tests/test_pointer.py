"""seqlab.models.pointer: the final distribution, the coverage loss and the pointer-generator model."""

import pytest
import torch
from test_decoder_references import coverage_attend, stacked_step
from torch.testing import assert_close

from seqlab.core.padding import BOS_ID, EOS_ID, UNK_ID, lengths_to_mask
from seqlab.models.pointer import (
    EPSILON,
    CoverageAttention,
    PointerGenerator,
    coverage_loss,
    final_distribution,
    pointer_loss,
)

V = 6


def naive_final_distribution(vocab_probs, attn, p_gen, src_ext_ids, n_oov):
    out = torch.zeros(vocab_probs.shape[0], V + n_oov, dtype=vocab_probs.dtype)
    for b in range(vocab_probs.shape[0]):
        for w in range(V):
            out[b, w] += p_gen[b, 0] * vocab_probs[b, w]
        for i in range(attn.shape[1]):
            out[b, src_ext_ids[b, i]] += (1 - p_gen[b, 0]) * attn[b, i]
    return out


def example(dtype=torch.double):
    torch.manual_seed(0)
    vocab_probs = torch.randn(2, V, dtype=dtype).softmax(-1)
    attn = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.0, 0.0]], dtype=dtype)  # row 2: two real tokens
    p_gen = torch.tensor([[0.7], [0.25]], dtype=dtype)
    # Row 1: word 4 twice, OOV ids 6 and 7; row 2: its own OOV 6, then padding (id 0, zero weight).
    src_ext_ids = torch.tensor([[4, 6, 4, 7], [6, 5, 0, 0]])
    return vocab_probs, attn, p_gen, src_ext_ids


def test_final_distribution_matches_naive_loop_and_sums_to_one():
    vocab_probs, attn, p_gen, src = example()
    out = final_distribution(vocab_probs, attn, p_gen, src, n_oov=2)
    assert out.shape == (2, V + 2)
    assert_close(out, naive_final_distribution(vocab_probs, attn, p_gen, src, 2))
    assert_close(out.sum(1), torch.ones(2, dtype=torch.double))


def test_repeated_source_word_gets_both_weights_and_oov_lands_on_extended_id():
    vocab_probs, attn, p_gen, src = example()
    out = final_distribution(vocab_probs, attn, p_gen, src, n_oov=2)
    assert_close(out[0, 4], 0.7 * vocab_probs[0, 4] + 0.3 * (0.1 + 0.3))
    assert_close(out[0, 7], torch.tensor(0.3 * 0.4, dtype=torch.double))  # only copying reaches an OOV id
    assert_close(out[1, 7], torch.tensor(0.0, dtype=torch.double))  # row 2 has one OOV only


def test_p_gen_limits():
    vocab_probs, attn, _, src = example()
    generate = final_distribution(vocab_probs, attn, torch.ones(2, 1, dtype=torch.double), src, 2)
    assert_close(generate[:, :V], vocab_probs)
    assert (generate[:, V:] == 0).all()
    copy = final_distribution(vocab_probs, attn, torch.zeros(2, 1, dtype=torch.double), src, 2)
    expected = torch.zeros(2, V + 2, dtype=torch.double).scatter_add(1, src, attn)
    assert_close(copy, expected)


def test_gradients_flow_to_all_three_inputs():
    vocab_probs, attn, p_gen, src = (t.requires_grad_() if t.is_floating_point() else t for t in example())
    inputs = (vocab_probs, attn, p_gen)
    assert torch.autograd.gradcheck(lambda v, a, p: final_distribution(v, a, p, src, 2), inputs)
    final_distribution(vocab_probs, attn, p_gen, src, 2)[:, [4, 7]].sum().backward()
    assert all(t.grad is not None and t.grad.abs().sum() > 0 for t in inputs)


def test_final_distribution_errors():
    vocab_probs, attn, p_gen, src = example()
    with pytest.raises(ValueError, match=r"ids must be < V \+ n_oov = 7, got 7; is n_oov too small"):
        final_distribution(vocab_probs, attn, p_gen, src, n_oov=1)
    with pytest.raises(ValueError, match=r"p_gen: expected shape \(2, 1\), got \(2\)"):
        final_distribution(vocab_probs, attn, p_gen[:, 0], src, n_oov=2)


def test_coverage_loss_counts_only_earlier_steps_and_respects_the_mask():
    attn_steps = torch.tensor([[[0.5, 0.5, 0.0], [0.9, 0.1, 0.0], [0.2, 0.2, 0.6]]])  # (B=1, T=3, S=3)
    mask = torch.tensor([[True, True, False]])
    coverage = torch.zeros(1, 3)
    losses = []
    for t in range(3):
        losses.append(coverage_loss(attn_steps[:, t], coverage, mask))
        coverage = coverage + attn_steps[:, t]
    assert losses[0] == 0  # nothing covered before the first step
    assert_close(losses[1], torch.tensor(min(0.9, 0.5) + min(0.1, 0.5)))
    assert_close(losses[2], torch.tensor(min(0.2, 1.4) + min(0.2, 0.6)))  # position 3 is padding: ignored


def test_coverage_attention_matches_see_et_al_eq_11_with_padding():
    """e_i = vᵀ tanh(W_h h_i + W_s z + w_c c_i + b) over the real positions, with a coverage that is not
    zero (padded positions included) and padded memory that holds noise rather than zeros."""
    torch.manual_seed(0)
    attention = CoverageAttention(query_size=7, memory_size=6, attention_size=5).double()
    lengths = torch.tensor([5, 2, 3])
    mask = lengths_to_mask(lengths, 5)  # (B, S)
    query, memory = torch.randn(3, 7, dtype=torch.double), torch.randn(3, 5, 6, dtype=torch.double)
    coverage = torch.rand(3, 5, dtype=torch.double) * 2  # (B, S), earlier steps' attention summed
    context, weights = attention(query, memory, mask, attention.scorer.prepare_keys(memory), coverage)
    expected_context, expected_weights = coverage_attend(attention, query, memory, lengths, coverage)
    assert_close(weights, expected_weights)
    assert_close(context, expected_context)
    assert (weights[~mask] == 0).all()


def reference_pointer_run(model, src, src_lengths, tgt_in):
    """The pointer-generator's teacher-forced loop, from See et al.'s equations and the model's parameters
    (the encoder and the bridge are the model's own: chapter 2's tests check them)."""
    start = model.start_decoding(src, src_lengths)
    memory, hidden, n_oov = start["memory"], start["hidden"], max(0, int(src.max()) - V + 1)
    coverage = torch.zeros(src.shape, dtype=memory.dtype)  # (B, S)
    steps = []
    for t in range(tgt_in.shape[1]):
        seen = coverage if model.coverage_weight > 0 else torch.zeros_like(coverage)  # coverage off: zeros
        context, attn = coverage_attend(model.attention, hidden[-1], memory, src_lengths, seen)
        prev = tgt_in[:, t].masked_fill(tgt_in[:, t] >= V, UNK_ID)  # an OOV is read as <unk>
        embedded = model.decoder.embedding.weight[prev]  # (B, E)
        z, hidden = stacked_step(model.decoder.rnn, torch.cat([embedded, context], dim=1), hidden)
        features = torch.cat([z, context, embedded], dim=1)  # [z_new; context; embed(y)]
        logits = features @ model.decoder.output.weight.T + model.decoder.output.bias
        vocab_probs = logits.exp() / logits.exp().sum(dim=1, keepdim=True)
        p_gen = torch.sigmoid(features @ model.switch.weight.T + model.switch.bias)  # (B, 1)
        probs = naive_final_distribution(vocab_probs, attn, p_gen, src, n_oov)
        steps.append({"probs": probs, "attn": attn, "p_gen": p_gen[:, 0], "coverage": coverage})
        coverage = coverage + attn
    return {key: torch.stack([step[key] for step in steps], dim=1) for key in steps[0]}


def small_model(coverage_weight=0.0):
    torch.manual_seed(0)
    return PointerGenerator(vocab_size=V, embedding_size=4, hidden_size=8, coverage_weight=coverage_weight).eval()


SRC = torch.tensor([[4, 6, 4, 7], [6, 5, 0, 0]])  # extended ids: 6 and 7 are out of vocabulary
LENGTHS = torch.tensor([4, 2])
TGT_IN = torch.tensor([[BOS_ID, 6, 4], [BOS_ID, 6, 0]])


def test_the_first_order_redraw_covers_every_parameter_after_the_encoder():
    """``_redraw_in_first_order`` draws attention, decoder and switch again from a saved stream: a part
    added later but left off its list would keep weights drawn in the wrong order. Every such parameter
    is set to NaN first; after the redraw none may be left, and the encoder must be as it was."""
    torch.manual_seed(0)
    model = PointerGenerator(12, embedding_size=4, hidden_size=6)
    redrawn = {
        f"{part}.{name}": p
        for part in ("attention", "decoder", "switch")
        for name, p in getattr(model, part).named_parameters()
    }
    assert set(redrawn) == {
        name for name, _ in model.named_parameters() if not name.startswith(("encoder.", "bridge."))
    }
    encoder_before = {
        name: p.clone() for name, p in model.named_parameters() if name.startswith(("encoder.", "bridge."))
    }
    with torch.no_grad():
        for p in redrawn.values():
            p.fill_(float("nan"))
    model._redraw_in_first_order(torch.get_rng_state())
    left_out = [name for name, p in redrawn.items() if p.isnan().any()]
    assert not left_out, f"_redraw_in_first_order does not draw {left_out} again"
    for name, p in model.named_parameters():
        if name in encoder_before:
            assert torch.equal(p, encoder_before[name]), f"the redraw changed {name}"


def test_model_outputs_distributions_over_the_extended_vocabulary():
    out = small_model(coverage_weight=1.0).forward_with_details(SRC, LENGTHS, TGT_IN)
    assert out["probs"].shape == (2, 3, V + 2)
    assert_close(out["probs"].sum(-1), torch.ones(2, 3))
    assert ((out["p_gen"] > 0) & (out["p_gen"] < 1)).all()
    assert (out["attn"][1, :, 2:] == 0).all()  # padding gets no attention
    assert_close(out["coverage"][:, 1:], out["attn"].cumsum(1)[:, :-1])  # coverage = earlier steps' sum
    assert (out["coverage"][:, 0] == 0).all()


@pytest.mark.parametrize("coverage_weight", [0.0, 1.0])
def test_teacher_forced_run_matches_a_loop_written_from_the_equations(coverage_weight):
    model = small_model(coverage_weight).double()
    out = model.forward_with_details(SRC, LENGTHS, TGT_IN)  # TGT_IN reads OOV word 6 as <unk>
    expected = reference_pointer_run(model, SRC, LENGTHS, TGT_IN)
    for key in ("probs", "attn", "p_gen", "coverage"):
        assert_close(out[key], expected[key], msg=lambda m, key=key: f"{key}: {m}")


def test_out_of_vocabulary_inputs_are_read_as_unk():
    model = small_model()
    as_unk = SRC.masked_fill(SRC >= V, UNK_ID)
    assert torch.equal(model.to_unk(SRC), as_unk)
    # The encoder sees the same thing whichever OOV id a word has: renumbering OOVs changes nothing
    # but where copying puts the probability.
    state_a, state_b = model.start_decoding(SRC, LENGTHS), model.start_decoding(as_unk, LENGTHS)
    assert_close(state_a["memory"], state_b["memory"])


class Batch:
    src, src_lengths, tgt_in = SRC, LENGTHS, TGT_IN
    tgt_out = torch.tensor([[6, 4, EOS_ID], [7, EOS_ID, 0]])  # row 2 wants OOV id 7, absent from its source
    src_mask = lengths_to_mask(LENGTHS, 4)
    tgt_mask = tgt_out != 0


def test_loss_is_finite_when_the_target_cannot_be_produced():
    model = small_model()
    probs = model(SRC, LENGTHS, TGT_IN)
    assert probs[1, 0, 7] == 0  # row 2's source has no word 7: no way to copy or generate it
    loss = pointer_loss(model, Batch)
    assert torch.isfinite(loss)
    assert loss > -torch.log(torch.tensor(EPSILON)) / 5 * 0.99  # the impossible token dominates the mean
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_a_saturated_switch_makes_a_copy_only_target_impossible_and_the_loss_stays_finite():
    # Chapter 6's case: in float32 the sigmoid is exactly 1 for inputs past about 17, so p_gen = 1 and a
    # word that only copying can write (an out-of-vocabulary word of the source) gets P = 0 exactly.
    assert torch.sigmoid(torch.tensor(17.0)) == 1.0
    model = small_model().train()
    with torch.no_grad():
        model.switch.weight.zero_()
        model.switch.bias.fill_(30.0)  # p_gen = sigmoid(30) = 1 at every step
    out = model.forward_with_details(SRC, LENGTHS, TGT_IN)
    assert (out["p_gen"] == 1.0).all()
    assert out["probs"][0, 0, 6] == 0  # row 1's first target, its source's OOV word 6: no way to write it
    loss = pointer_loss(model, Batch)
    assert torch.isfinite(loss) and loss > -torch.log(torch.tensor(EPSILON)) / 5 * 0.99
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    # without the clamp the same sum is infinite
    picked = out["probs"].gather(2, Batch.tgt_out.unsqueeze(2)).squeeze(2)[Batch.tgt_mask]
    assert torch.isinf(-picked.log().sum())


def test_coverage_weight_adds_the_coverage_loss():
    model = small_model()
    without = pointer_loss(model, Batch)
    model.enable_coverage(2.0)
    loss = pointer_loss(model, Batch)
    assert loss > without
    # By hand: -log P(target) and 2 · Σ_i min(a_i, c_i) over the real positions, both averaged over the
    # real target tokens.
    out = model.forward_with_details(SRC, LENGTHS, TGT_IN)
    nll, overlap, n_tokens = 0.0, 0.0, 0
    for b in range(2):
        for t in range(3):
            target = int(Batch.tgt_out[b, t])
            if target == 0:
                continue
            n_tokens += 1
            nll -= out["probs"][b, t, target].clamp_min(EPSILON).log()
            for i in range(int(LENGTHS[b])):
                overlap += min(out["attn"][b, t, i], out["coverage"][b, t, i])
    assert_close(loss, (nll + 2.0 * overlap) / n_tokens)


@pytest.mark.parametrize("coverage_weight", [0.0, 1.0])
def test_beam_size_one_equals_greedy(coverage_weight):
    model = small_model(coverage_weight)
    greedy = model.greedy_decode(SRC, LENGTHS, max_len=6)
    beam = model.beam_search(SRC, LENGTHS, max_len=6, beam_size=1)
    assert beam.shape == greedy.shape  # a beam that runs on past eos is longer
    assert torch.equal(beam, greedy)
    assert int(greedy.max()) < V + 2


OOV_SRC = torch.tensor([[6, 7, 6, 8], [4, 7, 0, 0]])  # row 1: OOV words only; row 2: word 4 and OOV 7
OOV_LENGTHS = torch.tensor([4, 2])


@pytest.mark.parametrize("coverage_weight", [0.0, 1.0])
def test_a_model_that_must_copy_writes_its_sources_out_of_vocabulary_words(coverage_weight):
    model = small_model(coverage_weight)
    with torch.no_grad():
        model.switch.bias.fill_(-40.0)  # p_gen = σ(... - 40) ≈ 0: the model copies
    greedy = model.greedy_decode(OOV_SRC, OOV_LENGTHS, max_len=5)
    assert greedy.shape == (2, 5)  # eos is a vocabulary word, which a copying model does not write
    assert int(greedy.max()) < V + 3
    assert (greedy[0] >= V).all()  # out-of-vocabulary ids: only copying reaches them
    for row in range(2):  # each row copies its own source's words (row 2 never writes 6 or 8)
        assert set(greedy[row].tolist()) <= set(OOV_SRC[row, : OOV_LENGTHS[row]].tolist())
    # Each step copies the source word with the most attention, its positions' weights summed.
    tgt_in = torch.cat([torch.full((2, 1), BOS_ID), greedy[:, :-1]], dim=1)
    attn = model.forward_with_details(OOV_SRC, OOV_LENGTHS, tgt_in)["attn"]  # (B, T, S)
    for row in range(2):
        for t in range(5):
            mass = {}
            for word, weight in zip(OOV_SRC[row].tolist(), attn[row, t].tolist()):
                mass[word] = mass.get(word, 0.0) + weight  # padding (id 0) has weight 0: never the most
            assert int(greedy[row, t]) == max(mass, key=mass.get)
    assert torch.equal(model.beam_search(OOV_SRC, OOV_LENGTHS, max_len=5, beam_size=1), greedy)
