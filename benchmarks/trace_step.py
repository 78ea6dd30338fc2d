"""Trace one training step, one LoRA step and one serving prefill with PyTorch's MemTracker.

Runs inside benchmarks/.venv-torch (torch 2.13 CPU, transformers, peft); imported by
benchmarks/planner_accuracy.py. The step is the one the planner sizes: AdamW (foreach), bf16
autocast, SDPA attention where the class supports it (eager where it does not), dropout on
(train mode), batch b; LoRA r=16 on every linear but the head through peft, the base frozen
in bf16; serving as a bf16 prefill returning its KV cache. Fake tensors (FakeTensorMode) make
it cost no memory; the shrunk MoE models run on real tensors (data-dependent routing).
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import torch
import transformers
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools.mem_tracker import MemTracker
from transformers import AutoConfig

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
# fake parameters cannot be swapped in place; peft moves its adapters with .to()
torch.__future__.set_overwrite_module_params_on_conversion(True)
# truncated-normal init reads values back (mask.any()), which fake tensors cannot: the values
# do not matter to memory, so it draws a plain normal
import transformers.initialization  # noqa: E402

_init = transformers.initialization.TORCH_INIT_FUNCTIONS
_init["trunc_normal_"] = lambda t, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None: (
    torch.nn.init.normal_(t, mean, std))


def _config(cfg: dict[str, Any]) -> tuple[Any, Any]:
    d = {k: v for k, v in cfg.items() if k not in ("transformers_version", "_name_or_path")}
    model_type = d.pop("model_type")
    arch = d["architectures"][0]
    conf = AutoConfig.for_model(model_type, **d)
    return conf, getattr(transformers, arch)


def _build(cfg: dict[str, Any], dtype: torch.dtype) -> tuple[Any, str]:
    conf, cls = _config(cfg)
    for attn in ("sdpa", "eager"):
        try:
            conf._attn_implementation = attn
            before = torch.get_default_dtype()
            torch.set_default_dtype(dtype)  # built in the dtype: no copy, no swap of fakes
            try:
                return cls(conf), attn
            finally:
                torch.set_default_dtype(before)
        except (ValueError, NotImplementedError):
            continue
    raise RuntimeError("no attention implementation")


def _inputs(task: str, cfg: dict[str, Any], b: int, s: int) -> dict[str, Any]:
    vocab = cfg.get("vocab_size", 1000)
    if task == "image":
        size = cfg.get("image_size", 224)
        return {"pixel_values": torch.randn(b, cfg.get("num_channels", 3), size, size),
                "labels": torch.randint(0, 2, (b,))}
    ids = torch.randint(3, vocab, (b, s))
    if task == "qa":
        return {"input_ids": ids, "start_positions": torch.zeros(b, dtype=torch.long),
                "end_positions": torch.zeros(b, dtype=torch.long)}
    return {"input_ids": ids, "labels": torch.randint(3, vocab, (b, s))}


LAST_SNAPSHOT: dict[str, int] = {}  # the categories of the last traced peak


def _mode(real: bool) -> Any:
    return contextlib.nullcontext() if real else FakeTensorMode(allow_non_fake_inputs=True)


class _Tracker(MemTracker):
    """MemTracker keeping the device peak only: its per-module peaks cost O(modules) per op."""

    def _update_peak_stats(self, peak_state: Any) -> None:
        for dev, snap in self._curr_mem_snap.items():
            if self._peak_mem.get(dev, 0) < snap["Total"]:
                self._peak_mem[dev] = snap["Total"]
                self._peak_mem_snap[dev] = dict(snap)


class _NoHook:
    def remove(self) -> None:
        """Nothing was registered."""


def _peak(model: Any, params: list[Any], task: str, cfg: dict[str, Any], b: int, s: int) -> int:
    opt = torch.optim.AdamW(params, lr=1e-5, foreach=True)
    mt = _Tracker()
    for p in model.parameters():  # MemTracker hooks every parameter's gradient: not frozen ones
        if not p.requires_grad:
            mt._param_to_grad_hook_handles[p] = (_NoHook(), _NoHook())
    mt.track_external(model, opt)
    with mt:
        for _ in range(2):  # the second step runs with the optimizer state in place
            mt.reset_mod_stats()  # per-module stats only; the peak is kept
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(**_inputs(task, cfg, b, s))
            loss = out.loss
            del out
            loss.backward()
            del loss
            opt.step()
            opt.zero_grad(set_to_none=True)
    snap = mt.get_tracker_snapshot("peak")
    dev = max(snap.values(), key=lambda d: d["Total"])
    LAST_SNAPSHOT.clear()
    LAST_SNAPSHOT.update({str(k): int(v) for k, v in dev.items()})
    return int(dev["Total"])


def trace_train(cfg: dict[str, Any], task: str, s: int, real: bool,
                batches: tuple[int, ...] = (1, 2, 4)) -> dict[str, Any]:
    """Peak bytes of a full fine-tune step and a LoRA step at each batch size."""
    out: dict[str, Any] = {}
    with _mode(real):
        model, attn = _build(cfg, torch.float32)
        model.train()
        out["attention"] = attn
        out["full"] = {b: _peak(model, list(model.parameters()), task, cfg, b, s)
                       for b in batches}
        del model
    with _mode(real):
        base, _ = _build(cfg, torch.bfloat16)
        base.train()
        lora = _peft(base)
        trainable = [p for p in lora.parameters() if p.requires_grad]
        out["lora_params"] = sum(p.numel() for p in trainable)
        out["lora"] = {b: _peak(lora, trainable, task, cfg, b, s) for b in batches}
    return out


def _peft(base: Any) -> Any:
    """peft LoRA r=16 on all linears but the head, adapters in fp32 (peft's autocast default).

    peft moves each new adapter to its base layer's device and dtype and then upcasts it to
    fp32; fake parameters cannot be moved in place, so the adapters are built in fp32 on the
    (only) device directly: the same result.
    """
    from peft import LoraConfig, get_peft_model
    from peft.tuners import tuners_utils

    move = tuners_utils.BaseTunerLayer._move_adapter_to_device_of_base_layer
    to = torch.nn.Module.to
    tuners_utils.BaseTunerLayer._move_adapter_to_device_of_base_layer = (  # type: ignore
        lambda self, *a, **k: None)
    torch.nn.Module.to = lambda self, *a, **k: self  # type: ignore  # one device already
    try:
        # peft refuses LoRA on a Mamba mixer's out_proj (and conv1d) for these model types
        mamba = getattr(base.config, "model_type", "") in ("mamba", "mamba2", "falcon_h1")
        return get_peft_model(base, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear",
                                               exclude_modules=["out_proj"] if mamba else None))
    finally:
        tuners_utils.BaseTunerLayer._move_adapter_to_device_of_base_layer = move  # type: ignore
        torch.nn.Module.to = to  # type: ignore


def trace_serve(cfg: dict[str, Any], task: str, tokens: int, real: bool) -> dict[str, int]:
    """bf16 weight bytes and the KV cache one prefill of ``tokens`` returns."""
    with _mode(real), torch.no_grad():
        model, _ = _build(cfg, torch.bfloat16)
        model.eval()
        seen: set[int] = set()
        weights = 0
        for p in model.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                weights += p.numel() * p.element_size()
        kv = 0
        if task in ("causal", "s2s"):
            ids = torch.randint(3, cfg.get("vocab_size", 1000), (1, tokens))
            kwargs: dict[str, Any] = {"input_ids": ids, "use_cache": True}
            if task == "s2s":
                kwargs["decoder_input_ids"] = ids
            res = model(**kwargs)
            kv = _cache_bytes(res.past_key_values)
    return {"weights": weights, "kv_cache": kv}


def _cache_bytes(cache: Any) -> int:
    seen: set[int] = set()
    total = 0

    def visit(x: Any) -> None:
        nonlocal total
        if isinstance(x, torch.Tensor):
            if id(x) not in seen:
                seen.add(id(x))
                total += x.numel() * x.element_size()
        elif isinstance(x, list | tuple):
            for y in x:
                visit(y)
        elif isinstance(x, dict):  # recurrent layers keep their states by index
            for y in x.values():
                visit(y)
        elif hasattr(x, "__dict__"):
            for y in vars(x).values():
                visit(y)

    visit(cache)
    return total
