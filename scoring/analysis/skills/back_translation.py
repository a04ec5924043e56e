"""s6, back-translation EN→FR→EN of every passage sentence with local Marian models (or any
callable ``list[str] -> list[str]``). Without usable translation models s6 is "not configured" and
the other skills are built as usual. See s6 in :mod:`scoring.analysis.skills.perturbations`."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from .catalogue import EN
from .edits import Edit, Perturbation
from .perturbations import Question
from .text import Analyses

Translator = Callable[[list[str]], list[str]]


def marian_translator(model_dir: str | Path, *, batch_size: int = 16, max_new_tokens: int = 256) -> Translator:
    """A translator over a local transformers Marian model directory (never downloads)."""
    # torch and transformers (with sentencepiece) are heavy, optional dependencies: imported
    # here, only when s6 is configured with a model directory, so that the package (and every
    # other skill) loads fast and works without them.
    import torch  # noqa: PLC0415
    from transformers import MarianMTModel, MarianTokenizer  # noqa: PLC0415

    tokenizer = MarianTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    model = MarianMTModel.from_pretrained(str(model_dir), local_files_only=True).eval()
    positions = int(getattr(model.config, "max_position_embeddings", 512))
    max_length = min(int(tokenizer.model_max_length), positions)
    new_tokens = min(max_new_tokens, positions - 1)

    def translate(texts: list[str]) -> list[str]:
        out: list[str] = []
        for start in range(0, len(texts), batch_size):
            batch = tokenizer(texts[start:start + batch_size], return_tensors="pt", padding=True,
                              truncation=True, max_length=max_length)
            with torch.inference_mode():
                generated = model.generate(**batch, max_new_tokens=new_tokens, num_beams=1,
                                           do_sample=False)
            out.extend(tokenizer.batch_decode(generated, skip_special_tokens=True))
        return out

    return translate


def _translator(spec) -> Translator:
    return spec if callable(spec) else marian_translator(Path(spec))


def resolve_translation(translation_models) -> tuple[Translator, Translator] | str:
    """(en→fr, fr→en) translators, or the reason s6 is not configured."""
    if not translation_models:
        return "no translation models configured (translation_models={'en-fr': ..., 'fr-en': ...})"
    missing = [k for k in ("en-fr", "fr-en") if not translation_models.get(k)]
    if missing:
        return f"translation model(s) {', '.join(missing)} not configured"
    forward, backward = translation_models["en-fr"], translation_models["fr-en"]
    for key, spec in (("en-fr", forward), ("fr-en", backward)):
        if not callable(spec) and not Path(spec).is_dir():
            return f"translation model {key}: directory not found"
        if not callable(spec):
            missing_files = _missing_marian_files(Path(spec))
            if missing_files:
                return (f"translation model {key}: not a Marian model directory "
                        f"(missing {', '.join(missing_files)})")
    translators = []
    for key, spec in (("en-fr", forward), ("fr-en", backward)):
        try:
            translators.append(_translator(spec))
        except ImportError as exc:
            return f"translation models configured but not loadable ({exc.name or exc} is not installed)"
        except Exception as exc:  # noqa: BLE001 - whatever the loader raises, only s6 is affected
            return f"translation model {key} could not be loaded ({describe(exc)})"
    return translators[0], translators[1]


def _missing_marian_files(directory: Path) -> list[str]:
    """Files a saved Marian model and tokenizer need that ``directory`` lacks: a clear note
    instead of whatever error the loader would raise half-way."""
    missing = [name for name in ("config.json", "source.spm", "target.spm", "vocab.json")
               if not (directory / name).is_file()]
    if not any((directory / name).is_file() for name in ("model.safetensors", "pytorch_model.bin")):
        missing.append("model.safetensors or pytorch_model.bin")
    return missing


def describe(exc: Exception) -> str:
    """One readable line for a note: the error's type and the first line of its message."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"


def back_translations(gold: dict, translators: tuple[Translator, Translator], analyses: Analyses) -> dict[str, str]:
    sentences: dict[str, None] = {}
    for article in gold["data"]:
        for paragraph in article["paragraphs"]:
            a = analyses.passage(paragraph["context"], EN)
            for s, e in a.sentences:
                sentences.setdefault(a.text[s:e])
    texts = list(sentences)
    if not texts:
        return {}
    forward, backward = translators
    french = list(forward(texts))
    english = list(backward(french))
    if len(french) != len(texts) or len(english) != len(texts):
        raise ValueError("a translator returned a different number of sentences than it was given")
    return {src: str(bt).strip() or src for src, bt in zip(texts, english, strict=True)}


def s6_factory(table: Mapping[str, str]):
    def run(q: Question) -> Perturbation:
        a = q.context
        out = Perturbation()
        for s, e in a.sentences:  # every sentence, whatever the gold (see s6 in perturbations.py)
            original = a.text[s:e]
            translated = table.get(original, original)
            if translated == original:
                continue
            edit_index = len(out.context_edits)
            out.context_edits.append(Edit(s, e, translated))
            for k, (answer_start, answer_end) in enumerate(q.answers):
                if not (answer_start < e and s < answer_end):
                    continue
                inside = s <= answer_start and answer_end <= e
                found = translated.find(a.text[answer_start:answer_end]) if inside else -1
                if found < 0:
                    out.lost.add(k)
                else:
                    out.placed[k] = (edit_index, found)
        return out
    return run
