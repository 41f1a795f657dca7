"""The training loss: the output layer and the cross-entropy fused, computed in row chunks.

``linear_cross_entropy(x, weight, bias, target)`` equals
``F.cross_entropy(F.linear(x, weight, bias), target, reduction="sum")`` (with the same
``label_smoothing``), but the (N, V) logits never exist at once: each chunk of rows gets its
logits, loss and gradient (softmax minus the smoothed one-hot) while it is in cache, and the
gradients for x, weight and bias are accumulated there.  With an 8,000-word vocabulary the full
logits of a batch are ~40 MB; materialising them, zero-filling the gradient and running
log-softmax forward and backward over them costs more than the output layer's matrix products.

A copying decoder (nn/copy.py) is trained on probabilities, not logits: ``linear_log_prob``
gives log P_vocab(target) per row (chunked the same way) and ``pointer_generator_nll`` the
negative log of the mixture with the copy distribution; ``coverage_loss`` is the coverage
penalty of See et al. 2017.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = [
    "linear_cross_entropy",
    "linear_log_prob",
    "pointer_generator_nll",
    "coverage_loss",
    "rows_padded",
    "CHUNK_BYTES",
    "ROW_QUANTUM",
]

CHUNK_BYTES = 4 << 20  # logits per chunk: about the size of a core's L2 cache or two
ROW_QUANTUM = 64  # under autocast the output layer's rows are padded to a multiple of this
IGNORED = -100  # the target of a padding row (F.cross_entropy's ignore_index)


def rows_padded(x: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, target) with zero rows and IGNORED targets added up to a multiple of ROW_QUANTUM rows,
    under autocast only; else as they are. x (N, F), target (N,).

    The output layer's rows are a batch's real target tokens, a different count almost every
    batch, and oneDNN's bfloat16 products create and cache a kernel and a packed copy of the
    (V, F) weight for each new shape: unpadded, a training run's memory grew by megabytes with each
    new count (to gigabytes) and each new count paid the kernel's creation. Padded, a run meets a
    few shapes; the padding rows cost at most ROW_QUANTUM - 1 rows of the product and add nothing
    to the loss or the gradients."""
    if not torch.is_autocast_enabled(x.device.type) or x.shape[0] % ROW_QUANTUM == 0:
        return x, target
    extra = ROW_QUANTUM - x.shape[0] % ROW_QUANTUM
    return F.pad(x, (0, 0, 0, extra)), F.pad(target, (0, extra), value=IGNORED)


def _chunk_loss(logp: torch.Tensor, target: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(summed smoothed cross-entropy in float64, d loss / d logits) of a chunk's log-softmax
    ``logp`` (n, V) against ``target`` (n,); rows whose target is IGNORED add neither. The
    gradient, softmax - (1 - eps) onehot - eps / V, is built in ``logp``'s memory."""
    V = logp.shape[1]
    real = target != IGNORED  # (n,)
    target = target.clamp(min=0)
    nll = -logp.gather(1, target[:, None]).squeeze(1)  # -log p(target)
    loss = nll if not eps else (1 - eps) * nll - eps * logp.mean(dim=1)
    total = loss[real].sum(dtype=torch.float64)
    grad = logp.exp_()  # (n, V)
    grad.scatter_add_(1, target[:, None], grad.new_full((target.shape[0], 1), eps - 1.0))
    if eps:
        grad.sub_(eps / V)
    if not bool(real.all()):
        grad.mul_(real[:, None])
    return total, grad


class _LinearCrossEntropy(torch.autograd.Function):
    """Summed (smoothed) cross-entropy of softmax(x W^T + b); gradients made in the forward."""

    @staticmethod
    def forward(ctx, x, weight, bias, target, label_smoothing: float, chunk: int):
        # x (N, F), weight (V, F), bias (V,) or None, target (N,) ids
        N = x.shape[0]
        eps = float(label_smoothing)
        grad_x = torch.empty_like(x)  # (N, F)
        grad_w = torch.empty_like(weight)  # (V, F), the first chunk writes it
        grad_b = torch.empty_like(bias) if bias is not None else None  # (V,)
        total = torch.zeros((), dtype=torch.float64, device=x.device)
        for lo in range(0, N, chunk):
            xc, tc = x[lo : lo + chunk], target[lo : lo + chunk]  # (n, F), (n,)
            logits = xc @ weight.t() if bias is None else torch.addmm(bias, xc, weight.t())
            loss, grad = _chunk_loss(torch.log_softmax(logits, dim=1), tc, eps)  # (n, V): one fused pass
            del logits
            total += loss
            torch.mm(grad, weight, out=grad_x[lo : lo + chunk])
            if lo == 0:  # no zero-filled (V, F) buffer: the first chunk's product is written in place
                torch.mm(grad.t(), xc, out=grad_w)
                if grad_b is not None:
                    torch.sum(grad, dim=0, out=grad_b)
            else:
                grad_w.addmm_(grad.t(), xc)
                if grad_b is not None:
                    grad_b += grad.sum(dim=0)
        ctx.grads = (grad_x, grad_w, grad_b)  # made here, used by backward alone: kept on ctx
        ctx.scaled_by = None  # the factor the saved gradients were scaled by in place
        return total.to(x.dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_output):
        saved = ctx.grads
        if ctx.scaled_by is None and bool(grad_output != 0):
            # the usual single backward: scale the gradients in place, no second (V, F) buffer
            ctx.scaled_by = grad_output.clone()
            grads = [None if g is None else g.mul_(grad_output) for g in saved]
        else:  # another backward through the same graph (retain_graph, gradcheck)
            factor = grad_output if ctx.scaled_by is None else grad_output / ctx.scaled_by
            grads = [None if g is None else g * factor for g in saved]
        return (*grads, *[None] * (len(ctx.needs_input_grad) - 3))  # none for the target and the settings


class _LowPrecisionCrossEntropy(_LinearCrossEntropy):
    """The same loss under autocast to bfloat16: the logits of each chunk of rows from a bfloat16
    product, their log-softmax, loss and gradient in float32 while the chunk is in cache, that
    gradient kept in bfloat16 (N, V) for the gradients of x and weight, each one whole product
    after the chunks (as autocast's own backward makes them). The plain computation materialises
    the (N, V) logits in bfloat16, a float32 copy, its log-softmax and the gradient of each.
    Rows are padded with zeros to a multiple of ROW_QUANTUM and chunks are multiples of it, so
    the products meet a few shapes (see ``rows_padded``); padded rows add no loss or gradient."""

    @staticmethod
    def forward(ctx, x, weight, bias, target, label_smoothing: float, chunk: int, dtype: torch.dtype):
        # x (N, F), weight (V, F), bias (V,) or None, target (N,) ids
        N, V = x.shape[0], weight.shape[0]
        eps = float(label_smoothing)
        # every operand is cast here, so autocast (on around this) changes no product's dtype
        padded, target = rows_padded(x.to(dtype), target)  # (N', F), (N',): it runs under autocast
        low_w = weight.to(dtype)  # (V, F)
        low_b = None if bias is None else bias.to(dtype)
        grad_logits = padded.new_empty((padded.shape[0], V))  # (N', V) in dtype
        grad_b = None if bias is None else torch.zeros(V, dtype=torch.float32, device=x.device)
        total = torch.zeros((), dtype=torch.float64, device=x.device)
        for lo in range(0, padded.shape[0], chunk):
            xc, tc = padded[lo : lo + chunk], target[lo : lo + chunk]  # (n, F), (n,)
            logits = xc @ low_w.t() if low_b is None else torch.addmm(low_b, xc, low_w.t())  # (n, V)
            loss, grad = _chunk_loss(torch.log_softmax(logits.float(), dim=1), tc, eps)  # (n, V) float32
            del logits
            total += loss
            if grad_b is not None:
                grad_b += grad.sum(dim=0)
            grad_logits[lo : lo + chunk] = grad
        grad_x = (grad_logits @ low_w)[:N].to(x.dtype)  # (N, F)
        grad_w = (grad_logits.t() @ padded).to(weight.dtype)  # (V, F)
        ctx.grads = (grad_x, grad_w, None if bias is None else grad_b.to(bias.dtype))
        ctx.scaled_by = None
        return total.float()


def linear_cross_entropy(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, target: torch.Tensor, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Summed cross-entropy of the logits ``x @ weight.T + bias`` against ``target``.

    x (N, F), weight (V, F), bias (V,) or None, target (N,).  Fused and chunked when gradients
    are wanted in float32/float64 or under autocast to bfloat16 (its products in bfloat16, the
    softmax in float32); otherwise (inference, autocast to float16) the plain computation.
    """
    device = x.device.type
    autocast = torch.is_autocast_enabled(device)
    if torch.is_grad_enabled() and autocast and torch.get_autocast_dtype(device) == torch.bfloat16:
        rows = CHUNK_BYTES // (weight.shape[0] * 4) // ROW_QUANTUM * ROW_QUANTUM  # float32 logits a chunk
        return _LowPrecisionCrossEntropy.apply(
            x, weight, bias, target, label_smoothing, max(rows, ROW_QUANTUM), torch.bfloat16
        )
    fused = (
        torch.is_grad_enabled()
        and x.dtype in (torch.float32, torch.float64)
        and weight.dtype == x.dtype
        and not autocast
    )
    if not fused:
        x, target = rows_padded(x, target)
        logits = F.linear(x, weight, bias)
        if logits.dtype not in (torch.float32, torch.float64):
            logits = logits.float()  # bf16: sum in float32
        return F.cross_entropy(logits, target, reduction="sum", label_smoothing=label_smoothing, ignore_index=IGNORED)
    chunk = max(1, CHUNK_BYTES // (weight.shape[0] * x.element_size()))
    return _LinearCrossEntropy.apply(x, weight, bias, target, label_smoothing, chunk)


# -- the pointer-generator's loss: log-probabilities, not logits (nn/copy.py) ------------------------
class _LinearLogProb(torch.autograd.Function):
    """log softmax(x W^T + b)[target] per row, in chunks; the backward recomputes each chunk's
    softmax (the (N, V) probabilities never exist at once, and are not kept between the passes)."""

    @staticmethod
    def forward(ctx, x, weight, bias, target, chunk: int):
        # x (N, F), weight (V, F), bias (V,) or None, target (N,) ids
        out = x.new_empty(x.shape[0])
        for lo in range(0, x.shape[0], chunk):
            xc, tc = x[lo : lo + chunk], target[lo : lo + chunk]
            logits = xc @ weight.t() if bias is None else torch.addmm(bias, xc, weight.t())  # (n, V)
            out[lo : lo + chunk] = logits.gather(1, tc[:, None]).squeeze(1) - torch.logsumexp(logits, dim=1)
        ctx.save_for_backward(x, weight, bias, target)
        ctx.chunk = chunk
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        x, weight, bias, target = ctx.saved_tensors
        grad_x, grad_w = torch.empty_like(x), torch.zeros_like(weight)
        grad_b = torch.zeros_like(bias) if bias is not None else None
        for lo in range(0, x.shape[0], ctx.chunk):
            xc, tc, gc = x[lo : lo + ctx.chunk], target[lo : lo + ctx.chunk], grad_out[lo : lo + ctx.chunk]
            logits = xc @ weight.t() if bias is None else torch.addmm(bias, xc, weight.t())
            grad = torch.softmax(logits, dim=1).mul_(-gc[:, None])  # d/d logits: g (onehot - softmax)
            grad.scatter_add_(1, tc[:, None], gc[:, None])
            torch.mm(grad, weight, out=grad_x[lo : lo + ctx.chunk])
            grad_w.addmm_(grad.t(), xc)
            if grad_b is not None:
                grad_b += grad.sum(dim=0)
        return grad_x, grad_w, grad_b, None, None


def linear_log_prob(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, target: torch.Tensor
) -> torch.Tensor:
    """log P_vocab(target) per row (N,): log_softmax(x @ weight.T + bias)[target], x (N, F),
    weight (V, F), bias (V,) or None, target (N,) ids. Chunked as ``linear_cross_entropy`` is."""
    chunk = max(1, CHUNK_BYTES // (weight.shape[0] * x.element_size()))
    if torch.is_autocast_enabled(x.device.type) or weight.dtype != x.dtype:
        n = x.shape[0]
        x, _ = rows_padded(x, target)
        logits = F.linear(x, weight, bias).float()[:n]
        return torch.log_softmax(logits, dim=1).gather(1, target[:, None]).squeeze(1)
    return _LinearLogProb.apply(x, weight, bias, target, chunk)


def pointer_generator_nll(log_vocab: torch.Tensor, gate: torch.Tensor, copied: torch.Tensor) -> torch.Tensor:
    """Summed -log P(target) of the pointer-generator's mixture (See et al. 2017), per row

        P = p_gen P_vocab(target) + (1 - p_gen) copied,  p_gen = sigmoid(gate),

    from log P_vocab(target) (N,) (-inf for a target outside the vocabulary), the logits of p_gen
    (N,) and the attention on the source positions holding the target (N,), in log space: a
    target neither in the vocabulary nor in the source has P_vocab(unk) instead, and P is never
    0 where p_gen is neither 0 nor 1. Label smoothing is not defined over the extended
    vocabulary, so there is none."""
    # log(copied) without log(0)'s infinite gradient: rows with nothing to copy take -inf
    log_copied = torch.where(copied > 0, copied, torch.ones_like(copied)).log().masked_fill(copied <= 0, float("-inf"))
    log_p = torch.logaddexp(F.logsigmoid(gate) + log_vocab, F.logsigmoid(-gate) + log_copied)  # (N,)
    return -log_p.sum(dtype=torch.float64).to(log_p.dtype)


def coverage_loss(alignment: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """See et al. 2017's coverage loss, summed over the real target positions ``mask`` (B, T):
    sum_t sum_i min(a_t,i, c_t,i), c_t = sum_{t' < t} a_t' the coverage before step t;
    alignment (B, T, S). It penalises attending again to what was attended to."""
    coverage = alignment.cumsum(1) - alignment  # (B, T, S) attention of the steps before
    return (torch.minimum(alignment, coverage).sum(-1) * mask).sum()
