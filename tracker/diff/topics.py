"""The topics a change carries: the keys the severity rules (advisories.rules) match on.

Layer 1 (stage 4, diff), pure. A topic names *what* changed, never how bad it is; the
policy lives in one table in ``advisories/rules.py``. Topics of an added / removed thing
end in ``.added`` / ``.removed`` so that the inverse diff swaps exactly those words.
"""

from __future__ import annotations

# config.json
CONFIG_AUTO_MAP_ADDED = "config.auto_map.added"
CONFIG_AUTO_MAP_CHANGED = "config.auto_map.changed"
CONFIG_AUTO_MAP_REMOVED = "config.auto_map.removed"
CONFIG_ARCHITECTURE = "config.architecture"
CONFIG_CONTEXT = "config.context_length"
CONFIG_ROPE = "config.rope"
CONFIG_SLIDING_WINDOW = "config.sliding_window"
CONFIG_DTYPE = "config.dtype"
CONFIG_QUANTIZATION = "config.quantization"
CONFIG_TOKEN_IDS = "config.token_ids"
CONFIG_OTHER = "config.other"
CONFIG_BOOKKEEPING = "config.bookkeeping"
CONFIG_FORMAT = "config.format"
CONFIG_UNREADABLE = "config.unreadable"
CONFIG_GGUF_METADATA = "config.gguf_metadata"

# generation_config.json
GENERATION_TOKEN_IDS = "generation.token_ids"
GENERATION_SAMPLING = "generation.sampling"
GENERATION_OTHER = "generation.other"
GENERATION_BOOKKEEPING = "generation.bookkeeping"
GENERATION_FORMAT = "generation.format"
GENERATION_UNREADABLE = "generation.unreadable"

# tokenizer_config.json, special_tokens_map.json, tokenizer.json, vocabulary files
TOKENIZER_SPECIAL_TOKENS = "tokenizer.special_tokens"
TOKENIZER_SPECIAL_TOKENS_FORMAT = "tokenizer.special_tokens.format"
TOKENIZER_ADD_SPECIAL = "tokenizer.add_special_tokens"
TOKENIZER_ADDED_TOKENS = "tokenizer.added_tokens"
TOKENIZER_AUTO_MAP_ADDED = "tokenizer.auto_map.added"
TOKENIZER_AUTO_MAP_CHANGED = "tokenizer.auto_map.changed"
TOKENIZER_AUTO_MAP_REMOVED = "tokenizer.auto_map.removed"
TOKENIZER_CONFIG = "tokenizer.config"
TOKENIZER_BOOKKEEPING = "tokenizer.bookkeeping"
TOKENIZER_VOCAB = "tokenizer.vocab"
TOKENIZER_PIPELINE = "tokenizer.pipeline"
TOKENIZER_DECODER = "tokenizer.decoder"
TOKENIZER_VOCAB_FILE_ADDED = "tokenizer.vocab_file.added"
TOKENIZER_VOCAB_FILE_CHANGED = "tokenizer.vocab_file.changed"
TOKENIZER_VOCAB_FILE_REMOVED = "tokenizer.vocab_file.removed"
TOKENIZER_FORMAT = "tokenizer.format"
TOKENIZER_UNREADABLE = "tokenizer.unreadable"

# chat templates
CHAT_TEMPLATE_ADDED = "chat_template.added"
CHAT_TEMPLATE_CHANGED = "chat_template.changed"
CHAT_TEMPLATE_REMOVED = "chat_template.removed"
CHAT_TEMPLATE_SOURCE = "chat_template.source"
CHAT_TEMPLATE_UNREADABLE = "chat_template.unreadable"

# weights
WEIGHTS_PICKLE_ADDED = "weights.pickle.added"
WEIGHTS_PICKLE_REPLACED = "weights.pickle.replaced"
WEIGHTS_PICKLE_REMOVED = "weights.pickle.removed"
WEIGHTS_ADDED = "weights.added"
WEIGHTS_REPLACED = "weights.replaced"
WEIGHTS_REMOVED = "weights.removed"
WEIGHTS_REUPLOAD = "weights.reupload"
WEIGHTS_TENSORS = "weights.tensors"
WEIGHTS_INDEX = "weights.index"
WEIGHTS_INDEX_TENSORS = "weights.index.tensors"
WEIGHTS_INDEX_FORMAT = "weights.index.format"
WEIGHTS_UNREADABLE = "weights.unreadable"
WEIGHTS_QUANT = "weights.quant"
WEIGHTS_PICKLE_DANGEROUS = "weights.pickle.dangerous_imports"
WEIGHTS_PICKLE_UNKNOWN = "weights.pickle.unknown_imports"
WEIGHTS_PICKLE_BENIGN = "weights.pickle.tensor_imports_only"
HUB_SCAN_FLAGGED = "hub_scan.flagged"
HUB_SCAN_CLEARED = "hub_scan.cleared"
HUB_SCAN_OTHER = "hub_scan.other"

# custom code
CODE_AUTO_MAP_ADDED = "code.auto_map_target.added"
CODE_AUTO_MAP_CHANGED = "code.auto_map_target.changed"
CODE_AUTO_MAP_REMOVED = "code.auto_map_target.removed"
CODE_ADDED = "code.added"
CODE_CHANGED = "code.changed"
CODE_REMOVED = "code.removed"

# history and everything else
HISTORY_REWRITTEN = "history.rewritten"
HISTORY_MOVED = "history.moved"
REPO_RENAMED = "repo.renamed"
REPO_NAMESPACE_REUSED = "repo.namespace_reused"
OTHER_ADDED = "other.added"
OTHER_CHANGED = "other.changed"
OTHER_REMOVED = "other.removed"

#: Every topic the diff can emit (the rules test checks each is matched by exactly one rule).
ALL_TOPICS: frozenset[str] = frozenset(
    v for k, v in dict(globals()).items() if k.isupper() and isinstance(v, str)
)


def swap_op(topic: str) -> str:
    """The topic as the inverse diff reports it: ``.added`` <-> ``.removed``."""
    if topic.endswith(".added"):
        return topic[: -len(".added")] + ".removed"
    if topic.endswith(".removed"):
        return topic[: -len(".removed")] + ".added"
    return topic


def by_op(op: str, added: str, changed: str, removed: str) -> str:
    """Pick the topic for an ``added`` / ``changed`` / ``removed`` operation."""
    return {"added": added, "removed": removed}.get(op, changed)
