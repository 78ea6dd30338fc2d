"""What one fine-tuning run costs on a priced card: a roofline estimate.

Layer 1 (stage 5, plan), pure. FLOPs = 6 x active parameters x tokens (forward and
backward) plus the attention scores (12 x layers x tokens x width x sequence length), over
the card's peak FLOP/s times the achievable fraction; the price, peak and fraction are
configuration (:class:`CostAssumptions`), shown beside the figure.
"""

from __future__ import annotations

from tracker.model.plan import CostAssumptions, CostEstimate


def estimate(active_params: int, layers: int, attn_width: int, tokens_per_sample: int,
             a: CostAssumptions) -> CostEstimate:
    """Cost of ``a.epochs`` over ``a.samples`` samples of ``tokens_per_sample`` tokens."""
    tokens = a.epochs * a.samples * tokens_per_sample
    flops = 6.0 * active_params * tokens + 12.0 * layers * attn_width * tokens_per_sample * tokens
    rate = a.peak_flops * a.achievable_fraction
    hours = flops / rate / 3600.0 if rate > 0 else 0.0
    return CostEstimate(assumptions=a, tokens_per_sample=tokens_per_sample, flops=flops,
                        hours=hours, usd=hours * a.price_per_hour)
