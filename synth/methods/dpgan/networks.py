"""DP-GAN's networks: a latent-class mixture generator, a small critic and its pair loss.

Generator: a row draws a component k from a learned prior, then each column from its own
learned softmax given k; the mixture captures dependence between columns through k. Trained
through straight-through Gumbel-softmax samples, so the critic always sees one-hot rows, real
or fake. Its few parameters each get the critic's gradient directly, which is what makes it
learn in the ~2,000 noisy critic steps a budget allows (an MLP generator, measured on the same
protocol, reached 2-way TVD 0.32 at ε = 2 against 0.14 here).

Imports torch: only :mod:`.training` imports this module, and only when a GAN is fitted.
"""

from __future__ import annotations

import torch
from torch import nn

TAU = 0.5  # Gumbel-softmax temperature of the straight-through gradients


class Mixture(nn.Module):
    """Latent-class generator: a component from the prior, then one softmax per column.

    ``splits`` are the columns' code counts; a row is their one-hot blocks side by side.
    """

    def __init__(self, splits: list[int], components: int):
        super().__init__()
        self.splits = splits
        self.prior = nn.Parameter(torch.zeros(components))
        self.table = nn.Parameter(0.5 * torch.randn(components, sum(splits)))

    def forward(self, count: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``count`` one-hot rows; their randomness from ``generator`` (torch's default: None)."""
        k = gumbel_onehot(self.prior.expand(count, -1), [len(self.prior)], generator)
        return gumbel_onehot(k @ self.table, self.splits, generator)


def critic(width: int, hidden: int) -> nn.Sequential:
    """A row's score, (..., width) → (..., 1): high for rows that look real."""
    return nn.Sequential(
        nn.Linear(width, hidden), nn.LeakyReLU(0.2),
        nn.Linear(hidden, hidden), nn.LeakyReLU(0.2),
        nn.Linear(hidden, 1))


class PairLoss(nn.Module):
    """Non-saturating discriminator loss of (B, 2k, 1) scores: a unit's k real rows, then a
    fake row for each, with a (B, k) ``mask`` of the rows the unit holds (a unit of fewer
    than k rows is padded).

    One loss per unit, the sum over its (real, fake) pairs, so per-sample clipping bounds each
    unit's influence on a step (k = 1: each record's). Padded pairs add nothing, and so no
    gradient. ``reduction`` as in torch's losses: Opacus sets it to "none" for its
    per-sample norms.
    """

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        scores = scores.squeeze(-1)
        k = mask.shape[1]
        pairs = (nn.functional.softplus(-scores[:, :k])
                 + nn.functional.softplus(scores[:, k:]))
        loss = (pairs * mask).sum(dim=1)
        if self.reduction == "none":
            return loss
        return loss.sum() if self.reduction == "sum" else loss.mean()


def gumbel_onehot(logits: torch.Tensor, splits: list[int],
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Straight-through Gumbel-softmax, one sample per block of columns: one-hot rows forward,
    the softmax's gradient back. One uniform draw serves every block (torch's own
    ``gumbel_softmax`` draws each block through ``exponential_``, a fifth of training time)."""
    u = torch.rand(logits.shape, generator=generator, dtype=logits.dtype,
                   device=logits.device).clamp_(min=torch.finfo(logits.dtype).tiny)
    noisy = (logits - (-u.log()).log()) / TAU
    out = []
    for block in torch.split(noisy, splits, dim=1):
        soft = block.softmax(dim=1)
        hard = torch.zeros_like(block).scatter_(1, block.argmax(dim=1, keepdim=True), 1.0)
        out.append(hard - soft.detach() + soft)
    return torch.cat(out, dim=1)
