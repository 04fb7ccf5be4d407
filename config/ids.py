"""A row id read from a URL or a query string: a positive whole number the database can hold, or nothing.

Ids are 64-bit (``DEFAULT_AUTO_FIELD``); a larger number would make PostgreSQL refuse the query (an
error page) where the answer is simply "no such row". ``IdConverter`` is the routes' ``<id:...>``
(registered by ``config.urls``): a number out of range matches no route, a 404.
"""
MAX_ID = 2**63 - 1


def query_id(value: str) -> int | None:
    """``value`` as an id when it is ASCII digits naming a number in [1, ``MAX_ID``]; else None."""
    value = value.strip()
    if not (value.isascii() and value.isdigit()) or len(value) > len(str(MAX_ID)):
        return None
    number = int(value)
    return number if 0 < number <= MAX_ID else None


class IdConverter:
    """``<id:name>``: a row id or a 0-based position (a step's index), a whole number up to ``MAX_ID``;
    a larger one matches no route."""

    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > MAX_ID:
            raise ValueError(f"{value} is beyond a 64-bit id")
        return number

    def to_url(self, value) -> str:
        return str(int(value))
