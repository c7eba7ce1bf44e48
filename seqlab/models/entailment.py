"""Recognising textual entailment with word-by-word attention (Rocktäschel et al., 2016) (chapter 7).

Two recurrent encoders read the premise, then the hypothesis, the second starting from the first's
final state (**conditional encoding**): the hypothesis is read "knowing" the premise, but everything
the premise said must fit in one state. **Word-by-word attention** lets every hypothesis word look
back over all the premise's states. In the paper's notation, with Y the premise states and h_t the
hypothesis states::

    M_t = tanh(W^y Y + (W^h h_t + W^r r_{t-1}) ⊗ e)      additive scoring, query [h_t; r_{t-1}]
    α_t = softmax(wᵀ M_t)                                over the real premise words
    r_t = Y α_t + tanh(W^t r_{t-1})                       what the premise says about word t, so far
    h*  = tanh(W^p r_N + W^x h_N)                          the pair's representation, N the last word

and a linear layer maps ``h*`` to the three labels (entailment, contradiction, neutral). Chapter 7
writes the same equations in the book's notation: ``h^p_i`` for Y's columns (the premise's states),
``W_k`` for ``W^y``, ``W_q`` for ``[W^h W^r]`` (with a bias ``b``), ``u_t`` for ``r_t`` (the book's
``r_t`` is the GRU's reset gate), ``W_carry`` for ``W^t``, ``W_pair`` for ``[W^p W^x]`` (with a bias),
and ``T`` for the hypothesis's last word ``N``.
"""

import torch
from torch import Tensor, nn

from seqlab.core.checks import check_shape
from seqlab.core.padding import lengths_to_mask
from seqlab.models.attention import AdditiveScorer, Attention
from seqlab.models.encoder import Encoder
from seqlab.models.rnn import hidden_state


class EntailmentClassifier(nn.Module):
    """Conditional encoding, with or without word-by-word attention.

    Args:
        vocab_size: V, shared by premises and hypotheses (id 0 is padding).
        num_classes: the number of labels (3).
        embedding_size, hidden_size: the embeddings' size and each encoder's state size H.
        word_by_word: attend over the premise at every hypothesis word (True), or classify from the
            hypothesis encoder's final state alone (False: conditional encoding).

    Shape:
        - ``model(premise (B, S), premise_lengths (B,), hypothesis (B, T), hypothesis_lengths (B,))``
          → logits ``(B, num_classes)``.
        - ``model.attention_weights(...)`` (same arguments) → ``(B, T, S)``: row t is where
          hypothesis word t looked in the premise (zeros at padded hypothesis words).

    Example::

        >>> model = EntailmentClassifier(vocab_size=20, embedding_size=4, hidden_size=6)
        >>> premise, premise_lengths = torch.tensor([[4, 5, 6], [7, 8, 0]]), torch.tensor([3, 2])
        >>> hypothesis, hypothesis_lengths = torch.tensor([[9, 10], [11, 0]]), torch.tensor([2, 1])
        >>> model(premise, premise_lengths, hypothesis, hypothesis_lengths).shape
        torch.Size([2, 3])
        >>> model.attention_weights(premise, premise_lengths, hypothesis, hypothesis_lengths).shape
        torch.Size([2, 2, 3])

    Taught in chapter 7.
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int = 3,
        embedding_size: int = 32,
        hidden_size: int = 64,
        word_by_word: bool = True,
    ):
        super().__init__()
        self.word_by_word = word_by_word
        self.premise_encoder = Encoder(vocab_size, embedding_size, hidden_size, bidirectional=False)
        self.hypothesis_encoder = Encoder(vocab_size, embedding_size, hidden_size, bidirectional=False)
        H = hidden_size
        if word_by_word:
            self.attention = Attention(AdditiveScorer(query_size=2 * H, key_size=H, attention_size=H))  # W^y; [W^h W^r]
            self.carry = nn.Linear(H, H, bias=False)  # W^t
            self.combine_r = nn.Linear(H, H, bias=False)  # W^p
            self.combine_h = nn.Linear(H, H)  # W^x
        self.output = nn.Linear(H, num_classes)

    def _read(self, premise: Tensor, premise_lengths: Tensor, hypothesis: Tensor, hypothesis_lengths: Tensor) -> tuple:
        """The premise states Y ``(B, P, H)``, the hypothesis states ``(B, T, H)`` and the final ``h_N (B, H)``."""
        check_shape("hypothesis", hypothesis, (premise.shape[0], "T"))
        Y, premise_final = self.premise_encoder(
            premise, premise_lengths, names=("premise", "premise_lengths")
        )  # (B, P, H), (1, B, H)
        # conditional encoding: the hypothesis encoder starts where the premise encoder ended
        states, final = self.hypothesis_encoder(
            hypothesis, hypothesis_lengths, premise_final, names=("hypothesis", "hypothesis_lengths")
        )  # (B, T, H)
        return Y, states, hidden_state(final)[-1]  # (B, P, H), (B, T, H), (B, H)

    def _attend(self, Y: Tensor, premise_mask: Tensor, states: Tensor, hypothesis_lengths: Tensor) -> tuple:
        """Word by word: ``r_N (B, H)`` at each hypothesis's last word, and the weights ``(B, T, P)``."""
        B, T, H = states.shape
        prepared = self.attention.scorer.prepare_keys(Y)  # (B, P, H): W^y Y, once per premise
        r = Y.new_zeros(B, H)  # r_0
        all_r, all_weights = [], []
        for t in range(T):
            query = torch.cat([states[:, t], r], dim=1).unsqueeze(1)  # (B, 1, 2H): [h_t; r_{t-1}]
            context, weights = self.attention(query, Y, Y, premise_mask, prepared_keys=prepared)  # (B, 1, H), (B, 1, P)
            r = context.squeeze(1) + torch.tanh(self.carry(r))  # (B, H)
            all_r.append(r)
            all_weights.append(weights.squeeze(1))
        all_r = torch.stack(all_r, dim=1)  # (B, T, H)
        last = (hypothesis_lengths - 1).to(states.device).view(B, 1, 1).expand(B, 1, H)  # (B, 1, H)
        real = lengths_to_mask(hypothesis_lengths, T).to(states.device).unsqueeze(2)  # (B, T, 1)
        return all_r.gather(1, last).squeeze(1), torch.stack(all_weights, dim=1) * real  # (B, H), (B, T, P)

    def forward(
        self, premise: Tensor, premise_lengths: Tensor, hypothesis: Tensor, hypothesis_lengths: Tensor
    ) -> Tensor:
        return self.output(self.represent(premise, premise_lengths, hypothesis, hypothesis_lengths)[0])  # (B, C)

    def represent(
        self, premise: Tensor, premise_lengths: Tensor, hypothesis: Tensor, hypothesis_lengths: Tensor
    ) -> tuple:
        """``h* (B, H)`` and the word-by-word weights ``(B, T, P)`` (None without attention)."""
        Y, states, h_N = self._read(premise, premise_lengths, hypothesis, hypothesis_lengths)
        if not self.word_by_word:
            return h_N, None  # conditional encoding: the last state is all there is
        premise_mask = lengths_to_mask(premise_lengths, premise.shape[1]).to(premise.device)  # (B, P)
        r_N, weights = self._attend(Y, premise_mask, states, hypothesis_lengths)
        return torch.tanh(self.combine_r(r_N) + self.combine_h(h_N)), weights  # (B, H), (B, T, P)

    def attention_weights(self, premise, premise_lengths, hypothesis, hypothesis_lengths) -> Tensor:
        if not self.word_by_word:
            raise ValueError("an EntailmentClassifier with word_by_word=False has no attention weights")
        return self.represent(premise, premise_lengths, hypothesis, hypothesis_lengths)[1]  # (B, T, P)
