"""The data: vocabularies, padded batches, and one module per generated task.

Every corpus is generated here, never downloaded, and is the same for the same ``seed``: generators
draw from their own ``random.Random(seed)`` (or a given ``torch.Generator``) and never touch the global
random state.

* :mod:`seqlab.data.vocab`: :class:`Vocab` (``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3), characters as tokens;
* :mod:`seqlab.data.batching`: padding, :class:`Seq2SeqBatch` for teacher forcing, tagging batches, splits;
* :mod:`seqlab.data.extended_vocab`: the pointer-generator's per-source extended vocabulary and :class:`PointerBatch`;
* the tasks, one module each: :mod:`~seqlab.data.memory` (chapter 1), :mod:`~seqlab.data.right_context`
  (chapter 2), :mod:`~seqlab.data.reversal`, :mod:`~seqlab.data.dates` and :mod:`~seqlab.data.translation`
  (chapters 3 to 5), :mod:`~seqlab.data.summarisation` (chapter 6), :mod:`~seqlab.data.sentiment`,
  :mod:`~seqlab.data.entailment`, :mod:`~seqlab.data.shapes` and :mod:`~seqlab.data.speech` (chapter 7).

Every public name is importable from ``seqlab.data`` itself, as the chapters do. Batches are
**batch-first** with ``PAD_ID = 0``; masks are bool with True at real tokens.
"""

from seqlab.core.padding import BOS, BOS_ID, EOS, EOS_ID, PAD, PAD_ID, SPECIAL_TOKENS, UNK, UNK_ID, lengths_to_mask
from seqlab.data.batching import (
    Seq2SeqBatch,
    iterate_batches,
    make_seq2seq_batch,
    make_tagging_batch,
    pad_sequences,
    train_test_split,
)
from seqlab.data.dates import (
    DATE_FORMATS,
    MONTHS,
    WEEKDAYS,
    ZH_DIGITS,
    ZH_WEEKDAYS,
    chinese_number,
    chinese_year,
    date_task,
    format_date,
    iso_date,
)
from seqlab.data.entailment import COLOURS, ENTAILMENT_LABELS, HYPERNYMS, NUMBERS, entailment_task
from seqlab.data.extended_vocab import (
    PointerBatch,
    build_shared_vocab,
    decode_extended,
    extended_source_ids,
    extended_target_ids,
    iterate_pointer_batches,
    make_pointer_batch,
)
from seqlab.data.memory import memory_task
from seqlab.data.reversal import reversal_task
from seqlab.data.right_context import AMBIGUOUS_WORDS, LEFT_CONTEXTS, right_context_task
from seqlab.data.sentiment import FILLER_WORDS, NEGATION, NEGATIVE_WORDS, POSITIVE_WORDS, sentiment_task
from seqlab.data.shapes import RELATIONS, SHAPE_COLOURS, SHAPES, shape_mask, shapes_task
from seqlab.data.speech import SPEECH_ALPHABET, character_patterns, speech_task
from seqlab.data.summarisation import multi_sentence_summarisation_task, summarisation_task
from seqlab.data.translation import translation_grammar_size, translation_task
from seqlab.data.vocab import SPACE_TOKEN, Vocab, build_vocabs, char_tokens, join_char_tokens

__all__ = [
    "AMBIGUOUS_WORDS",
    "BOS",
    "BOS_ID",
    "COLOURS",
    "DATE_FORMATS",
    "ENTAILMENT_LABELS",
    "EOS",
    "EOS_ID",
    "FILLER_WORDS",
    "HYPERNYMS",
    "LEFT_CONTEXTS",
    "MONTHS",
    "NEGATION",
    "NEGATIVE_WORDS",
    "NUMBERS",
    "PAD",
    "PAD_ID",
    "POSITIVE_WORDS",
    "RELATIONS",
    "SHAPES",
    "SHAPE_COLOURS",
    "SPACE_TOKEN",
    "SPECIAL_TOKENS",
    "SPEECH_ALPHABET",
    "UNK",
    "UNK_ID",
    "WEEKDAYS",
    "ZH_DIGITS",
    "ZH_WEEKDAYS",
    "PointerBatch",
    "Seq2SeqBatch",
    "Vocab",
    "build_shared_vocab",
    "build_vocabs",
    "char_tokens",
    "character_patterns",
    "chinese_number",
    "chinese_year",
    "date_task",
    "decode_extended",
    "entailment_task",
    "extended_source_ids",
    "extended_target_ids",
    "format_date",
    "iso_date",
    "iterate_batches",
    "iterate_pointer_batches",
    "join_char_tokens",
    "lengths_to_mask",
    "make_pointer_batch",
    "make_seq2seq_batch",
    "make_tagging_batch",
    "memory_task",
    "multi_sentence_summarisation_task",
    "pad_sequences",
    "reversal_task",
    "right_context_task",
    "sentiment_task",
    "shape_mask",
    "shapes_task",
    "speech_task",
    "summarisation_task",
    "train_test_split",
    "translation_grammar_size",
    "translation_task",
]
