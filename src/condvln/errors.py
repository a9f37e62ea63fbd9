"""One exception hierarchy for everything CondVLN reports to a user.

Every error that bad input can cause is a :class:`CondVLNError`. The command line turns it into
one line on stderr and exit code 2; library users can catch the base class.
"""

from __future__ import annotations


class CondVLNError(Exception):
    """Base class of all errors CondVLN raises on bad input or configuration."""


class ConfigError(CondVLNError):
    """An unknown name, an invalid option or an inconsistent configuration."""


class ValidationError(CondVLNError):
    """Data that parsed but breaks an invariant (labels, reachability, schema)."""


class FormatError(CondVLNError):
    """A file or record that cannot be read as the format it claims to be.

    The message names the file, the record and the field, in that order, when they are known::

        >>> str(FormatError("must be finite", file="h.json", record="object 'Bed|1'",
        ...                 field="center"))
        "h.json: object 'Bed|1': field 'center': must be finite"
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        record: str | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.record = record
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.file:
            parts.append(str(self.file))
        if self.record:
            parts.append(self.record)
        if self.field:
            parts.append(f"field '{self.field}'")
        parts.append(self.message)
        return ": ".join(parts)

    def with_file(self, file: str) -> FormatError:
        """Return the same error, of the same class, with ``file`` filled in (keeps a known one)."""
        return type(self)(
            self.message, file=self.file or str(file), record=self.record, field=self.field
        )


class SceneFormatError(FormatError):
    """A scene file or scene record that cannot be turned into a valid scene."""
