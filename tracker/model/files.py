"""Names of model-repo files that more than one stage needs to recognise (layer 0, data only)."""

from __future__ import annotations

#: Tokenizer vocabularies compared by content id only (binary, often LFS).
VOCAB_FILES = frozenset(
    {
        "tokenizer.model",
        "tokenizer.model.v3",
        "tokenizer.model.v7",
        "spiece.model",
        "sentencepiece.bpe.model",
        "sentencepiece.model",
        "source.spm",
        "target.spm",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
        "bpe.codes",
        "tekken.json",
    }
)
