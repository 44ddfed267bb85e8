"""Reading one table of a provider file: typed values with the key named in every error."""

from __future__ import annotations

from typing import Any

from jobtrail.errors import ProviderConfigError


class Reader:
    def __init__(self, doc: dict[str, Any], where: str) -> None:
        self.doc, self.where = doc, where

    def _name(self, key: str) -> str:
        return f"{self.where}{key}"

    _MISSING: Any = object()

    def text(self, key: str, default: Any = _MISSING) -> Any:
        value = self.doc.get(key, default)
        if value is self._MISSING:
            raise ProviderConfigError(f"{self._name(key)} is required")
        if value is not None and not isinstance(value, str):
            raise ProviderConfigError(f"{self._name(key)} must be text, got {value!r}")
        return value

    def flag(self, key: str) -> bool:
        value = self.doc.get(key, False)
        if not isinstance(value, bool):
            raise ProviderConfigError(f"{self._name(key)} must be true or false")
        return value

    def table(self, key: str) -> dict[str, Any]:
        value = self.doc.get(key, {})
        if not isinstance(value, dict):
            raise ProviderConfigError(f"{self._name(key)} must be a table")
        return value

    def sub(self, key: str, optional: bool = False) -> Any:
        if key not in self.doc:
            if optional:
                return None
            raise ProviderConfigError(f"the [{key}] table is required")
        return Reader(self.table(key), f"{key}.")
