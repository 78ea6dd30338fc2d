"""The severity policy: one table that maps change topics to a severity (stage 7, emit).

Layer 2, pure: imports only :mod:`tracker.model`. The diff (stage 4) says *what* changed as
topics; this table alone says *how bad* it is, so the policy is read, reviewed, tested and
documented (:func:`rules_markdown`, in the README) in one place. Each topic matches exactly
one rule (a test checks the table against every topic the diff emits); a change gets the
highest severity among its topics. Rules marked "decision" cover what DESIGN.md's table is
silent on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fnmatch import fnmatchcase

from tracker.model import Change, RevisionDiff, Severity, max_severity


@dataclass(frozen=True, slots=True)
class Rule:
    """Topics matching ``pattern`` (fnmatch, ``*`` = any run of characters) get ``severity``."""

    pattern: str
    severity: Severity | None
    description: str

    def matches(self, topic: str) -> bool:
        return fnmatchcase(topic, self.pattern)


C, H, M, L = Severity.CRITICAL, Severity.HIGH, Severity.MODERATE, Severity.LOW
_CODE_RUNS = "runs at load time with trust_remote_code=True"

# fmt: off
RULES: tuple[Rule, ...] = (
    # -- critical ---------------------------------------------------------------------------
    Rule("code.auto_map_target.added", C,
         f"Custom code added that auto_map / custom_pipelines (or a module they import) loads: it {_CODE_RUNS}."),
    Rule("code.auto_map_target.changed", C,
         f"Custom code changed that auto_map / custom_pipelines (or a module they import) loads: it {_CODE_RUNS}."),
    Rule("config.auto_map.added", C,
         "config.json gained auto_map (or custom_pipelines): loading now runs the repo's code."),
    Rule("config.auto_map.changed", C,
         "config.json's auto_map (or custom_pipelines) points at other classes or modules."),
    Rule("tokenizer.auto_map.added", C,
         "tokenizer_config.json gained auto_map: AutoTokenizer now runs the repo's code."),
    Rule("tokenizer.auto_map.changed", C,
         "tokenizer_config.json's auto_map points at other tokenizer classes."),
    Rule("weights.pickle.added", C,
         "A pickle-format weight file (.bin/.pt/.pth/.ckpt/.pkl, ...) was added: loading it can execute code."),
    Rule("weights.pickle.replaced", C,
         "A pickle-format weight file got new content under the same name: loading it can execute code."),
    Rule("history.rewritten", C,
         "The branch was force-pushed or squashed and known commits vanished from its history."),
    Rule("repo.namespace_reused", C,
         "The repo was deleted and a new one created under the same name (model namespace reuse): "
         "none of its commits is one we held, and the Hub dates it after our last look. Whoever "
         "loads it by name now gets another publisher's files; nothing was diffed against the old repo."),
    Rule("weights.pickle.dangerous_imports", C,
         "The pickle imports globals that run commands or code while loading (posix.system, "
         "subprocess, builtins.exec, ...): each is named in the change (listed without unpickling)."),
    Rule("hub_scan.flagged", C,
         "The Hub's own scanners (av / pickle-import / Protect AI / JFrog) now flag this file unsafe."),
    # -- high -------------------------------------------------------------------------------
    Rule("repo.renamed", H,
         "The Hub now serves the repo under another id (it answers the old one with a redirect): "
         "loads by the old name follow it only until someone registers that name, which then "
         "serves their files instead."),
    Rule("weights.replaced", H, "A weight file got new content under the same name."),
    Rule("weights.reupload", H,
         "Decision: weight files of one format were removed and others added in one revision "
         "(a re-shard or new weights under new names): the loaded weights are new bytes."),
    Rule("weights.tensors", H,
         "Tensors changed dtype or shape, or were added / removed (from the safetensors headers)."),
    Rule("weights.quant", H,
         "A GGUF file's tensors changed quant type or shape, or its file type changed (from its header)."),
    Rule("weights.pickle.unknown_imports", H,
         "Decision: the pickle imports globals the policy table does not know: each is named."),
    Rule("weights.index.tensors", H,
         "Decision: a sharding index lists tensors that were not there before, or drops some."),
    Rule("tokenizer.vocab", H, "tokenizer.json's vocabulary, merges or model type changed."),
    Rule("tokenizer.vocab_file.*", H,
         "Decision: a vocabulary file (tokenizer.model, vocab.txt, merges.txt, ...) was added, "
         "replaced or removed; it is compared by content id only, so it counts as a vocab change."),
    Rule("tokenizer.added_tokens", H,
         "Added tokens changed (added_tokens_decoder, additional_special_tokens, tokenizer.json, "
         "added_tokens.json)."),
    Rule("tokenizer.special_tokens", H,
         "A special token (bos/eos/pad/unk/sep/cls/mask) changed its text or its flags."),
    Rule("tokenizer.add_special_tokens", H,
         "Decision: add_bos_token / add_eos_token flipped: every encoded prompt gains or loses a token."),
    Rule("tokenizer.pipeline", H,
         "Decision: tokenizer.json's normalizer, pre-tokenizer, post-processor or model options "
         "(unk_token, byte_fallback, truncation, padding) changed: the same text encodes differently."),
    Rule("chat_template.added", H, "A chat template was added: apply_chat_template output changes."),
    Rule("chat_template.changed", H, "A chat template's text changed (see its rendered diff)."),
    Rule("chat_template.removed", H, "A chat template was removed: apply_chat_template output changes."),
    # -- moderate ---------------------------------------------------------------------------
    Rule("config.architecture", M,
         "Architecture changed in config.json (architectures, model_type, layers, sizes, heads, activation, ...)."),
    Rule("config.context_length", M, "Context length changed in config.json (max_position_embeddings, ...)."),
    Rule("config.rope", M, "Rotary embedding settings changed in config.json (rope_scaling, rope_theta, ...)."),
    Rule("config.sliding_window", M, "Sliding-window attention settings changed in config.json."),
    Rule("config.dtype", M, "torch_dtype / dtype changed in config.json."),
    Rule("config.quantization", M, "quantization_config changed in config.json."),
    Rule("generation.token_ids", M, "bos/eos/pad (or decoder start) token ids changed in generation_config.json."),
    Rule("config.token_ids", M,
         "Decision: bos/eos/pad token ids changed in config.json; generation falls back to them "
         "when generation_config.json does not set them."),
    Rule("config.auto_map.removed", M,
         "Decision: config.json dropped auto_map: the model now loads through in-library classes."),
    Rule("tokenizer.auto_map.removed", M,
         "Decision: tokenizer_config.json dropped auto_map: the tokenizer now loads through in-library classes."),
    Rule("tokenizer.decoder", M, "Decision: tokenizer.json's decoder changed: generated ids decode to other text."),
    Rule("weights.added", M,
         "Decision: a non-pickle weight file was added (e.g. safetensors beside pickle weights); "
         "transformers prefers safetensors, so the loaded weights may switch to bytes never compared."),
    Rule("code.added", M,
         "Decision: Python code added that auto_map does not load; other tools (handler.py, scripts) may run it."),
    Rule("code.changed", M,
         "Decision: Python code changed that auto_map does not load; other tools (handler.py, scripts) may run it."),
    Rule("analysis.cut", H,
         "Decision: the revision's analysis ran over its time or memory budget and was stopped; "
         "content nobody compared may hide any change."),
    Rule("*.unreadable", M,
         "Decision: a file that decides behaviour changed but could not be read (too large, invalid JSON, ...)."),
    # -- low --------------------------------------------------------------------------------
    Rule("config.other", L, "Other config.json fields changed."),
    Rule("generation.sampling", L, "Generation defaults changed (temperature, top_p, top_k, do_sample, max_length, ...)."),
    Rule("generation.other", L, "Other generation_config.json fields changed."),
    Rule("tokenizer.config", L, "Other tokenizer config changed (model_max_length, padding_side, tokenizer_class, ...)."),
    Rule("tokenizer.special_tokens.format", L,
         "Decision: a special token was re-spelled with the same text (a string became an AddedToken object)."),
    Rule("chat_template.source", L,
         "Decision: a chat template file was added, moved or removed while the templates stayed the same "
         "(older transformers versions may read another file)."),
    Rule("weights.removed", L, "Decision: a non-pickle weight file was removed (what replaces it is reported on its own)."),
    Rule("weights.pickle.removed", L, "Decision: a pickle weight file was removed."),
    Rule("hub_scan.cleared", L, "Decision: the Hub's scanners no longer flag a file they flagged before."),
    Rule("weights.index", L, "Decision: a sharding index changed without changing the set of tensors (re-shard)."),
    Rule("code.removed", L, "Decision: Python code that auto_map does not load was removed."),
    Rule("code.auto_map_target.removed", L,
         "Decision: code that auto_map loads was removed (loading fails rather than running other code)."),
    Rule("history.moved", L, "Decision: the branch moved off the known head without losing a known commit."),
    # -- none: a revision-history entry, no advisory ---------------------------------------
    Rule("config.bookkeeping", None,
         "Decision: _name_or_path, transformers_version or _commit_hash in config.json only."),
    Rule("generation.bookkeeping", None,
         "Decision: transformers_version or _from_model_config in generation_config.json only."),
    Rule("tokenizer.bookkeeping", None,
         "Decision: name_or_path, tokenizer_file, special_tokens_map_file in tokenizer_config.json only."),
    Rule("config.format", None, "config.json re-serialised with the same fields (key order, whitespace)."),
    Rule("generation.format", None, "generation_config.json re-serialised with the same fields."),
    Rule("tokenizer.format", None,
         "A tokenizer file re-serialised with the same content (or only its chat template changed)."),
    Rule("weights.index.format", None, "A sharding index re-serialised with the same weight map."),
    Rule("weights.pickle.tensor_imports_only", None,
         "Note: the pickle imports only tensor-rebuild globals; the file stays CRITICAL by format."),
    Rule("config.gguf_metadata", None,
         "Descriptive GGUF keys (general.name, license, url, split.*, quantize.*) changed."),
    Rule("hub_scan.other", None, "The Hub's scan status changed without a flag (e.g. scanned now)."),
    Rule("other.*", None, "README / model card / .gitattributes / any file no artifact covers."),
    # topics the pipeline adds beside the diff's (tracker.pipeline): notes, never advisories
    Rule("read.error", None, "Pipeline: a file the snapshot could not read; what it affects is reported on its own."),
    Rule("plan.delta", None, "Pipeline: the memory / parameter plan moved; the config change behind it carries the severity."),
    Rule("restore.earlier", None,
         "Pipeline: the change puts back what an earlier advisory's revision changed (same parsed content); "
         "that advisory gets a fixed event instead of a new one being published."),
)
# fmt: on


def rule_for(topic: str) -> Rule | None:
    """The first rule of the table that matches ``topic`` (None: no rule, no severity)."""
    for rule in RULES:
        if rule.matches(topic):
            return rule
    return None


def classify(change: Change) -> Severity | None:
    """The highest severity among the rules matching the change's topics."""
    return max_severity(r.severity for r in map(rule_for, change.topics) if r is not None)


def reasons(change: Change) -> tuple[str, ...]:
    """Why the change has its severity, in the table's own words (once each, "Decision: " dropped)."""
    out: list[str] = []
    for topic in change.topics:
        rule = rule_for(topic)
        if rule is None or rule.severity is None:
            continue
        text = rule.description.removeprefix("Decision: ")
        text = text[:1].upper() + text[1:]
        if text not in out:
            out.append(text)
    return tuple(out)


def apply_rules(diff: RevisionDiff) -> RevisionDiff:
    """The same diff with every change's severity set from the table."""
    return replace(diff, changes=tuple(replace(c, severity=classify(c)) for c in diff.changes))


def rules_markdown() -> str:
    """The table as Markdown, for the README."""
    lines = ["| severity | topic | when |", "| --- | --- | --- |"]
    for r in RULES:
        sev = r.severity.value if r.severity else "none"
        text = r.description.replace("|", "\\|")
        lines.append(f"| {sev} | `{r.pattern}` | {text} |")
    return "\n".join(lines) + "\n"
