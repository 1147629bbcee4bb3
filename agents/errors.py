"""Errors of the pipeline stages and the model runner."""

from schemas.errors import HalluwatchError


class ModelError(HalluwatchError):
    """The model could not be loaded or did not produce a usable answer."""


class ModelFileError(ModelError):
    """The model file is missing or is not a GGUF file; the message names the setting to fix."""


class ModelOutputError(ModelError):
    """The model's output was unusable twice in a row; raised instead of guessing a verdict."""


class InputError(HalluwatchError):
    """Input a stage cannot work on (empty text, unreadable evidence); the message says what to fix."""


class KnowledgeBaseError(HalluwatchError):
    """The knowledge base cannot be opened or an import cannot be read; the message says what to fix."""


class RetrievalError(HalluwatchError):
    """A retriever could not answer; the composite reports it as "no evidence from this retriever"."""
