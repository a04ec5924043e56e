"""The reference model bundle: a lexical-overlap baseline for every format, standard library
only (docs/model_submissions.md, "The reference bundle").

Evidence is the passage sentence that shares the most question words, each weighted by how
rare it is among the passage's sentences (the sliding-window idea of Richardson et al., 2013,
at sentence level). A span answer is the run of evidence words outside the question closest to
the question words found there; a multiple-choice answer is the option whose words, with the
question's, best match one sentence; an NLI label follows the premise's coverage of the
hypothesis and a negation mismatch. Deterministic: the same inputs give the same predictions.
"""
import math
import os
import re

# Tokens: one CJK character, or a run of letters and digits (lower-cased).
TOKEN = re.compile(r"[\u4e00-\u9fff]|[^\W_\u4e00-\u9fff]+")
SENTENCE = re.compile(r"[^.!?。！？；]+(?:[.!?。！？；]+[\"'”’」』)]*|$)")
STOPWORDS = frozenset("""a an the of to in on at by for with from and or but is are was were be been
being do does did what which who whom whose when where why how that this these those it its as
into than then there their they he she his her him we you your i not no yes if so such can could
would should will may might must have has had about after before over under up down out
的 了 是 在 和 有 也 就 都 而 及 与 着 或 一 个 什 么 哪 谁 吗 呢 吧""".split())
NEGATIONS = frozenset("not no never nobody nothing none neither nor n't cannot 不 没 无 非 未".split())
MAX_ANSWER_TOKENS = 4
DEVICE = os.environ.get("EXPBENCH_DEVICE", "cpu")  # this baseline needs no accelerator


def tokens(text):
    return [match.group().lower() for match in TOKEN.finditer(text)]


def content(words):
    return {word for word in words if word not in STOPWORDS}


def sentences(passage):
    found = [match.group().strip() for match in SENTENCE.finditer(passage)]
    return [sentence for sentence in found if sentence] or [passage.strip()]


def passage_of(text, passages):
    """The passage's analysis, made once per batch (SQuAD asks several questions per passage)."""
    if text not in passages:
        passages[text] = Passage(text)
    return passages[text]


class Passage:
    """A passage's sentences with their content words and the rarity weight of each word."""

    def __init__(self, text):
        self.sentences = sentences(text)
        self.words = [content(tokens(sentence)) for sentence in self.sentences]
        counts = {}
        for words in self.words:
            for word in words:
                counts[word] = counts.get(word, 0) + 1
        total = len(self.sentences)
        self.weight = {word: math.log(1.0 + total / count) for word, count in counts.items()}

    def overlap(self, index, query):
        words = self.words[index]
        return sum(self.weight[word] for word in query if word in words)

    def best_sentence(self, query):
        query = sorted(query)  # a fixed summation order: the same floats in every process
        scores = [self.overlap(index, query) for index in range(len(self.sentences))]
        best = max(range(len(scores)), key=lambda index: (scores[index], -index))
        return best, scores[best]


def span_answer(sentence, question_words):
    """The run of up to MAX_ANSWER_TOKENS words outside the question nearest to the question
    words matched in the sentence (its original text)."""
    matches = list(TOKEN.finditer(sentence))
    if not matches:
        return sentence
    inside = [match.group().lower() in question_words for match in matches]
    anchors = [index for index, flag in enumerate(inside) if flag]
    runs, start = [], None
    for index, flag in enumerate(inside + [True]):
        if not flag and start is None:
            start = index
        elif flag and start is not None:
            runs.append((start, index))
            start = None
    runs = [(start, end) for start, end in runs
            if any(matches[index].group().lower() not in STOPWORDS for index in range(start, end))]
    if not runs:
        return sentence

    def distance(run):
        start, end = run
        if not anchors:
            return (0, start)
        return (min(min(abs(anchor - start), abs(anchor - (end - 1))) for anchor in anchors), start)

    start, end = min(runs, key=distance)
    while matches[start].group().lower() in STOPWORDS:  # the run holds a content word
        start += 1
    while matches[end - 1].group().lower() in STOPWORDS:
        end -= 1
    if anchors and end - start > MAX_ANSWER_TOKENS:
        nearest = min(anchors, key=lambda anchor: min(abs(anchor - start), abs(anchor - end)))
        if nearest < start:
            end = start + MAX_ANSWER_TOKENS
        else:
            start = end - MAX_ANSWER_TOKENS
    elif end - start > MAX_ANSWER_TOKENS:
        end = start + MAX_ANSWER_TOKENS
    return sentence[matches[start].start():matches[end - 1].end()]


def predict_span(example, passages):
    passage = passage_of(example["context"], passages)
    question = content(tokens(example["question"]))
    index, _ = passage.best_sentence(question)
    evidence = passage.sentences[index]
    return {"answer": span_answer(evidence, question), "evidence": evidence}


def predict_choice(example, passages):
    passage = passage_of(example["article"], passages)
    question = content(tokens(example["question"]))
    best = None
    for position, option in enumerate(example["options"]):
        option_words = content(tokens(option))
        index, score = passage.best_sentence(question | option_words)
        option_score = score + sum(passage.weight.get(word, 0.0) for word in sorted(option_words)
                                   if word in passage.words[index])
        if best is None or option_score > best[0]:
            best = (option_score, position, index)
    _, position, index = best
    return {"answer": chr(ord("A") + position), "evidence": passage.sentences[index]}


def predict_label(example):
    labels = example["labels"]
    premise, hypothesis = tokens(example["premise"]), tokens(example["hypothesis"])
    wanted = content(hypothesis) or set(hypothesis)
    coverage = len(wanted & set(premise)) / len(wanted) if wanted else 1.0
    negated = bool(NEGATIONS & set(hypothesis)) != bool(NEGATIONS & set(premise))
    by_name = {label.lower(): label for label in labels}
    if negated and "contradiction" in by_name:
        return by_name["contradiction"]
    if coverage >= 0.75 and "entailment" in by_name:
        return by_name["entailment"]
    if "neutral" in by_name:
        return by_name["neutral"]
    return labels[0] if coverage >= 0.5 or len(labels) < 2 else labels[1]


def predict(examples):
    passages = {}
    predictions = {}
    for example in examples:
        if "context" in example:
            predictions[example["id"]] = predict_span(example, passages)
        elif "options" in example:
            predictions[example["id"]] = predict_choice(example, passages)
        else:
            predictions[example["id"]] = predict_label(example)
    return predictions
