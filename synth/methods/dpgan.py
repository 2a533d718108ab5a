"""DP-GAN: a tabular GAN whose critic is trained with DP-SGD (Opacus); the generator only ever
sees the critic, so it and everything sampled from it are post-processing.

Model space (from the public schema only): every column becomes one softmax block, categories
as they are and numbers as integer-aware bins over their public bounds (see
:class:`~synth.encoding.Discretizer`), so point masses such as a capital gain of 0 or 40 hours
a week come back exactly. The generator emits Gumbel-softmax blocks; the critic sees one-hot
real rows.

Privacy: each DP-SGD step draws a Poisson batch of real rows (Opacus's ``DPDataLoader``) and
pairs every real row with a fresh fake row; the per-sample loss is that pair's critic loss, so
per-sample clipping bounds each real record's influence on a step. The noise multiplier is
calibrated by Opacus's accountant so that the planned number of steps spends the stage's
(ε, δ), and the loop never takes a step beyond the plan.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import pandas as pd

from synth.encoding import Discretizer, finalize
from synth.errors import BudgetError, ParameterError
from synth.methods.base import FitContext, Synthesizer
from synth.privacy.budget import LedgerEntry
from synth.schema import Schema

GAN = "gan"
ACCOUNTANTS = ("rdp", "prv")
# RDP orders: a few fractional ones (slow to evaluate) and integers up to 256, so the optimum
# lies inside the range at both small and large ε
ALPHAS = [1 + k / 8 for k in range(1, 16)] + list(range(3, 65)) + [80, 96, 128, 192, 256]


# Opacus and torch warnings that say nothing about this use: noise comes from torch's PRNG
# (secure_mode needs torchcsprng), the critic's inputs need no gradient, and at large ε the
# best RDP order is an end of the range tried (the bound is still valid, only less tight).
_BENIGN = ("Secure RNG turned off", "Full backward hook is firing",
           "Optimal order is the")


def _accountant_kwargs(accountant: str) -> dict:
    return {"alphas": ALPHAS} if accountant == "rdp" else {}


def _check_int(value, name: str, low: int = 1) -> int:
    if isinstance(value, bool) or int(value) != value or value < low:
        raise ParameterError(f"{name} must be an integer ≥ {low}, got {value!r}")
    return int(value)


def _check_float(value, name: str) -> float:
    if isinstance(value, bool) or not (isinstance(value, int | float) and 0 < value < math.inf):
        raise ParameterError(f"{name} must be a number > 0, got {value!r}")
    return float(value)


def calibrate_noise(epsilon: float, delta: float, sample_rate: float, steps: int,
                    accountant: str = "rdp") -> float:
    """Smallest noise multiplier whose ``steps`` Poisson-sampled steps are (ε, δ)-DP under
    Opacus's accountant (bisection to a relative ε tolerance of 1e-10)."""
    from opacus.accountants.utils import get_noise_multiplier

    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_BENIGN[-1])
            return get_noise_multiplier(target_epsilon=epsilon, target_delta=delta,
                                        sample_rate=sample_rate, steps=steps,
                                        accountant=accountant,
                                        epsilon_tolerance=epsilon * 1e-10,
                                        **_accountant_kwargs(accountant))
    except ValueError as err:  # "The privacy budget is too low."
        raise BudgetError(f"DP-SGD cannot spend only ε={epsilon:.3g}, δ={delta:.3g} over "
                          f"{steps} steps at sampling rate {sample_rate:.3g}: {err}") from None


def _networks(sizes: np.ndarray, noise_dim: int, g_hidden: int, c_hidden: int, loss: str):
    import torch
    from torch import nn

    width = int(sizes.sum())

    class Generator(nn.Module):
        """z → one Gumbel-softmax block per column (logits at sampling time)."""

        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(noise_dim, g_hidden), nn.LayerNorm(g_hidden), nn.ReLU(),
                nn.Linear(g_hidden, g_hidden), nn.LayerNorm(g_hidden), nn.ReLU(),
                nn.Linear(g_hidden, width))
            self.splits = [int(s) for s in sizes]

        def forward(self, z, tau: float = 0.2):
            blocks = torch.split(self.net(z), self.splits, dim=1)
            return torch.cat([nn.functional.gumbel_softmax(b, tau=tau, hard=True)
                              for b in blocks], dim=1)

        def logits(self, z):
            return torch.split(self.net(z), self.splits, dim=1)

    class Critic(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(width, c_hidden), nn.LeakyReLU(0.2),
                nn.Linear(c_hidden, c_hidden), nn.LeakyReLU(0.2),
                nn.Linear(c_hidden, 1))

        def forward(self, pairs):
            """(B, 2, width) real/fake pairs → per-pair critic loss."""
            scores = self.net(pairs).squeeze(-1)
            if loss == "wgan":
                return scores[:, 1] - scores[:, 0]
            return nn.functional.softplus(-scores[:, 0]) + nn.functional.softplus(scores[:, 1])

    return Generator(), Critic()


class DPGAN(Synthesizer):
    """Wasserstein GAN with a DP-SGD critic.

    Parameters
    ----------
    epochs : expected passes over the private table by the critic (steps = epochs / q).
    batch_size : expected Poisson batch size of real rows (q = batch_size / n).
    generator_steps : generator updates per critic step (free: they never see real rows).
    noise_dim : generator input size.
    generator_hidden, critic_hidden : hidden widths; a small critic has fewer coordinates for
        the DP-SGD noise to drown.
    lr_critic, lr_generator : Adam learning rates.
    max_grad_norm : per-sample clipping norm C of the critic's gradients.
    weight_clip : WGAN weight clipping of the critic (Lipschitz bound); applied after each step.
    bins, exact_integers : numeric model space (see :class:`~synth.encoding.Discretizer`).
    accountant : Opacus accountant, "rdp" or "prv".
    """

    name = "dpgan"
    title = "DP-GAN"
    summary = ("A GAN whose critic learns with DP-SGD (Opacus); the generator only sees the "
               "critic. Learns joint structure; needs a few thousand noisy steps.")
    paper = "Xie et al. 2018 (DPGAN), as used in Ebrahimianghazani 2023"
    stages: ClassVar[Mapping[str, float]] = {GAN: 1.0}

    def __init__(self, epochs: float = 10.0, batch_size: int = 128, generator_steps: int = 1,
                 noise_dim: int = 64, generator_hidden: int = 256, critic_hidden: int = 64,
                 lr_critic: float = 1e-3, lr_generator: float = 1e-3, max_grad_norm: float = 1.0,
                 weight_clip: float = 0.1, bins: int = 16, exact_integers: int = 128,
                 accountant: str = "rdp", loss: str = "bce"):
        self.loss = loss
        self.epochs = epochs
        self.batch_size = batch_size
        self.generator_steps = generator_steps
        self.noise_dim = noise_dim
        self.generator_hidden = generator_hidden
        self.critic_hidden = critic_hidden
        self.lr_critic = lr_critic
        self.lr_generator = lr_generator
        self.max_grad_norm = max_grad_norm
        self.weight_clip = weight_clip
        self.bins = bins
        self.exact_integers = exact_integers
        self.accountant = accountant

    def _check(self, n: int) -> None:
        _check_float(self.epochs, "epochs")
        for name in ("batch_size", "generator_steps", "noise_dim", "generator_hidden",
                     "critic_hidden", "bins"):
            _check_int(getattr(self, name), name)
        _check_int(self.exact_integers, "exact_integers", 0)
        for name in ("lr_critic", "lr_generator", "max_grad_norm", "weight_clip"):
            _check_float(getattr(self, name), name)
        if self.accountant not in ACCOUNTANTS:
            raise ParameterError(f"accountant must be one of {ACCOUNTANTS}, got "
                                 f"{self.accountant!r}")
        if self.batch_size >= n:
            raise ParameterError(f"batch_size ({self.batch_size}) must be smaller than the "
                                 f"table ({n} rows)")

    def _fit(self, data: pd.DataFrame, schema: Schema, ctx: FitContext) -> None:
        self._check(len(data))
        self.discretizer_ = Discretizer(schema, bins=self.bins, exact_integers=self.exact_integers)
        self.generator_ = train_gan(self, self.discretizer_.codes(data), ctx, stage=GAN)

    def _sample(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        codes = sample_codes(self.generator_, self.discretizer_.sizes, n, rng, self.noise_dim)
        return finalize(self.discretizer_.decode(codes, rng), self.schema_)


def train_gan(model: DPGAN, codes: np.ndarray, ctx: FitContext, stage: str):
    """Train ``model``'s networks on integer codes, spending the ledger's whole ``stage`` share;
    returns the generator (on the CPU, in eval mode)."""
    with warnings.catch_warnings():
        for message in _BENIGN:
            warnings.filterwarnings("ignore", message=message)
        return _train(model, codes, ctx, stage)



def _train(model: DPGAN, codes: np.ndarray, ctx: FitContext, stage: str):
    import torch
    from opacus import PrivacyEngine
    from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping
    from torch.utils.data import DataLoader, TensorDataset

    ledger, sizes = model.ledger_, model.discretizer_.sizes
    eps, delta = ledger.remaining(stage)
    if delta <= 0:
        raise BudgetError(f"DP-SGD needs δ > 0 in the {stage!r} share")
    n = len(codes)
    seed = int(model.rng_.integers(2**63 - 1))
    loader = DataLoader(TensorDataset(torch.arange(n)), batch_size=model.batch_size,
                        generator=torch.Generator().manual_seed(seed))  # Poisson draws
    q = 1 / len(loader)  # the sampling rate Opacus's DPDataLoader will use
    steps = max(1, math.ceil(model.epochs / q))
    sigma = calibrate_noise(eps, delta, q, steps, model.accountant)

    device = torch.device(ctx.resolve_device())
    torch.manual_seed(seed)
    generator, critic = _networks(sizes, model.noise_dim, model.generator_hidden,
                                  model.critic_hidden, model.loss)
    generator.to(device)
    critic.to(device)
    offsets = torch.as_tensor(np.concatenate([[0], np.cumsum(sizes)[:-1]]), device=device)
    real = torch.as_tensor(codes, device=device) + offsets  # column codes → one-hot positions
    width = int(sizes.sum())

    opt_c = torch.optim.Adam(critic.parameters(), lr=model.lr_critic, betas=(0.5, 0.9))
    opt_g = torch.optim.Adam(generator.parameters(), lr=model.lr_generator, betas=(0.5, 0.9))
    engine = PrivacyEngine(accountant=model.accountant)
    spent_so_far = lambda: engine.accountant.get_epsilon(  # noqa: E731
        delta=delta, **_accountant_kwargs(model.accountant))
    # ghost clipping: per-sample gradient norms without materialising per-sample gradients
    critic, opt_c, _, loader = engine.make_private(
        module=critic, optimizer=opt_c, data_loader=loader, noise_multiplier=sigma,
        max_grad_norm=model.max_grad_norm, poisson_sampling=True, grad_sample_mode="ghost",
        criterion=torch.nn.MSELoss(),  # unused: the critic returns its per-pair losses
        noise_generator=torch.Generator(device=device).manual_seed(seed + 1))

    def one_hot(idx):
        out = torch.zeros(len(idx), width, device=device)
        return out.scatter_(1, real[idx], 1.0)

    def fake(count):
        return generator(torch.randn(count, model.noise_dim, device=device))

    ctx.stage(stage, steps, f"DP-SGD critic: {steps} steps, noise multiplier {sigma:.3g}")
    step, started, c_loss, g_loss = 0, time.monotonic(), float("nan"), float("nan")
    eps_now, eps_at = 0.0, started
    losses = []
    while step < steps:
        for (idx,) in loader:
            if step >= steps:  # never a step beyond the plan the noise was calibrated for
                break
            ctx.check()
            with torch.no_grad():
                fakes = fake(max(len(idx), 1))[: len(idx)]
            pairs = torch.stack([one_hot(idx.to(device)), fakes], dim=1)
            opt_c.zero_grad(set_to_none=True)
            loss = critic(pairs)
            if len(idx):
                DPTensorFastGradientClipping(critic, opt_c, loss, "mean").backward()
            opt_c.step()
            if model.loss == "wgan":
                with torch.no_grad():
                    for p in critic.parameters():
                        p.clamp_(-model.weight_clip, model.weight_clip)
            step += 1
            if len(idx):
                c_loss = float(loss.detach().mean())
            for _ in range(model.generator_steps):
                g_loss = _generator_step(generator, critic, opt_g, model, device)
            losses.append((c_loss, g_loss))
            if step == steps or time.monotonic() - eps_at >= 0.5:  # the accountant takes ~10 ms
                eps_now, eps_at = spent_so_far(), time.monotonic()
            ctx.progress(stage, step, steps, critic_loss=c_loss, generator_loss=g_loss,
                         epsilon=eps_now)
    spent = spent_so_far()
    if spent > eps * (1 + 1e-9):
        raise BudgetError(f"the accountant reports ε={spent} above the share ε={eps}")
    ledger.spend(LedgerEntry(
        stage=stage, mechanism="DP-SGD (Gaussian, Poisson sampling)", epsilon=min(spent, eps),
        delta=delta, accounting=f"Opacus {model.accountant.upper()} accountant",
        description=f"WGAN critic, {steps} steps of expected batch {model.batch_size}",
        params={"noise_multiplier": sigma, "sample_rate": q, "steps": steps,
                "max_grad_norm": model.max_grad_norm, "accountant_epsilon": spent,
                "seconds": round(time.monotonic() - started, 3)}))
    model.losses_ = np.array(losses)
    return generator.cpu().eval()


def _generator_step(generator, critic, opt_g, model: DPGAN, device) -> float:
    import torch

    net = critic._module.net
    critic.disable_hooks()  # no per-sample gradients: this step never sees real rows
    for p in critic.parameters():
        p.requires_grad_(False)
    opt_g.zero_grad(set_to_none=True)
    z = torch.randn(model.batch_size, model.noise_dim, device=device)
    scores = net(generator(z))
    loss = -scores.mean() if model.loss == "wgan" else torch.nn.functional.softplus(-scores).mean()
    loss.backward()
    opt_g.step()
    for p in critic.parameters():
        p.requires_grad_(True)
    critic.enable_hooks()
    return float(loss.detach())


def sample_codes(generator, sizes: np.ndarray, n: int, rng: np.random.Generator,
                 noise_dim: int, chunk: int = 65536) -> np.ndarray:
    """n rows of integer codes drawn from the generator's per-column softmax."""
    import torch

    out = np.empty((n, len(sizes)), dtype=np.int64)
    torch_rng = torch.Generator().manual_seed(int(rng.integers(2**63 - 1)))
    with torch.no_grad():
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            z = torch.randn(m, noise_dim, generator=torch_rng)
            for j, logits in enumerate(generator.logits(z)):
                out[start:start + m, j] = torch.multinomial(
                    torch.softmax(logits, dim=1), 1, generator=torch_rng)[:, 0].numpy()
    return out
