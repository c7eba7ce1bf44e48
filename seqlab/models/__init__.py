"""The models a learner reads, in the order the chapters teach them, with their decoding.

* chapter 1: :mod:`~seqlab.models.rnn` (RNN, LSTM and GRU cells and layers, written out);
* chapter 2: :mod:`~seqlab.models.encoder` (the uni- or bidirectional encoder and its bridge);
* chapter 3: :mod:`~seqlab.models.decoder`, :mod:`~seqlab.models.seq2seq` and
  :mod:`~seqlab.models.decoding` (greedy and beam search, shared by every model that decodes);
* chapters 4 and 5: :mod:`~seqlab.models.attention` (the scorers) and
  :mod:`~seqlab.models.attention_decoder`;
* chapter 6: :mod:`~seqlab.models.pointer` (the pointer-generator and its losses);
* chapter 7: :mod:`~seqlab.models.pooling`, :mod:`~seqlab.models.entailment`,
  :mod:`~seqlab.models.memory_seq2seq`, :mod:`~seqlab.models.captioning`, :mod:`~seqlab.models.listener`;
* chapter 8: :mod:`~seqlab.models.multihead` and :mod:`~seqlab.models.transformer`.

Every model that decodes keeps one contract, written once in :mod:`~seqlab.models.decoding`: ``encode``
returns an ``Encoded(memory, mask, state)``; a decoder's step returns a ``DecoderStep(log_probs, state)``
(``AttentionStep`` adds the weights, ``PointerStep`` what the pointer adds); ``greedy_decode`` and
``beam_search`` come from ``Decodable``, with one signature for all.

A model imports :mod:`seqlab.core` and other models, never the data or the experiments
(tests/test_layout.py keeps the rule for every module of this folder).
"""
