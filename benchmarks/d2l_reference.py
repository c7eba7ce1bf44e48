"""The chapter models of d2l (Dive into Deep Learning, PyTorch edition 1.0.3), rewritten from the book's
equations and sizes, for timing seqlab's models against them without a download.

What the book's models do, and so what these do:

* encoder: an embedding, then a unidirectional multi-layer GRU run over padded, time-major input (no
  packing: padded steps are computed and never read);
* vanilla decoder (section 10.7): the encoder's top-layer output at the last step is the context; the
  GRU reads ``[embed(y); context]`` for every step in one call; a dense layer on the GRU output;
* attention decoder (section 11.4, Bahdanau): at every step the top layer's state queries the encoder
  outputs through additive attention ``w_vᵀ tanh(W_q q + W_k k)`` (no bias), a masked softmax that puts
  ``-1e6`` on padded keys, then the GRU reads ``[context; embed(y)]``; the keys are projected again at
  every step; a dense layer on all GRU outputs after the loop;
* loss: cross-entropy averaged over the real target tokens; Xavier-uniform weights.
"""

import torch
import torch.nn.functional as F
from torch import nn


def xavier(module: nn.Module) -> None:
    if type(module) is nn.Linear:
        nn.init.xavier_uniform_(module.weight)
    if type(module) is nn.GRU:
        for name in module._flat_weights_names:
            if "weight" in name:
                nn.init.xavier_uniform_(module._parameters[name])


class Encoder(nn.Module):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout)
        self.apply(xavier)

    def forward(self, src):
        outputs, state = self.rnn(self.embedding(src.t()))  # (S, B, H), (L, B, H)
        return outputs, state


class VanillaSeq2Seq(nn.Module):
    def __init__(self, vocab_size, embed_size=256, num_hiddens=256, num_layers=2, dropout=0.2):
        super().__init__()
        self.encoder = Encoder(vocab_size, embed_size, num_hiddens, num_layers, dropout)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self.apply(xavier)

    def start(self, src, src_lengths):  # noqa: ARG002 (d2l's vanilla decoder ignores the lengths)
        outputs, state = self.encoder(src)
        return outputs[-1], state  # the last step's top-layer output is the context

    def decode(self, tgt_in, memory):
        context, state = memory
        embedded = self.embedding(tgt_in.t())  # (T, B, E)
        context = context.expand(embedded.shape[0], -1, -1)  # (T, B, H)
        outputs, state = self.rnn(torch.cat([embedded, context], dim=2), state)
        return self.dense(outputs).transpose(0, 1), (memory[0], state)  # (B, T, V)

    def forward(self, src, src_lengths, tgt_in):
        return self.decode(tgt_in, self.start(src, src_lengths))[0]


def masked_softmax(scores, valid_lengths):
    """Softmax over the last axis with ``-1e6`` at positions past each row's valid length."""
    S = scores.shape[-1]
    padded = torch.arange(S, device=scores.device)[None, None, :] >= valid_lengths[:, None, None]
    return F.softmax(scores.masked_fill(padded, -1e6), dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, num_hiddens, dropout):
        super().__init__()
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lengths):
        features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))  # (B, T, S, H)
        weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lengths)  # (B, T, S)
        return torch.bmm(self.dropout(weights), values)  # (B, T, H)


class BahdanauSeq2Seq(nn.Module):
    def __init__(self, vocab_size, embed_size=256, num_hiddens=256, num_layers=2, dropout=0.2):
        super().__init__()
        self.encoder = Encoder(vocab_size, embed_size, num_hiddens, num_layers, dropout)
        self.attention = AdditiveAttention(num_hiddens, dropout)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self.apply(xavier)

    def start(self, src, src_lengths):
        outputs, state = self.encoder(src)
        return outputs.transpose(0, 1), state, src_lengths  # (B, S, H)

    def decode(self, tgt_in, memory):
        keys, state, valid_lengths = memory
        outputs = []
        for x in self.embedding(tgt_in.t()):  # one (B, E) per step
            query = state[-1].unsqueeze(1)  # (B, 1, H)
            context = self.attention(query, keys, keys, valid_lengths)  # (B, 1, H)
            out, state = self.rnn(torch.cat([context, x.unsqueeze(1)], dim=2).transpose(0, 1), state)
            outputs.append(out)
        return self.dense(torch.cat(outputs, dim=0)).transpose(0, 1), (keys, state, valid_lengths)

    def forward(self, src, src_lengths, tgt_in):
        return self.decode(tgt_in, self.start(src, src_lengths))[0]


def loss(logits, tgt_out, pad_id=0):
    per_token = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), reduction="none")
    mask = (tgt_out.reshape(-1) != pad_id).float()
    return (per_token * mask).sum() / mask.sum()


@torch.no_grad()
def greedy_decode(model, src, src_lengths, max_len, bos_id=1):
    """d2l's prediction loop: feed back the argmax for ``max_len`` steps (no early stop per row)."""
    memory = model.start(src, src_lengths)
    token = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
    outputs = []
    for _ in range(max_len):
        logits, memory = model.decode(token, memory)
        token = logits.argmax(dim=2)
        outputs.append(token)
    return torch.cat(outputs, dim=1)
