"""Corpus repos with readable safetensors shards, for benchmarks that read a revision whole.

The corpus histories (shared/hf-corpus/histories) hold the real small files of each repo
(config, tokenizer files, tokenizer.json, chat templates, the safetensors index) but only LFS
pointers for the weights, whose objects are not there. ``sharded_repo`` commits on top of a
history's head one safetensors file per shard the head names, each a sparse LFS object of the
size its tensors take, whose header lists the model's tensors: the names from the repo's own
``model.safetensors.index.json`` (or, without one, the usual decoder names for its config),
the shapes from its config.json. So a header read costs what it costs on the Hub (tens of kB
to a few hundred per shard) and the planner's checkpoint count sees a real tensor list.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.hubemu import LfsPointer, RepoBuilder, clone_bundle
from tests.hubemu.repos import _git, safetensors_head

_DTYPES = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}


def _shape(name: str, cfg: dict[str, Any]) -> list[int]:
    """A plausible shape for a tensor of a decoder checkpoint, from its name and the config."""
    h = int(cfg.get("hidden_size") or cfg.get("d_model") or 1024)
    heads = int(cfg.get("num_attention_heads") or 16)
    kv = int(cfg.get("num_key_value_heads") or heads)
    hd = int(cfg.get("head_dim") or h // heads)
    inter = int(cfg.get("intermediate_size") or 4 * h)
    vocab = int(cfg.get("vocab_size") or 32000)
    experts = int(cfg.get("num_local_experts") or 1)
    leaf = name.rsplit(".", 2)
    part = leaf[-2] if len(leaf) > 1 else name
    if part in ("embed_tokens", "lm_head", "wte"):
        return [vocab, h]
    if part == "q_proj":
        return [heads * hd, h] if name.endswith("weight") else [heads * hd]
    if part in ("k_proj", "v_proj"):
        return [kv * hd, h] if name.endswith("weight") else [kv * hd]
    if part == "o_proj":
        return [h, heads * hd] if name.endswith("weight") else [h]
    if part in ("gate_proj", "up_proj", "w1", "w3"):
        return [inter, h]
    if part in ("down_proj", "w2"):
        return [h, inter]
    if part in ("gate", "router") and experts > 1:
        return [experts, h] if name.endswith("weight") else [experts]
    if name.endswith("_blocks"):  # MXFP4 expert weights: experts x out x blocks x 16 bytes
        return [experts, 2 * inter if "gate_up" in name else h, h // 32, 16]
    if name.endswith("_scales"):
        return [experts, 2 * inter if "gate_up" in name else h, h // 32]
    if name.endswith("_bias") and "experts" in name:
        return [experts, 2 * inter if "gate_up" in name else h]
    if part == "sinks":
        return [heads]
    return [h]


def _decoder_names(cfg: dict[str, Any]) -> list[str]:
    """The usual tensor names of a decoder with this config (a repo without an index)."""
    names = ["model.embed_tokens.weight", "model.norm.weight"]
    experts = int(cfg.get("num_local_experts") or 0)
    for i in range(int(cfg.get("num_hidden_layers") or 1)):
        p = f"model.layers.{i}."
        names += [p + "input_layernorm.weight", p + "post_attention_layernorm.weight"]
        names += [f"{p}self_attn.{w}.weight" for w in ("q_proj", "k_proj", "v_proj", "o_proj")]
        if experts:
            names.append(p + "block_sparse_moe.gate.weight")
            names += [f"{p}block_sparse_moe.experts.{e}.{w}.weight" for e in range(experts) for w in ("w1", "w2", "w3")]
        else:
            names += [f"{p}mlp.{w}.weight" for w in ("gate_proj", "up_proj", "down_proj")]
    if not cfg.get("tie_word_embeddings"):
        names.append("lm_head.weight")
    return names


def shard_file(names: list[str], cfg: dict[str, Any], metadata: dict[str, str]) -> tuple[bytes, int]:
    """(the first bytes of a safetensors file: length + header, the file's full size)."""
    dtype = _DTYPES.get(str(cfg.get("torch_dtype")), "BF16")
    tensors = {n: ("U8" if n.endswith(("_blocks", "_scales")) else dtype, _shape(n, cfg)) for n in names}
    head, data_bytes = safetensors_head(tensors, metadata=metadata)
    return head, len(head) + data_bytes


def _show(builder: RepoBuilder, path: str) -> bytes | None:
    try:
        return _git(builder.path, "show", f"main:{path}").encode()
    except RuntimeError:
        return None


def _layout(builder: RepoBuilder) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The head's config and {shard path: tensor names} for every safetensors file it lists."""
    cfg = json.loads(_show(builder, "config.json") or b"{}")
    listed = _git(builder.path, "ls-tree", "-r", "--name-only", "main").splitlines()
    shards = [p for p in listed if p.endswith(".safetensors")]
    index = _show(builder, "model.safetensors.index.json")
    weight_map: dict[str, str] = json.loads(index)["weight_map"] if index else {}
    everything = sorted(weight_map) or _decoder_names(cfg)
    out: dict[str, list[str]] = {}
    for shard in shards:  # a shard the index does not name (consolidated.safetensors): the whole model
        mine = sorted(n for n, s in weight_map.items() if s == shard)
        out[shard] = mine or everything
    return cfg, out


def _commit_shards(builder: RepoBuilder, metadata: dict[str, str], extra: dict[str, bytes], title: str) -> str:
    cfg, layout = _layout(builder)
    files: dict[str, bytes | LfsPointer] = dict(extra)
    for shard, names in layout.items():
        head, size = shard_file(names, cfg, metadata)
        files[shard] = builder.store_sparse_lfs(head, size)
    return builder.commit(files, title=title)


def sharded_repo(git_dir: Path, bundle: str, *, extra: dict[str, bytes] | None = None) -> RepoBuilder:
    """A bare clone of corpus history ``bundle`` at ``git_dir`` whose head commit adds readable
    shards (and ``extra`` files, e.g. the 'before' side of a corpus change)."""
    git_dir.parent.mkdir(parents=True, exist_ok=True)
    path = clone_bundle(bundle, git_dir.parent / re.sub(r"\W", "-", git_dir.name))
    path.rename(git_dir)
    builder = RepoBuilder(git_dir)
    _commit_shards(builder, {"format": "pt"}, extra or {}, "bench: readable shards")
    return builder


def reupload_shards(builder: RepoBuilder, bundle: str) -> str:
    """Every shard uploaded again (the same tensors, another header: new content ids)."""
    return _commit_shards(builder, {"format": "pt", "reupload": bundle}, {}, "re-upload the weights")
