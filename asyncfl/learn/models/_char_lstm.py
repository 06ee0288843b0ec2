"""The network of ``model.name: lstm_shakespeare`` (a torch module: imported by its builder, not at validation)."""

from __future__ import annotations

import torch
from torch import nn


class CharLSTM(nn.Module):
    """LEAF's next-character model (Caldas et al. 2018): an embedding of every character, a stacked LSTM over
    the window, and a linear layer on the last step's output.  Inputs: character indices [n, length] of any
    integer type (the data set keeps them as uint8); outputs: logits [n, vocabulary]."""

    def __init__(self, vocabulary: int, embedding: int, units: int, layers: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, embedding)
        self.lstm = nn.LSTM(embedding, units, num_layers=layers, batch_first=True)
        self.head = nn.Linear(units, vocabulary)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embedding(x.long()))
        return self.head(out[:, -1])
