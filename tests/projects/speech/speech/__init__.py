"""A small speech-recognition project: the model, its losses, a metric and a callback in
separate modules, as real projects are laid out."""

from .model import SpeechModel

__all__ = ["SpeechModel"]
