"""Switching reference implementations off while a hidden test runs the student's code.

Hidden tests must not reward a student who hands the work to a reference implementation (seqlab's
own, or torch's). :func:`disabled` switches such references off while the student's code runs::

    h_ref, c_ref = torch_cell(x, (h, c))  # reference values first
    with disabled(*LSTM_REFERENCES, optional=LSTM_OPTIONAL_REFERENCES):
        h_new, c_new = lstm_cell_step(x, h, c, *weights)  # the student's code, references off
    assert_close(h_new, h_ref)
"""

import contextlib
import inspect
import pkgutil
import types

__all__ = [
    "ATTENTION_DECODER_REFERENCES",
    "ATTENTION_OPTIONAL_REFERENCES",
    "ATTENTION_REFERENCES",
    "BIDIRECTIONAL_OPTIONAL_REFERENCES",
    "BIDIRECTIONAL_REFERENCES",
    "DECODER_REFERENCES",
    "DisabledError",
    "GREEDY_REFERENCES",
    "GRU_OPTIONAL_REFERENCES",
    "GRU_REFERENCES",
    "LOSS_OPTIONAL_REFERENCES",
    "LOSS_REFERENCES",
    "LSTM_OPTIONAL_REFERENCES",
    "LSTM_REFERENCES",
    "POINTER_REFERENCES",
    "POOLING_OPTIONAL_REFERENCES",
    "POOLING_REFERENCES",
    "SCORER_REFERENCES",
    "TRANSFORMER_OPTIONAL_REFERENCES",
    "TRANSFORMER_REFERENCES",
    "disabled",
]

# What an LSTM exercise must not delegate to. ``disabled`` raises if one of these does not exist.
LSTM_REFERENCES = (
    "seqlab.rnn.lstm_update",
    "seqlab.rnn.LSTMCell",
    "seqlab.rnn.LSTM",
    "torch.nn.LSTMCell",
    "torch.nn.LSTM",
)
# torch's internal entry points, switched off where this torch version has them. Never torch.ops.aten
# operators: torch._dynamo, which the first optimizer step imports, reads them and breaks on a stub.
LSTM_OPTIONAL_REFERENCES = (
    "torch.lstm_cell",
    "torch.lstm",
    "torch._VF.lstm_cell",
    "torch._VF.lstm",
)

# Exercise 1's GRU step, likewise: seqlab's GRU update, cell and layer, torch's GRU cell and layer and
# their internal entry points are off; torch.sigmoid, tanh and matrix products stay on.
GRU_REFERENCES = (
    "seqlab.rnn.gru_update",
    "seqlab.rnn.GRUCell",
    "seqlab.rnn.GRU",
    "torch.nn.GRUCell",
    "torch.nn.GRU",
)
GRU_OPTIONAL_REFERENCES = (
    "torch.gru_cell",
    "torch.gru",
    "torch._VF.gru_cell",
    "torch._VF.gru",
)

# Exercise 2 (bidirectional encoder): the point is to reverse each sequence within its own length, so
# packing (which does that for torch's layers), seqlab's encoder and bridge, and seqlab's from-scratch
# layers (which take ``lengths=``) are off. The students' one-directional torch.nn.GRU layers stay on.
BIDIRECTIONAL_REFERENCES = (
    "torch.nn.utils.rnn.pack_padded_sequence",
    "torch.nn.utils.rnn.pack_sequence",
    "seqlab.encoder.Encoder",
    "seqlab.encoder.Bridge",
    "seqlab.encoder.last_layer_directions",
    "seqlab.rnn.RNN",
    "seqlab.rnn.LSTM",
    "seqlab.rnn.GRU",
)
BIDIRECTIONAL_OPTIONAL_REFERENCES = (
    "torch._pack_padded_sequence",
    "torch._VF._pack_padded_sequence",
    "seqlab.rnn._LayerBase",  # the from-scratch layers' shared forward, which reads lengths
)

# Exercise 3 (Seq2Seq): the decoder step must be written from the decoder's submodules (embedding,
# rnn, output), which stay on; the decoder's own forward and step are off, and so is the unchecked
# computation they share.
CONTEXT_DECODER_PARTS = (  # the context decoder's own loop, step and parts (exercises 3 and 4)
    "seqlab.decoder.ContextDecoder.forward",
    "seqlab.decoder.ContextDecoder.step",
    "seqlab.decoder.ContextDecoder._decode",
    "seqlab.decoder.ContextDecoder.embed",
    "seqlab.decoder.ContextDecoder.recur",
    "seqlab.decoder.ContextDecoder.predict",
)
DECODER_REFERENCES = CONTEXT_DECODER_PARTS + (
    "seqlab.seq2seq.Seq2Seq.forward",
    "seqlab.seq2seq.Seq2Seq.decode_step",
)
# ... and greedy decoding as a loop around the student's decoder step: seqlab's greedy search and its beam
# search (a beam of one is greedy) are off, and so are the models' own greedy_decode and beam_search (the
# model's step, Seq2Seq.decode_step, is in DECODER_REFERENCES). Seq2Seq.encode stays on.
GREEDY_REFERENCES = (
    "seqlab.decoding.greedy_search",
    "seqlab.decoding.beam_search_one",
    "seqlab.decoding.Decodable.greedy_decode",
    "seqlab.decoding.Decodable.beam_search",
)
# ... and the masked loss from tensor operations (gather, indexing, sums), not from a library loss.
#
# Neither exercise's lists name operators under torch.ops (as LSTM_OPTIONAL_REFERENCES does): torch imports
# some modules lazily, and those read operators such as ``torch.ops.aten.nll_loss_forward.default`` at import
# time, which fails on a stub. Exercise 3 trains a model inside ``disabled``, and its first Adam imports
# torch._dynamo that way.
LOSS_REFERENCES = (
    "seqlab.train.sequence_nll",
    "torch.nn.functional.nll_loss",
    "torch.nn.functional.cross_entropy",
    "torch.nn.NLLLoss",
    "torch.nn.CrossEntropyLoss",
)
LOSS_OPTIONAL_REFERENCES = (
    "torch._C._nn.nll_loss",
    "torch._C._nn.nll_loss_nd",
    "torch._C._nn.nll_loss2d",
    "torch._C._nn.cross_entropy_loss",
)

# Exercise 4 (masked softmax and additive attention): seqlab's masked softmax, its additive scorer (also
# the methods ``prepare_keys`` and ``score``, which an instance built before the block could still call)
# and Attention are off, and so is torch's own masked softmax. torch.softmax, tanh, where and matmul stay on.
ATTENTION_REFERENCES = (
    "seqlab.attention.masked_softmax",
    "seqlab.attention.AdditiveScorer",
    "seqlab.attention.AdditiveScorer.prepare_keys",
    "seqlab.attention.AdditiveScorer.score",
    "seqlab.attention.Attention",
)
ATTENTION_OPTIONAL_REFERENCES = (
    "torch.masked.softmax",  # a Python function: its code is swapped, so torch.masked._ops.softmax is off too
    "torch._masked_softmax",
)

# Exercise 4's attention decoder step and greedy decoding: written from the student's attention and the
# decoder's submodules (embedding, rnn, output), which stay on, and the model's encode; ATTENTION_REFERENCES
# are off, and so are the attention decoder's own step and loop, the context decoder's parts, the model's
# decoding step and seqlab's greedy search.
ATTENTION_DECODER_REFERENCES = (
    ATTENTION_REFERENCES
    + (
        "seqlab.attention_decoder.AttentionDecoder.forward",
        "seqlab.attention_decoder.AttentionDecoder.step",
        "seqlab.attention_decoder.AttentionDecoder.attend",
        "seqlab.attention_decoder.AttentionDecoder.query",
    )
    + CONTEXT_DECODER_PARTS
    + (
        "seqlab.seq2seq.AttentionSeq2Seq.forward",
        "seqlab.seq2seq.AttentionSeq2Seq.attention_weights",
        "seqlab.seq2seq.AttentionSeq2Seq.start_decoding",
        "seqlab.seq2seq.AttentionSeq2Seq.decode_step",
    )
    + GREEDY_REFERENCES
)

# Exercise 5 (bilinear, dot, scaled dot and cosine scorers): seqlab's four scorers (their ``score`` and
# ``prepare_keys`` too, which need no instance) and torch's ready-made cosine similarity and bilinear form
# are off. Matrix products, norms (torch.linalg.vector_norm, F.normalize), clamp and division stay on.
# torch.cosine_similarity and torch.bilinear are the same builtins as their torch.nn.functional names, but a
# builtin cannot be switched off in place: each name it is reachable under is listed.
SCORER_REFERENCES = (
    "seqlab.attention.BilinearScorer",
    "seqlab.attention.BilinearScorer.prepare_keys",
    "seqlab.attention.BilinearScorer.score",
    "seqlab.attention.DotScorer",
    "seqlab.attention.DotScorer.score",
    "seqlab.attention.ScaledDotScorer",
    "seqlab.attention.ScaledDotScorer.score",
    "seqlab.attention.CosineScorer",
    "seqlab.attention.CosineScorer.prepare_keys",
    "seqlab.attention.CosineScorer.score",
    "torch.nn.functional.cosine_similarity",
    "torch.cosine_similarity",
    "torch.nn.CosineSimilarity",
    "torch.nn.functional.bilinear",
    "torch.bilinear",
    "torch.nn.Bilinear",
)

# Exercise 6 (pointer-generator): the final distribution, the pointer loss and the coverage loss are
# written from tensor operations (torch.cat, scatter_add, gather, clamp_min, log, torch.minimum, sums),
# which stay on; seqlab's own three are off, and so is final_distribution's unchecked arithmetic, which
# the model's step calls. (The loss's test cells switch LOSS_REFERENCES off as well.)
POINTER_REFERENCES = (
    "seqlab.pointer.final_distribution",
    "seqlab.pointer._mix",
    "seqlab.pointer.pointer_loss",
    "seqlab.pointer.coverage_loss",
)

# Exercise 7 (attention pooling with masks): seqlab's attention pooling, chapter 4's masked softmax,
# additive scorer and Attention (which the pooling is built from) are off, and so is torch's own masked
# softmax. torch.softmax, tanh, exp, where, masked_fill and matrix products stay on.
POOLING_REFERENCES = (
    "seqlab.pooling.AttentionPooling",
    "seqlab.attention.masked_softmax",
    "seqlab.attention.AdditiveScorer",
    "seqlab.attention.AdditiveScorer.prepare_keys",
    "seqlab.attention.AdditiveScorer.score",
    "seqlab.attention.Attention",
)
POOLING_OPTIONAL_REFERENCES = ATTENTION_OPTIONAL_REFERENCES

# Exercise 8 (multi-head attention): seqlab's MultiHeadAttention (also importable from seqlab.transformer:
# the same class, switched off once) and torch's multi-head and scaled dot-product attention are off.
# Matrix products, reshapes, torch.softmax, masked_fill and where stay on, and so does exercise 4's
# seqlab.attention.masked_softmax. F.scaled_dot_product_attention is a builtin, the same object as
# torch._C._nn.scaled_dot_product_attention: each name it is reachable under is listed.
TRANSFORMER_REFERENCES = (
    "seqlab.multihead.MultiHeadAttention",
    "seqlab.multihead.MultiHeadAttention.split_heads",
    "torch.nn.MultiheadAttention",
    "torch.nn.functional.multi_head_attention_forward",
    "torch.nn.functional.scaled_dot_product_attention",
)
TRANSFORMER_OPTIONAL_REFERENCES = (
    "torch._C._nn.scaled_dot_product_attention",
    "torch._native_multi_head_attention",  # torch.nn.MultiheadAttention's fast path
    "torch._scaled_dot_product_attention_math",
    "torch._scaled_dot_product_flash_attention_for_cpu",
)


class DisabledError(RuntimeError):
    """Raised by a reference implementation while :func:`disabled` has switched it off."""


# The ``(targets, optional)`` of every ``disabled`` block open now, innermost last: when the grader runs
# a test cell in its own kernel (seqlab.grading.verdict), the student's code runs in another process,
# and the calls that it forwards there switch the same references off.
ACTIVE: list = []


def _message(target: str) -> str:
    return f"{target} is switched off while the hidden tests run: write this computation yourself"


def _raising_stub(target: str):
    message = _message(target)

    def disabled_reference(*args, **kwargs):  # noqa: ARG001 (takes any call, to refuse it)
        raise DisabledError(message)

    disabled_reference.__qualname__ = disabled_reference.__name__ = f"disabled({target})"
    return disabled_reference


def _raising_code(target: str) -> types.CodeType:
    """A code object that raises ``DisabledError``, for swapping into a Python function.

    The swapped-in code runs with the *target's* globals, so it may use builtins only (``__import__``).
    Swapping the code, not just the module attribute, also catches a name bound earlier with
    ``from seqlab.rnn import lstm_update``.
    """
    source = (
        "def disabled_reference(*args, **kwargs):\n"
        f"    raise __import__('seqlab.grading.references', fromlist=['_']).DisabledError({_message(target)!r})\n"
    )
    namespace: dict = {}
    exec(compile(source, f"<disabled {target}>", "exec"), namespace)
    return namespace["disabled_reference"].__code__


def _resolve(target: str):
    """``"pkg.module.Name.attr"`` → (owner object, attribute name); ``None`` if it does not exist."""
    owner_name, _, attr = target.rpartition(".")
    if not owner_name:
        raise ValueError(f"cannot disable {target!r}: give a dotted path such as 'seqlab.rnn.LSTMCell'")
    try:
        owner = pkgutil.resolve_name(owner_name)
    except (ImportError, AttributeError, ValueError):
        return None
    try:
        inspect.getattr_static(owner, attr)
    except AttributeError:
        if not hasattr(owner, attr):  # modules such as torch._VF and torch.ops.aten answer lazily
            return None
    return owner, attr


def _expand(target: str, owner, attr: str) -> list:
    """The (owner, attribute, label) patches that switch ``target`` off.

    A class is switched off through its ``__init__`` (no new instances) and its ``forward`` if it has
    one (instances built before the ``with`` stop working too), so aliases of the class are caught.
    """
    value = getattr(owner, attr)
    if isinstance(value, type):
        patches = [(value, "__init__", f"{target}.__init__")]
        if hasattr(value, "forward"):
            patches.append((value, "forward", f"{target}.forward"))
        return patches
    return [(owner, attr, target)]


@contextlib.contextmanager
def disabled(*targets: str, optional=()):
    """Switch reference implementations off inside a ``with`` block; restore them all on exit.

    Args:
        targets: dotted paths such as ``"seqlab.rnn.lstm_update"``, ``"torch.nn.LSTMCell"`` or
            ``"torch.nn.LSTM.forward"``. Calling a disabled function raises :class:`DisabledError`;
            a disabled class can neither be built nor run (its ``__init__`` and ``forward`` raise).
            A plain Python function is disabled in place (its code is swapped), so names bound to it
            before the block (``from seqlab.rnn import lstm_update``) are caught as well.
        optional: more dotted paths, skipped where they do not exist (torch internals that vary
            between versions).

    Raises:
        ValueError: a name in ``targets`` does not exist; nothing is patched then.

    Everything is restored when the block exits, also when it raises: module and class attributes
    (an inherited attribute is removed again, so inheritance works as before) and function code.
    Nothing is printed or warned, so a test cell that uses it stays silent on stderr.
    """
    patches = []
    for target, required in [(t, True) for t in targets] + [(t, False) for t in optional]:
        found = _resolve(target)
        if found is None:
            if required:
                raise ValueError(f"cannot disable {target!r}: no such module attribute")
            continue
        patches.extend(_expand(target, *found))

    undo = []
    try:
        for owner, attr, label in patches:
            namespace = vars(owner)
            own = attr in namespace  # read before patching: vars() is a live view
            if own:
                raw = namespace[attr]  # keeps staticmethod/classmethod wrappers for the restore
                undo.append(lambda owner=owner, attr=attr, raw=raw: setattr(owner, attr, raw))
            else:  # inherited, or answered by a module's __getattr__: remove our stub afterwards
                undo.append(lambda owner=owner, attr=attr: delattr(owner, attr))
            original = getattr(owner, attr)
            setattr(owner, attr, _raising_stub(label))
            if isinstance(original, types.FunctionType) and original.__closure__ is None and own:
                code = original.__code__
                undo.append(lambda function=original, code=code: setattr(function, "__code__", code))
                original.__code__ = _raising_code(label)
        ACTIVE.append((tuple(targets), tuple(optional)))
        undo.append(ACTIVE.pop)
        yield
    finally:
        for restore in reversed(undo):
            restore()
