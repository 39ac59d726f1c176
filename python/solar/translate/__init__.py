"""Translation of any source program into the loop language by a language model, accepted only
when its outputs match the source's (docs/translate.md).

    from solar.translate import translate, translate_dir, TranslateOptions
    t = translate("model.py", "model_loop.py",
                  TranslateOptions(model="qwen2.5-coder-32b", endpoint="http://localhost:8000/v1"))
    t.status, t.attempts, t.provenance["usage"], t.report.totals.macs
    summary = translate_dir("kernels/", "kernels_loop/", TranslateOptions(...), jobs=4)

The model is reached over the OpenAI-compatible Chat Completions protocol (client.py); its
answers are only ever parsed and interpreted as loop programs (extract.py, check.py), never
executed; the source runs in a subprocess with time and memory limits (runner.py).
"""

from __future__ import annotations

from .agent import TranslateOptions, Translation, translate
from .batch import translate_dir
from .source import SourceError

__all__ = ["TranslateOptions", "Translation", "translate", "translate_dir", "SourceError"]
