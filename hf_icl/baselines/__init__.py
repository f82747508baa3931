"""Classical baselines that produce the same artifacts as models (DESIGN §2.3, §5.3)."""

from .baum_welch import BaumWelch
from .lnw import LearnedNgramReweighting
from .ngram import InContextNGram

__all__ = ["BaumWelch", "InContextNGram", "LearnedNgramReweighting"]
