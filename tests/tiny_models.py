"""Tiny random BERT-style models saved to a directory, for tests (no downloads, ~100-300 KB).

``build_tiny_classifier(dir)`` saves a ``BertForSequenceClassification`` (2 labels, class 1 =
answerable) and ``build_tiny_qa_model(dir)`` a ``BertForQuestionAnswering``, each with a
WordPiece ``BertTokenizer`` (uncased) whose vocabulary is a small English word list plus every
letter and digit as a word start and as a ``##`` continuation, so any ASCII text tokenizes
without ``[UNK]``. Both load with ``scoring.models.hosted_model.load_hosted_model(dir, kind)`` or
``from_pretrained(dir, local_files_only=True)``. Weights are random but deterministic for a
given ``seed``.

``answerable`` steers what the model decides, for tests that need included/excluded samples:
``None`` keeps the random weights (decisions vary with the input), ``True`` makes the model say
"answerable" for (practically) every input and ``False`` "not answerable". For the classifier
this is the classification bias; for the QA model a segment mark (token type) and a ``[SEP]``
mark are planted in the embeddings, the random layers are damped so the marks survive, and the
start logits follow the segment, the end logits ``[SEP]``: with ``True`` almost all span mass
starts in the context and ends on the final ``[SEP]`` (docs/quackie_models.md: P(answer) as the official QUACKIE code computes it), with ``False``
it starts in the question. The outputs still depend on the words (random encoder and head), so
gradients and perturbation methods get non-trivial input. With ``None`` the random QA model
usually says "not answerable" (near-uniform logits give P(answer) of about half the squared
context share).
"""
from __future__ import annotations

import string
from pathlib import Path

PLANT = 6.0
DAMP = 0.1
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# Frequent English words, plus the words used in the project's test texts.
WORDS = """
the of and to in a is was that for on as with by he it at from his an were are which this be
or has had have not but its they their one all also who been first after new more two other
when there she her some into during most time would only over can may city about between than
what where how why whose whom many these year years such under up out then so no if do did
people world state states government known part called used three later war since both made
each while while being through against found including name school university team season
game film music album song river water area population century american english french
german british national north south east west large small high long old early last great
cat dog sat mat bird tree house park car road sun moon rain snow red blue green color paris
france london england capital country king queen born died won lost built
answer question context sentence text word because however although where which until
""".split()


def _vocab() -> dict[str, int]:
    tokens = list(SPECIAL_TOKENS)
    seen = set(tokens)

    def add(token: str) -> None:
        if token not in seen:
            seen.add(token)
            tokens.append(token)

    for ch in string.ascii_lowercase + string.digits:
        add(ch)
        add("##" + ch)
    for ch in string.punctuation:
        add(ch)
    for word in WORDS:
        add(word)
    return {token: index for index, token in enumerate(tokens)}


def _tokenizer():
    from transformers import BertTokenizer

    tokenizer = BertTokenizer(vocab=_vocab(), do_lower_case=True)
    tokenizer.model_max_length = 512
    return tokenizer


def _config(**overrides):
    from transformers import BertConfig

    settings = dict(
        vocab_size=len(_vocab()),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        type_vocab_size=2,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        # 10x the usual 0.02: at 0.02 a 2-layer random net gives nearly the same output for
        # every input; at 0.2 predictions and attributions vary with the words
        initializer_range=0.2,
    )
    settings.update(overrides)
    return BertConfig(**settings)


def _save(model, tokenizer, directory) -> Path:
    from scoring.models.hosted_model import quiet_transformers

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.eval()
    with quiet_transformers():
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
    return directory


def build_tiny_classifier(directory, *, seed: int = 0, answerable: bool | None = None) -> Path:
    """Save a tiny random 2-label sequence classifier + tokenizer to ``directory``; return it."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(seed)
    config = _config(num_labels=2, id2label={0: "unanswerable", 1: "answerable"},
                     label2id={"unanswerable": 0, "answerable": 1})
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        # a head at the default init scale (0.02) gives P = 0.50 +- 0.002 for every input
        model.classifier.weight.normal_(0.0, 1.0)
        model.classifier.bias.zero_()
        if answerable is not None:
            sign = 1.0 if answerable else -1.0
            model.classifier.bias.copy_(torch.tensor([-8.0 * sign, 8.0 * sign]))
    return _save(model, _tokenizer(), directory)


def build_tiny_qa_model(directory, *, seed: int = 0, answerable: bool | None = None) -> Path:
    """Save a tiny random extractive-QA model (start/end logits) + tokenizer to ``directory``."""
    import torch
    from transformers import BertForQuestionAnswering

    torch.manual_seed(seed)
    model = BertForQuestionAnswering(_config(num_labels=2))
    if answerable is not None:
        sep_id = _vocab()["[SEP]"]
        embeddings = model.bert.embeddings
        with torch.no_grad():
            # Coordinate 0 carries the segment (+ context, - question), coordinate 1 marks [SEP].
            embeddings.token_type_embeddings.weight[0, 0] = -PLANT
            embeddings.token_type_embeddings.weight[1, 0] = PLANT
            embeddings.word_embeddings.weight[sep_id, 1] = PLANT
            for layer in model.bert.encoder.layer:  # damped layers keep the marks readable
                layer.attention.output.dense.weight.mul_(DAMP)
                layer.output.dense.weight.mul_(DAMP)
            weight = torch.zeros_like(model.qa_outputs.weight)
            weight[0, 0] = 3.0 if answerable else -3.0  # start: in the context (or question)
            weight[1, 1] = 3.0  # end: on a [SEP] ...
            weight[1, 0] = 1.5  # ... preferably the final one (context segment)
            # keep a little of the random head so the logits still depend on the words
            model.qa_outputs.weight.copy_(weight + model.qa_outputs.weight)
    return _save(model, _tokenizer(), directory)
